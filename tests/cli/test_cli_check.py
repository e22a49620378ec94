"""Issue 4: ``--check`` and ``--symbolic`` through the command line, as a user runs them.

Every test runs the console script's ``main()`` (in this process, cli_process.run_here;
the tests with a swapped rule in a subprocess of their own) and reads its exit code,
standard output and the ``check`` object of ``--json`` (schema: the docstring of
``gradcli.check.compare``).

- a corpus of programs that together call every function of the table passes ``--check``
  in ``tape``, ``grad`` and ``value-grad`` (and ``implicit`` for declarations made in the
  program): exit 0, ``passed`` true, every status ``ok``;
- ``abs``/``relu`` at 0 and a ``maximum`` tie are ``non-differentiable``, and exit 0;
- a 100-deep ``sin(sin(...))`` is ``skipped`` by sympy (too deep), the finite differences
  decide, and the command finishes quickly;
- a deliberately wrong backward rule swapped into the table makes ``--check`` exit 1 with
  a ``mismatch`` (a real process exit code, and in-process with typer's CliRunner);
- ``--symbolic`` prints sympy's derivative, in human output and in JSON;
- bad input with ``--check`` is exit 2 with nothing on standard output;
- (issue 9) no false mismatch where a reference cannot resolve the point, singular points,
  overflows and jumps are named, aliases are checked as the value they denote, and a
  check that compared nothing says "nothing to check" (exit 0), never "passed".
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import more_cases
import numpy as np
import pytest

from gradcli.engine.core.table import ORDER

from cli_process import COMMAND, run_here

TIMEOUT = 120


def run(*args):
    """The command in this process (cli_process.run_here: the same exit code and output,
    without a new interpreter's start and sympy's import for each --check); the tests with
    a swapped rule start their own process, so that the swap cannot outlive them."""
    return run_here(*args)


def checked(result) -> dict:
    """The JSON of a successful --check --json run."""
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return json.loads(result.stdout)


# ---------------------------------------------------------------------------------------
# A corpus that covers the function table, in every mode where it means something
# ---------------------------------------------------------------------------------------
# (id, program, {name: value}): the inputs are --var for tape and value-grad, --arg for grad.
CORPUS = [
    ("elementwise-smooth",
     ("sum(sin(W) * exp(-W**2) + tanh(W) * log(1 + W*W) + sqrt(2 + cos(W)) - arctan(W)"
      " + sigmoid(W) * softplus(W) + ln(2 + W) - negative(W) + atan(W) * asinh(W))"),
     {"W": "[[0.3, -0.7, 1.1], [0.2, 0.9, -1.4]]"}),
    ("elementwise-domains",
     ("sum(expm1(w) + log1p(w*w) + log2(2 + w) + log10(3 + w) + cbrt(w + 3) + tan(w / 2)"
      " + arcsin(w / 2) + arccos(w / 3) + sinh(w) + cosh(w) + arcsinh(w) + arccosh(2 + w*w)"
      " + arctanh(w / 2) + relu(w) + abs(w) + absolute(w) + square(w) + reciprocal(2 + w)"
      " + sign(w) * w + floor(w) + ceil(w) + asin(w / 3) + acos(w / 4) + acosh(3 + w)"
      " + atanh(w / 3))"),
     {"w": "[0.3, -0.7, 1.2]"}),
    ("binary-and-operators",
     ("sum(arctan2(a, b) + atan2(b, 2) + maximum(a, b) + minimum(a, b) + hypot(a, b) + a / b"
      " + b ** 1.5 - a ^ 2 + pow(b, a) + (a - b) * 3)"),
     {"a": "[0.3, 1.7, -0.6]", "b": "[1.1, 0.4, 0.8]"}),
    ("reductions-with-axis",
     ("sum(M, axis=0) @ v + mean(M, axis=1, keepdims=True)[1, 0] + prod(M, 1)[0]"
      " + max(M, axis=0)[2] + min(M) + logsumexp(M, axis=-1)[0] + norm(M, axis=0)[1]"
      " + norm(v) + sum(M, (0, 1)) + mean(v)"),
     {"M": "[[0.5, -1.2, 0.8], [1.5, 0.3, -0.4]]", "v": "[0.2, -0.9, 1.3]"}),
    ("matmul-dot-broadcast",
     ("sum(tanh(W @ X + reshape(b, (2, 1))) ** 2) + dot(W[0], X[:, 1])"
      " + sum(matmul(W, transpose(W))) + sum(dot(W, X)) + b @ b"),
     {"W": "[[0.1, -0.4, 0.3], [0.7, 0.2, -0.5]]", "b": "[0.1, -0.2]",
      "X": "[[0.5, 1.0], [-0.3, 0.2], [0.9, -1.1]]"}),
    ("shape-where-clip-softmax-constructors",
     ("sum(softmax(z) * [1, 2, 3]) + sum(softmax(stack([z, 2 * z]), axis=0)[0] * z)"
      " + sum(where(z > 0, z * z, -z)) + sum(clip(z, -0.5, 0.5))"
      " + sum(concatenate([z, z * 2])) + sum(stack([z, z ** 2], axis=1)[:, 1])"
      " + sum(z[1:] * z[:2]) + z[0] * z[-1] + sum(reshape(z, (3, 1)) * ones((3, 2)))"
      " + sum(zeros(3) + z * linspace(0, 1, 3)) + sum(eye(3) @ z) + sum(full((2, 3), 0.5) * z)"
      " + sum(arange(3) * z) + sum(transpose(reshape(z, (1, 3)), (1, 0))) * pi + e * z[1]"),
     {"z": "[0.4, -1.3, 0.9]"}),
    ("statistics-scans-elementwise",
     ("sum(var(M, axis=0, ddof=1)) + std(v) + average(M, v, axis=1)[0] + median(M, axis=1)[1]"
      " + sum(sort(M) * M) + sum(cumsum(M, axis=1)) + sum(cumprod(v)) + sum(diff(M) ^ 2)"
      " + sum(log_softmax(M)) + sum(logaddexp(M, v)) + sum(logaddexp2(v, 1))"
      " + sum(mod(M, 0.7)) + sum(fmod(v, 0.7)) + sum(floor_divide(M, 0.45) * M)"
      " + sum(exp2(v)) + sum(sinc(v)) + sum(deg2rad(M)) + sum(rad2deg(v)) + sum(fabs(M))"
      " + sum(trunc(M) * M) + sum(erf(v)) + sum(erfc(M)) + sum(fmax(M, v)) + sum(fmin(M, 0.2))"
      " + sum(nan_to_num(v)) + argmax(v) * argmin(M[0]) * sum(v) + reduce_sum(M)"),
     {"M": "[[0.5, -1.2, 0.8], [1.5, 0.3, -0.4]]", "v": "[0.2, -0.9, 1.3]"}),
    ("shape-functions",
     ("sum(expand_dims(z, 0) * M) + sum(squeeze(reshape(z, (1, 3))) ^ 2)"
      " + sum(ravel(M) * arange(6)) + sum(atleast_1d(z[0])) + sum(atleast_2d(z) @ z)"
      " + sum(atleast_3d(M)) + sum(broadcast_to(z, (2, 3)) * M) + sum(repeat(z, 2) * arange(6))"
      " + sum(tile(M, (2, 1)) ^ 2) + sum(flip(M, 1) * M) + sum(fliplr(M) * M)"
      " + sum(flipud(M) * M) + sum(roll(z, 1) * z) + sum(rot90(M) ^ 3)"
      " + sum(swapaxes(M, 0, 1) ^ 2) + sum(moveaxis(M, 0, 1) * 2)"
      " + sum(pad(z, 1, constant_values=0.5) ^ 2) + sum(vstack([M, z]) ^ 2)"
      " + sum(hstack([z, z]) * arange(6)) + sum(dstack([M, M]) ^ 2)"
      " + sum(take(M, [2, 0], axis=1) ^ 2) + sum(gather(M, [1, 1]) ^ 3)"
      " + sum(take_along_axis(M, [[0, 2], [1, 1]], 1) ^ 2)"
      " + sum(split(M, 3, axis=1)[2] ^ 2) + sum(array_split(z, 2)[1] * z[1:])"),
     {"M": "[[0.5, -1.2, 0.8], [1.5, 0.3, -0.4]]", "z": "[0.4, -1.3, 0.9]"}),
    ("linear-algebra",
     ("sum(cholesky(S) * T) + sum(inv(S) * T) + det(S) + slogdet(S)[1] + sum(solve(S, T[0]))"
      " + sum(pinv(reshape(v, (1, 3)))) + trace(T) + sum(diag(v)) + sum(diagonal(A))"
      " + sum(triu(T)) + sum(tril(A, k=-1)) + sum(outer(v, T)) + sum(inner(A, A))"
      " + sum(kron(T, v)) + sum(cross(v, v * v)) + sum(tensordot(T, A, axes=1))"
      " + norm(A, ord=1) + norm(v, ord=inf) + norm(T, ord='fro') + sum(einsum(\"ij,jk->ik\", T, A))"
      " + einsum(\"ii\", T)"),
     {"S": "[[2, 0.5], [0.5, 1.5]]", "T": "[[0.3, -0.2], [0.1, 0.4]]",
      "A": "[[0.5, -1.2, 0.8], [1.5, 0.3, -0.4]]", "v": "[0.2, -0.9, 1.3]"}),
    ("statements-and-intermediates",
     ("h = x * 2\ny = sin(h) * x + cos(x) ^ 2; y = y + sum([x, h, 1])"),
     {"x": "0.7"}),
]
MODES = ("tape", "grad", "value-grad")


def declarations(mode: str, values: dict) -> list[str]:
    option = "--arg" if mode == "grad" else "--var"
    return [part for name, value in values.items() for part in (option, f"{name}={value}")]


def corpus_cases():
    cases = [(f"{mode}-{ident}", [mode, program, *declarations(mode, values)])
             for ident, program, values in CORPUS for mode in MODES]
    # Declarations of every kind in one program: implicit finds the program's variable
    # after the --var one; tape watches an argument and takes an intermediate as a source.
    cases.append(("implicit-program-variables",
                  ["implicit", ("u = Variable(0.5); c = constant(2.0); k = Variable(3.0, "
                                "trainable=False); sum(exp(u * w) * c * k + stop_gradient(x) * w)"),
                   "--var", "w=[0.1, 0.2]", "--frozen", "f=1", "--arg", "x=[2, 3]"]))
    cases.append(("tape-watch-and-intermediate-source",
                  ["tape", "h = sin(x) * w; y = h * h + x * w", "--var", "w=1.5",
                   "--arg", "x=0.4", "--watch", "x", "--wrt", "w,x,h"]))
    # stop_gradient of a value the source also reaches the target through: see the
    # test below; here it blocks a path from another input only.
    cases.append(("grad-params-subset",
                  ["grad", "stop_gradient(a) * b + a ** 3", "--arg", "a=1.5",
                   "--arg", "b=-0.5", "--params", "1"]))
    return cases


CORPUS_CASES = corpus_cases()


@pytest.fixture(scope="module")
def corpus_results():
    """Every corpus command, run once for the module, in this process (what is tested is
    the check's verdict: a new process per command cost its start and sympy's import,
    ~0.9 s of CPU each, more than most checks here). sympy gets 60 s: on a loaded
    machine (average 23 on 2 cores) the statistics program's took longer than 20."""
    return {ident: run_here(*args, "--check", "--json", "--check-timeout", "60")
            for ident, args in CORPUS_CASES}


def test_the_corpus_calls_every_function_of_the_table():
    from gradcli.engine.core.table import REGISTRY
    text = " ".join(args[1] for _, args in CORPUS_CASES)
    operators = {"add": "+", "subtract": " - ", "multiply": "*", "divide": "/", "power": "**",
                 "matmul": "@", "negative": "-", "less": None, "less_equal": None,
                 "greater": ">", "greater_equal": None, "equal": None, "not_equal": None}
    missing = []
    for name in ORDER:
        if REGISTRY[name].kind == "comparison":
            continue  # boolean: no gradient to check (only `>` as a where condition)
        if name in more_cases.NOT_IN_LANGUAGE:
            continue
        if REGISTRY[name].sympy is None and name != "stop_gradient":
            continue  # eigh, svd: no sympy form, so never "ok" here (tests/engine/test_linalg.py)
        spelled = operators.get(name) or f"{name}("
        if spelled not in text:
            missing.append(name)
    assert missing == []


@pytest.mark.slow
@pytest.mark.parametrize("ident", [ident for ident, _ in CORPUS_CASES])
def test_check_passes_on_the_corpus(ident, corpus_results):
    result = corpus_results[ident]
    out = checked(result)
    check = out["check"]
    assert check["passed"] is True
    statuses = {g["name"]: g["status"] for g in check["gradients"]}
    assert statuses and set(statuses.values()) == {"ok"}, check["gradients"]
    # The check covers exactly the gradients the mode returned, in the same order.
    assert [g["name"] for g in check["gradients"]] == [g["name"] for g in out["gradients"]]
    for g in check["gradients"]:
        assert g["symbolic"] is not None and g["numeric"] is not None, g
        assert g["rel_error"] < 1e-6


def test_corpus_sources_are_the_modes_sources(corpus_results):
    def names(ident):
        return [g["name"] for g in checked(corpus_results[ident])["gradients"]]
    assert names("grad-matmul-dot-broadcast") == ["W", "b", "X"]
    assert names("value-grad-binary-and-operators") == ["a", "b"]
    assert names("implicit-program-variables") == ["w", "u"]
    assert names("tape-watch-and-intermediate-source") == ["w", "x", "h"]
    assert names("grad-params-subset") == ["b"]


@pytest.mark.slow
def test_stop_gradient_of_the_source_itself_passes_the_check():
    result = run("value-grad", "stop_gradient(w) * w", "--var", "w=0.5", "--check", "--json")
    out = checked(result)
    assert out["gradients"][0]["gradient"] == 0.5  # d/dw of w0 * w: the tape is right
    assert out["check"]["passed"] is True


# ---------------------------------------------------------------------------------------
# Kinks
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("program, declared, tape, kink", [
    ("abs(x)", ["--var", "x=0"], {"x": 0.0}, "Abs(0)"),
    ("relu(x)", ["--var", "x=0"], {"x": 0.0}, "Max"),
    ("maximum(a, b)", ["--var", "a=1", "--var", "b=1"], {"a": 0.5, "b": 0.5}, "tie"),
])
def test_kinks_are_non_differentiable_and_exit_0(program, declared, tape, kink):
    out = checked(run("value-grad", program, *declared, "--check", "--json"))
    check = out["check"]
    assert check["passed"] is True
    for g in check["gradients"]:
        assert g["status"] == "non-differentiable", g
        assert "kink" in g["reason"] and kink in g["reason"]
        assert g["tape"] == tape[g["name"]]  # the PyTorch/sympy convention
    assert [g["name"] for g in check["gradients"]] == list(tape)


# ---------------------------------------------------------------------------------------
# Too deep for sympy
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_hundred_deep_sin_chain_is_skipped_and_finite_differences_decide():
    # 100 nested calls: exactly the language's nesting limit of 100 brackets (101 is refused,
    # see the last assert). Nested text is what makes sympy's expression 100 deep.
    program = "sin(" * 100 + "w" + ")" * 100
    start = time.monotonic()
    result = run("value-grad", program, "--var", "w=0.5", "--check", "--json",
                 "--check-timeout", "5")
    elapsed = time.monotonic() - start
    out = checked(result)
    assert elapsed < 20, f"took {elapsed:.1f}s"
    g = out["check"]["gradients"][0]
    assert out["check"]["passed"] is True
    assert g["status"] == "skipped"
    assert g["symbolic"] is None and "deep" in g["symbolic_skipped"]
    assert g["reason"].endswith("finite differences agree")
    assert g["numeric"] == pytest.approx(g["tape"], rel=1e-6)
    assert g["tape"] == out["gradients"][0]["gradient"]
    too_deep = run("value-grad", "sin(" + program + ")", "--var", "w=0.5", "--check")
    assert too_deep.returncode == 2 and "nested more than 100" in too_deep.stderr


# ---------------------------------------------------------------------------------------
# A check that fails: a wrong backward rule swapped into the table
# ---------------------------------------------------------------------------------------
WRONG_SIN = textwrap.dedent("""
    import sys
    from gradcli.engine import ops  # fills the table
    from gradcli.engine.core.table import REGISTRY
    if sys.argv[1] == "wrong":
        # d/dx sin(x) is cos(x); this rule says sin(x). The language looks entries up in
        # REGISTRY when it builds a program, the sympy side reads the unchanged .sympy.
        # Forward mode's rule (jvp) likewise.
        wrong = lambda m, g, ans, x: g * m.sin(x)  # noqa: E731
        REGISTRY["sin"] = REGISTRY["sin"].replace(vjps=(wrong,), jvps=(wrong,))
    from gradcli.cli.app import main
    sys.argv = ["gradcli", *sys.argv[2:]]
    main()
""")


def run_with_sin_rule(rule: str, *args):
    return subprocess.run([sys.executable, "-c", WRONG_SIN, rule, *args], capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)


@pytest.mark.slow
def test_wrong_backward_rule_is_a_mismatch_and_exit_1():
    args = ["value-grad", "sin(w)", "--var", "w=0.5", "--check", "--json"]
    wrong = run_with_sin_rule("wrong", *args)
    assert wrong.returncode == 1, wrong.stderr
    out = json.loads(wrong.stdout)
    assert out["gradients"][0]["gradient"] == pytest.approx(0.479425538604203)  # sin(0.5)
    check = out["check"]
    assert check["passed"] is False
    [g] = check["gradients"]
    assert g["status"] == "mismatch"
    assert g["symbolic"] == pytest.approx(0.8775825618903728, rel=1e-12)  # cos(0.5)
    assert g["numeric"] == pytest.approx(0.8775825618903728, rel=1e-6)
    assert "sympy" in g["reason"]
    # The same command with the table as shipped passes: the swapped rule is what fails.
    right = run_with_sin_rule("right", *args)
    assert right.returncode == 0, right.stderr
    assert json.loads(right.stdout)["check"]["passed"] is True


def test_wrong_backward_rule_in_process_with_clirunner(monkeypatch):
    from typer.testing import CliRunner

    from gradcli.cli.app import app
    from gradcli.engine.core import table
    wrong = table.REGISTRY["sin"].replace(vjps=(lambda m, g, ans, x: g * m.sin(x),))
    monkeypatch.setitem(table.REGISTRY, "sin", wrong)
    result = CliRunner().invoke(app, ["tape", "sum(sin(w) * x)", "--var", "w=[0.5, 1.0]",
                                      "--arg", "x=[2, 3]", "--check"])
    assert result.exit_code == 1, result.output
    assert "mismatch" in result.output
    monkeypatch.undo()
    result = CliRunner().invoke(app, ["tape", "sum(sin(w) * x)", "--var", "w=[0.5, 1.0]",
                                      "--arg", "x=[2, 3]", "--check", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["check"]["gradients"][0]["status"] == "ok"


# sympy takes minutes over inv of an 8x8 matrix (symbolic in its 64 entries), the finite
# differences in x a few milliseconds: past a short --check-timeout the finite differences
# alone decide, in every command that takes --check.
SLOW_FOR_SYMPY = ["sum(inv(A)) * sin(x)", "--frozen", "A=eye(8)+0.1"]
SUM_INV = float(np.sum(np.linalg.inv(np.eye(8) + 0.1)))  # 8/1.8, in plain numpy
SLOW_SYMPY_COMMANDS = {
    "grad": ["grad", "--arg", "x=0.5"],
    "tape": ["tape", "--var", "x=0.5"],
    "implicit": ["implicit", "--var", "x=0.5"],
    "value-grad": ["value-grad", "--var", "x=0.5"],
    "compare": ["compare", "--var", "x=0.5"],
    "jacobian": ["jacobian", "--arg", "x=0.5"],
    "hessian": ["hessian", "--arg", "x=0.5"],
    "jvp": ["jvp", "--arg", "x=0.5", "--tangent", "x=1"],
    "grad --order": ["grad", "--arg", "x=0.5", "--order", "2"],
    "--at": ["grad", "--arg", "x", "--at", "-", "--check-rows", "1"],
}


def slow_sympy_run(rule: str, command: str):
    mode, *rest = SLOW_SYMPY_COMMANDS[command]
    program, *frozen = SLOW_FOR_SYMPY
    return subprocess.run([sys.executable, "-c", WRONG_SIN, rule, mode, program, *frozen,
                           *rest, "--check", "--check-timeout", "1", "--json"],
                          input="x\n0.5\n", capture_output=True, text=True, timeout=TIMEOUT,
                          check=False)


def slow_sympy_entries(command: str, out: dict) -> list[dict]:
    """The check entries of the first derivative in x (every mode's, for compare)."""
    if command == "compare":
        return [out[mode]["check"]["gradients"][0] for mode in ("tape", "implicit",
                                                                 "value-grad")]
    if command == "--at":
        return [json.loads(out["last"])["check"]["rows"][0]["gradients"][0]]
    return [out["check"]["gradients"][0]]


@pytest.mark.slow
@pytest.mark.parametrize("command", list(SLOW_SYMPY_COMMANDS))
def test_finite_differences_decide_when_sympy_runs_out_of_time(command):
    # Before: the finished differences were thrown away with sympy's time-out, and a
    # wrong rule was "nothing to check", exit 0.
    result = slow_sympy_run("wrong", command)
    assert result.returncode == 1, (result.stdout[-2000:], result.stderr)
    lines = result.stdout.splitlines()
    out = {"last": lines[-1]} if command == "--at" else json.loads(result.stdout)
    for g in slow_sympy_entries(command, out):
        assert g["symbolic"] is None and g["symbolic_skipped"] == "took longer than 1s"
        assert g["status"] == "mismatch", g
        assert g["reason"].startswith("tape differs from finite differences")
        # The swapped rule gives S sin(x); the finite differences of the target
        # S sin(x) give S cos(x) (for --order 2 and the Hessian's row, the differences
        # of the first derivative the tape computes, S sin(x): S cos(x) too, where the
        # truth is -S sin(x)).
        tape = g["tape"][0] if isinstance(g["tape"], list) else g["tape"]
        numeric = g["numeric"][0] if isinstance(g["numeric"], list) else g["numeric"]
        assert tape == pytest.approx(SUM_INV * np.sin(0.5), rel=1e-12)
        assert numeric == pytest.approx(SUM_INV * np.cos(0.5), rel=1e-6)
    if command == "hessian":
        assert [g["status"] for g in out["check"]["gradients"]] == ["mismatch", "mismatch"]


@pytest.mark.slow
def test_past_sympys_time_limit_a_right_gradient_passes_on_finite_differences():
    result = slow_sympy_run("right", "grad")
    out = checked(result)
    [g] = out["check"]["gradients"]
    assert out["check"]["verdict"] == "passed"
    assert g["status"] == "skipped"
    assert g["reason"] == "sympy: took longer than 1s; finite differences agree"
    assert g["numeric"] == pytest.approx(SUM_INV * np.cos(0.5), rel=1e-6)


# With --plain, standard output holds only numbers: a failed check says so on standard
# error, one line, with the reason (sympy's cos(0.5) beside the swapped rule's sin(0.5)).
TAPE_SIN, SYMPY_COS = f"{np.sin(0.5):.10g}", f"{np.cos(0.5):.10g}"
WHY = f"tape differs from sympy at {{}}: tape {TAPE_SIN}, sympy {SYMPY_COS}"


@pytest.mark.slow
@pytest.mark.parametrize("args, lines", [
    (["value-grad", "sin(w)", "--var", "w=0.5"], [f"check: MISMATCH: {WHY.format('w')}"]),
    (["grad", "sin(x)", "--arg", "x=0.5"], [f"check: MISMATCH: {WHY.format('x')}"]),
    (["jacobian", "sin(x)", "--arg", "x=0.5"], [f"check: MISMATCH: {WHY.format('x')}"]),
    (["hessian", "sin(x)", "--arg", "x=0.5"],
     [f"check: MISMATCH: {WHY.format('gradient[0]')}; tape differs from sympy at "
      f"hessian row x[0]: tape {SYMPY_COS}, sympy {-np.sin(0.5):.10g}"]),
    # (the tape's second derivative through the swapped rule depends on whether the rule's
    # own sin is the swapped entry: the line must name what standard output printed)
    (["grad", "sin(x)", "--arg", "x=0.5", "--order", "2"],
     ["check: MISMATCH: tape differs from sympy at x: tape {printed}, "
      f"sympy {-np.sin(0.5):.10g}"]),
    (["jvp", "sin(x)", "--arg", "x=0.5", "--tangent", "x=1"],
     [f"check: MISMATCH: {WHY.format('jvp')}"]),
    (["compare", "sin(w)", "--var", "w=0.5", "--tangent", "w=1"],
     [f"check: MISMATCH: {mode}: {WHY.format(name)}"
      for mode, name in (("tape", "w"), ("implicit", "w"), ("value-grad", "w"),
                         ("jvp", "jvp"))]),
])
def test_a_plain_mismatch_says_why_on_standard_error(args, lines):
    failed = run_with_sin_rule("wrong", *args, "--check", "--plain")
    assert failed.returncode == 1, failed.stderr
    if "{printed}" in lines[0]:
        lines = [lines[0].replace("{printed}", f"{float(failed.stdout):.10g}")]
        assert float(failed.stdout) != pytest.approx(-np.sin(0.5))
    assert failed.stderr.splitlines() == lines
    # Standard output is the plain numbers, as without --check.
    unchecked = run_with_sin_rule("wrong", *args, "--plain")
    assert unchecked.returncode == 0 and unchecked.stderr == ""
    assert failed.stdout == unchecked.stdout


@pytest.mark.slow
def test_a_plain_check_that_passes_writes_nothing_on_standard_error():
    result = run("grad", "sin(x)", "--arg", "x=0.5", "--check", "--plain")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == f"{float(np.cos(0.5))!r}\n"


# ---------------------------------------------------------------------------------------
# --symbolic
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_symbolic_prints_the_derivative():
    human = run("value-grad", "sin(w)", "--var", "w=0.5", "--symbolic")
    assert human.returncode == 0, human.stderr
    assert "cos(w)" in human.stdout
    out = checked(run("value-grad", "sin(w)", "--var", "w=0.5", "--symbolic", "--json"))
    assert out["gradients"] == [{"name": "w", "gradient": pytest.approx(0.8775825618903728),
                                 "symbolic": "cos(w)"}]
    assert "check" not in out


@pytest.mark.slow
def test_symbolic_with_check_in_json_for_every_source():
    out = checked(run("tape", "w1*x1 + w2*sin(x2)", "--var", "w1=2", "--var", "w2=3",
                      "--arg", "x1=5", "--arg", "x2=7", "--watch", "x2", "--symbolic",
                      "--check", "--json"))
    assert {g["name"]: g["symbolic"] for g in out["gradients"]} == {
        "w1": "x1", "w2": "sin(x2)", "x2": "w2*cos(x2)"}
    assert out["check"]["passed"] is True
    assert [g["status"] for g in out["check"]["gradients"]] == ["ok", "ok", "ok"]


# ---------------------------------------------------------------------------------------
# Bad input with --check: exit 2, one message, nothing on standard output
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("args, needle", [
    (["value-grad", "sin(w)", "--var", "w=1", "--check", "--check-timeout", "0"],
     "--check-timeout"),
    (["value-grad", "sin(w", "--var", "w=1", "--check", "--json"], "error:"),
    (["grad", "sin(y)", "--arg", "x=1", "--check", "--symbolic"], "'y'"),
    (["tape", "w @ w", "--var", "w=[[1, 2, 3], [4, 5, 6]]", "--check"], "matmul"),
    (["value-grad", "sin(w)", "--var", "w=1", "--check", "--rtol", "-1"], "--rtol"),
])
def test_bad_input_with_check_exits_2_and_prints_nothing(args, needle):
    result = run(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert needle in result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------------------
# Issue 9: what --check concludes, as a user sees it (exit codes, the verdict line)
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("args, status, start", [
    # finite differences cannot resolve sin at 1e20 (step 6e14 >> period): unusable
    (["grad", "sin(x)", "--arg", "x=1e20"], "ok", "finite differences unusable"),
    (["grad", "arctan2(x, 0)", "--arg", "x=0"], "non-differentiable", "singularity"),
    (["grad", "arccosh(cosh(tanh(reciprocal(x))))", "--arg", "x=0"], "non-differentiable",
     "singularity"),
    (["grad", "exp(x)", "--arg", "x=710"], "overflow", "the derivative is 2.23"),
    (["grad", "where(x < 1, x^2, 3*x)", "--arg", "x=1"], "non-differentiable",
     "discontinuity"),
    (["tape", "h = x; h * 2 + x", "--arg", "x=1", "--watch", "x", "--wrt", "h"], "ok", None),
])
def test_check_concludes_without_a_false_mismatch_and_exits_0(args, status, start):
    out = checked(run(*args, "--check", "--json"))
    assert out["check"]["verdict"] == "passed"
    g = out["check"]["gradients"][0]
    assert g["status"] == status, g
    if start is not None:
        assert g["reason"].startswith(start), g["reason"]
    human = run(*args, "--check")
    assert human.returncode == 0, human.stdout + human.stderr
    assert "check: passed" in human.stdout and "MISMATCH" not in human.stdout


@pytest.mark.slow
def test_an_empty_check_says_nothing_to_check_and_never_passed():
    # The tape watched nothing (x is an argument it was not told to watch).
    result = run("tape", "x * 2", "--arg", "x=1", "--check")
    assert result.returncode == 0, result.stderr
    assert "check: nothing to check" in result.stdout
    assert "passed" not in result.stdout
    out = checked(run("tape", "x * 2", "--arg", "x=1", "--check", "--json"))
    assert out["check"]["verdict"] == "nothing to check"
    assert out["check"]["passed"] is False and out["check"]["gradients"] == []


X_SQUARED = ["x^2", "--arg", "x=3"]


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    # the report's four: a false mismatch (exit 1), the same with nothing said, a pass of
    # everything, and Python's "Out of range float values are not JSON compliant"
    ["grad", *X_SQUARED, "--rtol", "nan"],
    ["grad", *X_SQUARED, "--atol", "nan", "--plain"],
    ["grad", *X_SQUARED, "--atol", "inf", "--json"],
    ["grad", *X_SQUARED, "--rtol", "nan", "--json"],
    # every other command that takes them
    ["tape", "x^2", "--var", "x=3", "--rtol", "inf"],
    ["implicit", "x^2", "--var", "x=3", "--atol", "NaN"],
    ["value-grad", "x^2", "--var", "x=3", "--atol", "Infinity", "--json"],
    ["compare", "x^2", "--var", "x=3", "--rtol", "nan"],
    ["jacobian", *X_SQUARED, "--atol", "inf"],
    ["hessian", *X_SQUARED, "--rtol", "nan", "--json"],
    ["jvp", *X_SQUARED, "--tangent", "x=1", "--atol", "nan"],
    ["grad", *X_SQUARED, "--order", "2", "--rtol", "inf"],
    ["grad", "x^2", "--arg", "x", "--at", "-", "--atol", "nan"],
])
def test_a_non_finite_tolerance_is_refused_up_front_with_exit_2(args):
    result = subprocess.run(COMMAND + [*args, "--check"], input="x\n3\n", capture_output=True,
                            text=True, timeout=TIMEOUT, check=False)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    option = next(a for a in args if a in ("--rtol", "--atol"))
    assert f"Invalid value for '{option}'" in result.stderr
    assert "is not a finite number (a tolerance must be a finite number >= 0)" in result.stderr
    assert "JSON compliant" not in result.stderr and "Traceback" not in result.stderr


def test_the_library_check_refuses_a_non_finite_tolerance_too():
    from gradcli.check.compare import Tolerances
    from gradcli.errors import InputError
    with pytest.raises(InputError, match="--rtol must be a finite number >= 0, got inf"):
        Tolerances.for_dtype("float64", rtol=float("inf"))
    with pytest.raises(InputError, match="--atol must be a finite number >= 0, got nan"):
        Tolerances.for_dtype("float32", atol=float("nan"))


@pytest.mark.slow
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "soon", "1e9"])
def test_a_bad_check_timeout_is_one_clear_message_and_exit_2(value):
    result = run("grad", "x^2", "--arg", "x=1", "--check", "--check-timeout", value)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert "--check-timeout" in result.stderr
    assert "ValueError" not in result.stderr and "Traceback" not in result.stderr
