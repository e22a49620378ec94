"""``--check`` for the higher derivatives: ``jacobian``, ``hessian`` and ``grad --order``.

The same two independent references as the gradient check, the same limits, worker
processes, time limit, tolerances and statuses (see :mod:`gradcli.check.compare`):

- sympy: the program translated from its tree (:func:`gradcli.check.symbolic.to_sympy`,
  arrays expanded into element symbols, at most 256 of them), then the Jacobian of the
  target's elements (``diff`` of each element by each source symbol, what
  ``sympy.Matrix.jacobian`` computes), the Hessian (``diff`` of ``diff``, what
  ``sympy.hessian`` computes, with the gradient on the way) or the N-th derivative
  (``diff(f, x, N)``), evaluated at the point with the gradient check's kink, singularity
  and overflow detection applied to the last differentiation;
- finite differences: central differences (every element, never a random direction) of
  the target's elements for ``jacobian``, of the reverse-mode gradient for ``hessian``
  (computed by the engine in float64 at each nudged point), and of the (N-1)-th
  reverse-mode derivative for ``--order N``.

The ``check`` object has the gradient check's form; its entries are, for ``jacobian``,
one per source (``name`` the source; the Jacobian's indices in a reason are the
target's, then the source's); for ``hessian``, ``gradient`` then one per Hessian row,
``hessian row x`` (a reason's index is the column, in ``labels`` order); for ``--order``,
one per argument.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .compare import (
    CheckReport,
    Tolerances,
    outside_declarations,
    float_array,
    check_timeout,
    compare_gradient,
)
from .numeric import NumericGradient, numeric_gradient, numeric_in_worker
from .symbolic import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_ELEMENTS,
    DEFAULT_MAX_INTERMEDIATE,
    SymbolicGradient,
    SymbolicSkip,
    tree_depth,
    drop_step_derivatives,
    symbolic_gradient,
    run_worker,
    scalar_target,
    short_text,
    input_elements,
    to_sympy,
)

_SYMBOLIC_FIELDS = ("value", "kink", "kind")
_NUMERIC_FIELDS = ("value", "error", "kink", "kind", "detail", "unresolved", "rounding")


# ---------------------------------------------------------------------------------------
# Entry points (the command line's)
# ---------------------------------------------------------------------------------------
def check_jacobian(model: Any, result: Any, *, rtol: float | None = None,
                   atol: float | None = None, timeout: float = 5.0) -> dict:
    """``jacobian --check``: each source's Jacobian against sympy and finite
    differences of the target's elements."""
    timeout = check_timeout(timeout)
    names = [j.name for j in result.jacobians]
    point = _point(model)
    tshape = tuple(np.shape(result.value))
    size = int(np.prod(tshape, dtype=np.int64))

    def job(deadline: float) -> dict:
        f = _evaluator(model, point, lambda copy, args, sources: copy.function(*args))
        rows = [numeric_gradient(lambda v, k=k: f(v)[k], point, names,
                                 full_limit=_everything(point, names), deadline=deadline)
                for k in range(size)]
        return {name: _stack([row[name] for row in rows], name, tshape) for name in names}

    numeric = numeric_in_worker([job], names, timeout)
    sym, num = _both(numeric, lambda: _symbolic(
        model, point, names, {"compute": _jacobian_compute, "names": names}, timeout))
    tol = Tolerances.for_dtype(model.dtype, rtol, atol)
    return CheckReport([compare_gradient(j.name, j.jacobian, sym[j.name], num[j.name], tol)
                        for j in result.jacobians], tol).to_json()


def check_hessian(model: Any, result: Any, *, rtol: float | None = None,
                  atol: float | None = None, timeout: float = 5.0) -> dict:
    """``hessian --check``: the gradient and each Hessian row against sympy and finite
    differences (of the target for the gradient, of the reverse-mode gradient for the
    rows)."""
    timeout = check_timeout(timeout)
    names = list(result.names)
    point = _point(model)
    rows = [f"hessian row {label}" for label in result.labels]
    keys = ["gradient"] + rows

    def job(deadline: float) -> dict:
        value = _evaluator(model, point, lambda copy, args, sources: copy.function(*args))
        gradient = _evaluator(model, point, _gradient_of(names))
        full = _everything(point, names)
        out = {"gradient": _concat(numeric_gradient(lambda v: value(v)[0], point, names,
                                                    full_limit=full, deadline=deadline),
                                   names, "gradient")}
        for i, key in enumerate(rows):
            out[key] = _concat(numeric_gradient(lambda v, i=i: gradient(v)[i], point, names,
                                                full_limit=full, deadline=deadline),
                               names, key)
        return out

    numeric = numeric_in_worker([job], keys, timeout)
    sym, num = _both(numeric, lambda: _symbolic(
        model, point, keys, {"compute": _hessian_compute, "names": names, "rows": rows},
        timeout))
    tol = Tolerances.for_dtype(model.dtype, rtol, atol)
    checks = [compare_gradient("gradient", result.gradient, sym["gradient"], num["gradient"],
                               tol)]
    checks += [compare_gradient(key, result.hessian[i], sym[key], num[key], tol)
               for i, key in enumerate(rows)]
    return CheckReport(checks, tol).to_json()


def check_order(model: Any, outcome: Any, order: int, *, rtol: float | None = None,
                atol: float | None = None, timeout: float = 5.0, check: bool = True,
                want_text: bool = False) -> tuple[dict | None, dict | None]:
    """``grad --order N --check`` (and ``--symbolic``): each argument's N-th derivative
    against sympy's ``diff(f, x, N)`` and finite differences of the (N-1)-th reverse-mode
    derivative. Returns ``(check object or None, {name: sympy text} or None)``: with
    ``check`` False (``--symbolic`` alone) no finite differences are taken."""
    from ..run.derivatives import nth_derivative
    timeout = check_timeout(timeout)
    names = [g.name for g in outcome.gradients]
    point = _point(model)
    jobs = []
    if check:
        def job(deadline: float) -> dict:
            out = {}
            for name in names:
                i = model.arg_names.index(name)

                def lower(copy, args, sources, i=i):
                    def along(x):
                        return copy.function(*args[:i], x, *args[i + 1:])
                    return nth_derivative(along, args[i], order - 1)
                f = _evaluator(model, point, lower)
                out.update(numeric_gradient(lambda v, f=f: f(v)[0], point, [name],
                                            deadline=deadline))
            return out
        jobs.append(job)
    numeric = numeric_in_worker(jobs, names, timeout) if jobs else None
    sym, num = _both(numeric, lambda: _symbolic(
        model, point, names, {"compute": _order_compute, "names": names, "order": order,
                              "want_text": want_text}, timeout))
    texts = ({name: sym[name].text if sym[name].skipped is None
              else f"skipped: {sym[name].skipped}" for name in names} if want_text else None)
    if numeric is None:
        return None, texts
    tol = Tolerances.for_dtype(model.dtype, rtol, atol)
    report = CheckReport([compare_gradient(g.name, g.gradient, sym[g.name], num[g.name], tol)
                          for g in outcome.gradients], tol)
    return report.to_json(), texts


def _both(numeric, symbolic) -> tuple:
    """sympy's results (``symbolic()``, waiting for its worker) and the finite
    differences' (``numeric.collect()``; their worker's results are read as they come,
    while sympy runs: see :class:`gradcli.check.numeric.NumericRun`)."""
    sym = symbolic()
    return sym, None if numeric is None else numeric.collect()


# ---------------------------------------------------------------------------------------
# Finite differences: float64 copies of the model, evaluated at nudged points
# ---------------------------------------------------------------------------------------
def _point(model: Any) -> dict:
    point = {name: float_array(value) for name, value in zip(model.arg_names, model.arg_values)}
    point.update({name: float_array(v) for name, v in model.variables.items()})
    return point


def _everything(point: dict, names: list[str]) -> int:
    """A full_limit that differences every element (never one random direction: each
    entry of a Jacobian or Hessian is compared)."""
    return max([int(np.size(point[n])) for n in names if n in point] + [1])


def _gradient_of(names: list[str]):
    """The reverse-mode gradient over the flattened sources, at the copy's values."""
    def gradient(copy, args, sources):
        from .. import engine as gc
        objects = [sources[n] for n in names]
        with gc.GradientTape(watch_accessed_variables=False) as tape:
            for obj in objects:
                tape.watch(obj)
            target = copy.function(*args)
        grads = tape.gradient(target, objects, unconnected_gradients="zero")
        return np.concatenate([np.ravel(g.numpy()) for g in grads])
    return gradient


def _evaluator(model: Any, point: dict, out):
    """``f(values) -> flat float64 array``: ``out(copy, args, sources)`` on a float64
    copy of the model with ``values`` (every ``stop_gradient`` held at its value at the
    point, as the tape holds it). Results are kept by point, so that the rows of a
    Jacobian, which nudge the same points, evaluate each point once."""
    from .. import engine as gc
    from ..engine.rules.elementwise import hold_stop_gradients
    from ..lang.evaluate import build
    copy = build(model.program, outside_declarations(model), dtype="float64",
                 target=model.target_name)

    def evaluate(values: dict) -> np.ndarray:
        for name, variable in copy.variables.items():
            if name in values:
                variable.assign(values[name])
        args = [gc.constant(values[name]) for name in copy.arg_names]
        sources = {**dict(zip(copy.arg_names, args)), **copy.variables}
        result = out(copy, args, sources)
        result = result.numpy() if hasattr(result, "numpy") else result
        return np.ravel(np.asarray(result, dtype=np.float64))

    with hold_stop_gradients() as held:
        try:
            evaluate(point)
        except Exception:  # noqa: BLE001 - f reports the failure when it is called
            pass
    cache: dict = {}

    def f(values: dict) -> np.ndarray:
        key = tuple((name, values[name].tobytes()) for name in sorted(values))
        if key not in cache:
            with hold_stop_gradients(held.values):
                cache[key] = evaluate(values)
        return cache[key]
    return f


# ---------------------------------------------------------------------------------------
# Putting per-row results together
# ---------------------------------------------------------------------------------------
def _stack(parts: list, name: str, lead: tuple):
    """Results for each element of the target (same kind, each shaped like the source)
    as one shaped ``lead + source.shape``."""
    return _join(parts, name, lambda arrays: np.reshape(
        np.stack(arrays), lead + np.shape(arrays[0])))


def _concat(parts: dict, names: list[str], name: str):
    """Results for each source as one over the flattened sources."""
    return _join([parts[n] for n in names], name,
                 lambda arrays: np.concatenate([np.ravel(a) for a in arrays]))


def _join(parts: list, name: str, combine):
    if not parts:  # a target without elements: nothing to compare
        return NumericGradient(name, "central", note="the target has no elements")
    first = parts[0]
    notes = "; ".join(dict.fromkeys(p.note for p in parts if p.note)) or None
    if isinstance(first, SymbolicGradient):
        skipped = next((p.skipped for p in parts if p.skipped), None)
        if skipped:
            return SymbolicGradient(name, skipped=skipped)
        fields = _SYMBOLIC_FIELDS
        out = SymbolicGradient(name, note=short_text(notes, 400) if notes else None)
    else:
        if any(p.value is None for p in parts):
            return NumericGradient(name, "central", note=notes or "not taken")
        fields = _NUMERIC_FIELDS
        out = NumericGradient(name, "central", note=notes)
    for field in fields:
        arrays = [getattr(p, field) for p in parts]
        if all(a is not None for a in arrays):
            setattr(out, field, combine([np.asarray(a) for a in arrays]))
    return out


# ---------------------------------------------------------------------------------------
# sympy (in the gradient check's worker process, killed at the time limit)
# ---------------------------------------------------------------------------------------
def _symbolic(model: Any, point: dict, keys: list[str], job: dict,
              timeout: float) -> dict[str, SymbolicGradient]:
    program = model.program
    names = job["names"]
    n = input_elements(program, point, names)
    if n > DEFAULT_MAX_ELEMENTS:
        reason = f"too large for a symbolic check ({n} elements > {DEFAULT_MAX_ELEMENTS})"
        return {key: SymbolicGradient(key, skipped=reason) for key in keys}
    import sympy  # noqa: F401 - here, on the check path only; before fork, as symbolic.py

    from ..engine.core.table import lookup
    job = {**job, "program": program, "point": point, "target": model.target_name,
           "keys": keys, "lookup": lookup}
    return run_worker(job, keys, timeout)


def _translate(sp, job: dict):
    """The program in sympy and its target, or SymbolicSkip."""
    translated = to_sympy(job["program"], job["point"], job["target"], wrt=job["names"],
                          max_elements=DEFAULT_MAX_ELEMENTS,
                          max_intermediate=DEFAULT_MAX_INTERMEDIATE, lookup=job["lookup"])
    if translated.skipped is not None:
        raise SymbolicSkip(translated.skipped)
    target = translated.target
    scalar_target(sp, target)  # refuses a boolean target
    for element in target.flat:
        depth = tree_depth(element)
        if depth > DEFAULT_MAX_DEPTH:
            raise SymbolicSkip(f"too deep for sympy (expression nesting {depth} > "
                               f"{DEFAULT_MAX_DEPTH})")
    for name in job["names"]:
        if name not in translated.sources:
            raise SymbolicSkip(f"no value for {name!r}")
    return translated, target


def _guarded(job: dict, emit, work) -> None:
    """Run ``work()``; anything sympy does wrong skips every key not yet given."""
    done: set = set()

    def give(key, result):
        done.add(key)
        emit(key, result)
    try:
        work(give)
    except SymbolicSkip as skip:
        reason = skip.reason
    except RecursionError:
        reason = "too deep for sympy (RecursionError)"
    except MemoryError:
        reason = "sympy ran out of memory"
    except Exception as err:  # noqa: BLE001 - any sympy failure is a skip, never a crash
        reason = f"sympy failed: {type(err).__name__}: {short_text(str(err))}"
    else:
        return
    for key in job["keys"]:
        if key not in done:
            emit(key, SymbolicGradient(key, skipped=reason))


def _jacobian_compute(sp, job: dict, emit) -> None:
    def work(give):
        translated, target = _translate(sp, job)
        for name in job["names"]:
            source = translated.sources[name]
            rows = [symbolic_gradient(sp, name, translated, target[idx], source, evaluate=True,
                              want_text=False) for idx in np.ndindex(target.shape)]
            if not rows:
                raise SymbolicSkip("the target has no elements")
            give(name, _stack(rows, name, target.shape))
    _guarded(job, emit, work)


def _hessian_compute(sp, job: dict, emit) -> None:
    def work(give):
        translated, target = _translate(sp, job)
        expr = scalar_target(sp, target)
        symbols = np.array([s for name in job["names"]
                            for s in np.ravel(translated.sources[name])] or [], dtype=object)
        give("gradient", symbolic_gradient(sp, "gradient", translated, expr, symbols, evaluate=True,
                                   want_text=False))
        for key, symbol in zip(job["rows"], symbols):
            first = drop_step_derivatives(sp, sp.diff(expr, symbol))
            give(key, symbolic_gradient(sp, key, translated, first, symbols, evaluate=True,
                                want_text=False))
    _guarded(job, emit, work)


def _order_compute(sp, job: dict, emit) -> None:
    def work(give):
        translated, target = _translate(sp, job)
        expr = scalar_target(sp, target)
        for name in job["names"]:
            source = translated.sources[name]
            lower = expr
            for _ in range(job["order"] - 1):
                lower = drop_step_derivatives(sp, sp.diff(lower, source[()]))
            give(name, symbolic_gradient(sp, name, translated, lower, source, evaluate=True,
                                 want_text=job["want_text"]))
    _guarded(job, emit, work)
