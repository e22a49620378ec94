"""Start-up tricks of a gradcli process, in one place: Ctrl-C during the imports ends with
130 and no traceback, and Python's cyclic collector pauses while the imports make their
long-lived objects (issue 14). Used by the command line alone (gradcli/cli: its package
installs the hook, cli/app.py pauses the collector around its imports and, in ``run``,
the library's): ``import gradcli`` as a library changes nothing of the process (issue
21). Imports nothing but gc and sys, so it costs nothing at start-up."""
from __future__ import annotations

import gc
import sys


def exit_quietly_on_interrupt(kind, value, traceback, _previous=sys.excepthook) -> None:
    """Ctrl-C that reaches the top while gradcli is being imported (most of the command
    line's start-up) ends the process with 130 and no traceback, as Unix tools do.
    Installed by ``gradcli.cli`` for the command line; no import, so no start-up cost;
    never in an interactive session."""
    if issubclass(kind, KeyboardInterrupt):
        import os
        os._exit(130)
    _previous(kind, value, traceback)


def install_interrupt_hook():
    """``exit_quietly_on_interrupt`` as the excepthook, outside interactive sessions;
    returns the hook it replaced."""
    previous = sys.excepthook
    if not sys.flags.interactive and not hasattr(sys, "ps1"):
        sys.excepthook = exit_quietly_on_interrupt
    return previous


def pause_collector() -> bool:
    """Pause Python's cyclic collector for an import; returns whether it was running.

    An import makes tens of thousands of objects that live as long as the process, and no
    garbage: the collector's passes over them (~45 during numpy's and gradcli's imports)
    only cost time, ~6-8 ms of every command-line start (issue 14)."""
    running = gc.isenabled()
    gc.disable()
    return running


def resume_collector(was_running: bool) -> None:
    """Undo ``pause_collector``. The objects made meanwhile move to the oldest generation
    at once (``freeze`` then ``unfreeze``: two list splices), where the young collections
    they skipped would have put them, so that no young collection walks them afterwards;
    any cycle among them is freed by the next full collection, as before."""
    if was_running:
        if gc.get_freeze_count() == 0:  # never undo a gc.freeze() of the program's own
            gc.freeze()
            gc.unfreeze()
        gc.enable()
