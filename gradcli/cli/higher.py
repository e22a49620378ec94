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

from . import render
from .common import computed_and_checked, finish, guarded, mode_options, prepare, split


def _write(lines: list[str]) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines))


def _emit_sources(out, sources) -> None:
    if sources is not None:
        render.emit(out, (sources.sentence, "dim"))


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
        _print_jacobian(result, s.precision, check, model.target_name)
    finish(check, s.plain)


def _print_jacobian(result, precision, check, target, out=None) -> None:
    out = out or render.console()
    render.emit(out, ("jacobian", "bold"), "  ",
                 (f"d {target or 'target'} / d source: shape target.shape + source.shape "
                  f"({result.computed_by} mode)", "dim"))
    _emit_sources(out, result.sources)
    render.print_value_lines(out, f"value of {target}" if target else "value", result.value,
                        precision)
    _jacobian_table(out, result, precision)
    if check is not None:
        render.print_check(out, check, precision)


def _jacobian_table(out, result, precision) -> None:
    rows = []
    for j in result.jacobians:
        shown = render.array_text(j.jacobian, precision)
        cell = shown if j.connected else render.styled(shown, (" (not connected)", "dim"))
        rows.append([j.name, cell, (str(j.shape), "dim")])
    render.show_table(out, ["source", "jacobian", "shape"], rows)


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
        _print_hessian(result, s.precision, check, model.target_name)
    finish(check, s.plain)


_MAX_TABLE = 8  # a labelled matrix up to this many columns; numpy's layout beyond


def _explain(result) -> str:
    """The verdict in words, with the tolerance that decided it (never "tolerance 0": a
    zero tolerance is a zero Hessian, where only an exact 0 counts)."""
    from ..run.derivatives import definiteness
    if result.verdict == "undefined":
        return ("the gradient or the Hessian is not finite here (nan or inf): no "
                "second-derivative test applies")
    kind = definiteness(result.eigenvalues, result.zero_tolerance)
    gradient = _gradient_words(result)
    if result.verdict == "not-critical":
        return (f"not a critical point ({gradient}), so no minimum, maximum or saddle "
                f"claim is made; the Hessian here is {kind}")
    zero = (f", with a zero eigenvalue (|eigenvalue| <= {_num(result.zero_tolerance)})"
            if result.zero_tolerance > 0 else "")
    words = {"minimum": "a local minimum (the Hessian is positive definite)",
             "maximum": "a local maximum (the Hessian is negative definite)",
             "saddle": "a saddle point (the Hessian has eigenvalues of both signs)",
             "degenerate": f"a critical point where the test says nothing: the Hessian is "
                           f"{kind}{zero}; higher derivatives decide"}
    return f"{words[result.verdict]}; critical point: {gradient}"


def _num(x) -> str:
    return render.number_text(x, 3)


def _gradient_words(result) -> str:
    norm = f"max |gradient| = {_num(result.gradient_norm)}"
    if result.gradient_tolerance > 0:
        return (f"{norm} {'<=' if result.critical else '>'} tolerance "
                f"{_num(result.gradient_tolerance)}")
    # (a zero tolerance: the Hessian is 0, so rounding cannot explain any gradient)
    if result.critical:
        return "the gradient is exactly 0 (with a zero Hessian only an exact 0 counts)"
    return f"{norm}, and with a zero Hessian only an exact 0 counts"


def _tolerance_words(result) -> str:
    """The zero test and the condition number (see ``derivatives.classify``)."""
    condition = f"condition number {_num(result.condition_number)}"
    if result.zero_tolerance > 0:
        return (f"{condition}; an eigenvalue counts as 0 when |eigenvalue| <= "
                f"{_num(result.zero_tolerance)} (n (4 eps max |eigenvalue| + max |H - H^T|):"
                " how far rounding can move one)")
    return f"{condition} (the Hessian is 0)"


def _print_hessian(result, precision, check, target, out=None) -> None:
    out = out or render.console()
    n = len(result.labels)
    render.emit(out, ("hessian", "bold"), "  ",
                 (f"d2 {target or 'target'} / d source^2 over {', '.join(result.names)} "
                  f"({n} element{'s' if n != 1 else ''}; nested reverse mode)", "dim"))
    _emit_sources(out, result.sources)
    render.print_value_lines(out, f"value of {target}" if target else "value", result.value,
                        precision)
    headers = ["element", "gradient"]
    if n <= _MAX_TABLE:
        headers += [f"H[:, {label}]" if n == 1 else label for label in result.labels]
    rows = []
    for i, label in enumerate(result.labels):
        row = [label, render.number_text(result.gradient[i], precision)]
        if n <= _MAX_TABLE:
            row += [render.number_text(v, precision) for v in result.hessian[i]]
        rows.append(row)
    render.show_table(out, headers, rows)
    if n > _MAX_TABLE:
        render.emit(out, "Hessian (rows and columns in the order above):")
        for line in render.array_text(result.hessian, precision).split("\n"):
            render.emit(out, "  " + line)
    if result.eigenvalues is not None:
        render.emit(out, "eigenvalues: ", render.array_text(result.eigenvalues, precision))
        render.emit(out, "  ", (_tolerance_words(result), "dim"))
    render.emit(out, "verdict: ", (result.verdict, "bold"), ": " + _explain(result))
    if not result.symmetric:
        render.emit(out, ("warning:", "bold red"),
                     f" the Hessian is not symmetric: max |H - H^T| = "
                     f"{render.number_text(result.asymmetry, 3)}, beyond round-off "
                     f"({render.number_text(result.asymmetry_tolerance, 3)}): a derivative "
                     "rule is wrong; the eigenvalues are those of (H + H^T) / 2")
    if check is not None:
        render.print_check(out, check, precision)


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
        _print_order(outcome, order, s.precision, check, texts)
    finish(check, s.plain)


def _print_order(outcome, order: int, precision, check, texts, out=None) -> None:
    out = out or render.console()
    render.emit(out, (f"grad --order {order}", "bold"), "  ",
                 (f"the pure partial derivatives of order {order}: gradients_function "
                  f"nested {order} times", "dim"))
    headers = ["argument", f"d^{order} / d argument^{order}" if order > 1 else "gradient"]
    if texts is not None:
        headers.append("symbolic derivative")
    rows = []
    for g in outcome.gradients:
        row = [g.name, render.array_text(g.gradient, precision) if g.gradient is not None
               else ("None (not connected)", "dim")]
        if texts is not None:
            row.append(str(texts.get(g.name) or ""))
        rows.append(row)
    if rows:
        render.show_table(out, headers, rows)
    render.print_notes(out, outcome.notes)
    if check is not None:
        render.print_check(out, check, precision)


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
        out = out or render.console()
        if self.error:
            render.emit(out, "jacobian (tf.GradientTape.jacobian): ", ("error:", "red"),
                         " " + self.error)
            return
        render.emit(out, ("jacobian", "bold"), "  ",
                     ("tf.GradientTape.jacobian(target, sources): each element of the "
                      "target, not their sum", "dim"))
        _emit_sources(out, self.result.sources)
        _jacobian_table(out, self.result, precision)
