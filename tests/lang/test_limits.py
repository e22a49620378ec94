"""Size limits of the language hold for every operation, empty operands included: a
matrix product of empty operands is refused before anything is allocated."""
import subprocess
import sys
import tracemalloc

import pytest

from gradcli.errors import LimitError
from gradcli.lang import Declarations, build, parse_program


def run(text, **options):
    model = build(parse_program(text), Declarations.from_options(**options))
    return model.function(*model.arg_values)


@pytest.mark.parametrize("text", ["sum(ones((4000, 0)) @ ones((0, 4000)))",
                                  "sum(dot(ones((4000, 0)), ones((0, 4000))))",
                                  "sum(ones((2, 4000, 0)) @ ones((0, 4000)))"])
def test_matrix_product_of_empty_operands_respects_the_array_size_limit(text):
    with pytest.raises(LimitError, match=r"would make 16,000,000 elements|32,000,000"):
        run(text)


def test_huge_matrix_product_of_empty_operands_is_refused_before_allocating():
    tracemalloc.start()
    try:
        with pytest.raises(LimitError, match="10,000,000,000 elements, over the array size"):
            run("sum(ones((100000, 0)) @ ones((0, 100000)))")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000


def test_small_matrix_product_of_empty_operands_is_zeros():
    assert run("sum(ones((3, 0)) @ ones((0, 3)))").numpy() == 0.0


@pytest.mark.slow
def test_command_line_refuses_a_huge_empty_matrix_product_with_exit_2():
    result = subprocess.run([sys.executable, "-m", "gradcli", "value-grad",
                             "w * sum(ones((100000, 0)) @ ones((0, 100000)))", "--var", "w=1"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "over the array size limit" in result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------------------
# Jacobians and Hessians: the result is an array like any other, and a Jacobian's passes
# are bounded, both refused before the first pass
# ---------------------------------------------------------------------------------------
def refused_quickly(work) -> str:
    """The LimitError's message of ``work()``, which must allocate under 10 MB."""
    tracemalloc.start()
    try:
        with pytest.raises(LimitError) as err:
            work()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000, peak
    return err.value.message


def model_of(text, **options):
    return build(parse_program(text), Declarations.from_options(**options))


@pytest.mark.parametrize("mode", ["rev", "fwd", "auto"])
def test_a_jacobian_over_the_array_size_limit_is_refused_before_its_passes(mode):
    from gradcli.run.derivatives import jacobian
    model = model_of("x * 2", var=["x=linspace(0, 1, 100000)"])  # 10^10 elements
    message = refused_quickly(lambda: jacobian(model, mode=mode))
    assert message == ("the Jacobian (100,000 x 100,000) would make 10,000,000,000 "
                       "elements, over the array size limit (10,000,000 elements)")


def test_a_hessian_over_the_array_size_limit_is_refused_before_its_passes():
    from gradcli.run.derivatives import hessian
    model = model_of("sum(x ** 2)", var=["x=linspace(0, 1, 10000)"])  # 10^8 elements
    message = refused_quickly(lambda: hessian(model))
    assert message.startswith("the Hessian (10,000 x 10,000) would make 100,000,000 elements")


@pytest.mark.parametrize("mode, passes, other, fewer", [("rev", 200_000, "fwd", 1),
                                                        ("fwd", 200_000, "rev", 1)])
def test_a_jacobian_mode_of_too_many_passes_is_refused_and_names_the_other(mode, passes,
                                                                           other, fewer):
    from gradcli.run.derivatives import jacobian
    program = "x * y" if mode == "rev" else "sum(x * y)"  # one side 200,000, the other 1
    model = model_of(program, var=["x=linspace(0, 1, 200000)", "y=2"])
    wrt = ["y"] if mode == "rev" else ["x"]
    message = refused_quickly(lambda: jacobian(model, wrt=wrt, mode=mode))
    assert message == (f"--mode {mode} would take {passes:,} passes, over the limit of "
                       f"100,000 (--mode {other} takes {fewer:,}; --mode auto takes the "
                       "fewer)")


def test_auto_takes_the_one_pass_where_rev_would_take_200000():
    from gradcli.run.derivatives import jacobian
    import numpy as np
    x = np.linspace(0, 1, 200000)
    result = jacobian(model_of("x * y", var=["x=linspace(0, 1, 200000)", "y=2"]),
                      wrt=["y"], mode="auto")
    assert result.computed_by == "forward"
    np.testing.assert_array_equal(result.jacobians[0].jacobian, x)  # d(x*y)/dy = x


@pytest.mark.slow
@pytest.mark.parametrize("args", [["hessian", "sum(x**2)", "--var", "x=linspace(0,1,100000)"],
                                  ["jacobian", "x", "--var", "x=linspace(0,1,100000)"]])
def test_command_line_refuses_a_huge_jacobian_or_hessian_with_exit_2(args):
    result = subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True,
                            text=True, timeout=120)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert "over the array size limit (10,000,000 elements)" in result.stderr
    assert "Traceback" not in result.stderr
