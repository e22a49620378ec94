"""Safety limits of the language, checked before the work they protect.

Users type programs at a shell and scripts feed them from files and pipes, so no input
may hang gradcli, exhaust memory or crash it. Each limit below is enforced at the
cheapest point that still comes *before* the costly step (the length before tokenizing,
the nesting depth while tokenizing, a constructor's element count before allocating),
and each refusal is a ``LimitError`` whose message names the limit and its value.
"""
from __future__ import annotations

from ..errors import ChunkTooLarge, LimitError

#: Characters in a program (or in one ``--var``/``--arg`` value written as an expression).
MAX_PROGRAM_CHARS = 100_000
#: Brackets ``( [`` open at once; each level costs a few Python frames in the parser.
MAX_NESTING = 100
#: Unary ``+``/``-`` in a row (``- - - x``); more is never meant and only deepens trees.
MAX_UNARY_RUN = 100
#: Digits in one number literal; numbers become floats at once, this keeps parsing cheap.
MAX_LITERAL_DIGITS = 400
#: Nodes in a parsed program (bounds the work of every later pass, the sympy one too).
MAX_NODES = 50_000
#: Elements of any one array: made by a constructor, read from a file, or the result of
#: a broadcast or a matrix product. Checked before the array is allocated.
MAX_ELEMENTS = 10_000_000
#: Elements produced by all operations of one evaluation together (the tape keeps them).
MAX_TOTAL_ELEMENTS = 100_000_000
#: Bytes of a file named by ``@path`` in a declaration.
MAX_FILE_BYTES = 100_000_000
#: Passes of a Jacobian (``gradcli jacobian --mode rev|fwd``): one backward pass per
#: target element, or one forward pass per source element; ``--mode auto`` takes the
#: fewer, which the array size limit on the Jacobian itself keeps under this.
MAX_DERIVATIVE_PASSES = 100_000


def check_elements(count: float, what: str) -> None:
    """Refuse an array of ``count`` elements before it is made; under ``--at``, where
    ``count`` is one row's, a ``ChunkTooLarge`` when the chunk's rows together go over.

    >>> check_elements(10**12, "zeros")
    Traceback (most recent call last):
    ...
    gradcli.errors.LimitError: zeros would make 1,000,000,000,000 elements, over the array size limit (10,000,000 elements)
    """
    if count > MAX_ELEMENTS:
        shown = f"{int(count):,}" if count < 1e30 else f"{count:.3g}"
        raise LimitError(f"{what} would make {shown} elements, over the array size limit "
                         f"({MAX_ELEMENTS:,} elements)")
    rows = batch_rows()
    if rows > 1 and count * rows > MAX_ELEMENTS:
        raise chunk_too_large(rows, f"{what} would make {int(count) * rows:,} elements")


# A chunk of rows computed at once (``--at``: one ``vectorized_map`` call) is held to the
# limits of ONE evaluation, all its rows together: no array over MAX_ELEMENTS, at most
# MAX_TOTAL_ELEMENTS in all. Over them, ``ChunkTooLarge``: --at computes the rows in
# smaller pieces, down to one row, which is held to the single-point limits as ever.
def batch_rows() -> int:
    """The rows computed at once right now: the innermost ``vectorized_map``'s batch
    size, or 1 outside one."""
    batching = _batching()
    return batching[-1] if batching else 1


def array_limit() -> int:
    """The most elements one row's array may have right now: ``MAX_ELEMENTS``, shared by
    the rows computed at once."""
    return MAX_ELEMENTS // batch_rows()


def chunk_too_large(rows: int, what: str) -> ChunkTooLarge:
    return ChunkTooLarge(f"{rows:,} rows at once: {what}, over the limits of one "
                         "evaluation")


_BATCHING: list = []


def _batching() -> list:
    """``engine.state.batching`` (the list itself, which the engine changes in place),
    found once: the language's parser does not load the engine (start-up, issue 14)."""
    if not _BATCHING:
        from ..engine.core import state
        _BATCHING.append(state.batching)
    return _BATCHING[0]
