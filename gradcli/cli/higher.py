"""The commands of higher derivatives: ``jacobian``, ``hessian`` and ``grad --order N``.

Each is the usual few steps (parse, evaluate in a mode, check if asked, render); the math
is in :mod:`gradcli.run.derivatives`, the check in :mod:`gradcli.check.higher`. Imported only
when one of these commands runs (app.py registers them without importing this module).

JSON (one object each, ``report()`` of the result types in run/derivatives.py written by
io/writers/json.py; numbers as everywhere in gradcli: non-finite ones are strings)::

    {"mode": "jacobian", "value": ..., "computed_by": "reverse",
     "sources": ["x"], "sources_from": "arguments",
     "jacobians": [{"name": "x", "jacobian": [[...]], "shape": [3, 3],
                    "connected": true}], "check": {...}}
    {"mode": "hessian", "value": 31.0, "sources": ["w1", "w2"],
     "sources_from": "variables", "labels": ["w1", ...], "gradient": [...],
     "hessian": [[...]], "eigenvalues": [...], "verdict": "not-critical",
     "critical": false, "gradient_tolerance": ..., "zero_tolerance": ...,
     "condition_number": ..., "symmetric": true, "asymmetry": 0.0, "check": {...}}

``sources_from`` says how the sources were chosen: "wrt" (named by ``--wrt``),
"variables" (the default when the program reads trainable variables) or "arguments"
(the default otherwise); the human output says it in words, and ``--plain`` on standard
error when the default chose (see :func:`gradcli.run.derivatives.choose_sources`).
    {"mode": "grad", "order": 3, "gradients": [{"name": "x", "gradient": ...}]}

``--plain``: ``jacobian`` prints the value, then each Jacobian flattened, one line per
source; ``hessian`` the value, the gradient, one line per Hessian row, the eigenvalues
and the verdict (one token: ``minimum``, ``maximum``, ``saddle``, ``degenerate``,
``not-critical`` or ``undefined``); ``grad --order`` one line per argument.
"""
from __future__ import annotations

import sys

from ..io.report import Page
from . import render
from .common import computed_and_checked, finish, guarded, mode_options, prepare, split


def _write(lines: list[str]) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines))


# ---------------------------------------------------------------------------------------
# jacobian
# ---------------------------------------------------------------------------------------
def run_jacobian(s) -> None:
    """``gradcli jacobian``."""
    from ..run.derivatives import jacobian

    def compute(s):
        wrt = split(s.wrt)
        model = prepare(s)
        return model, jacobian(model, wrt, s.mode)
    model, result, check = computed_and_checked(s, compute, "higher.check_jacobian")
    if s.json_out:
        render.json_writer.write(result.report(check))
    elif s.plain:
        render.plain_writer.write(result.report(), s.precision)
    else:
        render.show(result.page(s.precision, check, model.target_name))
    finish(check, s.plain)


# ---------------------------------------------------------------------------------------
# hessian
# ---------------------------------------------------------------------------------------
def run_hessian(s) -> None:
    """``gradcli hessian``."""
    from ..run.derivatives import hessian

    def compute(s):
        wrt = split(s.wrt)
        model = prepare(s)
        return model, hessian(model, wrt)
    model, result, check = computed_and_checked(s, compute, "higher.check_hessian")
    if s.json_out:
        render.json_writer.write(result.report(check))
    elif s.plain:
        render.plain_writer.write(result.report(), s.precision)
    else:
        render.show(result.page(s.precision, check, model.target_name))
    finish(check, s.plain)


# ---------------------------------------------------------------------------------------
# grad --order N
# ---------------------------------------------------------------------------------------
def run_grad_order(s) -> None:
    """``gradcli grad --order N``."""
    from ..run.derivatives import order_outcome
    order = s.order

    def work():
        options = mode_options(s)
        model = prepare(s)
        outcome = order_outcome(model, options, order)
        check = texts = None
        if s.check or s.symbolic:
            from ..check.higher import check_order
            check, texts = check_order(model, outcome, order, rtol=s.rtol, atol=s.atol,
                                       timeout=s.check_timeout, check=s.check,
                                       want_text=s.symbolic)
        return outcome, check, texts

    outcome, check, texts = guarded(work)
    if s.json_out:
        obj = render.json_writer.as_json(outcome.report(check, texts))
        obj = {"mode": obj.pop("mode"), "order": order, **obj}
        if outcome.notes:
            obj["note"] = " ".join(outcome.notes)
        render.json_writer.write_json(obj)
    elif s.plain:
        _write(render.plain_writer.lines(outcome.report(), s.precision))
    else:
        render.show(outcome.order_page(order, s.precision, check, texts))
    finish(check, s.plain)


# ---------------------------------------------------------------------------------------
# compare's jacobian row
# ---------------------------------------------------------------------------------------
class CompareRow:
    """``tape.jacobian(target, sources)`` beside the four APIs in ``gradcli compare``
    (shown where the target is not a scalar), with the default sources of ``jacobian``:
    the trainable variables the program reads, else the arguments (those the tape
    watches, or those ``grad`` takes). An error is shown in the row."""

    def __init__(self, model):
        from ..errors import GradcliError
        from ..run.derivatives import jacobian
        self.result = self.error = None
        try:
            self.result = jacobian(model)
        except GradcliError as err:
            self.error = err.message

    def to_json(self) -> dict:
        return {"error": self.error} if self.error else \
            render.json_writer.as_json(self.result.report())

    def print_plain(self, precision) -> None:
        if self.error:
            _write([f"jacobian error: {self.error}"])
            return
        # labelled as compare's other lines: the row, the JSON key, the source's name
        _write(render.plain_writer.lines(self.result.report(), precision, labelled=True))

    def print_human(self, precision, out=None) -> None:
        render.show(Page().error("jacobian (tf.GradientTape.jacobian): ", self.error)
                    if self.error else self.result.page(precision, compared=True), out)
