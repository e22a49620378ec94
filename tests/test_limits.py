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


def test_command_line_refuses_a_huge_empty_matrix_product_with_exit_2():
    result = subprocess.run([sys.executable, "-m", "gradcli", "value-grad",
                             "w * sum(ones((100000, 0)) @ ones((0, 100000)))", "--var", "w=1"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "over the array size limit" in result.stderr
    assert "Traceback" not in result.stderr
