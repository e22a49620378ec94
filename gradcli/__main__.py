"""``python -m gradcli`` runs the command line."""
from .cli.app import run

run()
