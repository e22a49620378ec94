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

import inspect
import math
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
    TupleLit,
    Unary,
)

__all__ = ["DTYPES", "Model", "build", "evaluate_constant"]

DTYPES = ("float64", "float32")
_BINARY_OPS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "**": "power",
               "@": "matmul", "%": "mod", "//": "floor_divide"}
_COMPARE_OPS = {"<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
                "==": "equal", "!=": "not_equal"}
_LABELS = {"var": "--var", "frozen": "--frozen", "arg": "--arg", "variable": "Variable",
           "constant": "constant", "assigned": "assignment"}


class Model:
    """A built program: its variables, arguments and the function that evaluates it.

    - ``variables``: name -> ``Variable`` in creation order (outside ones first);
    - ``constants``: name -> tensor for the program's ``c = constant(...)``;
    - ``arg_names`` / ``arg_values``: the ``--arg`` declarations, in order;
    - ``function(*args)``: evaluates the statements with the arguments bound by position
      (or by name) and returns the target; its signature names the arguments, so
      ``gradients_function(model.function, params=["x1"])`` works;
    - ``values``: after a call, name -> the value each name had at the end (arguments,
      variables and every assignment; intermediate values are valid tape sources);
    - ``target_name``: the target's name, or None when it is a bare last expression.
    """

    def __init__(self, program: Program, dtype: str) -> None:
        self.program = program
        self.dtype = dtype
        self.variables: dict[str, Any] = {}
        self.constants: dict[str, Any] = {}
        self.arg_names: list[str] = []
        self.arg_values: list[Any] = []
        self.values: dict[str, Any] = {}
        self.target_name: str | None = None
        self.function: Callable[..., Any] = _not_built
        self._final_names: list[str] = []

    @property
    def names(self) -> list[str]:
        """Every name the program can see at its end (arguments, variables, assignments)."""
        return list(self._final_names)

    def __repr__(self) -> str:
        return (f"<Model args={self.arg_names} variables={list(self.variables)} "
                f"target={self.target_name!r}>")


def _not_built(*args, **kwargs):  # pragma: no cover - replaced by build
    raise RuntimeError("model not built")


def _engine():
    """The engine modules, imported when first needed (the parser does not need them)."""
    from ..engine import ops, tensor
    return ops, tensor


# ---------------------------------------------------------------------------------------
# Compiling expressions to a flat list of steps
# ---------------------------------------------------------------------------------------
class _Plan:
    """Steps that compute expressions into numbered registers, in order.

    A step is ``step(regs, env, used)``: ``regs`` the registers of this call, ``env`` the
    name bindings, ``used`` a one-element list counting the elements produced (the
    per-evaluation budget). ``nodes[i]`` is the node of step ``i``, for error carets.
    Operation inputs are register numbers (ints) or literal numbers (always floats).
    """

    def __init__(self, source: str, dtype: str) -> None:
        self.ops, self.tensor = _engine()
        self.source = source
        self.dtype = dtype
        self.steps: list[Callable] = []
        self.nodes: list[Any] = []
        self.template: list[Any] = []   # registers with constants already in place
        self.resolved: dict[int, Any] = {}
        self.folded: dict[int, Any] = {}
        # pi, e, inf when declared: then not constants in static places (axis=, indices).
        self.shadowed: frozenset = frozenset()

    # --- registers ----------------------------------------------------------------------
    def register(self, value=None) -> int:
        self.template.append(value)
        return len(self.template) - 1

    def constant(self, value) -> Any:
        return self.tensor.constant(value, dtype=self.dtype)

    def add(self, step: Callable, node) -> None:
        self.steps.append(step)
        self.nodes.append(node)

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
            value = static_value(node)
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
            self.add(load, node)
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
            return self._op_step(resolved.op, inputs, resolved.params, node,
                                 variadic=resolved.op.variadic)
        if isinstance(node, Index):
            index = static_index(node, self.source, self.shadowed)
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
        check = _check_sizes
        regs_in = [i for i in inputs if isinstance(i, int)]
        result_size = self.ops.more_ops.RESULT_SIZE.get(op.name)
        if result_size is not None:  # repeat, tile, pad...: the result may dwarf the inputs
            def step(r, env, used, out=out):
                values = [r[i] if isinstance(i, int) else i for i in inputs]
                try:
                    count = result_size([np.shape(v) for v in values], params)
                except (TypeError, ValueError, IndexError):
                    count = 0  # parameters that do not fit: the engine reports them
                limits.check_elements(count, f"{op.name}(...)")
                value = apply(op, values, params)
                used[0] += value.size
                r[out] = value
        elif len(inputs) == 1 and regs_in:
            (a,) = inputs

            def step(r, env, used, out=out, a=a):
                x = r[a]
                value = apply(op, (x,), params)
                used[0] += value.size
                r[out] = value
        elif len(inputs) == 2 and not variadic:
            a, b = inputs
            a_reg, b_reg = isinstance(a, int), isinstance(b, int)

            def step(r, env, used, out=out, a=a, b=b, a_reg=a_reg, b_reg=b_reg):
                x = r[a] if a_reg else a
                y = r[b] if b_reg else b
                check(op, (x, y))
                value = apply(op, (x, y), params)
                used[0] += value.size
                r[out] = value
        else:
            def step(r, env, used, out=out):
                values = [r[i] if isinstance(i, int) else i for i in inputs]
                check(op, values, variadic)
                value = apply(op, values, params)
                used[0] += value.size
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
    size = getattr(x, "size", 1)
    return size if type(size) is int else int(size)


def _check_sizes(op, values, variadic: bool = False) -> None:
    """Refuse an operation whose result would be over the array size limit, before it is
    computed: a broadcast ``(n, 1) * (1, n)``, an outer matrix product, a big stack."""
    if variadic:
        total = sum(_size(v) for v in values)
        if total > limits.MAX_ELEMENTS:
            limits.check_elements(total, op.name)
        return
    bound = 1
    for v in values:
        bound *= _size(v)
    # The result never has more elements than the product of the inputs' sizes, so the
    # exact (slower) prediction is needed only above the limit.
    if bound <= limits.MAX_ELEMENTS:
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


def _run(plan_steps: list, nodes: list, regs: list, env: dict, source: str) -> None:
    """Run compiled steps, turning every failure into a GradcliError at its node."""
    used = [0]
    i = 0
    try:
        # inf and nan are values here, not warnings (numpy's "mean of empty slice" included).
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for i, step in enumerate(plan_steps):
                step(regs, env, used)
                if used[0] > limits.MAX_TOTAL_ELEMENTS:
                    raise LimitError(f"the evaluation made more than "
                                     f"{limits.MAX_TOTAL_ELEMENTS:,} array elements in total "
                                     f"(the evaluation size limit)")
    except GradcliError as err:
        raise _at(err, nodes[i], source)
    except MemoryError:
        raise _at(LimitError("out of memory"), nodes[i], source) from None
    except (ValueError, TypeError, IndexError, ArithmeticError) as err:
        detail = str(err).split("\n")[0]
        raise _at(ShapeError(f"cannot evaluate this: {detail}"), nodes[i], source) from None


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

    Creates the variables once (``--var``/``--frozen`` first, then the program's own
    declarations in order), checks every name, and returns a ``Model`` whose
    ``function(*args)`` evaluates the program on the engine.

    >>> from gradcli.lang import parse_program, Declarations
    >>> decls = Declarations.from_options(arg=["x1=5", "x2=7"])
    >>> model = build(parse_program("w1 = Variable(2.0); w2 = Variable(3.0); s = w1*x1 + w2*x2"), decls)
    >>> float(model.function(*model.arg_values))
    31.0
    """
    from .values import Declarations
    if dtype not in DTYPES:
        raise InputError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    declarations = declarations if declarations is not None else Declarations()
    source = program.source
    model = Model(program, dtype)
    plan = _Plan(source, dtype)
    ops, tensor = plan.ops, plan.tensor
    functions = registry()

    defined: dict[str, str] = {}           # name -> kind, as the statements go
    base_env: dict[str, Any] = {}
    for decl in declarations:
        if decl.name in functions:
            raise InputError(f"'{decl.name}' is the name of a function")
        if decl.kind == "arg":
            model.arg_names.append(decl.name)
            model.arg_values.append(tensor.constant(decl.value, dtype=dtype))
        else:
            variable = tensor.Variable(decl.value, trainable=decl.kind == "var",
                                       name=decl.name, dtype=dtype)
            model.variables[decl.name] = variable
            base_env[decl.name] = variable
        defined[decl.name] = decl.kind

    # Where each program declaration is, to tell "used before its declaration" apart.
    declared_at = {}
    for statement in program.statements:
        if isinstance(statement, Assign) and isinstance(statement.value, Declare):
            declared_at.setdefault(statement.name, statement)

    def resolve(node: Name):
        name = node.id
        if name in defined:
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
            _declare(statement, model, plan, defined)
            result_reg = None
            continue
        reg = plan.compile_expr(statement.value, resolve)
        if isinstance(statement, Assign):
            name = statement.name

            def store(r, env, used, reg=reg, name=name):
                value = r[reg]
                env[name] = value
            plan.add(store, statement)
            defined[name] = defined.get(name, "assigned")
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
    model._final_names = list(defined)
    model.function = _make_function(model, plan, base_env, result_reg)
    return model


def _declare(statement: Assign, model: Model, plan: _Plan, defined: dict) -> None:
    """Create the variable or constant of ``name = Variable(...)`` / ``constant(...)`` now,
    once; its statement then binds the name to that object."""
    name, declare = statement.name, statement.value
    if name in defined and defined[name] != "assigned":
        raise plan.error(InputError, f"'{name}' is declared twice (already as "
                                     f"{_LABELS[defined[name]]})", statement)
    # The initial value may use numbers, constants and what was declared before it.
    ops, tensor = plan.ops, plan.tensor
    snapshot = {**model.variables, **model.constants}

    def resolve(node: Name):
        if node.id in snapshot:
            return "const", tensor.constant(snapshot[node.id].numpy(), dtype=plan.dtype)
        if node.id in CONSTANT_NAMES and node.id not in defined:
            return "const", tensor.constant(ops.CONSTANTS[node.id], dtype=plan.dtype)
        raise plan.error(UnknownNameError, f"the value of {name} can use numbers, pi, e, inf "
                                           f"and variables declared before it, not "
                                           f"'{node.id}'", node)

    value = _evaluate_once(declare.value, resolve, plan.source, plan.dtype)
    if isinstance(value, np.ndarray) and value.dtype == np.bool_ or isinstance(value, np.bool_):
        raise plan.error(InputError, f"the value of {name} must be numbers, not booleans",
                         declare.value)
    if declare.kind == "variable":
        obj = tensor.Variable(value, trainable=declare.trainable, name=name, dtype=plan.dtype)
        model.variables[name] = obj
        defined[name] = "variable"
    else:
        obj = tensor.constant(value, dtype=plan.dtype)
        model.constants[name] = obj
        defined[name] = "constant"

    def bind(r, env, used, name=name, obj=obj):
        env[name] = obj
    plan.add(bind, statement)


def _evaluate_once(expr, resolve: Callable, source: str, dtype: str):
    """Evaluate an expression now (outside any tape) and return its numpy value."""
    plan = _Plan(source, dtype)
    reg = plan.compile_expr(expr, resolve)
    regs = list(plan.template)
    _run(plan.steps, plan.nodes, regs, {}, source)
    value = regs[reg]
    return value.numpy() if hasattr(value, "numpy") else np.float64(value)


def evaluate_constant(expr, source: str = "", dtype: str = "float64") -> np.ndarray:
    """The value of a constant expression (numbers, pi, e, inf, functions of them) as a
    numpy array; any other name is an ``UnknownNameError``. Used for ``--var`` values.

    >>> from gradcli.lang.parser import parse_expression
    >>> evaluate_constant(parse_expression("linspace(0, 1, 3)"), "linspace(0, 1, 3)")
    array([0. , 0.5, 1. ])
    """
    ops, tensor = _engine()

    def resolve(node: Name):
        if node.id in CONSTANT_NAMES:
            return "const", tensor.constant(ops.CONSTANTS[node.id], dtype=dtype)
        pos = node.pos
        raise UnknownNameError(f"a value can use only numbers, pi, e, inf and functions, "
                               f"not the name '{node.id}'", source=source, line=pos.line,
                               col=pos.col, width=pos.width)

    return np.asarray(_evaluate_once(expr, resolve, source, dtype))


def _make_function(model: Model, plan: _Plan, base_env: dict, result_reg: int | None):
    """The program as a Python function of its arguments (with a real signature, so the
    API's ``params=["x1"]`` can name them)."""
    steps, nodes, template, source = plan.steps, plan.nodes, plan.template, plan.source
    arg_names = list(model.arg_names)
    n_args = len(arg_names)
    constant, Tensor = plan.tensor.constant, plan.tensor.Tensor
    dtype = plan.dtype
    target = model.target_name

    def function(*args, **kwargs):
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
        _run(steps, nodes, regs, env, source)
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
