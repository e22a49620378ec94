"""The order ``gradcli functions`` lists the table in (``table.ORDER``), as documented on
``table.register``: the order of registration (the rule modules in the order
rules/__init__.py names them, each in the order of its source), except an entry
registered ``listed_after`` another, listed right after it.

Truths: the rule modules' source, read with ``ast`` (nothing imported to find it), and the
listing of the one-file table before the layout change (``git show a9b6dd5^``), which
the six ``listed_after`` entries restore.
"""
from __future__ import annotations

import ast
from pathlib import Path

from gradcli.engine.core.table import ORDER

RULES = Path(__file__).resolve().parents[2] / "gradcli" / "engine" / "rules"

# `gradcli functions --json` at a9b6dd5^, the last commit before the table was split into
# rule modules by kind.
BEFORE_THE_SPLIT = """
add subtract multiply divide power matmul negative square reciprocal abs exp expm1 log
log1p log2 log10 sqrt cbrt sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh
arccosh arctanh sigmoid relu softplus sign floor ceil arctan2 maximum minimum hypot less
less_equal greater greater_equal equal not_equal sum mean prod max min logsumexp norm
dot transpose reshape concatenate stack where clip softmax stop_gradient zeros ones full
eye linspace arange inv solve det slogdet cholesky eigh svd pinv diagonal trace diag
triu tril einsum inner tensordot outer kron cross var std average median sort argmax
argmin cumsum cumprod diff log_softmax nan_to_num exp2 sinc deg2rad rad2deg fabs trunc
erf erfc logaddexp logaddexp2 mod fmod floor_divide fmax fmin expand_dims squeeze ravel
atleast_1d atleast_2d atleast_3d broadcast_to repeat tile flip fliplr flipud roll rot90
swapaxes moveaxis pad vstack hstack dstack split array_split take gather take_along_axis
""".split()


def _rule_modules() -> list[str]:
    """The rule modules in the order rules/__init__.py names them: imported, then the
    ones loaded on demand."""
    tree = ast.parse((RULES / "__init__.py").read_text(encoding="utf-8"))
    imported, on_demand = [], []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
            imported += [alias.name for alias in node.names]
        elif isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple):
            on_demand += [element.value for element in node.iter.elts]
    return imported + on_demand


def _written_entries() -> list[tuple[str, str | None]]:
    """(name, listed_after or None) of every language entry written as a call with a
    literal ``name=``, in source order, module by module."""
    found = []
    for module in _rule_modules():
        tree = ast.parse((RULES / f"{module}.py").read_text(encoding="utf-8"))
        calls = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            words = {k.arg: k.value for k in node.keywords if k.arg}
            name, internal = words.get("name"), words.get("internal")
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                continue
            if isinstance(internal, ast.Constant) and internal.value:
                continue
            after = words.get("listed_after")
            calls.append((node.lineno, node.col_offset, name.value,
                          after.value if isinstance(after, ast.Constant) else None))
        found += [(name, after) for _, _, name, after in sorted(calls)]
    return found


def test_the_listing_is_the_one_before_the_table_was_split():
    listed = list(ORDER)
    assert [name for name in listed if name in BEFORE_THE_SPLIT] == BEFORE_THE_SPLIT


def test_entries_are_listed_in_the_order_their_rule_modules_register_them():
    listed = list(ORDER)
    written = []
    for name, after in _written_entries():  # (a later name="sum" gives it more aliases)
        if after is None and name in listed and name not in written:
            written.append(name)
    assert len(written) > 100  # (the reader finds the entries)
    assert [name for name in listed if name in written] == written


def test_an_entry_listed_after_another_comes_right_after_it():
    listed = list(ORDER)
    hinted = {name: after for name, after in _written_entries() if after is not None}
    assert hinted  # (the six of BEFORE_THE_SPLIT)
    for name, after in hinted.items():
        between = listed[listed.index(after) + 1:listed.index(name)]
        # right after it, or after the ones listed after it before (a chain)
        assert all(other in hinted for other in between), (name, after, between)
