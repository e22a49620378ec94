"""``--debug-nans``: the first non-finite value of a run, said with a caret into the
program text, the input values, the pass and a hint from a table of known causes.

The engine's ``debug_nans`` observer (engine/core/observe.py) stops the run with a
``NonFiniteError`` that holds the operation, its inputs and the tree node the evaluator
was running (``where``); this module turns it into the message. The hints are tried in
order (``HINTS``); the first that fits is given.
"""
from __future__ import annotations

import numpy as np

from ..errors import GradcliError

LOGS = ("log", "log2", "log10", "log1p")
EXPS = ("exp", "expm1", "exp2", "cosh", "sinh")
SAFE = "1"  # the value the double where puts in the untaken branch (in every domain here)


def span_of(pos, source: str) -> list[int]:
    """A tree node's position as ``[start, end]`` character offsets into ``source``."""
    lines = source.split("\n")
    start = sum(len(line) + 1 for line in lines[:pos.line - 1]) + pos.col
    return [start, start + pos.width]


def text_of(node, source: str) -> str:
    start, end = span_of(node.pos, source)
    return source[start:end]


def _numbers(values) -> str:
    out = []
    for v in values:
        arr = np.asarray(v)
        if arr.ndim == 0:
            out.append(repr(arr.item()))
        elif arr.size <= 6:
            out.append(np.array2string(arr, separator=", "))
        else:
            out.append(f"array {arr.shape} (min {np.nanmin(arr):g}, max {np.nanmax(arr):g})")
    return ", ".join(out)


def _has(values, test) -> bool:
    with np.errstate(all="ignore"):
        return any(bool(test(np.asarray(v, dtype=float)).any())
                   for v in values if np.asarray(v).dtype.kind in "fcbiu")


def operand_of(node, index):
    """The sub-expression of tree node ``node`` that is its input ``index``."""
    name = type(node).__name__
    if name == "Call" and index is not None and index < len(node.args):
        return node.args[index]
    if name == "Binary":
        return node.left if index in (0, None) else node.right
    if name == "Unary":
        return node.operand
    if name == "ArrayLit" and index is not None and index < len(node.elements):
        return node.elements[index]
    return None


def double_where(err, source: str) -> str | None:
    """The "double where" rewrite: the untaken branch's input made safe by the same
    condition, so that its gradient is finite and the outer where's zero stays zero."""
    outer, inner = err.zeroed_by, err.where
    operand = operand_of(inner, err.index)
    if (outer is None or operand is None or type(outer).__name__ != "Call"
            or len(outer.args) != 3):
        return None
    return _rewritten(outer, operand, _inside(inner, outer.args[1], source), source)


def _rewritten(outer, operand, taken_if_true: bool, source: str) -> str:
    """``outer`` (a where) with ``operand`` replaced by a where of the same condition
    that gives it ``SAFE`` where its branch is not taken."""
    cond = text_of(outer.args[0], source)
    safe = (f"where({cond}, {text_of(operand, source)}, {SAFE})" if taken_if_true
            else f"where({cond}, {SAFE}, {text_of(operand, source)})")
    o0, o1 = span_of(operand.pos, source)
    w0, w1 = span_of(outer.pos, source)
    return source[w0:o0] + safe + source[o1:w1]


def untaken_branch(err, source: str) -> str | None:
    """In the forward pass: the "double where" rewrite when the operation is inside a
    branch of a ``where(cond, a, b)`` that the condition (computed before it) does not
    take at any element where the value is non-finite: the value is thrown away, but
    its gradient would be 0·inf there. Else None."""
    outer = _enclosing_where(err.where, source) if err.where is not None else None
    if outer is None:
        return None
    cond = next((value for node, value in err.seen.values() if node is not None
                 and span_of(node.pos, source) == span_of(outer.args[0].pos, source)), None)
    operand = operand_of(err.where, 1 if err.op in ("divide", "true_divide") else 0)
    if cond is None or operand is None:
        return None
    taken_if_true = _inside(err.where, outer.args[1], source)
    try:
        bad, taken = np.broadcast_arrays(~np.isfinite(np.asarray(err.value)),
                                         np.asarray(cond, dtype=bool))
    except ValueError:  # (shapes that do not line up: nothing to say)
        return None
    if (bad & (taken if taken_if_true else ~taken)).any():
        return None
    return _rewritten(outer, operand, taken_if_true, source)


def _enclosing_where(node, source: str):
    """The innermost ``where(cond, a, b)`` of the program with ``node`` inside a or b."""
    from ..lang.parser import iter_postorder, parse_program
    found = None
    for statement in parse_program(source).statements:
        for call in iter_postorder(statement.value):
            if (type(call).__name__ == "Call" and call.func == "where"
                    and len(call.args) == 3
                    and any(_inside(node, branch, source) for branch in call.args[1:])
                    and (found is None or _inside(call, found, source))):
                found = call
    return found


def _inside(node, container, source: str) -> bool:
    a0, a1 = span_of(node.pos, source)
    c0, c1 = span_of(container.pos, source)
    return c0 <= a0 and a1 <= c1


def hint(err, source: str) -> str:
    """The first known cause that fits ``err`` (a ``NonFiniteError``)."""
    op, inputs = err.op, err.inputs
    if err.pass_ == "forward":
        if _has(inputs, lambda a: ~np.isfinite(a)):
            return (f"an input of {op} is already nan or inf (a declared value or a "
                    "constant): the non-finite value comes from outside the program")
        rewrite = untaken_branch(err, source)
        if rewrite is not None:
            return (f"{op} is outside its domain only in a where's untaken branch: where "
                    f"throws the value away, but its gradient there is 0·inf, which is "
                    f"nan. The \"double where\" fix keeps the untaken branch's input in "
                    f"the domain: {rewrite}")
        if op in LOGS:
            return (f"{op} is defined for positive inputs only (log(0) is -inf, log of a "
                    f"negative number nan): keep its argument positive, e.g. "
                    f"{op}(maximum(x, 1e-12))")
        if op == "sqrt":
            return ("sqrt of a negative number is nan: keep its argument non-negative, "
                    "e.g. sqrt(maximum(x, 0))")
        if op in ("power", "pow"):
            return ("power outside its domain: a negative base with a non-integer "
                    "exponent is nan, 0 to a negative power inf")
        if op in EXPS:
            return (f"{op} overflows above about 709 (float64; 88 in float32): compute "
                    "in log space, with logsumexp(x) for log(sum(exp(x))) and softplus(x) "
                    "for log(1 + exp(x))")
        if op in ("divide", "true_divide", "reciprocal") and _has(inputs, lambda a: a == 0):
            return "a division by zero"
        return (f"the inputs are outside {op}'s domain (`gradcli functions` shows each "
                "function's domain)")
    rewrite = double_where(err, source) if err.zeroed_by is not None else None
    if rewrite is not None:
        return (f"a where's untaken branch has a non-finite derivative here: where "
                f"multiplies it by 0, and 0·inf is nan. The \"double where\" fix keeps "
                f"the untaken branch's input in its domain: {rewrite}")
    zero_adjoint = err.adjoint is not None and _has([err.adjoint], lambda a: a == 0)
    if op == "sqrt" and _has(inputs, lambda a: a == 0):
        if zero_adjoint:
            return ("0·inf in the chain rule: the adjoint reaching sqrt is 0 and sqrt's "
                    "derivative at 0 is infinite")
        return ("sqrt's derivative 1/(2·sqrt(x)) is infinite at 0: add a small epsilon "
                "(sqrt(x + 1e-12)), or use norm, whose gradient at 0 is defined as 0")
    if op in ("multiply", "matmul", "dot") and _has(inputs, lambda a: ~np.isfinite(a)):
        return "0·inf in a product rule: one factor is infinite where the other's adjoint is 0"
    if zero_adjoint:
        return (f"0·inf in the chain rule: the adjoint reaching {op} is 0 and {op}'s "
                "derivative here is infinite")
    return (f"{op}'s derivative is not finite at these inputs (`gradcli functions` shows "
            "each function's derivative and domain)")


def report(err, source: str) -> str:
    """The whole message: what, where (a caret), the inputs, the pass, the hint."""
    what = GradcliError(f"--debug-nans: {err}")
    if err.where is not None:
        pos = err.where.pos
        what.at(source, pos.line, pos.col, pos.width)
    lines = [what.render(), f"  inputs of {err.op}: {_numbers(err.inputs)}"]
    if err.pass_ == "backward" and err.adjoint is not None:
        lines.append(f"  adjoint reaching {err.op}: {_numbers([err.adjoint])}")
    lines.append(f"  hint: {hint(err, source)}")
    return "\n".join(lines)


def note_non_finite(outcome) -> None:
    """Without --debug-nans: a non-finite value or gradient keeps today's output, with a
    note saying how to find where it came from."""
    values = [outcome.value] + [g.gradient for g in outcome.gradients]
    if _has([v for v in values if v is not None], lambda a: ~np.isfinite(a)):
        outcome.notes.append("the result holds nan or inf: run again with --debug-nans to "
                             "stop at the operation that made it")
