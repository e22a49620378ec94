"""Tree + declarations -> engine values, inside a function the API modes can wrap.

``build`` does all the checking and the one-time work: it creates the variables (the
``--var``/``--frozen`` ones first, then the program's own ``w = Variable(...)``, in order),
resolves every name (undeclared -> ``UnknownNameError`` with "did you mean"), and compiles
the statements into a flat list of steps. ``Model.function`` then runs those steps on the
engine: it is an ordinary Python function of the ``--arg`` values, so every mode works on
it exactly as on hand-written code::

    model = build(parse_program("s = w1 * x1 + w2 * x2"), declarations)
    value, pairs = gc.implicit_value_and_gradients(model.function)(*model.arg_values)
    with gc.GradientTape() as tape:
        y = model.function(*model.arg_values)
    tape.gradient(y, [model.values["s"]])

The compiled steps run in a loop, not by recursion, so a sum of 50,000 terms evaluates
as easily as a short one. Statements keep Python's order: a name is usable after the
statement that binds it, and rebinding (``x = sin(x) * 1.01``) is allowed. Variables are
created once, at build time ("hoisted"), and reading one gives the ``Variable`` itself,
so a tape sees the read.
"""
from __future__ import annotations

import functools
import inspect
import math
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import (
    ArgumentError,
    GradcliError,
    InputError,
    LimitError,
    ParseError,
    ShapeError,
    UnknownNameError,
    did_you_mean,
)
from . import limits
from .parser import (
    BOOL_NAMES,
    CONSTANT_NAMES,
    NotStatic,
    registry,
    resolve_call,
    static_index,
    static_value,
)
from .tree import (
    ArrayLit,
    Assign,
    Binary,
    Call,
    Compare,
    Declare,
    Index,
    Name,
    Number,
    Program,
    Slice,
    TupleLit,
    Unary,
)

__all__ = ["DTYPES", "Model", "build", "compile_constant", "evaluate_constant"]

DTYPES = ("float64", "float32")
_BINARY_OPS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "**": "power",
               "@": "matmul", "%": "mod", "//": "floor_divide"}
_COMPARE_OPS = {"<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
                "==": "equal", "!=": "not_equal"}
_LABELS = {"var": "--var", "frozen": "--frozen", "arg": "--arg", "variable": "Variable",
           "constant": "constant", "assigned": "assignment"}


#: How a name came to be, for names declared rather than computed.
DECLARED_KINDS = ("var", "frozen", "arg", "variable", "constant")


class Model:
    """A built program: its variables, arguments and the function that evaluates it.

    Known from the tree and the declarations alone (nothing evaluated, no file read):

    - ``arg_names``: the ``--arg`` declarations, in order;
    - ``kinds``: every name the program can see at its end -> how it came to be: "var",
      "frozen", "arg" (outside declarations), "variable", "constant" (the program's
      ``Variable(...)``/``constant(...)``) or "assigned" (only computed by the program);
    - ``trainable``: variable name -> trainable, in creation order (outside ones first);
    - ``read_variables``: the variables the program may read (a superset of what a run
      reads: every variable whose name, or an alias ``a = w``, the program uses while it
      still holds the variable, and a variable returned as the target);
    - ``target_name``: the target's name, or None when it is a bare last expression;
    - ``calls``: the names of the table entries the program's steps run (a plain run
      watches for kinks only when one of them has one: run/kinks.py).

    Loaded on first use (``load()``; the first access to the values below or the first
    call of ``function`` does it), so that every refusal the tree and the declarations
    decide comes before a file is read or anything is computed:

    - ``variables``: name -> ``Variable`` in creation order;
    - ``constants``: name -> tensor for the program's ``c = constant(...)``;
    - ``arg_values``: the arguments' tensors, in order;
    - ``function(*args)``: evaluates the statements with the arguments bound by position
      (or by name) and returns the target; its signature names the arguments, so
      ``gradients_function(model.function, params=["x1"])`` works;
    - ``values``: after a call, name -> the value each name had at the end (arguments,
      variables and every assignment; intermediate values are valid tape sources).

    A declared name stands for the declared argument, variable or constant whatever the
    program later binds to it: ``source(name)`` is the tensor to differentiate with
    respect to (``w = w * 2; y = w**2`` with ``--var w=1``: the source ``w`` is the
    variable, and dy/dw is 8).
    """

    def __init__(self, program: Program, dtype: str) -> None:
        self.program = program
        self.dtype = dtype
        self.arg_names: list[str] = []
        self.kinds: dict[str, str] = {}
        self.trainable: dict[str, bool] = {}
        self.read_variables: list[str] = []
        self.values: dict[str, Any] = {}
        self.target_name: str | None = None
        self.calls: frozenset = frozenset()
        self.function: Callable[..., Any] = _not_built
        self._variables: dict[str, Any] = {}
        self._constants: dict[str, Any] = {}
        self._arg_values: list[Any] = []
        self._base_env: dict[str, Any] = {}   # the outside variables, bound at every call
        self._loaders: list[Callable[[], None]] = []
        self._loaded = False
        self._bound: dict[str, Any] = {}     # bind(): declared name -> value for this run
        self._outside: list = []              # the --var/--frozen/--arg declarations

    @property
    def names(self) -> list[str]:
        """Every name the program can see at its end (arguments, variables, assignments)."""
        return list(self.kinds)

    def is_declared(self, name: str) -> bool:
        """Whether ``name`` is declared (an argument, variable or constant), not only
        computed by the program."""
        return self.kinds.get(name) in DECLARED_KINDS

    def load(self) -> None:
        """Make the declared values, once: read files, evaluate ``Variable(...)`` values."""
        if self._loaded:
            return
        for store in (self._variables, self._constants, self._arg_values, self._base_env):
            store.clear()
        for loader in self._loaders:
            loader()
        self._loaded = True

    @property
    def declarations(self) -> list:
        """The ``--var``/``--frozen``/``--arg`` declarations, in order (``Declaration``s;
        ``has_value`` is False for a name declared without a value)."""
        return list(self._outside)

    def bind(self, values: dict[str, Any]) -> Model:
        """Evaluate the same compiled program at other values of the ``--var``,
        ``--frozen`` and ``--arg`` names: ``values`` maps a declared name to its value for
        the next runs (an array, a tensor, or a batched value inside ``vectorized_map``);
        names not in ``values`` keep their declared value, and ``bind({})`` restores
        them all. Nothing is parsed or compiled again: the variables are made anew from
        the values (``Variable(value, trainable=..., name=...)``, as ``load`` makes them),
        and so are the program's own ``Variable(...)`` and ``constant(...)``, which may
        read them. Returns the model. This is how ``--at`` evaluates a chunk of rows.

        >>> from gradcli.lang import parse_program, Declarations
        >>> model = build(parse_program("x * w"), Declarations.from_options(
        ...     var=["w=2"], arg=["x"]))
        >>> float(model.bind({"x": 5.0}).function(*model.arg_values))
        10.0
        """
        outside = {decl.name for decl in self._outside}
        for name in values:
            if name not in outside:
                if self.is_declared(name):
                    raise InputError(f"'{name}' is declared in the program; declare it with "
                                     f"--var, --frozen or --arg to set it from outside")
                raise UnknownNameError(f"'{name}' is not a declared name"
                                       f"{did_you_mean(name, sorted(outside))}; declared: "
                                       f"{', '.join(d.name for d in self._outside) or 'none'}")
        self._bound = dict(values)
        self._loaded = False
        self.values = {}
        self.load()
        return self

    @property
    def variables(self) -> dict[str, Any]:
        """name -> ``Variable``, in creation order (made on first use)."""
        self.load()
        return self._variables

    @property
    def constants(self) -> dict[str, Any]:
        """name -> the tensor of the program's ``constant(...)`` (made on first use)."""
        self.load()
        return self._constants

    @property
    def arg_values(self) -> list[Any]:
        """The arguments' tensors, in ``arg_names`` order (made on first use)."""
        self.load()
        return self._arg_values

    def source(self, name: str):
        """The tensor ``name`` denotes as a gradient source: the declared argument,
        variable or constant of that name (whatever the program later binds to it), or,
        for a name the program only computes, its value at the end of the last call."""
        kind = self.kinds.get(name)
        if kind == "arg":
            return self.arg_values[self.arg_names.index(name)]
        if kind in ("var", "frozen", "variable"):
            return self.variables[name]
        if kind == "constant":
            return self.constants[name]
        return self.values[name]

    def __repr__(self) -> str:
        return (f"<Model args={self.arg_names} variables={list(self.trainable)} "
                f"target={self.target_name!r}>")


def _not_built(*args, **kwargs):  # pragma: no cover - replaced by build
    raise RuntimeError("model not built")


def _engine():
    """The engine modules, imported when first needed (the parser does not need them)."""
    from ..engine.core import recording, tensor
    return recording, tensor


# ---------------------------------------------------------------------------------------
# Compiling expressions to a flat list of steps
# ---------------------------------------------------------------------------------------
class _Plan:
    """Steps that compute expressions into numbered registers, in order.

    A step is ``step(regs, env, used)``: ``regs`` the registers of this call, ``env`` the
    name bindings, ``used`` a one-element list counting the elements produced (the
    per-evaluation budget). ``nodes[i]`` is the node of step ``i``, for error carets;
    ``wheres[i]`` the same, or None for a step that runs no operation (what an engine
    observer is told: a node read cold from memory at every step cost more than the
    step's own work). Operation inputs are register numbers (ints) or literal numbers
    (always floats).
    """

    def __init__(self, source: str, dtype: str) -> None:
        self.ops, self.tensor = _engine()
        self.source = source
        self.dtype = dtype
        self.steps: list[Callable] = []
        self.nodes: list[Any] = []
        self.wheres: list[Any] = []
        self.template: list[Any] = []   # registers with constants already in place
        self.resolved: dict[int, Any] = {}
        self.folded: dict[int, Any] = {}
        # pi, e, inf when declared: then not constants in static places (axis=, indices).
        self.shadowed: frozenset = frozenset()
        self.picked: set[int] = set()  # calls returning several tensors that are indexed
        self.calls: set[str] = set()  # the table entries the steps run, by name

    # --- registers ----------------------------------------------------------------------
    def register(self, value=None) -> int:
        self.template.append(value)
        return len(self.template) - 1

    def constant(self, value) -> Any:
        return self.tensor.constant(value, dtype=self.dtype)

    def add(self, step: Callable, node, operations: bool = True) -> None:
        """Add ``step`` for ``node``; ``operations``: whether it runs engine operations."""
        self.steps.append(step)
        self.nodes.append(node)
        self.wheres.append(node if operations else None)

    def error(self, cls, message: str, node) -> GradcliError:
        pos = node.pos
        return cls(message, source=self.source, line=pos.line, col=pos.col, width=pos.width)

    # --- expressions --------------------------------------------------------------------
    def _tensor_children(self, node) -> tuple:
        """The sub-expressions of ``node`` that are evaluated as tensors (static ones, such
        as ``axis=`` or indices, are folded instead)."""
        if isinstance(node, (Number, Name)):
            return ()
        if isinstance(node, Unary):
            return (node.operand,)
        if isinstance(node, (Binary, Compare)):
            return (node.left, node.right)
        if isinstance(node, Call):
            resolved = self.resolved.get(id(node))
            if resolved is None:
                resolved = self.resolved[id(node)] = resolve_call(node, self.source,
                                                                  self.shadowed)
            return resolved.inputs
        if isinstance(node, Index):
            if self._several(node.value):
                self.picked.add(id(node.value))  # eigh(a)[0]: the index picks an output
            return (node.value,)
        if isinstance(node, ArrayLit):
            folded = self._fold_array(node)
            return () if folded is not None else node.elements
        if isinstance(node, TupleLit):
            raise self.error(ParseError, "a tuple is only allowed as a shape or axis argument "
                                         "(use [a, b] for an array)", node)
        if isinstance(node, Declare):
            raise self.error(ParseError, f"{'Variable' if node.kind == 'variable' else 'constant'}"
                                         "(...) is only allowed as the right-hand side of an "
                                         "assignment", node)
        raise self.error(ParseError, f"{type(node).__name__} is not allowed here", node)

    def _fold_array(self, node: ArrayLit):
        """An array literal of plain numbers becomes one constant; None if it is not."""
        if id(node) in self.folded:
            return self.folded[id(node)]
        try:
            value = static_value(node, self.shadowed)  # a declared pi is not 3.14159...
        except NotStatic:
            value = None
        if value is not None:
            if any(isinstance(v, bool) for v in _flatten(value)):
                raise self.error(ArgumentError, "True and False are not numbers", node)
            try:
                array = np.array(value, dtype=np.float64)
            except ValueError:
                raise self.error(ShapeError, "array literal has rows of different lengths",
                                 node) from None
            value = self.constant(array)
        self.folded[id(node)] = value
        return value

    def compile_expr(self, expr, resolve_name: Callable) -> int:
        """Add the steps computing ``expr``; returns the register holding its value.
        ``resolve_name(node)`` gives ('env', name) or ('const', tensor) for a Name."""
        regs: dict[int, int] = {}
        # Iterative post-order over tensor children (trees can be 50,000 deep).
        stack = [(expr, False)]
        while stack:
            node, expanded = stack.pop()
            if not expanded:
                stack.append((node, True))
                for child in reversed(self._tensor_children(node)):
                    stack.append((child, False))
                continue
            regs[id(node)] = self._compile_node(node, regs, resolve_name)
        return regs[id(expr)]

    def _compile_node(self, node, regs: dict, resolve_name: Callable) -> int:
        ops = self.ops
        if isinstance(node, Number):
            return self.register(self.constant(node.value))
        if isinstance(node, Name):
            where, what = resolve_name(node)
            if where == "const":
                return self.register(what)
            out = self.register()

            def load(r, env, used, out=out, name=what):
                r[out] = env[name]
            self.add(load, node, operations=False)
            return out
        if isinstance(node, Unary):
            if node.op == "+":
                return regs[id(node.operand)]
            return self._op_step(ops.REGISTRY["negative"], [regs[id(node.operand)]], {}, node)
        if isinstance(node, (Binary, Compare)):
            table = _BINARY_OPS if isinstance(node, Binary) else _COMPARE_OPS
            return self._op_step(ops.REGISTRY[table[node.op]], self._operands(node, regs), {},
                                 node)
        if isinstance(node, Call):
            resolved = self.resolved[id(node)]
            inputs = [regs[id(e)] for e in resolved.inputs]
            if self._several(node):
                return self._outputs_step(resolved, inputs, node)
            return self._op_step(resolved.op, inputs, resolved.params, node,
                                 variadic=resolved.op.variadic)
        if isinstance(node, Index):
            index = static_index(node, self.source, self.shadowed)
            if self._several(node.value):
                return self._pick_step(node, index, regs[id(node.value)])
            return self._op_step(ops.INTERNAL["getitem"], [regs[id(node.value)]],
                                 {"index": index if len(index) > 1 else index[0]}, node)
        if isinstance(node, ArrayLit):
            folded = self.folded.get(id(node))
            if folded is not None:
                return self.register(folded)
            if not node.elements:
                return self.register(self.constant(np.zeros(0)))
            return self._op_step(ops.REGISTRY["stack"], [regs[id(e)] for e in node.elements],
                                 {"axis": 0}, node, variadic=True)
        raise self.error(ParseError, f"{type(node).__name__} is not allowed here", node)

    # --- entries returning several tensors (slogdet, eigh, svd) ----------------------------
    def _several(self, node) -> bool:
        """Whether ``node`` is a call returning several tensors (which must be indexed)."""
        if not isinstance(node, Call):
            return False
        resolved = self.resolved.get(id(node))
        if resolved is None:
            resolved = self.resolved[id(node)] = resolve_call(node, self.source, self.shadowed)
        if resolved.op.kind == "multi":  # split, array_split: as many as the call asks
            return True
        if not resolved.op.outputs:  # (linalg.py, loaded on demand, has the others)
            return False
        from ..engine.rules.linalg import several_outputs
        return several_outputs(resolved.op, resolved.params)

    def _output_names(self, op, params) -> list:
        """The names of a call's outputs: split's count comes from its parameters (a count
        n gives n pieces, a list of k indices k + 1)."""
        if op.kind != "multi":
            return list(op.outputs)
        cut = params.get("indices_or_sections")
        n = len(cut) + 1 if isinstance(cut, (tuple, list)) else cut
        return [f"piece {k}" for k in range(n if isinstance(n, int) and n > 0 else 0)]

    def _outputs_step(self, resolved, inputs: list, node) -> int:
        op = resolved.op
        if id(node) not in self.picked:
            outputs = self._output_names(op, resolved.params)
            what = (f"{len(outputs)} tensors ({', '.join(outputs)})" if op.kind != "multi"
                    else "several tensors")
            raise self.error(ArgumentError, f"{op.name} returns {what}: pick one with an "
                                            f"index, e.g. {node.func}(...)[0]", node)
        params, out = resolved.params, self.register()
        self.calls.add(op.name)
        multi = op.kind == "multi"
        api = self.ops.FUNCTIONS[op.name]

        def step(r, env, used, out=out):
            values = [r[i] if isinstance(i, int) else i for i in inputs]
            if not multi:
                _check_linalg_sizes(op, values, False, params)
            value = api(*values, **params)
            used[0] += sum(_size(v) for v in value)
            r[out] = value
        self.add(step, node)
        return out

    def _pick_step(self, node, index: tuple, source_reg: int) -> int:
        resolved = self.resolved[id(node.value)]
        op = resolved.op
        outputs = self._output_names(op, resolved.params)
        n = len(outputs)
        first = node.items[0]
        if isinstance(first, Slice) or not isinstance(index[0], int) or not -n <= index[0] < n:
            what = (f"({', '.join(outputs)})" if op.kind != "multi" else "(as the call asks)")
            raise self.error(ArgumentError, f"{op.name} returns {n} tensors {what}: the first "
                                            f"index picks one, an integer from 0 to {n - 1}",
                             first)
        out = self.register()

        def step(r, env, used, out=out, k=index[0]):
            r[out] = r[source_reg][k]
        self.add(step, node, operations=False)
        rest = index[1:]
        if not rest:
            return out
        return self._op_step(self.ops.INTERNAL["getitem"], [out],
                             {"index": rest if len(rest) > 1 else rest[0]}, node)

    def _operands(self, node, regs: dict) -> list:
        """The two operands of an operator. A literal number next to a non-literal stays a
        Python float, which the engine treats as a weak scalar (float32 stays float32, and
        ``x ** 2`` takes the power rule's fast path)."""
        left, right = node.left, node.right
        if isinstance(left, Number) and isinstance(right, Number):
            return [regs[id(left)], regs[id(right)]]
        # float(): an int here would be taken for a register number (hand-built trees).
        return [float(left.value) if isinstance(left, Number) else regs[id(left)],
                float(right.value) if isinstance(right, Number) else regs[id(right)]]

    def _op_step(self, op, inputs: list, params: dict, node, variadic: bool = False) -> int:
        apply, out = self.ops.apply, self.register()
        self.calls.add(op.name)
        check = _check_linalg_sizes if op.kind == "linalg" else _check_sizes
        regs_in = [i for i in inputs if isinstance(i, int)]
        # (only shape_extra's entries have one: not loaded, none of them is used; issue 14)
        more = sys.modules.get("gradcli.engine.rules.shape_extra")
        result_size = more.RESULT_SIZE.get(op.name) if more is not None else None
        if result_size is not None:  # repeat, tile, pad...: the result may dwarf the inputs
            def step(r, env, used, out=out):
                values = [r[i] if isinstance(i, int) else i for i in inputs]
                try:
                    count = result_size([np.shape(v) for v in values], params)
                except (TypeError, ValueError, IndexError):
                    count = 0  # parameters that do not fit: the engine reports them
                limits.check_elements(count, f"{op.name}(...)")
                value = apply(op, values, params)
                used[0] += _size(value)
                r[out] = value
        elif len(inputs) == 1 and regs_in and op.kind != "linalg":  # (linalg: size checked)
            (a,) = inputs

            def step(r, env, used, out=out, a=a):
                x = r[a]
                value = apply(op, (x,), params)
                used[0] += _size(value)
                r[out] = value
        elif len(inputs) == 2 and not variadic:
            a, b = inputs
            a_reg, b_reg = isinstance(a, int), isinstance(b, int)

            def step(r, env, used, out=out, a=a, b=b, a_reg=a_reg, b_reg=b_reg):
                x = r[a] if a_reg else a
                y = r[b] if b_reg else b
                check(op, (x, y), False, params)
                value = apply(op, (x, y), params)
                used[0] += _size(value)
                r[out] = value
        else:
            def step(r, env, used, out=out):
                values = [r[i] if isinstance(i, int) else i for i in inputs]
                check(op, values, variadic, params)
                value = apply(op, values, params)
                used[0] += _size(value)
                r[out] = value
        self.add(step, node)
        return out


def _flatten(value):
    if isinstance(value, tuple):
        for v in value:
            yield from _flatten(v)
    else:
        yield value


def _size(x) -> int:
    """The elements of an operand or a result, read off a tensor's numpy value (the
    ``size`` property asks np.size, ~1 us, and every step counts two or three); a
    batched value's are one example's (its ``size``); a number is one."""
    size = getattr(getattr(x, "_value", x), "size", 1)
    return size if size.__class__ is int else int(size)


def _check_linalg_sizes(op, values, variadic: bool = False, params=None) -> None:
    """``_check_sizes`` for the linear algebra entries: products (outer, kron, einsum) and
    full SVDs grow beyond their inputs' sizes, so the result is counted from the shapes."""
    if op.name in ("matmul", "dot"):
        return _check_sizes(op, values, variadic, params)
    from ..engine.rules.linalg import result_count
    count = result_count(op.name, [np.shape(v) for v in values], params or {})
    if count is not None and count > limits.array_limit():
        limits.check_elements(count, op.name)


def _check_sizes(op, values, variadic: bool = False, params=None) -> None:
    """Refuse an operation whose result would be over the array size limit, before it is
    computed: a broadcast ``(n, 1) * (1, n)``, an outer matrix product, a big stack."""
    if variadic:
        total = sum(_size(v) for v in values)
        if total > limits.array_limit():
            limits.check_elements(total, op.name)
        return
    bound = 1
    for v in values:
        bound *= _size(v)
    # The result never has more elements than the product of the inputs' sizes, so the
    # exact (slower) prediction is needed only above the limit -- except for a matrix
    # product of empty operands: (n, 0) @ (0, n) is n x n zeros. (Under --at the limit is
    # shared by the rows computed at once: limits.array_limit.)
    if bound <= limits.MAX_ELEMENTS and (bound or op.name not in ("matmul", "dot")) and \
            bound <= limits.array_limit():
        return
    shapes = [np.shape(v) for v in values]
    try:
        if op.name in ("matmul", "dot") and all(len(s) >= 1 for s in shapes):
            a, b = shapes
            a = a if len(a) > 1 else (1,) + a
            b = b if len(b) > 1 else b + (1,)
            count = math.prod(np.broadcast_shapes(a[:-2], b[:-2])) * a[-2] * b[-1]
        else:
            count = math.prod(np.broadcast_shapes(*shapes))
    except ValueError:
        return  # shapes that do not fit: the engine reports the mismatch
    limits.check_elements(count, op.name)


def _run(plan: _Plan, regs: list, env: dict) -> None:
    """Run compiled steps, turning every failure into a GradcliError at its node."""
    nodes, wheres, source = plan.nodes, plan.wheres, plan.source
    used = [0]
    i = 0
    rows = limits.batch_rows()  # (--at: the elements counted are one row's)
    budget = limits.MAX_TOTAL_ELEMENTS // rows
    observing = _engine_state().observing
    # (--explain, --debug-nans: each operation learns the node it came from)
    observer = observing[-1] if observing else None
    try:
        # inf and nan are values here, not warnings (numpy's "mean of empty slice" included).
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for i, step in enumerate(plan.steps):
                if observer is not None:  # (a call per step would cost as much as a step)
                    observer.where = wheres[i]
                step(regs, env, used)
                if used[0] > budget:
                    what = (f"the evaluation made more than "
                            f"{limits.MAX_TOTAL_ELEMENTS:,} array elements in total")
                    if rows > 1:
                        raise limits.chunk_too_large(rows, what)
                    raise LimitError(what + " (the evaluation size limit)")
            if observer is not None:  # what runs after the program is the caller's
                observer.where = None
    except GradcliError as err:
        raise _at(err, nodes[i], source)
    except FloatingPointError as err:
        if hasattr(err, "pass_"):  # debug_nans stopped the evaluation: it says where
            raise
        raise _at(ShapeError(f"cannot evaluate this: {err}"), nodes[i], source) from None
    except MemoryError:
        raise _at(LimitError("out of memory"), nodes[i], source) from None
    except (ValueError, TypeError, IndexError, ArithmeticError) as err:
        detail = str(err).split("\n")[0]
        raise _at(ShapeError(f"cannot evaluate this: {detail}"), nodes[i], source) from None


@functools.cache
def _engine_state():
    """``engine.core.state``, imported once (an import statement costs a few us a run)."""
    from ..engine.core import state
    return state


def _at(err: GradcliError, node, source: str) -> GradcliError:
    pos = node.pos
    return err.at(source, pos.line, pos.col, pos.width)


# ---------------------------------------------------------------------------------------
# Building a model
# ---------------------------------------------------------------------------------------
def _declared_list(defined: dict) -> str:
    if not defined:
        return "nothing is declared (declare inputs with --arg NAME=VALUE)"
    return "declared: " + ", ".join(defined)


def build(program: Program, declarations=None, *, dtype: str = "float64",
          target: str | None = None) -> Model:
    """Check a parsed program against the declarations and prepare its evaluation.

    Checks every name and compiles the statements; the declared values (files
    included) are made when the model is first used (``Model.load``): the variables
    once, ``--var``/``--frozen`` first, then the program's own declarations in order.
    Returns a ``Model`` whose ``function(*args)`` evaluates the program on the engine.

    >>> from gradcli.lang import parse_program, Declarations
    >>> decls = Declarations.from_options(arg=["x1=5", "x2=7"])
    >>> model = build(parse_program("w1 = Variable(2.0); w2 = Variable(3.0); s = w1*x1 + w2*x2"), decls)
    >>> float(model.function(*model.arg_values))
    31.0
    """
    if dtype not in DTYPES:
        raise InputError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    # values.py (the declarations) sits above this module: it evaluates their constant
    # expressions here, so None means "nothing declared" rather than a Declarations()
    declarations = declarations if declarations is not None else ()
    source = program.source
    model = Model(program, dtype)
    plan = _Plan(source, dtype)
    ops, tensor = plan.ops, plan.tensor
    functions = registry()

    defined = model.kinds                  # name -> kind, as the statements go
    # name -> the variable the name holds at this point of the program (None: another
    # value), to know which variables the program reads without running it.
    holds: dict[str, str | None] = {}
    reads: set[str] = set()
    outside = []
    for decl in declarations:
        if decl.name in functions:
            raise InputError(f"'{decl.name}' is the name of a function")
        if decl.kind == "arg":
            model.arg_names.append(decl.name)
        else:
            model.trainable[decl.name] = decl.kind == "var"
            holds[decl.name] = decl.name
        defined[decl.name] = decl.kind
        outside.append(decl)

    model._outside = outside

    def load_outside():
        # decl.value reads the file or evaluates the value text on first access; a value
        # given to Model.bind replaces it (a tensor or batched value is used as it is).
        bound = model._bound
        for decl in outside:
            value = bound[decl.name] if decl.name in bound else decl.value
            if decl.kind == "arg":
                model._arg_values.append(
                    value if isinstance(value, tensor.Tensor) or value.__class__ is
                    tensor.Batched else tensor.constant(value, dtype=dtype))
            else:
                variable = tensor.Variable(value, trainable=decl.kind == "var",
                                           name=decl.name, dtype=dtype)
                model._variables[decl.name] = variable
                model._base_env[decl.name] = variable
    model._loaders.append(load_outside)

    # Where each program declaration is, to tell "used before its declaration" apart.
    declared_at = {}
    for statement in program.statements:
        if isinstance(statement, Assign) and isinstance(statement.value, Declare):
            declared_at.setdefault(statement.name, statement)

    def resolve(node: Name):
        name = node.id
        if name in defined:
            if holds.get(name) is not None:
                reads.add(holds[name])
            return "env", name
        if name in CONSTANT_NAMES:
            return "const", tensor.constant(ops.CONSTANTS[name], dtype=dtype)
        if name in BOOL_NAMES:
            raise plan.error(ArgumentError, f"{name} is only allowed as a keyword value, "
                                            "e.g. keepdims=True", node)
        later = declared_at.get(name)
        if later is not None:
            raise plan.error(UnknownNameError, f"'{name}' is used before its declaration on "
                                               f"line {later.pos.line}", node)
        hint = did_you_mean(name, list(defined) + list(CONSTANT_NAMES))
        raise plan.error(UnknownNameError, f"undeclared name '{name}'{hint}; "
                                           f"{_declared_list(defined)}", node)

    result_reg = None
    for statement in program.statements:
        plan.shadowed = frozenset(name for name in CONSTANT_NAMES if name in defined)
        if isinstance(statement, Assign) and isinstance(statement.value, Declare):
            _declare(statement, model, plan)
            holds[statement.name] = (statement.name if statement.value.kind == "variable"
                                     else None)
            result_reg = None
            continue
        reg = plan.compile_expr(statement.value, resolve)
        if isinstance(statement, Assign):
            name = statement.name

            def store(r, env, used, reg=reg, name=name):
                value = r[reg]
                env[name] = value
            plan.add(store, statement, operations=False)
            defined[name] = defined.get(name, "assigned")
            holds[name] = _alias_of(statement.value, holds)
            result_reg = None
        else:
            result_reg = reg

    last = program.statements[-1]
    if target is None:
        model.target_name = last.name if isinstance(last, Assign) else None
    else:
        if target not in defined:
            hint = did_you_mean(target, defined)
            raise UnknownNameError(f"unknown target '{target}'{hint}; "
                                   f"{_declared_list(defined)}")
        model.target_name = target
    if model.target_name is not None and holds.get(model.target_name) is not None:
        reads.add(holds[model.target_name])  # returning a variable reads it
    model.read_variables = [name for name in model.trainable if name in reads]
    model.function = _make_function(model, plan, result_reg)
    model.calls = frozenset(plan.calls)
    return model


def _alias_of(expr, holds: dict) -> str | None:
    """The variable an assignment's value is (``a = w``, ``a = +w``: the same object),
    or None when the value is a new tensor."""
    while isinstance(expr, Unary) and expr.op == "+":
        expr = expr.operand
    return holds.get(expr.id) if isinstance(expr, Name) else None


def _declare(statement: Assign, model: Model, plan: _Plan) -> None:
    """Check ``name = Variable(...)`` / ``constant(...)`` now, and have ``model.load``
    make its variable or constant, once; its statement then binds the name to it."""
    name, declare = statement.name, statement.value
    defined = model.kinds
    if name in defined and defined[name] != "assigned":
        raise plan.error(InputError, f"'{name}' is declared twice (already as "
                                     f"{_LABELS[defined[name]]})", statement)
    # The initial value may use numbers, constants and what was declared before it.
    ops, tensor = plan.ops, plan.tensor
    dtype = plan.dtype
    earlier = [n for n, kind in defined.items() if kind in ("var", "frozen", "variable",
                                                             "constant")]
    shadowed = frozenset(n for n in CONSTANT_NAMES if n in defined)

    def resolve(node: Name):
        if node.id in earlier:
            return "env", node.id
        if node.id in CONSTANT_NAMES and node.id not in defined:
            return "const", tensor.constant(ops.CONSTANTS[node.id], dtype=dtype)
        raise plan.error(UnknownNameError, f"the value of {name} can use numbers, pi, e, inf "
                                           f"and variables declared before it, not "
                                           f"'{node.id}'", node)

    initial = _compile_once(declare.value, resolve, plan.source, dtype, shadowed)
    if declare.kind == "variable":
        model.trainable[name] = declare.trainable
        defined[name] = "variable"
    else:
        defined[name] = "constant"

    def load():
        # Earlier variables and constants count by their values, not as reads.
        known = {**model._variables, **model._constants}
        value = initial({n: tensor.constant(known[n].numpy(), dtype=dtype) for n in earlier})
        if isinstance(value, np.ndarray) and value.dtype == np.bool_ or isinstance(
                value, np.bool_):
            raise plan.error(InputError, f"the value of {name} must be numbers, not booleans",
                             declare.value)
        if declare.kind == "variable":
            model._variables[name] = tensor.Variable(value, trainable=declare.trainable,
                                                     name=name, dtype=dtype)
        else:
            model._constants[name] = tensor.constant(value, dtype=dtype)
    model._loaders.append(load)

    store = model._variables if declare.kind == "variable" else model._constants

    def bind(r, env, used, name=name, store=store):
        env[name] = store[name]
    plan.add(bind, statement, operations=False)


def _compile_once(expr, resolve: Callable, source: str, dtype: str,
                  shadowed: frozenset = frozenset()) -> Callable[[dict], Any]:
    """Compile an expression now (names checked) into ``run(env)``, which evaluates it
    outside any tape and returns its numpy value."""
    plan = _Plan(source, dtype)
    plan.shadowed = shadowed
    reg = plan.compile_expr(expr, resolve)

    def run(env: dict):
        regs = list(plan.template)
        _run(plan, regs, env)
        value = regs[reg]
        return value.numpy() if hasattr(value, "numpy") else np.float64(value)
    return run


def compile_constant(expr, source: str = "", dtype: str = "float64") -> Callable[[], np.ndarray]:
    """Check a constant expression now and return ``value()``, which evaluates it: the
    names are known at once, the work (``linspace(0, 1, 10**7)``) is done when asked."""
    ops, tensor = _engine()

    def resolve(node: Name):
        if node.id in CONSTANT_NAMES:
            return "const", tensor.constant(ops.CONSTANTS[node.id], dtype=dtype)
        pos = node.pos
        raise UnknownNameError(f"a value can use only numbers, pi, e, inf and functions, "
                               f"not the name '{node.id}'", source=source, line=pos.line,
                               col=pos.col, width=pos.width)

    run = _compile_once(expr, resolve, source, dtype)
    return lambda: np.asarray(run({}))


def evaluate_constant(expr, source: str = "", dtype: str = "float64") -> np.ndarray:
    """The value of a constant expression (numbers, pi, e, inf, functions of them) as a
    numpy array; any other name is an ``UnknownNameError``. Used for ``--var`` values.

    >>> from gradcli.lang.parser import parse_expression
    >>> evaluate_constant(parse_expression("linspace(0, 1, 3)"), "linspace(0, 1, 3)")
    array([0. , 0.5, 1. ])
    """
    return compile_constant(expr, source, dtype)()


def _make_function(model: Model, plan: _Plan, result_reg: int | None):
    """The program as a Python function of its arguments (with a real signature, so the
    API's ``params=["x1"]`` can name them)."""
    template = plan.template
    arg_names = list(model.arg_names)
    n_args = len(arg_names)
    constant = plan.tensor.constant
    Tensor = (plan.tensor.Tensor, plan.tensor.Batched)  # (batched: inside vectorized_map)
    dtype = plan.dtype
    target = model.target_name
    base_env = model._base_env

    def function(*args, **kwargs):
        if not model._loaded:
            model.load()
        if kwargs:
            args = _bind_arguments(arg_names, args, kwargs)
        if len(args) != n_args:
            raise ArgumentError(f"the program takes {n_args} argument"
                                f"{'s' if n_args != 1 else ''} ({', '.join(arg_names)}), "
                                f"got {len(args)}")
        env = dict(base_env)
        for name, value in zip(arg_names, args):
            env[name] = value if isinstance(value, Tensor) else constant(value, dtype=dtype)
        regs = list(template)
        model.values = env
        _run(plan, regs, env)
        result = env[target] if target is not None else regs[result_reg]
        return result

    function.__name__ = function.__qualname__ = "program"
    function.__doc__ = f"The program, as a function of ({', '.join(arg_names)})."
    function.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in arg_names])
    return function


def _bind_arguments(arg_names: list[str], args: tuple, kwargs: dict) -> tuple:
    values = list(args) + [None] * (len(arg_names) - len(args))
    for key, value in kwargs.items():
        if key not in arg_names:
            raise ArgumentError(f"the program has no argument '{key}'"
                                f"{did_you_mean(key, arg_names)}")
        index = arg_names.index(key)
        if index < len(args):
            raise ArgumentError(f"argument '{key}' given twice")
        values[index] = value
    missing = [name for name, value in zip(arg_names, values) if value is None]
    if missing:
        raise ArgumentError(f"missing argument(s): {', '.join(missing)}")
    return tuple(values)
