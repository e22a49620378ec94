"""The command line: thin typer commands (app.py) and their output (render.py)."""
import sys as _sys

from .. import _exit_quietly_on_interrupt

# The command line's process: Ctrl-C during the imports of app.py (typer, click) also
# ends with 130 and no traceback; main() handles it once it runs.
if not _sys.flags.interactive and not hasattr(_sys, "ps1"):
    _sys.excepthook = _exit_quietly_on_interrupt
