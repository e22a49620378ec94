"""What each command of the table (``app.COMMANDS``) runs: the four modes, compare and
functions here; ``--at`` (many points) in batch.py, the higher derivatives in higher.py,
forward mode in jvp.py, plot and minimize in their own modules. Each is a function of the
command's ``Settings``: parse, evaluate in a mode, check if asked, render.
"""
from __future__ import annotations

import typer

from .common import (
    Settings,
    check_outcome,
    compare_json,
    compare_modes,
    guarded,
    mode_options,
    check_graph,
    observed,
    prepare,
    print_explanation,
    write_graph,
    print_compare_plain,
    refuse,
    split,
    symbolic_texts,
)


# ---------------------------------------------------------------------------------------
# The four modes: tape, grad (and grad --order), implicit, value-grad
# ---------------------------------------------------------------------------------------
def tape(s: Settings) -> None:
    run_mode("tape", s)


def grad(s: Settings) -> None:
    """grad, or with ``--order N`` the N-th derivative (cli/higher.py)."""
    if s.order is None:
        return run_mode("grad", s)
    if s.at is not None:
        guarded(lambda: refuse("--order and --at cannot be used together yet"))
    from .batch import check_options
    guarded(lambda: check_options(s))
    from .higher import run_grad_order
    return run_grad_order(s)


def implicit(s: Settings) -> None:
    run_mode("implicit", s)


def value_grad(s: Settings) -> None:
    run_mode("value-grad", s)


def run_mode(mode: str, s: Settings) -> None:
    """One of the four modes at one point, or with ``--at`` at many (cli/batch.py,
    imported only then)."""
    from ..run.modes import run_mode as compute
    if s.at is not None:
        if s.debug_nans or s.explain or s.explain_all or s.graph is not None:
            guarded(lambda: refuse("--debug-nans, --explain and --graph cannot be used "
                                   "with --at yet: run the point alone"))
        from . import batch, scale
        run = scale.run if scale.wanted(s) else batch.run   # (partitioned, --dask, --reduce)
        return run(mode, lambda: {"mode": mode, "options": mode_options(s)}, s, prepare)
    if s.output is not None or s.csv or s.chunk is not None or s.skip_bad_rows \
            or s.check_rows is not None or s.seed is not None or s.columns or s.keep \
            or s.delimiter is not None or s.no_header \
            or getattr(s, "dask", None) is not None or getattr(s, "reduce", None) is not None:
        from .batch import check_options
        guarded(lambda: check_options(s))

    def work():
        options = mode_options(s)  # a malformed option before any file is read
        check_graph(s)
        model = prepare(s)
        outcome, explanation = observed(s, model, lambda: compute(mode, model, options))
        check = check_outcome(s, model, outcome) if s.check else None
        symbolic = symbolic_texts(s, model, outcome) if s.symbolic else None
        return model, outcome, check, symbolic, explanation

    model, outcome, check, symbolic, explanation = guarded(work)
    from . import render
    if s.json_out:
        obj = render.json_writer.as_json(outcome.report(check, symbolic))
        if explanation is not None:
            obj["explain"] = explanation
        render.json_writer.write_json(obj)
    elif s.plain:
        render.plain_writer.write(outcome.report(), s.precision)
        render.print_check_failures({"": check})
    else:
        render.show(outcome.page(s.precision, check, symbolic, model.target_name))
    print_explanation(s, explanation)
    write_graph(s)
    # Only a mismatch fails: "nothing to check" is said, not failed (docs/check.md).
    if check is not None and check["verdict"] == "mismatch":
        raise typer.Exit(1)


# ---------------------------------------------------------------------------------------
# compare: the four APIs side by side (with --tangent, a jvp row: cli/jvp.py)
# ---------------------------------------------------------------------------------------
def compare(s: Settings) -> None:
    if s.tangent:
        from .jvp import run_compare
        return run_compare(s)

    def work():
        mode_options(s)  # a malformed option is the command's error, not one mode's
        model = prepare(s)
        results, checks, symbolics = compare_modes(s, model)
        return results, checks, symbolics, _jacobian_row(model, results)

    results, checks, symbolics, jacobian = guarded(work)
    from . import render
    if s.json_out:
        obj = compare_json(results, checks, symbolics)
        if jacobian is not None:
            obj["jacobian"] = jacobian.to_json()
        render.json_writer.write_json(obj)
    elif s.plain:
        print_compare_plain(results, s.precision)
        if jacobian is not None:
            jacobian.print_plain(s.precision)
        render.print_check_failures(checks)
    else:
        from ..run.modes import compare_page
        render.show(compare_page(results, s.precision, checks if s.check else None,
                                 symbolics if s.symbolic else None))
        if jacobian is not None:
            jacobian.print_human(s.precision)
    # Only a mismatch fails (as for one mode): "nothing to check" is said, not failed.
    if any(render.check_verdict(check) == "mismatch" for check in checks.values()):
        raise typer.Exit(1)


def _jacobian_row(model, results: dict):
    """compare's jacobian row (cli/higher.py), where the target is not a scalar: there
    the four APIs differentiate the sum of its elements, the Jacobian each element."""
    value = next((r.value for r in results.values()
                  if not isinstance(r, str) and r.value is not None), None)
    if value is None or getattr(value, "ndim", 0) == 0:
        return None
    from .higher import CompareRow
    return CompareRow(model)


# ---------------------------------------------------------------------------------------
# jacobian, hessian, jvp: one point (cli/higher.py, cli/jvp.py) or many (cli/batch.py)
# ---------------------------------------------------------------------------------------
def jacobian(s: Settings) -> None:
    from . import higher
    _many_or_one(s, "jacobian", lambda: {"wrt": split(s.wrt), "mode": s.mode},
                 higher.run_jacobian)


def hessian(s: Settings) -> None:
    from . import higher
    _many_or_one(s, "hessian", lambda: {"wrt": split(s.wrt)}, higher.run_hessian)


def jvp(s: Settings) -> None:
    from . import jvp as forward
    _many_or_one(s, "jvp", lambda: {"tangents": s.tangent}, forward.run_jvp)


def _many_or_one(s: Settings, name: str, arguments, one) -> None:
    """A command with ``--at`` (many points: ``cli/batch.py`` maps the record's per-point
    function, given ``arguments()``) or without (``one``)."""
    from . import batch
    if s.at is None:
        guarded(lambda: batch.check_options(s))
        return one(s)
    if s.debug_nans or s.explain or s.explain_all:
        guarded(lambda: refuse("--debug-nans and --explain cannot be used with --at yet: "
                               "run the point alone"))
    from . import scale
    run = scale.run if scale.wanted(s) else batch.run   # (partitioned, --dask)
    return run(name, arguments, s, prepare)


# ---------------------------------------------------------------------------------------
# functions: the function table
# ---------------------------------------------------------------------------------------
def functions(s: Settings) -> None:
    from ..run.functions import function_table
    from . import render
    table = function_table()
    if s.json_out:
        render.json_writer.write(table.report())
    else:
        render.show(table.page())
