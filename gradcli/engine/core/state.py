"""The one piece of global state: the tapes that are recording right now.

It lives apart so that tensors, ops and tapes can all read it without importing each
other. ``apply`` looks at it on every operation, so it is a plain list (cheap to test).
"""
from __future__ import annotations

import sys

# Tapes inside their ``with`` block and not paused by ``stop_recording``, innermost last.
recording: list = []

# Forward accumulators inside their ``with`` block, innermost last. Empty unless forward
# mode is in use: ``apply`` tests it once per operation and does nothing more.
forward: list = []

# Observers of the computation (core/observe.py: debug_nans, --explain), innermost last.
# Empty unless one is installed: ``apply`` and the backward pass test it and do nothing more.
observing: list = []

# The batch sizes of the vectorized_map calls whose function runs on batched values right
# now, innermost last: the gradient APIs look at it once per call (never per operation)
# to give per-example gradients of batched values.
batching: list = []

# Whether sys.getrefcount tells if a value is shared (the in-place and reuse fast paths
# rely on it). CPython 3.14 and free-threaded builds may leave references uncounted:
# there those paths stay off.
REFCOUNTS_EXACT = sys.version_info < (3, 14) and getattr(sys, "_is_gil_enabled", lambda: True)()

# Hooks the higher modules set when imported, so that ``apply`` reaches them without
# importing them (the engine's modules import one way: see tests/engine/test_engine_layers.py).
# batching.py: runs an entry's batching rule on a batched input (only batching makes one).
apply_batched = None
# forward.py: forward mode's bookkeeping (only forward.py makes an accumulator), and a
# shared value with a batched tangent repeated for each example (see forward.py).
propagate = None
repeat_with_tangents = None
