"""--explain (issue 23, part 1): the recorded operations with their program text, and the
backward pass with the adjoint that reached each node.

Truths, independent of the backward pass being explained:
- every node's adjoint equals the finite difference of the target with respect to that
  node: the program is run again with the node's value moved by ±eps·v (an observer
  changes the operation's output as it is made), for every entry of the table;
- every node's span points at text that, parsed and evaluated alone, gives the node's
  value (for the last of the operations that share a span: a function the table builds
  from others runs several).
"""
from __future__ import annotations

import numpy as np
import pytest

from gradcli.errors import ArgumentError
from gradcli.engine.core.observe import Observer, Recorder, observing
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.lang import Declarations, build, parse_program
from gradcli.run import explain as explain_module
from gradcli.run.modes import ModeOptions, run_mode
from table_samples import sample_programs


def _entries() -> list[str]:
    """Every differentiable entry of the table."""
    return [name for name in ORDER if REGISTRY[name].differentiable]


def _cases(name: str):
    """(program, point) with the entry between recorded nodes: its inputs are computed
    ((a * 2) / 2, exact), its output feeds sin and a weighted sum. Entries with samples
    use them; the others are called on 2x3 matrices (3x3 to multiply) from their sample range, with their
    default parameters (a variadic entry on the list [a0, a1])."""
    op = REGISTRY[name]
    if op.samples is not None:
        cases = [(text, point) for _, text, point, _, _ in sample_programs(name)]
    else:
        rng = np.random.default_rng(len(name))
        lo, hi = op.sample
        n = 2 if op.variadic else len(op.inputs)
        shapes = [(3, 3)] * n if name in ("matmul", "dot") else [(2, 3)] * n
        point = {f"a{i}": rng.uniform(lo, hi, size=shape) for i, shape in enumerate(shapes)}
        inputs = ", ".join(point)
        cases = [(f"{name}([{inputs}])" if op.variadic else f"{name}({inputs})", point)]
    out = []
    for text, point in cases[:2]:
        for key in point:
            text = text.replace(f"{key}", f"(({key} * 2) / 2)", 1)
        out.append((f"sum(sin({text}) * 0.75)", point))
    return out


# Entries that cannot be called with their defaults alone (a parameter is required):
# their samples are what tests them when they have some; these have none.
NEEDS_PARAMETERS = {"reshape", "broadcast_to", "repeat", "tile", "expand_dims", "take",
                    "gather", "take_along_axis", "einsum", "pad", "moveaxis", "swapaxes", "roll"}


def _run(program: str, point: dict):
    decls = Declarations.from_options(arg=[f"{k}={_literal(v)}" for k, v in point.items()])
    model = build(parse_program(program), decls)
    with observing(Recorder()) as recorder:
        outcome = run_mode("tape", model, ModeOptions(watch=list(point)))
    return model, recorder, outcome


def _literal(v) -> str:
    return np.array2string(np.asarray(v, dtype=float), separator=", ", threshold=10**6,
                           floatmode="unique").replace("\n", "")


class _Moved(Observer):
    """Adds ``delta`` to the output of the ``k``-th operation run."""

    def __init__(self, k: int, delta):
        self.k, self.delta, self.count = k, delta, 0

    def forward(self, row) -> None:
        out = row[1]
        if self.count == self.k:
            out._value = out._value + self.delta
        self.count += 1


def _recorded_positions(recorder) -> list[int]:
    """Where explain's nodes n1, n2, ... are among all the operations run."""
    return [i for i, (op, out, _, _) in enumerate(recorder.rows())
            if out._node is not None and out._node.op is op]


CALLABLE = [name for name in _entries() if name not in NEEDS_PARAMETERS]


@pytest.mark.parametrize("name", CALLABLE)
def test_adjoints_equal_finite_differences_of_the_target(name, monkeypatch):
    monkeypatch.setattr(explain_module, "FULL_ARRAY", 10**6)
    rng = np.random.default_rng(0)
    for program, point in _cases(name):
        model, recorder, outcome = _run(program, point)
        obj = explain_module.explain(recorder, model, outcome, show_all=True)
        positions = _recorded_positions(recorder)
        adjoints = {e["id"]: e["adjoint"] for e in obj["backward"]}
        assert adjoints, program
        for entry in obj["forward"]:
            if entry["id"] not in adjoints:
                continue
            k = positions[int(entry["id"][1:]) - 1]
            value = np.asarray(entry["value"], dtype=float)
            v = rng.standard_normal(value.shape)
            eps = 1e-6 * max(1.0, float(np.max(np.abs(value))) if value.size else 1.0)

            def target(sign):
                with observing(_Moved(k, sign * eps * v)):
                    return float(np.sum(model.function(*model.arg_values).numpy()))
            fd = (target(1) - target(-1)) / (2 * eps)
            exact = float(np.sum(np.asarray(adjoints[entry["id"]], dtype=float) * v))
            assert exact == pytest.approx(fd, rel=1e-4, abs=1e-6), (program, entry)


@pytest.mark.parametrize("name", CALLABLE)
def test_every_span_evaluates_alone_to_its_value(name, monkeypatch):
    monkeypatch.setattr(explain_module, "FULL_ARRAY", 10**6)
    for program, point in _cases(name):
        model, recorder, outcome = _run(program, point)
        obj = explain_module.explain(recorder, model, outcome, show_all=True)
        last = {}
        for entry in obj["forward"]:
            assert program[entry["span"][0]:entry["span"][1]] == entry["text"]
            last[tuple(entry["span"])] = entry
        for entry in last.values():
            decls = Declarations.from_options(
                arg=[f"{k}={_literal(v)}" for k, v in point.items()])
            try:
                alone = build(parse_program(entry["text"]), decls)
            except ArgumentError as err:  # a call giving several tensors: its text is
                assert "pick one with an index" in str(err)  # the call, its value all
                continue                                  # of them (shown picked next)
            value = alone.function(*alone.arg_values).numpy()
            np.testing.assert_allclose(np.asarray(entry["value"], dtype=float), value,
                                       rtol=1e-12, atol=1e-14, err_msg=entry["text"])


def test_sources_without_gradient_say_why():
    program = "y = x + stop_gradient(w)*2\ny + where(v > 0, 1, 0)"
    decls = Declarations.from_options(var=["x=1", "w=2", "v=3", "u=4"])
    model = build(parse_program(program), decls)
    with observing(Recorder()) as recorder:
        outcome = run_mode("value-grad", model)
    why = {s["name"]: s.get("why") for s in
           explain_module.explain(recorder, model, outcome)["sources"]}
    assert why["x"] is None
    assert "stop_gradient" in why["w"]
    assert "greater (v > 0)" in why["v"]
    model = build(parse_program("x * 2"), Declarations.from_options(
        arg=["x=1"], var=["u=4"]))
    with observing(Recorder()) as recorder:
        outcome = run_mode("tape", model, ModeOptions(wrt=["x", "u"]))
    why = {s["name"]: s.get("why") for s in
           explain_module.explain(recorder, model, outcome)["sources"]}
    assert why == {"x": "the tape did not watch it (add --watch x)",
                   "u": "not read by the program"}


def test_each_operation_points_at_its_own_sub_expression():
    """The evaluator tells an observer the node of each step that runs operations only
    (a name read, an assignment, picking one output of several run none): every
    operation still points at its own text (truth: the program, read by hand)."""
    program = "s = a + transpose(a)\nm = eigh(s)[1][0]\ny = m * b\nsum(y * m)"
    model = build(parse_program(program), Declarations.from_options(
        arg=["a=[[2, 1], [0, 3]]", "b=[1, 2]"]))
    with observing(Recorder()) as recorder:
        model.function(*model.arg_values)
    where = explain_module.Where(program)
    assert [(op.name, where.of(node)[0]) for op, _, _, node in recorder.rows()] == [
        ("transpose", "transpose(a)"), ("add", "a + transpose(a)"),
        ("eigh", "eigh(s)"), ("getitem", "eigh(s)"), ("getitem", "eigh(s)"),  # (its outputs)
        ("getitem", "eigh(s)[1][0]"), ("multiply", "m * b"), ("multiply", "y * m"),
        ("sum", "sum(y * m)")]


@pytest.mark.parametrize("x, middle_kept", [("[0.1, 0.2, 0.3]", False), ("0.2", True)])
def test_ends_keeps_the_first_and_last_array_adjoints_and_every_scalar_one(x, middle_kept):
    """With ``ends`` (--explain) an array adjoint kept is one fast.py cannot reuse, so on
    arrays only those of the first and the last ``ends`` nodes taken are kept; scalars
    cost nothing kept, so all are. Truth: the positions, counted by hand (a chain of 12
    sin then a sum: 13 nodes), and the values, those of a recorder keeping every one."""
    program = "sum(" + "sin(" * 12 + "x" + ")" * 13
    model = build(parse_program(program), Declarations.from_options(arg=[f"x={x}"]))
    taken = {}
    for ends in (None, 3):
        with observing(Recorder(flows=False, ends=ends)) as recorder:
            run_mode("grad", model)
        taken[ends] = recorder.taken[1::2]  # (node, adjoint, node, ...)
    assert len(taken[3]) == 13
    for k, (every, kept) in enumerate(zip(taken[None], taken[3])):
        if k < 3 or k >= 10 or middle_kept:
            np.testing.assert_array_equal(kept, every)
        else:
            assert kept is None, k


def _library_run(nested: bool):
    """sin(x), then cos of a constant (a row no tape records), then cos(y) (recorded,
    seen by an inner observer when ``nested``), then exp: what the recorder saw."""
    import gradcli as gc
    x = gc.constant(0.5)
    with observing(Recorder()) as recorder, gc.GradientTape() as tape:
        tape.watch(x)
        y = gc.sin(x)
        gc.cos(gc.constant(2.0))
        if nested:
            with observing(Observer()):
                z = gc.cos(y)
        else:
            z = gc.cos(y)
        gc.exp(z)
    return recorder


@pytest.mark.parametrize("nested", [False, True])
def test_ids_number_the_recorded_rows_in_the_order_run(nested):
    """``recorded`` numbers the rows whose operation a tape recorded, n1, n2, ... in the
    order run, skipping the others; when an inner observer saw some of the run the
    recorder did not, its rows still get 1, 2, ... (truth: the rows, read one by one)."""
    recorder = _library_run(nested)
    assert recorder.alone is not nested
    rows, ids = explain_module.recorded(recorder)
    truth = [row for row in recorder.rows() if row[1]._node is not None]
    assert [op.name for op, _, _, _ in truth] == (["sin", "exp"] if nested else
                                                  ["sin", "cos", "exp"])
    assert list(rows) == truth
    assert [ids[out._node] for _, out, _, _ in truth] == [
        f"n{k}" for k in range(1, len(truth) + 1)]
    assert [ids.row(rows, out._node) for _, out, _, _ in truth] == truth
    unrecorded = [out._node for _, out, _, _ in recorder.rows() if out._node is None]
    assert len(unrecorded) == 1 and unrecorded[0] not in ids


def test_ids_by_recording_order_equal_a_count_of_the_rows():
    """A mode's run records every row: the ids come from the nodes' recording order
    without a map of them; they equal the rows counted one by one."""
    model = build(parse_program("y = sin(x) * w\nsum(y * y + cos(y))"),
                  Declarations.from_options(var=["x=[0.5, 1.5]", "w=2"]))
    with observing(Recorder()) as recorder:
        run_mode("value-grad", model)
    rows, ids = explain_module.recorded(recorder)
    assert ids.numbers is None  # (the path taken: by recording order)
    truth = recorder.rows()
    assert len(rows) == len(truth) == 6
    assert [ids[out._node] for _, out, _, _ in truth] == [f"n{k}" for k in range(1, 7)]
    taken = recorder.taken[::2]
    assert list(ids.positions(taken)) == list(range(len(taken)))
    outside = _library_run(False).rows()[0][1]._node  # (recorded, but by another run)
    assert list(ids.positions([truth[1][1]._node, outside, truth[5][1]._node])) == [0, 2]


def test_backward_pairs_shown_are_those_of_the_recorded_nodes():
    """The backward list holds the nodes taken that have ids: all of them after one pass
    over nodes recorded inside the block; not a node recorded before it; every pass's
    when there are several (truth: the pairs, tested one by one)."""
    import gradcli as gc

    def pairs(recorder):
        _, ids = explain_module.recorded(recorder)
        positions = explain_module._taken_positions(recorder, ids)
        return [recorder.taken[2 * k] for k in positions], ids

    x = gc.constant(0.5)
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gc.sin(x)  # (recorded before the recorder is installed)
        with observing(Recorder()) as recorder:
            z = gc.exp(y * 2)
            tape.gradient(z, x)
    assert recorder.passes == 1
    shown, ids = pairs(recorder)
    assert len(recorder.taken) == 6 and recorder.taken[4] is y._node  # (exp, multiply, sin)
    assert shown == recorder.taken[0:4:2] and all(node in ids for node in shown)
    assert y._node not in ids
    with observing(Recorder()) as recorder:
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            z = gc.cos(gc.sin(x))
        tape.gradient(z, x)
        tape.gradient(z, x)
    assert recorder.passes == 2
    shown, ids = pairs(recorder)
    assert shown == recorder.taken[::2] and len(shown) == 4


def test_array_summaries_skip_nans_without_a_warning():
    """An array's summary: the range of its numbers that are not nan, the mean of all
    (nan when one is), and no warning on standard error when all are nan (--json output
    stays clean). Truth: the numbers, by hand."""
    import warnings
    values = np.linspace(0.0, 1.0, 21)
    values[[0, 20]] = np.nan
    values[5] = -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert explain_module.value_json(values) == {"shape": [21], "min": "-inf",
                                                     "max": float(values[19]), "mean": "nan"}
        assert explain_module.value_json(np.full((3, 5), np.nan)) == {
            "shape": [3, 5], "min": "nan", "max": "nan", "mean": "nan"}
        assert explain_module.value_json(np.arange(12, dtype=np.float32)) == {
            "shape": [12], "min": 0.0, "max": 11.0, "mean": 5.5}


def test_where_finds_each_lines_start_from_either_end():
    """Line starts are found when asked, from the nearer end, in any order (truth: the
    lines' lengths summed, newlines counted)."""
    import itertools
    import random
    rng = random.Random(1)
    for _ in range(200):
        lines = ["".join(rng.choice("ab \t") for _ in range(rng.randint(0, 5)))
                 for _ in range(rng.randint(1, 13))]
        source = "\n".join(lines)
        before = list(itertools.accumulate(map(len, lines), initial=0))
        where = explain_module.Where(source)
        order = list(range(1, len(lines) + 1))
        rng.shuffle(order)
        for line in order:
            assert where.start(line) == before[line - 1] + line - 1, (source, line)


def test_rule_is_the_tables_maths():
    assert explain_module.rule_text(REGISTRY["sin"]) == "d sin(x) = cos(x)·dx"
    assert explain_module.rule_text(REGISTRY["multiply"]) == "d multiply(x, y) = y·dx + x·dy"
    assert explain_module.rule_text(REGISTRY["subtract"]) == "d subtract(x, y) = dx + -dy"


@pytest.mark.slow
def test_cli_explain_json_text_and_elision():
    import json

    from cli_process import run
    chain = "sin(" * 30 + "x" + ")" * 30
    r = run("grad", chain, "--arg", "x=0.5", "--explain", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)["explain"]
    assert [e["id"] for e in obj["forward"]] == [f"n{i}" for i in
                                                 [*range(1, 11), *range(21, 31)]]
    assert obj["forward_elided"] == 10 and obj["backward_elided"] == 10
    first = obj["forward"][0]
    assert first["text"] == "sin(x)" and first["span"] == [chain.index("sin(x)"),
                                                          chain.index("sin(x)") + 6]
    assert first["value"] == pytest.approx(np.sin(0.5), rel=1e-15)
    assert set(obj["backward"][0]) == {"id", "op", "text", "span", "value", "adjoint", "rule"}
    assert obj["backward"][0]["id"] == "n30" and obj["backward"][0]["adjoint"] == 1.0
    r = run("grad", chain, "--arg", "x=0.5", "--explain-all", "--json")
    assert len(json.loads(r.stdout)["explain"]["forward"]) == 30
    r = run("grad", "sin(x*y)", "--arg", "x=1", "--arg", "y=2", "--explain", "--plain")
    lines = r.stdout.splitlines()
    assert lines[:2] == [repr(float(2 * np.cos(2.0))), repr(float(np.cos(2.0)))]  # result first
    assert any("sin(x*y)" in line and "d sin(x) = cos(x)·dx" in line for line in lines)
    r = run("grad", "x", "--arg", "x=1", "--explain", "--at", "-", stdin="x\n1\n")
    assert r.returncode == 2 and "--at" in r.stderr


def test_large_arrays_keep_what_explain_saw_with_the_fast_paths_on(monkeypatch):
    """fast.py writes into arrays in place when nobody else holds them: the values and
    adjoints the recorder holds must stay as they were (truth: numpy, by hand)."""
    monkeypatch.setattr(explain_module, "FULL_ARRAY", 10**7)
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, 200_000), rng.uniform(-1, 1, 200_000)
    model = build(parse_program("u = exp(x) * y\nv = sin(u) + u\nsum(v * v)"),
                  Declarations.from_options(arg=["x=0", "y=0"]))
    model = model.bind({"x": x, "y": y})
    with observing(Recorder()) as recorder:
        outcome = run_mode("grad", model)
    obj = explain_module.explain(recorder, model, outcome, show_all=True)
    u = np.exp(x) * y
    v = np.sin(u) + u
    values = {e["text"]: np.asarray(e["value"]) for e in obj["forward"]}
    adjoints = {e["text"]: np.asarray(e["adjoint"]) for e in obj["backward"]}
    np.testing.assert_allclose(values["exp(x)"], np.exp(x), rtol=1e-15)
    np.testing.assert_allclose(values["exp(x) * y"], u, rtol=1e-15)
    np.testing.assert_allclose(values["sin(u) + u"], v, rtol=1e-15)
    np.testing.assert_allclose(adjoints["v * v"], np.ones_like(v))
    np.testing.assert_allclose(adjoints["sin(u) + u"], 2 * v, rtol=1e-14)
    np.testing.assert_allclose(adjoints["exp(x) * y"], 2 * v * (np.cos(u) + 1), rtol=1e-13)
    np.testing.assert_allclose(adjoints["exp(x)"], 2 * v * (np.cos(u) + 1) * y, rtol=1e-13)


# --- jvp --explain: forward mode, each node with its tangent -----------------------------
def _jvp_run(model, direction: dict):
    from gradcli.run.directional import run_jvp
    with observing(Recorder()) as recorder:
        outcome = run_jvp(model, direction)
    return recorder, outcome


def _with_tangents(recorder) -> list:
    """The operations that carried a tangent, as explain_jvp lists them (n1, n2, ...)."""
    return [i for i, (op, out, _, _) in enumerate(recorder.rows())
            if out._node is not None and recorder.accumulator.jvp(out) is not None]


@pytest.mark.parametrize("name", CALLABLE)
def test_jvp_tangents_equal_finite_differences_along_the_direction(name, monkeypatch):
    """Each node's tangent against (node(p + h·t) - node(p - h·t)) / 2h: the program run
    again with its arguments moved along the direction, the node read at its place."""
    monkeypatch.setattr(explain_module, "FULL_ARRAY", 10**6)
    rng = np.random.default_rng(1)
    for program, point in _cases(name):
        decls = Declarations.from_options(arg=[f"{k}={_literal(v)}" for k, v in point.items()])
        model = build(parse_program(program), decls)
        direction = {k: rng.standard_normal(np.shape(v)) for k, v in point.items()}
        recorder, outcome = _jvp_run(model, direction)
        obj = explain_module.explain(recorder, model, outcome, show_all=True)
        positions = _with_tangents(recorder)
        assert len(obj["forward"]) == len(positions) > 0, program
        h = 1e-6 * max(1.0, max(float(np.max(np.abs(v))) for v in point.values()))

        def values(sign):
            moved = {k: np.asarray(v) + sign * h * direction[k] for k, v in point.items()}
            again, _ = _jvp_run(model.bind(moved), direction)  # (the same operations:
            model.bind({})                                      # tangents' ones included)
            rows = again.rows()
            return [np.asarray(rows[k][1]._value, dtype=float) for k in positions]
        up, down = values(1), values(-1)
        for entry, hi, lo in zip(obj["forward"], up, down):
            fd = (hi - lo) / (2 * h)
            scale = max(1.0, float(np.max(np.abs(fd))) if fd.size else 1.0)
            np.testing.assert_allclose(np.asarray(entry["tangent"], dtype=float), fd,
                                       rtol=1e-4, atol=1e-6 * scale,
                                       err_msg=f"{program}: {entry['id']} {entry['text']}")


def test_jvp_explain_json_and_text_by_hand():
    """d(x*y) along (1, 0.5) at (0.5, 2) is y·1 + x·0.5 = 2.25; d sin(x*y) = cos(1)·2.25;
    d x^2 = 2x·1 = 1; a name the direction does not reach (a = 3*y with y held) is not
    listed, and the last add's tangent is their sum."""
    from cli_process import run
    import json
    r = run("jvp", "a = 3*z\nsin(x*y) + x^2 + a", "--arg", "x=0.5", "--arg", "y=2",
            "--arg", "z=1", "--tangent", "x=1", "--tangent", "y=0.5", "--explain", "--json")
    assert r.returncode == 0, r.stderr
    forward = json.loads(r.stdout)["explain"]["forward"]
    tangents = {e["text"]: e["tangent"] for e in forward}
    assert tangents["x*y"] == 2.25
    assert tangents["sin(x*y)"] == pytest.approx(np.cos(1.0) * 2.25, rel=1e-15)
    assert tangents["x^2"] == 1.0
    assert "3*z" not in tangents
    assert tangents["sin(x*y) + x^2 + a"] == pytest.approx(np.cos(1.0) * 2.25 + 1.0, rel=1e-15)
    text = run("jvp", "sin(x)", "--arg", "x=0", "--tangent", "x=2", "--explain", "--plain")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[2:] == [
        "forward mode (1 operation the direction reaches, in the order run; tangent = d node "
        "along it):",
        "  n1  sin  sin(x)  inputs x  value 0.0  tangent 2.0  d sin(x) = cos(x)·dx",
        "direction:", "  x: 2.0"]
