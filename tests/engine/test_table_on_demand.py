"""The entries of engine/linalg.py and engine/more_ops.py are registered when first needed
(issue 14): every way of reaching the table finds them, in the table's order, as if they
had been loaded at import; a program that uses none of them does not load them. Each case
runs in a fresh process, since a process loads them once."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

ON_DEMAND_MODULES = ("gradcli.engine.rules.linalg", "gradcli.engine.rules.statistics",
                     "gradcli.engine.rules.elementwise_extra", "gradcli.engine.rules.shape_extra")

# The state every way in must end in: the table as the process sees it afterwards.
STATE = textwrap.dedent("""
    import sys
    from gradcli.engine.core import recording as ops, table
    from gradcli.engine.rules import shape_extra
    loaded = [m for m in %r if m in sys.modules]
    print(repr((
        loaded,
        list(table.ORDER),
        sorted((k, v.name) for k, v in table.REGISTRY.items()),
        sorted((k, v.__name__) for k, v in ops.FUNCTIONS.items()),
        sorted((k, v.name, v.doc) for k, v in ops.INTERNAL.items()),
        sorted(k for k in vars(ops.NP)), sorted(k for k in vars(ops.ENGINE)),
        ops.FUNCTIONS["split"] is ops.ENGINE.split, ops.FUNCTIONS["split"].__qualname__,
        ops.FUNCTIONS["cast"].__doc__, ops.NP.cast is ops.INTERNAL["cast"].forward,
    )))
""" % (ON_DEMAND_MODULES,))


def run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def loaded_after(code: str) -> list[str]:
    out = run(code + "\nimport sys\nprint([m for m in %r if m in sys.modules])"
              % (ON_DEMAND_MODULES,))
    return eval(out.splitlines()[-1])  # noqa: S307 - our own repr of a list of names


@pytest.fixture(scope="module")
def complete_state() -> str:
    """The table after an explicit table.complete(), the reference for the other ways."""
    return run("from gradcli.engine.core import table\ntable.complete()\n" + STATE)


def test_the_names_loaded_on_demand_are_the_ones_the_two_modules_register():
    """The names read from the two modules' sources (what decides, before loading, which
    module defines a name) are exactly the names and aliases they add to the table."""
    out = run(textwrap.dedent("""
        import sys
        from gradcli.engine.core import table
        before = set(dict.keys(table.REGISTRY)) | set(dict.keys(table.INTERNAL))
        pending = [m for m in %r if m in sys.modules]
        read = set().union(*(table.defined_names(m) for m in table.PENDING)) - before
        table.complete()
        added = set(dict.keys(table.REGISTRY)) - before
        print(repr((pending, sorted(added ^ read), len(added), sorted(table.PENDING))))
    """ % (ON_DEMAND_MODULES,)))
    pending, differing, count, left = eval(out.splitlines()[0])  # noqa: S307 - our own repr
    assert (pending, differing, left) == ([], [], []) and count > 60


@pytest.mark.slow
@pytest.mark.parametrize("way", [
    "import gradcli as gc; gc.std",
    "import gradcli as gc; gc.reduce_sum",
    "from gradcli import *",
    "import gradcli as gc; gc.__all__",
    "import gradcli as gc; dir(gc)",
    "import gradcli.linalg",
    "from gradcli.engine.rules import shape_extra",
    "from gradcli.engine.rules import linalg",
    "from gradcli.engine.rules.linalg import _canonical; import gradcli as gc; gc.einsum",
    "from gradcli.engine.core.table import lookup; assert lookup('inv') is not None",
    "from gradcli.engine.core.table import REGISTRY; assert 'reduce_sum' in REGISTRY",
    "from gradcli.engine.core.table import REGISTRY; assert len(REGISTRY) > 100",
    "from gradcli.engine.core.table import ORDER; assert 'det' in list(ORDER)",
    "from gradcli.engine.core.table import ORDER; ORDER[-1]",
    "from gradcli.engine.core.recording import FUNCTIONS; FUNCTIONS['det']",
    "from gradcli.engine.core.recording import INTERNAL; dict(INTERNAL)",
    "from gradcli.engine.core.recording import NP; NP.var",
    "from gradcli.engine.core.recording import ENGINE; ENGINE.sort",
    "from gradcli.engine.rules import linalg; linalg.norm_forward",
    "import gradcli as gc; gc.constant(7.0) % 3.0",
    "import gradcli as gc, numpy as np; np.std(gc.constant([1.0, 2.0]))",
    "import gradcli as gc; gc.norm(gc.constant([[1.0, 2.0], [3.0, 4.0]]), ord=2)",
    "import sys, contextlib, io; from gradcli.cli.app import main; "
    "sys.argv = ['gradcli', 'grad', 'std(x)', '--arg', 'x=[1, 2]', '--json']\n"
    "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit): main()",
], ids=lambda way: way.replace("\n", "; ").split("; ")[-1].strip()[:50])
def test_every_way_in_finds_the_whole_table_in_its_order(way, complete_state):
    assert run(way + "\n" + STATE) == complete_state


def test_the_reference_state_has_both_modules_loaded_and_the_table_in_source_order(
        complete_state):
    loaded, order, *_ = eval(complete_state)  # noqa: S307 - our own repr
    assert loaded == list(ON_DEMAND_MODULES)
    # ops.py's entries, then linalg.py's, then more_ops.py's, as when all were imported
    assert order.index("stop_gradient") < order.index("inv") < order.index("einsum") \
        < order.index("var") < order.index("take_along_axis") == len(order) - 1


@pytest.mark.parametrize("program", [
    "w1*x1 + w2*x2", "sum(exp(w1) * x1) + mean(w2 ** 2)",
    "y = tanh(w1); z = where(y > 0, y, -y); sum(z * x1) + w2",
])
def test_programs_without_their_functions_load_neither_module(program):
    code = ("import sys; from gradcli.cli.app import main; sys.argv = ['gradcli', "
            f"'value-grad', {program!r}, '--var', 'w1=2', '--var', 'w2=3', '--arg', "
            "'x1=[5, 6]', '--arg', 'x2=7', '--json']\n"
            "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code\n")
    assert loaded_after(code) == []


@pytest.mark.slow
def test_a_declared_name_of_a_function_loaded_on_demand_is_still_refused():
    result = subprocess.run([sys.executable, "-m", "gradcli", "value-grad", "x * 2", "--var",
                             "std=1", "--var", "x=1", "--json"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert "'std' is the name of a function and cannot be declared" in result.stderr
