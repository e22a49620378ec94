"""The engine's core: values, recording, the backward pass, forward mode, batching and
the APIs. It imports no rule module (see ``gradcli.engine``'s docstring)."""
