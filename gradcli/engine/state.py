"""The one piece of global state: the tapes that are recording right now.

It lives apart so that tensors, ops and tapes can all read it without importing each
other. ``apply`` looks at it on every operation, so it is a plain list (cheap to test).
"""
from __future__ import annotations

# Tapes inside their ``with`` block and not paused by ``stop_recording``, innermost last.
recording: list = []
