"""The command line: thin typer commands (app.py) and their output (render.py)."""
from ..startup import install_interrupt_hook

# The command line's process: Ctrl-C during the imports of app.py (typer, click) also
# ends with 130 and no traceback; main() handles it once it runs.
install_interrupt_hook()
