"""The human page of the simplest results without rich (issue 14): the fallback's text
(io/writers/page.py's page_text) is rich's text, byte for byte: plain where rich would
print plain text (a file, a pipe), with rich's SGR codes where it would print to a
terminal with styles.

The independent truth is rich itself: the same page printed through a rich console
(io/writers/human.py's console, as every other human output) on a file of the same width
that says it is a terminal or not, in the same environment.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcli.io.writers import page as page_writer
from gradcli.io.writers.human import console
from gradcli.run.modes import Gradient, Outcome

EXAMPLES = int(os.environ.get("GRADCLI_PROPERTY_EXAMPLES", "60"))
RICH_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS", "NO_COLOR", "TERM", "TTY_INTERACTIVE")
SEED = ["w1*x1 + w2*x2", "--var", "w1=2", "--var", "w2=3", "--arg", "x1=5", "--arg", "x2=7"]


class _File(io.StringIO):
    """Standard output as a file or a pipe (isatty False) or a terminal, in some encoding."""

    def __init__(self, tty: bool = False, encoding: str | None = "utf-8"):
        super().__init__()
        self._tty, self._encoding = tty, encoding

    def isatty(self) -> bool:
        return self._tty

    @property
    def encoding(self):
        return self._encoding


@pytest.fixture
def clean_env(monkeypatch):
    for name in RICH_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def both(outcome, precision, target, width, monkeypatch) -> tuple[str | None, str]:
    """(the fallback's text or None, rich's text) on a non-terminal of ``width`` columns."""
    return both_pages(outcome.page(precision, target=target), width, monkeypatch)


def both_pages(page, width, monkeypatch, tty: bool = False) -> tuple[str | None, str]:
    """:func:`both` for any result's page (``tty``: on a terminal)."""
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr(sys, "stdout", _File(tty=tty))
    fast = page_writer.page_text(page)
    rich_file = _File(tty=tty)
    page_writer.write(page, out=console(file=rich_file))
    return fast, rich_file.getvalue()


# names as the language writes them, and as anything may (brackets, spaces, non-ASCII)
names = st.one_of(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,30}", fullmatch=True),
                  st.from_regex(r"[a-z]{1,5}\[[0-9]{1,3}\]", fullmatch=True),
                  st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
                  st.text(max_size=6))
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0.0, -0.0, float("nan"), float("inf"), float("-inf"),
                                     1e308, -1.2345678901234567e-300, 5e-324]),
                    st.floats(width=32).map(np.float32), st.integers(-10 ** 6, 10 ** 6))
gradients = st.one_of(numbers.map(np.asarray), st.none())
notes = st.lists(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=90),
                 max_size=2)


@st.composite
def outcomes(draw):
    mode = draw(st.sampled_from(["tape", "grad", "implicit", "value-grad"]))
    value = np.asarray(draw(numbers)) if mode in ("tape", "value-grad") else None
    grads = [Gradient(draw(names), draw(gradients))
             for _ in range(draw(st.integers(0, 3)))]
    return Outcome(mode, value, grads, draw(notes))


@pytest.mark.slow
@settings(max_examples=EXAMPLES * 3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(outcome=outcomes(), precision=st.one_of(st.none(), st.integers(1, 17)),
       target=st.one_of(st.none(), names),
       width=st.one_of(st.sampled_from([40, 80, 200]), st.integers(1, 120)))
def test_the_fallback_prints_what_rich_prints(clean_env, outcome, precision, target, width):
    plain, rich_text = both(outcome, precision, target, width, clean_env)
    assert plain is None or plain == rich_text


TERMINALS = st.fixed_dictionaries({}, optional={
    "TERM": st.sampled_from(["xterm", "xterm-256color", "screen-16color", "linux", ""]),
    "COLORTERM": st.sampled_from(["truecolor", "24bit", ""]),
    "NO_COLOR": st.sampled_from(["", "1"])})


@pytest.mark.slow
@settings(max_examples=EXAMPLES * 3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(outcome=outcomes(), precision=st.one_of(st.none(), st.integers(1, 17)),
       target=st.one_of(st.none(), names),
       width=st.one_of(st.sampled_from([40, 80, 200]), st.integers(1, 120)), env=TERMINALS)
def test_on_a_terminal_the_fallback_prints_what_rich_prints(clean_env, outcome, precision,
                                                            target, width, env):
    for name, value in env.items():
        clean_env.setenv(name, value)
    fast, rich_text = both_pages(outcome.page(precision, target=target), width, clean_env,
                                 tty=True)
    assert fast is None or fast == rich_text


@pytest.mark.parametrize("width", [40, 80, 200])
@pytest.mark.parametrize("mode", ["tape", "grad", "implicit", "value-grad"])
@pytest.mark.parametrize("value, gradient, name", [
    (31.0, 5.0, "w1"), (float("nan"), float("-inf"), "x[0]"), (-0.0, -0.0, "w"),
    (-1.2345678901234567e-300, 1.7976931348623157e308, "a_rather_long_variable_name_1"),
    (np.float32(2.957324266433716), None, "v")])
def test_scalar_results_take_the_fallback_with_rich_s_text(clean_env, width, mode, value,
                                                          gradient, name):
    outcome = Outcome(mode, np.asarray(value) if mode in ("tape", "value-grad") else None,
                      [Gradient(name, None if gradient is None else np.asarray(gradient)),
                       Gradient("b", np.asarray(2.0))], ["a note [bold]that[/] is long " * 3])
    shown = "None (not connected)" if gradient is None else repr(float(gradient))
    table = max(len(name), 8) + max(len(shown), 8) + len("shape") + 3 * 3 - 1
    for tty in (False, True):
        fast, rich_text = both_pages(outcome.page(None, target="y" if mode == "tape" else None),
                                     width, clean_env, tty=tty)
        assert fast is not None or table > width  # (rich then shares the width out)
        assert fast is None or fast == rich_text
        assert tty == ("\x1b[" in rich_text)


@pytest.mark.parametrize("outcome", [
    Outcome("grad", None, [Gradient("x", np.ones((2, 2)))]),           # an array's lines
    Outcome("grad", None, [Gradient("\u00e9t\u00e9", np.asarray(1.0))]),  # not ASCII
    Outcome("grad", None, [Gradient("x  y", np.asarray(1.0))]),       # two spaces in a cell
    Outcome("grad", None, [Gradient("x" * 80, np.asarray(1.0))]),     # wider than 80
    Outcome("grad", None, [Gradient("x", np.asarray(1.0))], ["tab\there"])])
def test_anything_else_is_left_to_rich(clean_env, outcome):
    plain, rich_text = both(outcome, None, None, 80, clean_env)
    assert plain is None and rich_text


def test_an_array_on_one_line_takes_the_fallback_with_rich_s_text(clean_env):
    outcome = Outcome("value-grad", np.array([1.0, -2.5]), [Gradient("x", np.arange(3.0))])
    plain, rich_text = both(outcome, None, None, 80, clean_env)
    assert plain == rich_text and "\u2502 [0.0, 1.0, 2.0] \u2502 (3,)" in plain
    outcome.value = np.ones((2, 2))  # a value's lines under its label
    plain, rich_text = both(outcome, None, None, 80, clean_env)
    assert plain == rich_text and "  [[1.0, 1.0],\n   [1.0, 1.0]]\n" in plain


def test_the_value_of_a_named_target_is_labelled_as_rich_does(clean_env):
    outcome = Outcome("tape", np.asarray(31.0), [Gradient("w1", np.asarray(5.0))])
    plain, rich_text = both(outcome, None, "loss", 80, clean_env)
    assert plain == rich_text and "value of loss: 31.0  shape ()\n" in plain


def _pages():
    """The pages of the other single-point results the fallback can take: scalar
    Hessians, Jacobians, jvp, grad --order (computed, with their sentences)."""
    from gradcli.lang import Declarations, build, parse_program
    from gradcli.run.derivatives import hessian, jacobian, order_outcome
    from gradcli.run.directional import parse_tangents, run_jvp
    from gradcli.run.modes import ModeOptions

    def model(text, **declared):
        return build(parse_program(text), Declarations.from_options(**declared))
    rosenbrock = model("(1-x)^2 + 100*(y-x^2)^2", arg=["x=1", "y=1"])
    seed = model("w1*x1 + w2*x2", var=["w1=2", "w2=3"], arg=["x1=5", "x2=7"])
    saddle = model("x^2 - y^2", arg=["x=0", "y=0"])
    product = model("x^2 * y", arg=["x=3", "y=2"])
    return [hessian(rosenbrock).page(None), hessian(seed).page(3, target="s"),
            hessian(saddle).page(None), jacobian(product).page(None),
            jacobian(seed).page(None, target="s"),
            run_jvp(product, parse_tangents(product, ["x=1", "y=0.5"])).page(None),
            order_outcome(product, ModeOptions(), 2).order_page(2, None),
            order_outcome(product, ModeOptions(), 3).order_page(3, 4)]


@pytest.mark.parametrize("width", [30, 60, 80, 120, 200])
def test_other_results_pages_take_the_fallback_with_rich_s_text(clean_env, width):
    for tty in (False, True):
        taken = 0
        for page in _pages():
            fast, rich_text = both_pages(page, width, clean_env, tty=tty)
            assert fast is None or fast == rich_text
            taken += fast is not None
        assert taken or width < 80  # (at 80 columns they all fit)


# ---------------------------------------------------------------------------------------
# Where rich would print plain text: the fallback agrees with rich's own detection
# ---------------------------------------------------------------------------------------
@settings(max_examples=EXAMPLES * 2, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(env=st.fixed_dictionaries({}, optional={
           "FORCE_COLOR": st.sampled_from(["", "0", "1", "yes"]),
           "TTY_COMPATIBLE": st.sampled_from(["", "0", "1", "2"]),
           "COLUMNS": st.sampled_from(["", "0", "1", "40", "200", "x", " 50", "-3"]),
           "NO_COLOR": st.sampled_from(["", "1"]),
           "TERM": st.sampled_from(["dumb", "unknown", "xterm-256color", ""])}),
       tty=st.booleans(), encoding=st.sampled_from(["utf-8", "UTF-8", "ascii", None,
                                                    "latin-1", "utf_8"]))
def test_the_fallback_is_used_exactly_where_rich_writes_plain_text(clean_env, env, tty,
                                                                   encoding):
    for name, value in env.items():
        clean_env.setenv(name, value)
    out = _File(tty=tty, encoding=encoding)
    clean_env.setattr(sys, "stdout", out)
    width = page_writer.plain_width()
    rich = console(file=out)
    plain_for_rich = (not rich.is_terminal
                      and rich.encoding.startswith("utf") and not rich.legacy_windows)
    assert (width is not None) == plain_for_rich
    if width is not None:
        assert width == rich.width
    # and the seed's page, which fits any width rich reports here, on a terminal too:
    # without rich wherever rich writes plain text or styles it can, as rich writes it
    page = Outcome("value-grad", np.asarray(31.0), [Gradient("w1", np.asarray(5.0))],
                   ["a note"]).page(None)
    fast = page_writer.page_text(page)
    styled = rich.is_terminal and rich.color_system is not None
    utf = rich.encoding.startswith("utf") and not rich.legacy_windows
    if rich.width >= 40:
        assert (fast is not None) == (utf and (plain_for_rich or styled))
    if fast is not None:
        printed = _File(tty=tty, encoding=encoding)
        page_writer.write(page, out=console(file=printed))
        assert fast == printed.getvalue()


@pytest.mark.parametrize("system", ["standard", "256", "truecolor"])
@pytest.mark.parametrize("no_color", ["", "1"])
def test_terminal_codes_are_rich_s_for_every_style(clean_env, system, no_color):
    """Truth: rich's own rendering of each style (its Style and a console with that
    colour system, NO_COLOR dropping colours)."""
    from rich.console import Console
    from rich.style import Style
    from rich.text import Text
    clean_env.setenv("NO_COLOR", no_color)
    codes = page_writer.terminal_codes()
    for style in [*page_writer.STYLES.values(), "bold"]:
        printed = _File(tty=True)
        Console(file=printed, color_system=system, force_terminal=True).print(
            Text("x", style=Style.parse(style)), end="")
        code = codes[style]
        assert printed.getvalue() == (f"\x1b[{code}mx\x1b[0m" if code else "x"), style
    clean_env.setenv("TERM", "dumb")
    assert page_writer.terminal_codes() is None


# ---------------------------------------------------------------------------------------
# End to end: the seed in every mode, as a separate process
# ---------------------------------------------------------------------------------------
def run(mode: str, *extra: str, env: dict | None = None, importtime: bool = False):
    base = {k: v for k, v in os.environ.items() if k not in RICH_ENV}
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run([sys.executable, *flags, "-m", "gradcli", mode, *SEED, *extra],
                          capture_output=True, text=True, timeout=120,
                          env={**base, **(env or {})})


RICH_ONLY = ("import sys; from gradcli.io.writers import page; "
             "page.page_text = lambda *args: None; from gradcli.cli.app import main; "
             "sys.argv = ['gradcli', *sys.argv[1:]]; main()")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["tape", "grad", "implicit", "value-grad"])
def test_the_seed_prints_rich_s_text_through_a_pipe_without_importing_rich(mode):
    done = run(mode, importtime=True)
    assert done.returncode == 0
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert not {m for m in imported if m == "rich" or m.startswith("rich.")}
    base = {k: v for k, v in os.environ.items() if k not in RICH_ENV}
    with_rich = subprocess.run([sys.executable, "-c", RICH_ONLY, mode, *SEED],
                               capture_output=True, text=True, timeout=120, env=base)
    assert with_rich.returncode == 0 and "\u2547" in with_rich.stdout
    assert done.stdout == with_rich.stdout


@pytest.mark.slow
def test_a_forced_terminal_still_gets_rich_s_styles():
    done = run("value-grad", env={"FORCE_COLOR": "1", "TERM": "xterm"})
    assert done.returncode == 0
    assert "\x1b[1m31.0\x1b[0m" in done.stdout


def _on_a_terminal(argv: list, env: dict) -> tuple[bytes, str]:
    """What a process wrote on a pseudo-terminal (its standard output), and its
    standard error."""
    import pty
    leader, follower = pty.openpty()
    with subprocess.Popen(argv, stdout=follower, stderr=subprocess.PIPE, env=env) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            chunks.append(chunk)
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0, err
    os.close(leader)
    return b"".join(chunks), err


@pytest.mark.slow
@pytest.mark.parametrize("term", [{"TERM": "xterm"}, {"TERM": "xterm-256color", "NO_COLOR": "1"}])
def test_a_real_terminal_gets_rich_s_styles_without_importing_rich(term):
    pytest.importorskip("pty")  # (a Unix module)
    env = {**{k: v for k, v in os.environ.items() if k not in RICH_ENV}, **term}
    fast, err = _on_a_terminal([sys.executable, "-X", "importtime", "-m", "gradcli",
                                "value-grad", *SEED], env)
    imported = {line.rsplit("|", 1)[1].strip() for line in err.splitlines()
                if line.startswith("import time:")}
    assert not {m for m in imported if m == "rich" or m.startswith("rich.")}
    with_rich, _ = _on_a_terminal([sys.executable, "-c", RICH_ONLY, "value-grad", *SEED], env)
    assert b"\x1b[1m31.0\x1b[0m" in with_rich and "\u2547".encode() in with_rich
    assert fast == with_rich
