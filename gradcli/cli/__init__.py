"""The command line: thin typer commands (app.py) and their output (render.py)."""
