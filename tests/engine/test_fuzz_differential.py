"""Differential fuzzing: random programs over the whole function table, evaluated by the
language and the engine, against evaluations that share none of their code paths.

Each program is a random expression over two arguments ``x`` and ``y`` (scalars,
vectors, matrices, broadcast against each other), built from every entry of the table
(the registry is iterated: an entry added later is drawn too, and the coverage test says
when the generator does not know how to call it), with random axes (negative ones and
tuples), ``keepdims``, comparisons inside ``where``, literal arrays, indexing, and leaf
values that land on kinks and edge points (0, 1, -1, ties) a fifth of the time. The
program is written as text and run through the language (parse, build, tape); the
target is ``sum(W * program)`` with random weights ``W``.

Entries whose domain a range cannot describe (the linear algebra: square, positive
definite, batched matrices) are called on one of their own ``samples``: its arrays are
literals that the program moves with x and y (``lit + 0.1 tanh(e)`` where the domain is
narrow, ``lit + e`` elsewhere), its parameters as given (norm's string ords 'fro' and
'nuc' included). Entries returning several tensors are picked by index
(``eigh(a)[1]``; a full SVD of a rectangular matrix only by ``[1]``, its extra columns
being arbitrary). einsum gets random valid subscripts on random operands (contractions,
repeated letters, ``...``, implicit and explicit outputs); a call numpy accepts and the
entry refuses is a failure. The shape functions get their required parameters drawn to
fit the operand (counts, shifts, numpy's four forms of pad widths, axes pairs and tuples,
broadcast targets), take, gather and take_along_axis integer index literals (negative and
repeated ones, indices broadcast along the other axes), average positive weights of x's
shape or the axis' length. split and array_split cut along a random axis into a
count of pieces or at sorted indices, one piece picked by index. An entry the language
cannot write at all would be named in ``UNWRITABLE`` with the reason (none today); the
coverage test accepts only those as never called, and checks that the language refuses them.

The truths, by kind of entry:
- the value of every program in float64 from the entries' forwards (the linear algebra
  from numpy.linalg and numpy's own tensordot, inner, outer, kron, cross, einsum: see
  ``fuzz_reference``), and against sympy at 40 digits from each entry's sympy counterpart
  (small programs; a program using an entry without one, eigh or svd, is not judged by
  sympy);
- each gradient coordinate against central differences in numpy ``longdouble``
  (Richardson-extrapolated), computed by a tree walk that calls the entries' forwards
  directly: no tape, no rules, no language, no axis normalisation. numpy.linalg refuses
  longdouble, so there the linear algebra entries are computed with mpmath matrices at
  30 digits (``fuzz_reference``: inverse, det, cholesky, eigsy, svd_r), the eigen- and
  singular vectors given the signs numpy chose at the point; the products with numpy's
  own functions in longdouble. Every entry thus gets differences whose rounding error
  (about 1e-19 / 2e-7 in the one-sided quotients) is far below the tolerance (1e-6
  relative). The samples' matrices are well conditioned (a shifted diagonal, positive
  definite, random eigenvalue gaps), so the engine's own float64 rounding (about
  cond^2 * 1e-16) is far below it too; the tolerance is the same for every entry.

Points where the differences cannot judge are classified, not flagged: a kink or jump
(the one-sided differences disagree), a singularity or domain edge (a nearby value is not
finite, or a matrix of the stencil leaves the entry's domain), an unresolved point (the
difference quotients do not converge), an overflow.

By default a brief run with a fixed seed (each entry at the top of at least one program);
``GRADCLI_FUZZ_PROGRAMS=5000`` (and optionally ``GRADCLI_FUZZ_SEED``) runs longer.
"""
from __future__ import annotations

import functools
import math
import os
import warnings
from collections import Counter

import numpy as np
import pytest

import gradcli as gc
from fuzz_reference import ALIGNED, REFERENCES
from gradcli.engine.rules.linalg import several_outputs
from gradcli.engine.core.table import INTERNAL
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.errors import GradcliError
from gradcli.lang import Declarations, build, parse_program

PROGRAMS = int(os.environ.get("GRADCLI_FUZZ_PROGRAMS", "0")) or len(ORDER) + 40
SEED = int(os.environ.get("GRADCLI_FUZZ_SEED", "20261201"))
SPECIAL = (0.0, 1.0, -1.0, 0.5, 2.0)
LD = np.longdouble
OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "power": "**",
             "matmul": "@", "less": "<", "less_equal": "<=", "greater": ">",
             "greater_equal": ">=", "equal": "==", "not_equal": "!="}
# Entries whose samples sit in a narrow domain (invertible, positive definite, distinct
# eigen- or singular values, full rank): the program moves them by at most 0.1 per element.
NARROW_DOMAINS = {"inv", "solve", "slogdet", "cholesky", "eigh", "svd", "pinv"}
# Values for constructor parameters, by name (a constructor added later with other
# parameter names is reported by the coverage test).
# Entries the language cannot write at all, with the reason: the fuzzer does not call them,
# and the coverage test accepts exactly these as never called (and checks the refusal).
# (None today: split and array_split are drawn with an index picking one piece.)
UNWRITABLE: dict[str, str] = {}
CONSTRUCTOR_PARAMS = {"shape": [(3,), (2, 3)], "fill_value": [1.5, -0.5], "N": [3],
                      "M": [None, 2], "start": [-1.0, 0.0], "stop": [1.0, 3.0],
                      "num": [3], "step": [1.0, 0.5]}


# ---------------------------------------------------------------------------------------
# Expression trees. A node is a dict: kind ("arg", "num", "lit", "call", "index"), its
# parts, and "value" (float64, computed while generating: the generator knows shapes).
# ---------------------------------------------------------------------------------------
def forward(op, values, params):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return op.forward(*values, **params)


def evaluate(op, values, params, dtype, align=None):
    """The value of one call for the references: the entry's forward, or for the linear
    algebra entries an evaluation of their own (``fuzz_reference``: mpmath in longdouble,
    numpy.linalg or numpy's products in float64; a tuple for several outputs)."""
    reference = REFERENCES.get(op.name)
    if reference is None:
        return forward(op, values, params)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return reference(values, params, dtype, align)


class Generator:
    def __init__(self, rng, x, y):
        self.rng = rng
        self.args = {"x": x, "y": y}
        self.used = Counter()
        self.refused = []  # valid calls the entry refused (the generator found them)
        comparisons = [n for n in ORDER if REGISTRY[n].kind == "comparison"]
        self.comparisons = comparisons
        # comparisons are drawn too, as where conditions (their results are booleans)
        self.entries = list(ORDER)

    # --- leaves --------------------------------------------------------------------------
    def leaf(self, shape=None):
        r = self.rng.random()
        if r < 0.45:
            names = [n for n, v in self.args.items() if shape is None or v.shape == shape]
            if names:
                name = names[self.rng.integers(len(names))]
                return {"kind": "arg", "name": name, "value": self.args[name]}
        if shape in (None, ()) and r < 0.75:
            v = float(self.rng.choice(SPECIAL + (round(float(self.rng.uniform(-2, 2)), 3),)))
            return {"kind": "num", "number": v, "value": np.float64(v)}
        shape = shape if shape is not None else [(3,), (2, 3), (2, 1)][self.rng.integers(3)]
        return self.literal(shape)

    def literal(self, shape, lo=-2.0, hi=2.0):
        v = np.round(self.rng.uniform(lo, hi, size=shape), 3)
        return {"kind": "lit", "value": v}

    # --- expressions ---------------------------------------------------------------------
    def expr(self, depth):
        if depth <= 0 or self.rng.random() < 0.1:
            return self.leaf()
        for _ in range(6):
            name = self.entries[self.rng.integers(len(self.entries))]
            node = self.call(name, depth)
            if node is not None:
                return node
        return self.leaf()

    def call(self, name, depth):
        """A call of entry ``name`` on generated inputs, or None if none fits."""
        op = REGISTRY[name]
        if op.kind == "comparison":  # a boolean: drawn as the condition of a where
            return self.elementwise(REGISTRY["where"], depth, comparison=name)
        if op.kind == "constructor":
            return self.constructor(op)
        if name == "einsum":
            return self.einsum(op, depth)
        if name in UNWRITABLE:
            return None
        if name in self.SHAPED:  # required counts, shifts, widths, axes, index arrays
            return getattr(self, self.SHAPED[name])(op, depth)
        if op.samples is not None and (not op.axis_params or self.rng.random() < 0.5):
            return self.sampled(op, depth)
        if op.variadic:
            return self.joined(op, depth)
        if op.elementwise:
            return self.elementwise(op, depth)
        if op.axis_params and len(op.inputs) == 1:
            return self.along_axes(op, depth)
        if op.kind == "linalg" and len(op.inputs) == 2:
            return self.product(op, depth)
        if name == "reshape":
            child = self.expr(depth - 1)
            shape = np.shape(child["value"])
            target = [(-1,), shape[::-1], (1,) + shape][self.rng.integers(3)]
            return self.make(op, [child], {"shape": tuple(int(n) for n in target)})
        if len(op.inputs) == 1 and not op.params:  # stop_gradient and the like
            return self.make(op, [self.expr(depth - 1)], {})
        return None  # an entry the generator does not know: the coverage test says so

    def make(self, op, children, params, style="fn"):
        """A call node, with its value (a tuple for an entry's several outputs: such a
        node is only ever the child of a ``pick``), or None when the call is invalid."""
        if any(c is None for c in children):
            return None
        values = [c["value"] for c in children]
        try:
            forward(op, values, params)  # the entry accepts the call
            value = evaluate(op, values, params, np.float64)
        except (ValueError, TypeError, IndexError, np.linalg.LinAlgError):
            return None
        integral = False
        if isinstance(value, tuple):
            value = tuple(np.asarray(v, dtype=np.float64) for v in value)
            if sum(v.size for v in value) > 64:
                return None
        else:
            value = np.asarray(value)
            if value.dtype == np.bool_ and op.kind != "comparison":
                return None
            integral = value.dtype.kind in "iu"  # argmax and the like
            if value.size > 64:
                return None
            value = value.astype(np.float64) if value.dtype != np.bool_ else value
        node = {"kind": "call", "name": op.name, "children": children, "params": params,
                "style": style, "value": value}
        if not isinstance(value, tuple) and integral:
            node["integral"] = True
        return node

    # --- entries with samples (linear algebra), einsum, several outputs ----------------------
    def sampled(self, op, depth):
        """A call of one of the entry's own samples (matrices in its domain: square,
        positive definite, ...), its parameters as given, each array a literal that the
        program moves with x and y: ``lit + 0.1 tanh(e)`` for the entries whose domain is
        narrow (inverses, factorisations; a step of 0.1 per element keeps the samples'
        matrices inside it), ``lit + e`` or ``e`` itself for the others. ``e`` is a random
        expression, its mean when its shape does not broadcast to the array's."""
        samples = [s for s in op.samples(self.rng)
                   if all(_has_text(v) for v in s[2].values())]
        if not samples:
            return None
        _, arrays, params = samples[self.rng.integers(len(samples))]
        narrow = op.name in NARROW_DOMAINS
        children = [self.operand(np.asarray(a, dtype=np.float64), depth, narrow)
                    for a in arrays]
        node = self.make(op, children, dict(params), "list" if op.variadic else "fn")
        return self.picked(op, node)

    def operand(self, array, depth, narrow):
        lit = {"kind": "lit", "value": np.round(array, 3)}
        for _ in range(4):  # an expression of x or y, or the entry's gradient goes unseen
            child = self.expr(depth - 1)
            if _reads_arguments(child):
                break
        else:
            child = self.leaf(())
            if not _reads_arguments(child):
                child = {"kind": "arg", "name": "y", "value": self.args["y"]}
        shape = np.shape(child["value"])
        try:
            fits = np.broadcast_shapes(shape, array.shape) == array.shape
        except ValueError:
            fits = False
        if not fits or shape == ():
            # a scalar moves every element, along a random direction (a literal)
            if shape != ():
                child = self.make(REGISTRY["mean"], [child], {})
            direction = self.literal(array.shape, -1.0, 1.0)
            child = self.make(REGISTRY["multiply"], [child, direction], {}, "op")
            if child is None:
                return None
            shape = array.shape
        if narrow:
            step = self.make(REGISTRY["multiply"],
                             [self.number(0.1), self.make(REGISTRY["tanh"], [child], {})], {},
                             "op")
            return self.make(REGISTRY["add"], [lit, step], {}, "op")
        if shape == array.shape and self.rng.random() < 0.5:
            return child
        return self.make(REGISTRY["add"], [lit, child], {}, "op")

    def picked(self, op, node):
        """An entry's several outputs (``eigh(a)[1]``) picked by index, as the language
        requires; other nodes unchanged."""
        if node is None or not isinstance(node["value"], tuple):
            return node
        choices = list(range(len(node["value"])))
        if op.name == "svd" and node["params"].get("full_matrices", True):
            a = np.shape(node["children"][0]["value"])
            if a[-1] != a[-2]:
                # the extra columns of U (rows of Vh) of a full SVD are an arbitrary basis
                # (the entry's documented convention ignores their gradient): pick S
                choices = [1]
        k = choices[self.rng.integers(len(choices))]
        return {"kind": "pick", "k": k, "children": [node], "value": node["value"][k]}

    def einsum(self, op, depth):
        """einsum on random operands with random valid subscripts (contractions, repeated
        letters for diagonals and traces, broadcasting '...', implicit or explicit
        output), or on one of the entry's samples."""
        if self.rng.random() < 0.4:
            return self.sampled(op, depth)
        children = [self.expr(depth - 1) for _ in range(int(self.rng.integers(1, 4)))]
        sizes, terms, ellipsis = {}, [], False
        letters = iter("abcdefgh")
        for child in children:
            shape = np.shape(child["value"])
            lead = 0
            if shape and self.rng.random() < 0.25:
                lead = int(self.rng.integers(1, len(shape) + 1))
                ellipsis = True
            term = "..." if lead else ""
            for n in shape[lead:]:
                same = [c for c, size in sizes.items() if size == n]
                if same and self.rng.random() < 0.6:
                    c = same[self.rng.integers(len(same))]
                else:
                    c = next(letters)
                    sizes[c] = n
                term += c
            terms.append(term)
        subscripts = ",".join(terms)
        if self.rng.random() < 0.7:
            named = sorted(sizes)
            keep = [c for c in self.rng.permutation(named) if self.rng.random() < 0.6]
            subscripts += "->" + ("..." if ellipsis else "") + "".join(keep)
        values = [c["value"] for c in children]
        try:
            with np.errstate(all="ignore"):
                np.einsum(subscripts, *values)
        except ValueError:
            return None
        try:
            forward(op, values, {"subscripts": subscripts})
        except (ValueError, TypeError, IndexError) as err:
            self.refused.append(f'einsum("{subscripts}") on shapes '
                                f'{[np.shape(v) for v in values]}: numpy accepts it, the '
                                f'entry says {err}')
            return None
        return self.make(op, children, {"subscripts": subscripts}, "einsum")

    def squashed(self, child, lo, hi):
        """lo + (hi - lo) sigmoid(child): keeps a domain-limited entry in its domain."""
        s = self.make(REGISTRY["sigmoid"], [child], {})
        if s is None:
            return None
        scaled = self.make(REGISTRY["multiply"], [self.number(hi - lo), s], {}, "op")
        if scaled is None:
            return None
        return self.make(REGISTRY["add"], [self.number(lo), scaled], {}, "op")

    def number(self, v):
        return {"kind": "num", "number": float(v), "value": np.float64(v)}

    def elementwise(self, op, depth, comparison=None):
        limited = op.sample != (-2.0, 2.0)
        children, shape = [], ()
        for input_name in op.inputs:
            if input_name == "cond":
                child = self.condition(depth, comparison)
            elif limited and self.rng.random() < 0.3:
                lo, hi = op.sample
                child = self.edge_literal(lo, hi)
            else:
                child = self.expr(depth - 1)
                if limited:
                    child = self.squashed(child, *op.sample)
            if child is None:
                return None
            try:
                shape = np.broadcast_shapes(shape, np.shape(child["value"]))
            except ValueError:
                child = self.number(1.5)
            children.append(child)
        if op.name == "clip" and self.rng.random() < 0.3:  # crossed bounds: lo > hi
            children[1], children[2] = self.number(1.0), self.number(-0.5)
        return self.make(op, children, {}, "op" if op.name in OPERATORS else "fn")

    def edge_literal(self, lo, hi):
        """A literal in the sample range that sometimes sits on the domain's edge."""
        shape = [(), (3,)][self.rng.integers(2)]
        v = np.round(self.rng.uniform(lo, hi, size=shape), 3)
        edges = [e for e in (0.0, 1.0, -1.0) if lo - 1.01 < e < hi]
        if edges and self.rng.random() < 0.5:
            v = np.where(self.rng.random(shape) < 0.5, self.rng.choice(edges), v)
        if shape == ():
            return self.number(float(v))
        return {"kind": "lit", "value": np.asarray(v, dtype=np.float64)}

    def condition(self, depth, name=None):
        if name is None:
            name = self.comparisons[self.rng.integers(len(self.comparisons))]
        a = self.expr(depth - 1)
        b = self.number(float(self.rng.choice(SPECIAL))) if self.rng.random() < 0.6 \
            else self.expr(depth - 1)
        return self.make(REGISTRY[name], [a, b], {}, "op")

    def along_axes(self, op, depth):
        child = self.expr(depth - 1)
        ndim = np.ndim(child["value"])
        rank = ndim + op.new_axis
        params = {}
        defaults = dict(op.params)
        for pname in op.axis_params:
            if pname == "axes":
                if ndim == 0 or self.rng.random() < 0.2:
                    params[pname] = None
                else:
                    perm = self.rng.permutation(ndim)
                    params[pname] = tuple(int(a) - ndim * int(self.rng.random() < 0.5)
                                          for a in perm)
                continue
            choice = self.rng.random()
            if defaults[pname] is None and choice < 0.3:
                params[pname] = None
            elif defaults[pname] is None and op.kind == "reduction" and rank >= 2 \
                    and choice < 0.5:
                axes = self.rng.choice(rank, size=2, replace=False)
                params[pname] = tuple(int(a) - rank * int(self.rng.random() < 0.5)
                                      for a in axes)
            else:
                params[pname] = int(self.rng.integers(-max(rank, 1), max(rank, 1)))
        for pname, default in op.params:
            if isinstance(default, bool):
                params[pname] = bool(self.rng.random() < 0.5)
        return self.make(op, [child], params)

    def joined(self, op, depth):
        first = self.expr(depth - 1)
        shape = np.shape(first["value"])
        parts = [first]
        for _ in range(int(self.rng.integers(1, 3))):
            other = self.expr(depth - 1)
            if np.shape(other["value"]) != shape:
                other = self.literal(shape)
            parts.append(other)
        rank = len(shape) + op.new_axis
        if "axis" not in dict(op.params):  # vstack, hstack, dstack: their axis is fixed
            return self.make(op, parts, {}, "list")
        if rank == 0:
            return None
        params = {"axis": int(self.rng.integers(-rank, rank))}
        return self.make(op, parts, params, "list")

    def product(self, op, depth):
        child = self.expr(depth - 1)
        shape = np.shape(child["value"])
        if len(shape) == 0 or len(shape) > 2:
            return None
        k = shape[-1]
        other = self.literal([(k,), (k, 2)][self.rng.integers(2)])
        return self.make(op, [child, other], {}, "op" if op.name in OPERATORS else "fn")

    # --- shape functions with required parameters, take/gather/take_along_axis ------------
    SHAPED = {"average": "average", "broadcast_to": "broadcast_to", "repeat": "repeat",
              "tile": "tile", "roll": "roll", "swapaxes": "swapaxes", "moveaxis": "moveaxis",
              "pad": "pad", "take": "taken", "gather": "taken",
              "take_along_axis": "taken_along", "rot90": "rot90", "split": "split",
              "array_split": "split"}

    def split(self, op, depth):
        """split / array_split along a random axis into a count of pieces (split: one that
        divides the length) or at sorted indices (possibly past the end), one piece picked
        by index as the language requires."""
        child = self.ranked(depth, 1)
        shape = np.shape(child["value"])
        axis = self.axis(len(shape))
        n = shape[axis]
        if self.rng.random() < 0.5:
            counts = [k for k in range(1, n + 1) if op.name == "array_split" or n % k == 0]
            cut = int(counts[self.rng.integers(len(counts))]) if counts else 1
        else:
            cut = tuple(sorted(int(i) for i in self.rng.integers(0, n + 2,
                                                                 self.rng.integers(1, 3))))
        node = self.make(op, [child], {"indices_or_sections": cut, "axis": axis})
        return self.picked(op, node)

    def ranked(self, depth, rank):
        """An expression of at least ``rank`` axes (a few tries, then a leaf of shape
        (2, 3), x or y when it has that shape)."""
        for _ in range(4):
            child = self.expr(depth - 1)
            if np.ndim(child["value"]) >= rank:
                return child
        return self.leaf((2, 3)[-rank:] if rank else None)

    def rot90(self, op, depth):
        child = self.ranked(depth, 2)
        ndim = np.ndim(child["value"])
        axes = tuple(int(a) - ndim * int(self.rng.random() < 0.5)
                     for a in self.rng.choice(ndim, size=2, replace=False))
        return self.make(op, [child], {"k": int(self.rng.integers(-2, 4)), "axes": axes})

    def axis(self, ndim):
        """A random valid axis (negative half the time), or None for a scalar."""
        return int(self.rng.integers(-ndim, ndim)) if ndim else None

    def average(self, op, depth):
        """average(x, weights, axis, keepdims): weights of x's shape or of the axis'
        length, positive (a literal, or an expression squashed into [0.2, 2])."""
        child = self.expr(depth - 1)
        shape = np.shape(child["value"])
        axis = None if self.rng.random() < 0.3 else self.axis(len(shape))
        wshape = shape if axis is None or self.rng.random() < 0.5 else (shape[axis],)
        weights = None
        if self.rng.random() < 0.5:
            e = self.expr(depth - 1)
            if np.shape(e["value"]) == wshape:
                weights = self.squashed(e, 0.2, 2.0)
        if weights is None:
            weights = self.literal(wshape, 0.2, 2.0)
            if wshape == ():
                weights = self.number(float(weights["value"]))
        params = {"axis": axis, "keepdims": bool(self.rng.random() < 0.5)}
        return self.make(op, [child, weights], params)

    def broadcast_to(self, op, depth):
        child = self.expr(depth - 1)
        shape = tuple(int(n) for n in np.shape(child["value"]))
        targets = [(2,) + shape, (1, 2) + shape]
        if 1 in shape:
            targets.append(tuple(3 if n == 1 else n for n in shape))
        target = targets[self.rng.integers(len(targets))]
        return self.make(op, [child], {"shape": target})

    def repeat(self, op, depth):
        child = self.expr(depth - 1)
        ndim = np.ndim(child["value"])
        axis = None if self.rng.random() < 0.3 else self.axis(ndim)
        return self.make(op, [child], {"repeats": int(self.rng.integers(1, 4)), "axis": axis})

    def tile(self, op, depth):
        child = self.expr(depth - 1)
        ndim = np.ndim(child["value"])
        if self.rng.random() < 0.4:
            reps = int(self.rng.integers(1, 4))
        else:  # fewer, as many or more reps than axes
            reps = tuple(int(r) for r in self.rng.integers(1, 3, size=self.rng.integers(
                1, ndim + 2)))
        return self.make(op, [child], {"reps": reps})

    def roll(self, op, depth):
        child = self.expr(depth - 1)
        ndim = np.ndim(child["value"])
        r = self.rng.random()
        if ndim >= 2 and r < 0.3:  # several axes, a shift each
            axes = tuple(int(a) - ndim * int(self.rng.random() < 0.5)
                         for a in self.rng.choice(ndim, size=2, replace=False))
            shift = tuple(int(s) for s in self.rng.integers(-3, 4, size=2))
        else:
            axes = None if r < 0.6 or ndim == 0 else self.axis(ndim)
            shift = int(self.rng.integers(-4, 5))
        return self.make(op, [child], {"shift": shift, "axis": axes})

    def swapaxes(self, op, depth):
        child = self.ranked(depth, 1)
        ndim = np.ndim(child["value"])
        return self.make(op, [child], {"axis1": self.axis(ndim), "axis2": self.axis(ndim)})

    def moveaxis(self, op, depth):
        child = self.ranked(depth, 1)
        ndim = np.ndim(child["value"])
        if self.rng.random() < 0.5:
            params = {"source": self.axis(ndim), "destination": self.axis(ndim)}
        else:
            k = int(self.rng.integers(1, ndim + 1))
            source = tuple(int(a) - ndim * int(self.rng.random() < 0.5)
                           for a in self.rng.choice(ndim, size=k, replace=False))
            destination = tuple(int(a) for a in self.rng.choice(ndim, size=k, replace=False))
            params = {"source": source, "destination": destination}
        return self.make(op, [child], params)

    def pad(self, op, depth):
        """numpy's forms of pad_width: n, (n,), (before, after), ((before, after), ...)."""
        child = self.expr(depth - 1)
        ndim = np.ndim(child["value"])

        def width():
            return int(self.rng.integers(0, 3))
        forms = [width(), (width(),), (width(), width()),
                 tuple((width(), width()) for _ in range(ndim))]
        pad_width = forms[self.rng.integers(len(forms) if ndim else 3)]
        params = {"pad_width": pad_width}
        if self.rng.random() < 0.5:
            # an integer array (argmax's) is padded in its own dtype, as numpy does (0.5
            # becomes 0); the references here compute in floats: whole values only there
            values = (0.0, 1.0, -1.0, 2.0) if child.get("integral") else SPECIAL
            params["constant_values"] = float(self.rng.choice(values))
        return self.make(op, [child], params)

    def indices(self, shape, n):
        """An integer literal of ``shape`` indexing an axis of length n (negative ones
        and repeats included)."""
        return {"kind": "ints", "value": self.rng.integers(-n, n, size=shape)}

    def taken(self, op, depth):
        """take / gather: an index array of rank 1 or 2 along an axis (take: or into the
        flattened array)."""
        child = self.expr(depth - 1)
        shape = np.shape(child["value"])
        axis = self.axis(len(shape))
        if op.name == "take" and (axis is None or self.rng.random() < 0.3):
            axis, n = None, int(np.prod(shape, dtype=np.int64))
        elif axis is None:
            return None
        else:
            n = shape[axis]
        ishape = [(int(self.rng.integers(1, 4)),), (2, 2), ()][self.rng.integers(3)]
        return self.make(op, [child, self.indices(ishape, n)], {"axis": axis})

    def taken_along(self, op, depth):
        """take_along_axis: indices of x's rank (the axis' length free, others 1 or
        x's)."""
        # (axis=None, numpy's flattened form, is required but unwritable: the language
        # has no None)
        child = self.ranked(depth, 1)
        shape = np.shape(child["value"])
        axis = self.axis(len(shape))
        ishape = [n if self.rng.random() < 0.7 else 1 for n in shape]
        ishape[axis] = int(self.rng.integers(1, 4))
        return self.make(op, [child, self.indices(tuple(ishape), shape[axis])],
                         {"axis": axis})

    def constructor(self, op):
        params = {}
        for pname, default in op.params:
            options = CONSTRUCTOR_PARAMS.get(pname)
            if options is None:
                return None
            params[pname] = options[self.rng.integers(len(options))]
        if op.name == "arange" and params.get("stop") is not None \
                and params["stop"] <= params["start"]:
            params["stop"] = params["start"] + 2.0
        return self.make(op, [], params)

    def indexed(self, depth):
        child = self.expr(depth - 1)
        shape = np.shape(child["value"])
        if not shape or shape[0] < 2:
            return None
        choices = [(-1,), (0,), (slice(1, None),)]
        if len(shape) == 2 and shape[1] >= 2:
            choices += [(slice(None), -1), (-1, slice(None, None, -1))]
        index = choices[self.rng.integers(len(choices))]
        node = self.make(INTERNAL["getitem"], [child], {"index": index})
        if node is not None:
            node["kind"] = "index"
        return node


# ---------------------------------------------------------------------------------------
# Rendering as program text, and walking the tree in another arithmetic
# ---------------------------------------------------------------------------------------
def _number_text(v: float) -> str:
    return f"({v!r})" if v < 0 else repr(v)


def _array_text(a) -> str:
    a = np.asarray(a)
    if a.ndim == 0:
        return _number_text(float(a))
    return "[" + ", ".join(_array_text(row) for row in a) + "]"


def _ints_text(a) -> str:
    a = np.asarray(a)
    if a.ndim == 0:
        return f"({int(a)})" if a < 0 else str(int(a))
    return "[" + ", ".join(_ints_text(row) for row in a) + "]"


def _reads_arguments(node) -> bool:
    """Whether an expression depends on x or y (outside a stop_gradient)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n["kind"] == "arg":
            return True
        if n.get("name") != "stop_gradient":
            stack.extend(n.get("children", ()))
    return False


def _has_text(v) -> bool:
    """Whether the language can spell a parameter value (the one string parameter value is
    norm's ord='fro' or 'nuc')."""
    if isinstance(v, tuple):
        return all(_has_text(i) for i in v)
    if isinstance(v, str):
        return v in ("fro", "nuc")
    return isinstance(v, (bool, int, float)) and not isinstance(v, np.generic)


def _param_text(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(_param_text(i) for i in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def _index_text(index) -> str:
    parts = []
    for i in index:
        if isinstance(i, slice):
            parts.append(f"{'' if i.start is None else i.start}:"
                         f"{'' if i.stop is None else i.stop}"
                         + ("" if i.step is None else f":{i.step}"))
        else:
            parts.append(str(i))
    return ", ".join(parts)


def render(node) -> str:
    kind = node["kind"]
    if kind == "arg":
        return node["name"]
    if kind == "num":
        return _number_text(node["number"])
    if kind == "lit":
        return _array_text(node["value"])
    if kind == "ints":
        return _ints_text(node["value"])
    if kind == "index":
        return f"({render(node['children'][0])})[{_index_text(node['params']['index'])}]"
    if kind == "pick":
        return f"{render(node['children'][0])}[{node['k']}]"
    children = [render(c) for c in node["children"]]
    if node["style"] == "einsum":
        return f'einsum("{node["params"]["subscripts"]}", {", ".join(children)})'

    name, params = node["name"], node["params"]
    if node["style"] == "op":
        if name == "negative":
            return f"(-{children[0]})"
        return f"({children[0]} {OPERATORS[name]} {children[1]})"
    # (None is each such parameter's default, and not a value of the language)
    keywords = [f"{k}={_param_text(v)}" for k, v in params.items() if v is not None]
    if node["style"] == "list":
        return f"{name}([{', '.join(children)}]{''.join(', ' + k for k in keywords)})"
    return f"{name}({', '.join(children + keywords)})"


def walk(node, env, dtype, held, nonfinite=None, calls=None):
    """The program's value computed from the entries' forwards directly, in ``dtype``.
    ``held``: stop_gradient values by node id (recorded at the point, then replayed);
    ``nonfinite``: a list that collects the entries whose results are not finite;
    ``calls``: a list that collects (entry, input values, params) of every call."""
    kind = node["kind"]
    if kind == "arg":
        return env[node["name"]]
    if kind == "num":
        return dtype(node["number"])
    if kind == "lit":
        return np.asarray(node["value"], dtype=dtype)
    if kind == "ints":  # indices stay integers in every arithmetic
        return np.asarray(node["value"])
    if kind == "pick":
        return walk(node["children"][0], env, dtype, held, nonfinite, calls)[node["k"]]
    op = INTERNAL["getitem"] if kind == "index" else REGISTRY[node["name"]]
    values = [walk(c, env, dtype, held, nonfinite, calls) for c in node["children"]]
    if op.name == "stop_gradient":
        return held.setdefault(id(node), values[0])
    align = None
    if op.name in ALIGNED and dtype != np.float64:
        # numpy's signs of the vectors at the point, kept for the whole stencil
        key = ("align", id(node))
        if key not in held:
            held[key] = evaluate(op, [np.asarray(v, dtype=np.float64) for v in values],
                                 node["params"], np.float64)
        align = held[key]
    out = evaluate(op, values, node["params"], dtype, align)
    if calls is not None:
        calls.append((op, values, node["params"], align))
    parts = [np.asarray(o) for o in out] if isinstance(out, tuple) else [np.asarray(out)]
    if nonfinite is not None and any(p.dtype != np.bool_ and not np.all(np.isfinite(p))
                                     for p in parts):
        nonfinite.append(op.name)
    parts = [p if p.dtype == np.bool_ else p.astype(dtype) for p in parts]
    return tuple(parts) if isinstance(out, tuple) else parts[0]


class NoSymbolicForm(Exception):
    """An entry without a sympy counterpart (eigh, svd): the program is not judged by sympy."""


def symbolic(node, sp):
    """The program's value from the entries' sympy counterparts at 40 digits."""
    kind = node["kind"]
    if kind in ("arg", "lit"):
        raise AssertionError("substituted before")
    if kind == "num":
        return sp.Float(node["number"], 40)
    if kind == "ints":
        return np.asarray(node["value"])
    if kind == "value":
        return node["sym"]
    if kind == "pick":
        return symbolic(node["children"][0], sp)[node["k"]]
    op = INTERNAL["getitem"] if kind == "index" else REGISTRY[node["name"]]
    if kind == "call" and op.sympy is None and op.name != "stop_gradient":
        raise NoSymbolicForm(op.name)
    args = [symbolic(c, sp) for c in node["children"]]
    if kind == "index":
        return np.asarray(args[0], dtype=object)[node["params"]["index"]]
    if op.name == "stop_gradient":
        return args[0]
    if op.kind == "constructor":
        return op.sympy(sp, **node["params"])
    if op.elementwise:
        arrays = np.broadcast_arrays(*[np.asarray(a, dtype=object) for a in args])
        out = np.empty(arrays[0].shape, dtype=object)
        for idx in np.ndindex(out.shape):
            out[idx] = op.sympy(sp, *(a[idx] for a in arrays))
        return out if out.ndim else out[()]
    arrays = [np.asarray(a, dtype=object) for a in args]
    if op.kind == "linalg":
        # numbers at 40 digits, not expressions: sympy's matrix algorithms on entries
        # holding log(10) or pi do polynomial arithmetic in them (minutes for a pinv)
        arrays = [np.vectorize(lambda e: sp.N(e, 40), otypes=[object])(a) if a.size else a
                  for a in arrays]
    return op.sympy(sp, *arrays, **node["params"])


# ---------------------------------------------------------------------------------------
# One program
# ---------------------------------------------------------------------------------------
def _draw_inputs(rng):
    shapes = [((), ()), ((3,), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 3), (2, 1)),
              ((2, 3), (1, 3)), ((2, 3), (2, 3))]
    xs, ys = shapes[rng.integers(len(shapes))]

    def values(shape):
        v = rng.uniform(-2, 2, size=shape)
        edge = rng.random(shape) < 0.2
        v = np.where(edge, rng.choice(SPECIAL, size=shape), v)
        if v.size > 1 and rng.random() < 0.2:  # a tie
            flat = v.reshape(-1)
            flat[1] = flat[0]
        return np.asarray(v, dtype=np.float64)
    return values(xs), values(ys)


def _subs(node, env_sym):
    """A copy of the tree with arguments and literals as sympy arrays."""
    kind = node["kind"]
    if kind == "arg":
        return {"kind": "value", "sym": env_sym[node["name"]]}
    if kind == "lit":
        return {"kind": "value", "sym": env_sym["__lit__"](node["value"])}
    if kind in ("call", "index", "pick"):
        return {**node, "children": [_subs(c, env_sym) for c in node["children"]]}
    return node


def _engine(text, x, y, w):
    decls = Declarations()
    for name, value in (("x", x), ("y", y), ("W", w)):
        decls.add("arg", name, value)
    model = build(parse_program(text), decls)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, grads = gc.value_and_gradients_function(model.function, params=["x", "y"])(
            *model.arg_values)
    out = []
    for g, src in zip(grads, (x, y)):
        out.append(np.zeros(np.shape(src)) if g is None else np.asarray(g.numpy(), float))
    return float(value.numpy()), out


def _classify_coordinate(f, env, name, index):
    """Central difference (Richardson) of f in one coordinate, or the reason there is
    none: 'singularity' (a nearby value not finite), 'kink' (one-sided differences
    disagree), 'unresolved' (the quotients do not converge), 'jump' (a discontinuity
    symmetric about the point: the one-sided quotients agree but not with the central
    ones)."""
    base = env[name]
    v = float(base[index]) if base.ndim else float(base)

    def at(delta):
        moved = np.array(base, dtype=LD, copy=True)
        if moved.ndim:
            moved[index] = LD(v) + LD(delta)
        else:
            moved = LD(v) + LD(delta)
        return f({**env, name: moved})
    scale = max(1.0, abs(v))
    h, hs = 2.0 ** -11 * scale, 2.0 ** -22 * scale
    f0 = f(env)
    values = {d: at(d) for d in (h, -h, h / 2, -h / 2, hs, -hs)}
    if not all(np.isfinite(val) for val in values.values()) or not np.isfinite(f0):
        return None, "singularity"
    forward_d = (values[hs] - f0) / LD(hs)
    backward_d = (f0 - values[-hs]) / LD(hs)
    if abs(forward_d - backward_d) > 1e-4 * (1 + abs(forward_d) + abs(backward_d)):
        return None, "kink"
    d1 = (values[h] - values[-h]) / LD(2 * h)
    d2 = (values[h / 2] - values[-h / 2]) / LD(h)
    if abs(d1 - d2) > 1e-3 * (1 + abs(d2)):
        return None, "unresolved"
    d = (4 * d2 - d1) / 3
    if abs(forward_d - d) > 1e-4 * (1 + abs(forward_d) + abs(d)):
        # a jump the same both ways (sign at 0 jumps by -J and +J): the one-sided
        # quotients agree with each other but grow as the step shrinks; a small jump
        # (1e-7) passes the convergence test of the central quotients above
        return None, "jump"
    return float(d), "ok"


def _entry_on_kink(calls):
    """The first entry that sits on a kink or jump of its own at the point: moving one
    element of one input a little either way, its result's second difference is of the
    order of the step (a smooth entry's is of the order of the step squared). There a
    convention (ties split, bounds included, relu'(0) = 0) gives a subgradient that the
    finite differences of the whole program need not reproduce, even where the program
    is smooth (clip(y^2, 1, y) at y = 1)."""
    def value(op, args, params, align):
        out = evaluate(op, args, params, LD, align)
        parts = out if isinstance(out, tuple) else (out,)
        return np.concatenate([np.ravel(np.asarray(p, dtype=LD)) for p in parts])
    for op, values, params, align in calls:
        if not op.differentiable:
            continue
        for i, v in enumerate(values):
            v = np.asarray(v)
            if v.dtype == np.bool_ or op.vjps[min(i, len(op.vjps) - 1)] is None:
                continue
            base = value(op, values, params, align)
            for j in np.ndindex(v.shape):
                step = LD(1e-6) * max(LD(1), abs(LD(v[j])))
                sides = []
                for sign in (1, -1):
                    moved = np.array(v, dtype=LD, copy=True)
                    if moved.ndim:
                        moved[j] += sign * step
                    else:
                        moved = moved + sign * step
                    args = list(values)
                    args[i] = moved
                    sides.append(value(op, args, params, align))
                with np.errstate(all="ignore"):
                    second = np.abs(sides[0] + sides[1] - 2 * base)
                    limit = 1e-3 * step * (1 + np.abs(base))
                if np.any(~np.isfinite(second)) or np.any(second > limit):
                    return op.name
    return None


def check_program(rng, generator_counter, root=None):
    """Generate one program (calling entry ``root`` at the top, when given), run it, and
    judge it: ("ok" | "classified" | "overflow" | "skipped" | "failure", detail, names)."""
    x, y = _draw_inputs(rng)
    gen = Generator(rng, x, y)
    depth = int(rng.integers(2, 5))
    node = None
    for attempt in range(8):
        if root is not None and attempt < 5:
            node = gen.indexed(depth) if root == "getitem" else gen.call(root, depth)
        else:
            node = gen.indexed(depth) if rng.random() < 0.08 else gen.expr(depth)
        if node is not None and node["kind"] != "arg" and node["value"].dtype != np.bool_:
            break
    if node is None or node["value"].dtype == np.bool_:
        return "skipped", None, {}
    names = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n["kind"] in ("call", "index", "pick"):
            if n["kind"] != "pick":
                names.add("getitem" if n["kind"] == "index" else n["name"])
            stack.extend(n["children"])
    generator_counter.update(names)
    shape = np.shape(node["value"])
    w = np.round(rng.uniform(-1, 1, size=shape), 3)
    text = f"sum(W * {render(node)})"
    report = {"program": text, "x": x.tolist(), "y": y.tolist(), "W": w.tolist()}
    if gen.refused:
        return "failure", {**report, "error": "; ".join(gen.refused)}, names

    def reference(env, dtype=LD):
        held_env = dict(env)
        value = walk(node, held_env, dtype, held)
        with np.errstate(all="ignore"):
            return np.sum(np.asarray(w, dtype=dtype) * value)

    def moved(env):
        """The reference at a point of the stencil: outside an entry's domain (a matrix
        no longer positive definite, singular) mpmath raises; that is a domain edge."""
        try:
            return reference(env)
        except (ValueError, ZeroDivisionError):
            return LD(np.nan)

    held: dict = {}
    ld_value = reference({"x": x.astype(LD), "y": y.astype(LD)})   # records stop_gradient
    held64 = {k: np.asarray(v, dtype=np.float64) for k, v in held.items()
              if isinstance(k, int)}  # (stop_gradient values; not the vectors' signs)
    infinite = []  # entries with a non-finite result at the point (in float64)
    with np.errstate(all="ignore"):
        f64_value = float(np.sum(w * walk(node, {"x": x, "y": y}, np.float64, held64,
                                          infinite)))

    try:
        value, grads = _engine(text, x, y, w)
    except GradcliError as err:
        return "failure", {**report, "error": f"the language refused it: {err}"}, names
    except Exception as err:  # noqa: BLE001 -- an internal error is what a fuzzer is for
        return "failure", {**report, "error": f"internal error: {err!r}"}, names

    if not math.isfinite(value) or not math.isfinite(f64_value):
        if math.isfinite(value) != math.isfinite(f64_value) and not (
                math.isnan(value) and math.isnan(f64_value)):
            return "failure", {**report, "error": f"value {value} but numpy gives "
                                                  f"{f64_value}"}, names
        return "overflow", None, names
    allowance = 1e-9 * abs(value) + 1e-12 + 1e3 * abs(f64_value - float(ld_value))
    if abs(value - f64_value) > allowance + 1e-12 * abs(value):
        return "failure", {**report, "error": f"value {value} but numpy gives "
                                              f"{f64_value}"}, names
    if x.size + y.size <= 8:
        bad = _symbolic_disagreement(node, x, y, w, value, allowance)
        if bad:
            return "failure", {**report, "error": bad}, names

    statuses = Counter()
    for name, g in zip(("x", "y"), grads):
        src = {"x": x, "y": y}[name]
        refs = {}
        for index in np.ndindex(src.shape):
            d, status = _classify_coordinate(
                moved, {"x": x.astype(LD), "y": y.astype(LD)}, name, index)
            statuses[status] += 1
            if d is not None:
                refs[index] = d
        scale = max([abs(d) for d in refs.values()] + [1.0])
        for index, d in refs.items():
            got = float(g[index]) if g.ndim else float(g)
            if not math.isfinite(got) and infinite:
                # An infinite intermediate, e.g. the unselected branch of where(c, log(0)
                # * x, y): the chain rule meets 0 * inf, nan in TensorFlow and PyTorch
                # too (the double-where idiom avoids it). A singularity, not a mismatch.
                statuses["infinite intermediate"] += 1
                continue
            if not (abs(got - d) <= 1e-6 * abs(d) + 1e-7 * scale):
                calls: list = []
                walk(node, {"x": x.astype(LD), "y": y.astype(LD)}, LD, dict(held),
                     calls=calls)
                kinked = _entry_on_kink(calls)
                if kinked is not None:
                    statuses[f"{kinked} on a kink"] += 1
                    continue
                return "failure", {**report, "error": f"d/d{name}{list(index)}: tape {got}, "
                                                      f"finite differences {d}"}, names
    return ("ok" if set(statuses) == {"ok"} else "classified"), dict(statuses), names


def _symbolic_disagreement(node, x, y, w, value, allowance):
    import sympy as sp

    def as_sym(a):
        a = np.asarray(a, dtype=np.float64)
        out = np.empty(a.shape, dtype=object)
        for idx in np.ndindex(a.shape):
            out[idx] = sp.Float(float(a[idx]), 40)
        return out if out.ndim else out[()]
    tree = _subs(node, {"x": as_sym(x), "y": as_sym(y), "__lit__": as_sym})
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = np.asarray(symbolic(tree, sp), dtype=object)
            total = sum((sp.Float(float(wi), 40) * oi for wi, oi in
                         zip(np.broadcast_to(w, out.shape).ravel(), out.ravel())), sp.S.Zero)
            exact = complex(sp.N(total, 30))
    except (TypeError, ValueError, ZeroDivisionError, AttributeError, NoSymbolicForm):
        return None  # no symbolic value (a domain edge, an undefined point): not judged
    if exact.imag != 0 or not math.isfinite(exact.real):
        return None
    if abs(value - exact.real) > 10 * allowance + 1e-9 * abs(exact.real):
        return f"value {value} but sympy gives {exact.real!r}"
    return None


@functools.lru_cache(maxsize=1)
def run_fuzz(programs: int = PROGRAMS, seed: int = SEED):
    rng = np.random.default_rng(seed)
    outcomes, failures, exercised, statuses = Counter(), [], Counter(), Counter()
    # Every entry (and indexing) is at the top of a program in turn, so that a brief run
    # calls each of them; below the top, entries are drawn at random.
    roots = list(ORDER) + ["getitem"]
    for k in range(programs):
        outcome, detail, names = check_program(rng, exercised, roots[k % len(roots)])
        outcomes[outcome] += 1
        if outcome == "failure":
            failures.append(detail)
        elif isinstance(detail, dict):
            statuses.update(detail)
    return outcomes, failures, exercised, statuses


@pytest.mark.slow
def test_random_programs_agree_with_independent_evaluations():
    outcomes, failures, _, statuses = run_fuzz()
    report = "\n".join(f"- {f['error']}\n  {f['program']}\n  x={f['x']} y={f['y']} W={f['W']}"
                       for f in failures[:10])
    assert not failures, f"{len(failures)} of {PROGRAMS} programs disagree:\n{report}"
    # The comparison judged most gradient coordinates (classification is the exception).
    assert statuses["ok"] > 0.6 * sum(statuses.values()), statuses
    assert outcomes["ok"] + outcomes["classified"] > 0.8 * PROGRAMS, outcomes


def test_fuzzer_draws_every_entry_of_the_table():
    """An entry the generator never calls is not tested by it: teach Generator.call (or
    CONSTRUCTOR_PARAMS) how to call a new kind of entry."""
    _, _, exercised, _ = run_fuzz()
    missing = [name for name in ORDER if not exercised[name] and name not in UNWRITABLE]
    assert not missing, f"the fuzzer never called: {', '.join(missing)}"
    assert not [name for name in UNWRITABLE if exercised[name]]


def test_entries_the_fuzzer_leaves_out_are_ones_the_language_refuses():
    """The only entries the fuzzer may leave uncalled are in the table and cannot be
    written in a program: the language refuses them with its one kind of error."""
    for name in UNWRITABLE:
        assert name in ORDER
        decls = Declarations()
        decls.add("arg", "x", np.arange(6.0))
        with pytest.raises(GradcliError):
            build(parse_program(f"{name}(x)"), decls)


def test_the_fuzzer_draws_split_with_an_index_picking_a_piece():
    """split and array_split, once unwritable, are drawn (as ``split(...)[k]``)."""
    _, _, exercised, _ = run_fuzz()
    assert exercised["split"] and exercised["array_split"]


def test_classification_names_what_is_at_the_point():
    """A kink, a singularity and a smooth point are told apart (the fuzzer's judge)."""
    env = {"x": np.array([0.0], dtype=LD), "y": np.array(0.0, dtype=LD)}
    relu = {"kind": "call", "name": "relu", "style": "fn", "params": {},
            "children": [{"kind": "arg", "name": "x"}]}
    log = {**relu, "name": "log"}
    sin = {**relu, "name": "sin"}
    sign = {**relu, "name": "sign"}
    for node, expected in ((relu, "kink"), (log, "singularity"), (sin, "ok")):
        f = (lambda n: lambda e: np.sum(walk(n, e, LD, {})))(node)
        assert _classify_coordinate(f, env, "x", (0,))[1] == expected
    # a small jump symmetric about the point (1e-7 * sign(x) at 0, in a long run: the
    # mean of a sign, scaled down by the steps of a linear algebra sample) is no slope
    small_jump = (lambda e: LD(1e-7) * np.sum(walk(sign, e, LD, {})))
    assert _classify_coordinate(small_jump, env, "x", (0,))[1] == "jump"


@pytest.mark.parametrize("text, x", [("arctan2(x, 0 * x)", 0.0), ("sqrt(relu(x))", -1.0)])
def test_edge_points_the_fuzzer_found_give_finite_gradients(text, x):
    decls = Declarations()
    decls.add("arg", "x", np.float64(x))
    model = build(parse_program(text), decls)
    with np.errstate(all="ignore"):
        [g] = gc.gradients_function(model.function)(*model.arg_values)
    assert g.numpy() == 0.0
