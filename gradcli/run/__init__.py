"""What each command computes: the modes, derivatives, directional derivatives, plot
sampling and minimisation, on the engine and the language (no terminal, no options)."""
