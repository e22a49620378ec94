"""Program text -> tree (``gradcli.lang.tree``), with limits and caret errors.

The language is the small subset of Python described in SPEC §2. It has its own
tokenizer and recursive-descent parser rather than Python's ``ast``: Python's parser
applies NFKC normalisation to names (a name in mathematical bold letters becomes
``__class__``), crashes with ``MemoryError``/``RecursionError`` on long or deep input
(``x+x+...`` of 20,000 terms already does), and accepts far more than we want. Our own
parser sees only ASCII, works iteratively on operator chains, recurses only into brackets
(whose depth is limited while tokenizing), and names every construct it refuses.

Nothing here evaluates user text: numbers are converted with ``float()`` and the rest is
tree building. Function names, argument counts, keywords and static parameters (``axis``,
shapes, indices) are checked here against the function table, so a ``Program`` that
comes out of ``parse_program`` is valid apart from names, which only ``build`` can know.

>>> program = parse_program("w1 = Variable(2.0)\\ns = w1 * x1 ^ 2  # x1 declared outside")
>>> program.statements[1] == Assign("s", Binary("*", Name("w1"),
...                                             Binary("**", Name("x1"), Number(2.0))))
True
"""
from __future__ import annotations

import keyword
import math
import re
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import (ArgumentError, GradcliError, LimitError, ParseError, UnknownNameError,
                      did_you_mean)
from . import limits
from .tree import (
    ArrayLit,
    Assign,
    Binary,
    Call,
    Compare,
    Declare,
    ExprStatement,
    Index,
    Name,
    Number,
    Pos,
    Program,
    Slice,
    Str,
    TupleLit,
    Unary,
)

__all__ = [
    "BOOL_NAMES",
    "CONSTANT_NAMES",
    "DECLARE_NAMES",
    "ResolvedCall",
    "children",
    "function_names",
    "iter_postorder",
    "parse_expression",
    "parse_program",
    "registry",
    "resolve_call",
    "static_index",
    "static_value",
]

#: Names that mean a constant unless a declaration shadows them.
CONSTANT_NAMES = ("pi", "e", "inf")
#: ``w = Variable(...)`` and ``c = constant(...)``: declarations, not table functions.
DECLARE_NAMES = ("Variable", "constant")
#: Only meaningful as keyword values (``keepdims=True``, ``trainable=False``).
BOOL_NAMES = ("True", "False")

_CONSTANT_VALUES = {"pi": math.pi, "e": math.e, "inf": math.inf}
_COMPARISONS = {"<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
                "==": "equal", "!=": "not_equal"}


# ---------------------------------------------------------------------------------------
# The function table, read lazily (the engine registers its entries when imported)
# ---------------------------------------------------------------------------------------
def registry() -> dict:
    """The function table (name or alias -> ``Op``), with the engine's entries loaded."""
    from ..engine.core import table
    if not table.REGISTRY:
        try:
            from ..engine import ops  # noqa: F401  (importing registers the entries)
        except ImportError:  # pragma: no cover - only while the engine is being written
            pass
    return table.REGISTRY


def function_names() -> list[str]:
    """Every name a program may call: table names and aliases, sorted."""
    return sorted(registry())


# ---------------------------------------------------------------------------------------
# Errors with a position
# ---------------------------------------------------------------------------------------
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and 0-based column of a character offset (lines as ``splitlines``)."""
    line, start = 1, 0
    for m in _LINE_BREAK.finditer(text, 0, offset):
        line, start = line + 1, m.end()
    return line, offset - start


def _describe_char(ch: str) -> str:
    import unicodedata  # only for messages about non-ASCII text: not at every start
    name = unicodedata.name(ch, "")
    code = f"U+{ord(ch):04X}{' ' + name if name else ''}"
    return f"{ch!r} ({code})" if ch.isprintable() and not ch.isspace() else code


# ---------------------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------------------
class Tok:
    """One token: kind is 'num', 'name', 'op', 'newline' or 'end'."""
    __slots__ = ("col", "kind", "line", "text")

    def __init__(self, kind: str, text: str, line: int, col: int) -> None:
        self.kind, self.text, self.line, self.col = kind, text, line, col

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Tok({self.kind}, {self.text!r}, {self.line}:{self.col})"


_TOKEN = re.compile(r"""
    (?P<space>[ \t]+)
  | (?P<newline>\r\n|\r|\n)
  | (?P<comment>\#[^\r\n]*)
  | (?P<num>(?:[0-9]|\.[0-9])(?:[eE][+-][0-9]|[A-Za-z0-9_.])*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\*\*=|//=|>>=|<<=|\.\.\.|\*\*|//|<<|>>|<=|>=|==|!=|->|:=|[-+*/@%&|^]=
          |[-+*/@%&|^~<>()\[\]{},:;=.!])
""", re.VERBOSE)
_NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
# Characters refused anywhere, comments included: NUL and other controls, line breaks
# that ``str.splitlines`` knows but the tokenizer does not (carets would point at the
# wrong line), zero-width and bidi-control characters (text that reads differently from
# what it is), BOM and lone surrogates. The ASCII ones are found by a pattern compiled
# here; the others (U+0085, U+2028, U+2029, surrogates, format characters) by their
# Unicode category, looked at only when the text is not ASCII: a character class with the
# surrogate range took ~0.7 ms to compile at every start (issue 14).
_FORBIDDEN_ASCII = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NON_ASCII = r"[^\x00-\x7f]"  # compiled (and cached by re) only for non-ASCII text
_BAD_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")

_ALLOWED_OPS = {"+", "-", "*", "/", "**", "^", "@", "%", "//", "(", ")", "[", "]", ",", ":",
                ";", "=", "<", "<=", ">", ">=", "==", "!="}
_REFUSED_OPS = {
    ".": "attribute access is not allowed",
    "...": "'...' (Ellipsis) is not allowed",
    "{": "dicts and sets ('{') are not allowed",
    "}": "dicts and sets ('}') are not allowed",
    "&": "operator '&' is not supported (there are no bitwise operations)",
    "|": "operator '|' is not supported (there are no bitwise operations)",
    "~": "operator '~' is not supported (there are no bitwise operations)",
    "<<": "operator '<<' is not supported (there are no bitwise operations)",
    ">>": "operator '>>' is not supported (there are no bitwise operations)",
    "!": "'!' is not an operator here (use != to compare)",
    ":=": "assignment expressions (':=', walrus) are not allowed",
    "->": "annotations ('->') are not allowed",
}
_KEYWORD_MESSAGES = {
    "import": "import is not allowed", "from": "import is not allowed",
    "lambda": "lambda is not allowed",
    "for": "comprehensions and loops ('for') are not allowed",
    "while": "loops ('while') are not allowed",
    "in": "'in' is not allowed",
    "if": "conditionals ('if') are not allowed (use where(cond, a, b))",
    "else": "conditionals ('else') are not allowed (use where(cond, a, b))",
    "elif": "conditionals ('elif') are not allowed (use where(cond, a, b))",
    "and": "boolean operator 'and' is not allowed (use where)",
    "or": "boolean operator 'or' is not allowed (use where)",
    "not": "boolean operator 'not' is not allowed (use where)",
    "is": "'is' is not allowed (use ==)",
    "def": "function definitions ('def') are not allowed",
    "class": "class definitions are not allowed",
    "None": "None is not allowed (leave an optional argument out; an absent bound of "
            "clip is -inf or inf: clip(x, -inf, 1))",
}


_NAME_AT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Modules whose functions users paste (np.sin(x)), and array methods with a table function.
_MODULES = ("np", "numpy", "math", "torch", "tf", "jnp", "gc", "gradcli", "anp")
_METHODS = {"T": "transpose(x)", "transpose": "transpose(x)", "sum": "sum(x, ...)",
            "mean": "mean(x, ...)", "max": "max(x, ...)", "min": "min(x, ...)",
            "prod": "prod(x, ...)", "reshape": "reshape(x, shape)", "squeeze": "squeeze(x)",
            "flatten": "flatten(x)", "ravel": "ravel(x)", "var": "var(x, ...)",
            "std": "std(x, ...)", "dot": "dot(x, y)", "clip": "clip(x, lo, hi)",
            "cumsum": "cumsum(x, ...)", "argmax": "argmax(x, ...)", "argmin": "argmin(x, ...)",
            "sort": "sort(x, ...)", "swapaxes": "swapaxes(x, a, b)", "repeat": "repeat(x, n)"}


def _attribute_message(prev, text: str, pos: int) -> str:
    """The refusal of '.', naming the function to use for ``np.sin(x)`` or ``x.sum()``."""
    base = "attribute access is not allowed"
    m = _NAME_AT.match(text, pos)
    attr = m.group() if m else ""
    if prev is not None and prev.kind == "name" and prev.text in _MODULES and attr:
        if attr in registry():
            return f"{base}: call the function by its name, {attr}(...), not {prev.text}.{attr}"
        return f"{base}, and '{attr}' is not a function of the language ({prev.text}.{attr})"
    if prev is not None and (prev.kind in ("name", "num") or prev.text in (")", "]")) and attr:
        if attr in _METHODS:
            used = f"x.{attr}" if attr == "T" else f"x.{attr}(...)"
            return f"{base} (there are no methods): write {_METHODS[attr]} instead of {used}"
        if attr in registry():
            return f"{base} (there are no methods): write {attr}(x, ...) instead of x.{attr}(...)"
    return base


def _check_characters(text: str) -> None:
    """Refuse characters that are never allowed, wherever they are (comments included)."""
    m = _FORBIDDEN_ASCII.search(text)
    bad = m.start() if m else None
    if not text.isascii():
        import unicodedata
        for m in re.compile(_NON_ASCII).finditer(text, 0, len(text) if bad is None else bad):
            if unicodedata.category(m.group()) in _BAD_CATEGORIES:
                bad = m.start()
                break
    if bad is not None:
        line, col = _line_col(text, bad)
        ch = text[bad]
        what = "NUL character" if ch == "\x00" else f"character {_describe_char(ch)}"
        # The caret line shows '?' for invisible characters, not the character itself.
        shown = "".join(c if c.isprintable() or c in "\t\r\n" else "?" for c in text)
        raise ParseError(f"{what} is not allowed", source=shown, line=line, col=col)


def _tokenize(text: str) -> list[Tok]:
    """Split text into tokens, refusing unknown characters, keywords and refused
    operators, and enforcing the nesting-depth, unary-run and literal-size limits. A
    string literal is a 'str' token whatever it is next to: whether a string is allowed
    there is the parser's and the binder's judgement (``_check_strings``)."""
    tokens: list[Tok] = []
    pos, end, line, line_start = 0, len(text), 1, 0
    brackets: list[Tok] = []      # open brackets; newlines inside them do not end statements
    unary_run = 0
    prev: Tok | None = None       # last significant token of the statement (None at its start)
    match = _TOKEN.match

    def fail(cls, message: str, col: int, width: int = 1):
        return cls(message, source=text, line=line, col=col, width=width)

    while pos < end:
        m = match(text, pos)
        col = pos - line_start
        if m is None:
            tok, pos = _string_or_refusal(text, pos, line, col, fail)
            prev, unary_run = tok, 0
            tokens.append(tok)
            continue
        kind, s = m.lastgroup, m.group()
        pos = m.end()
        if kind == "space" or kind == "comment":
            continue
        if kind == "newline":
            if not brackets:
                tokens.append(Tok("newline", "\n", line, col))
                prev, unary_run = None, 0
            line, line_start = line + 1, pos
            continue
        tok = Tok(kind, s, line, col)
        if kind == "num":
            _check_number(s, fail, col)
        elif kind == "name":
            _check_name(s, fail, col)
        else:
            _check_op(s, prev, text, pos, fail, col)
            _track_brackets(tok, brackets, fail)
        tokens.append(tok)
        if kind == "op" and s == ";":
            prev, unary_run = None, 0
        else:
            prev, unary_run = tok, _unary_run(tok, prev, unary_run, fail)
    if brackets:
        opened = brackets[-1]
        raise ParseError(f"{opened.text!r} was never closed", source=text, line=opened.line,
                         col=opened.col)
    tokens.append(Tok("end", "", line, len(text[line_start:])))
    return tokens


# The refusal of a string where no parameter takes one (those that do:
# ``_STRING_PARAMETERS``).
_STRINGS_ONLY = ("(only einsum's subscripts, einsum(\"ij,jk->ik\", a, b), and norm's "
                 "ord='fro' or 'nuc')")
_STRINGS_REFUSED = f"strings are not allowed {_STRINGS_ONLY}"


def _string_or_refusal(text: str, pos: int, line: int, col: int, fail) -> tuple[Tok, int]:
    """At a character no token pattern matches: a string literal ('...' or "...", ended on
    its line) as a 'str' token and the position after it, or the refusal of the character."""
    ch = text[pos]
    if ch in "'\"":
        close = text.find(ch, pos + 1)
        nl = _LINE_BREAK.search(text, pos)
        if close == -1 or (nl is not None and close > nl.start()):
            raise fail(ParseError, _STRINGS_REFUSED, col)  # (an unterminated one)
        return Tok("str", text[pos + 1:close], line, col), close + 1
    if ch == "\\":
        raise fail(ParseError, "line continuation '\\' is not allowed "
                               "(a newline inside brackets continues a line)", col)
    if ord(ch) > 127:
        raise fail(ParseError, f"non-ASCII character {_describe_char(ch)} is not "
                               "allowed outside comments", col)
    raise fail(ParseError, f"unexpected character {ch!r}", col)


def _check_number(s: str, fail, col: int) -> None:
    """Refuse a number token over the literal size limit, or not a decimal number."""
    digits = sum(c.isdigit() for c in s.split("e")[0].split("E")[0])
    if digits > limits.MAX_LITERAL_DIGITS:
        raise fail(LimitError, f"number literal with {digits:,} digits is over the "
                               f"literal size limit ({limits.MAX_LITERAL_DIGITS} digits)",
                   col, len(s))
    if _NUMBER.match(s):
        return
    product = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?)([A-Za-z][A-Za-z0-9_]*)", s)
    if re.match(r"0[xXbBoO]|[0-9.]*[eE][0-9]", s):
        message = f"invalid number {s!r} (only decimal numbers are allowed)"
    elif "_" in s and re.fullmatch(r"[0-9_.eE+-]+", s):
        message = f"invalid number {s!r} (digit separators '_' are not allowed)"
    elif product:  # 2x: a product written as in mathematics
        message = (f"invalid name {s!r}: names must start with a letter "
                   f"(for a product write {product[1]} * {product[2]})")
    elif re.match(r"[0-9]+[A-Za-z_]", s):
        message = f"invalid name {s!r}: names must start with a letter"
    else:
        message = f"invalid number {s!r}"
    raise fail(ParseError, message, col, len(s))


def _check_name(s: str, fail, col: int) -> None:
    if s.startswith("_"):
        raise fail(ParseError, f"names beginning with '_' are not allowed: {s!r}", col, len(s))
    if keyword.iskeyword(s) and s not in BOOL_NAMES:
        raise fail(ParseError, _KEYWORD_MESSAGES.get(s, f"'{s}' is not allowed"), col, len(s))


def _check_op(s: str, prev: Tok | None, text: str, pos: int, fail, col: int) -> None:
    if s == ".":
        raise fail(ParseError, _attribute_message(prev, text, pos), col)
    if s not in _ALLOWED_OPS:
        message = _REFUSED_OPS.get(s)
        if message is None:  # augmented assignment: += -= *= ...
            message = f"augmented assignment {s!r} is not allowed (write x = x {s[:-1]} ...)"
        raise fail(ParseError, message, col, len(s))


def _unary_run(tok: Tok, prev: Tok | None, run: int, fail) -> int:
    """The length of the run of unary signs that ``tok`` ends (0 when it is not one),
    refusing a run over the limit. A + or - is unary where an operand is expected: at the
    start, or after an operator or an opening bracket, comma, '=' or ':'."""
    if not (tok.kind == "op" and tok.text in ("+", "-")
            and (prev is None or (prev.kind == "op" and prev.text not in ")]"))):
        return 0
    if run + 1 > limits.MAX_UNARY_RUN:
        raise fail(LimitError, f"more than {limits.MAX_UNARY_RUN} unary operators "
                               "in a row (the unary run limit)", tok.col)
    return run + 1


def _track_brackets(tok: Tok, brackets: list[Tok], fail) -> None:
    """Push or pop ``tok`` if it is a bracket, refusing mismatches and over-deep nesting."""
    s, col = tok.text, tok.col
    if s in "([":
        brackets.append(tok)
        if len(brackets) > limits.MAX_NESTING:
            raise fail(LimitError, f"brackets nested more than {limits.MAX_NESTING} "
                                   f"deep (the nesting depth limit)", col)
    elif s in ")]":
        if not brackets:
            raise fail(ParseError, f"unmatched {s!r}", col)
        opened = brackets.pop()
        if (opened.text == "(") != (s == ")"):
            raise fail(ParseError, f"{s!r} does not match {opened.text!r} "
                                   f"on line {opened.line}", col)


#: The strings norm's ``ord=`` accepts (numpy's matrix norms named by a string).
NORM_ORD_STRINGS = ("fro", "nuc")


def _check_subscripts(subscripts: str, fail, col: int, n_operands: int | None = None) -> None:
    from ..engine.rules.linalg import SubscriptError, check_subscripts
    try:
        check_subscripts(subscripts, n_operands)
    except SubscriptError as err:
        raise fail(ParseError, str(err), col + err.offset) from None


# ---------------------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------------------
def _literal(node):
    """A number literal's value, with its unary signs; None for anything else."""
    sign = 1.0
    while isinstance(node, Unary):
        sign = -sign if node.op == "-" else sign
        node = node.operand
    return sign * node.value if isinstance(node, Number) else None


class _Parser:
    """Recursive descent over tokens. Each ``_parse_*`` returns ``(node, first, last)``
    tokens so that a node's position can span everything it was made from."""

    def __init__(self, text: str, tokens: list[Tok]) -> None:
        self.text = text
        self.lines = text.splitlines() or [""]
        self.tokens = tokens
        self.i = 0
        self.nodes = 0
        self.functions = registry()
        # pi, e, inf once the program assigns them: no longer constants in static places.
        self.shadowed: frozenset = frozenset()
        # The index of the token that starts the call argument being read (a string is
        # read only there).
        self.argument_start = -1

    # --- helpers ------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Tok:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def take(self) -> Tok:
        tok = self.tokens[self.i]
        if tok.kind != "end":
            self.i += 1
        return tok

    def at_op(self, *ops: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind == "op" and tok.text in ops

    def pos(self, first: Tok, last: Tok) -> Pos:
        if first.line == last.line:
            width = last.col + len(last.text) - first.col
        else:
            width = len(self.lines[first.line - 1]) - first.col
        return Pos(first.line, first.col, max(1, width))

    def error(self, cls, message: str, first: Tok, last: Tok | None = None) -> GradcliError:
        if first.kind == "str" and last in (None, first):
            # A string where the parser stopped is a string out of place: say that.
            return self.string_refused(first)
        pos = self.pos(first, last or first)
        return cls(message, source=self.text, line=pos.line, col=pos.col, width=pos.width)

    def count(self) -> None:
        self.nodes += 1
        if self.nodes > limits.MAX_NODES:
            tok = self.peek()
            raise self.error(LimitError, f"program has more than {limits.MAX_NODES:,} "
                                         "nodes (the tree size limit)", tok)

    def expect(self, text: str, context: str) -> Tok:
        tok = self.peek()
        if tok.kind == "op" and tok.text == text:
            return self.take()
        raise self.error(ParseError, f"expected {text!r} {context}, found {_show(tok)}", tok)

    # --- statements ---------------------------------------------------------------------
    def program(self) -> Program:
        statements = []
        while True:
            while self.peek().kind == "newline" or self.at_op(";"):
                self.take()
            if self.peek().kind == "end":
                break
            statements.append(self.statement())
            tok = self.peek()
            if not (tok.kind in ("newline", "end") or self.at_op(";")):
                hint = " (missing operator?)" if tok.kind in ("name", "num") or self.at_op("(", "[") else ""
                raise self.error(ParseError, f"unexpected {_show(tok)}{hint}", tok)
        if not statements:
            raise ParseError("empty program: there is nothing to compute", source=self.text,
                             line=1, col=0)
        return Program(tuple(statements), self.text)

    def statement(self):
        first = self.peek()
        if first.kind == "name" and self.peek(1).kind == "op" and self.peek(1).text == "=":
            self.take()
            self.take()
            self._check_assignable(first)
            tok = self.peek()
            if tok.kind == "name" and tok.text in DECLARE_NAMES and self.peek(1).text == "(":
                value, _, last = self.declaration()
                if not (self.peek().kind in ("newline", "end") or self.at_op(";")):
                    raise self.error(ParseError, f"{tok.text}(...) must be the whole right-hand "
                                                 f"side of an assignment", tok, last)
            else:
                value, _, last = self.expression()
            if self.at_op("="):
                raise self.error(ParseError, "chained assignment (a = b = ...) is not allowed",
                                 self.peek())
            self.count()
            if first.text in CONSTANT_NAMES:
                self.shadowed = self.shadowed | {first.text}
            return Assign(first.text, value, self.pos(first, last))
        value, _, last = self.expression()
        if self.at_op("="):
            what = ("item assignment is not allowed" if isinstance(value, Index)
                    else "only a name can be assigned to")
            raise self.error(ParseError, what, first, last)
        if self.at_op(","):
            raise self.error(ParseError, "tuples and tuple unpacking are not allowed here",
                             self.peek())
        self.count()
        return ExprStatement(value, self.pos(first, last))

    def _check_assignable(self, tok: Tok) -> None:
        name = tok.text
        if name in BOOL_NAMES:
            raise self.error(ParseError, f"cannot assign to {name}", tok)
        if name in DECLARE_NAMES or name in self.functions:
            raise self.error(ParseError, f"'{name}' is the name of a function and cannot be "
                                         "assigned", tok)

    def declaration(self):
        """``Variable(value, trainable=...)`` or ``constant(value)``."""
        name_tok = self.take()
        args, kwargs, last = self.call_arguments(name_tok)
        kind = "variable" if name_tok.text == "Variable" else "constant"
        allowed = ("initial_value", "trainable") if kind == "variable" else ("value",)
        for key, (expr, key_tok) in kwargs.items():
            if key not in allowed:
                takes = "a value and trainable=True/False" if kind == "variable" else "only a value"
                raise self.error(ArgumentError, f"{name_tok.text}() takes {takes}, not "
                                                f"'{key}'", key_tok)
        _check_strings(name_tok.text, allowed, args, kwargs, self.text)
        value_key = allowed[0]
        max_positional = len(allowed)
        if (len(args) > max_positional or (args and value_key in kwargs)
                or (len(args) > 1 and "trainable" in kwargs)):
            raise self.error(ArgumentError, f"{name_tok.text}() takes {max_positional} "
                                            f"argument{'s' if max_positional > 1 else ''}, "
                                            f"got {len(args) + len(kwargs)}", name_tok, last)
        if args:
            value = args[0]
        elif value_key in kwargs:
            value = kwargs[value_key][0]
        else:
            raise self.error(ArgumentError, f"{name_tok.text}() needs a value, e.g. "
                                            f"{name_tok.text}(2.0)", name_tok, last)
        trainable = True
        flag = args[1] if len(args) > 1 else kwargs.get("trainable", (None,))[0]
        if flag is not None:
            if not (isinstance(flag, Name) and flag.id in BOOL_NAMES):
                raise ArgumentError("trainable must be True or False", source=self.text,
                                    line=flag.pos.line, col=flag.pos.col, width=flag.pos.width)
            trainable = flag.id == "True"
        self.count()
        return Declare(kind, value, trainable, self.pos(name_tok, last)), name_tok, last

    # --- expressions --------------------------------------------------------------------
    def expression(self):
        """A comparison, or an arithmetic expression. Comparisons do not chain."""
        left, first, last = self.arithmetic()
        if self.peek().kind == "op" and self.peek().text in _COMPARISONS:
            op = self.take().text
            right, _, last = self.arithmetic()
            if self.peek().kind == "op" and self.peek().text in _COMPARISONS:
                raise self.error(ParseError, "chained comparisons (a < b < c) are not allowed",
                                 self.peek())
            self.count()
            left = Compare(op, left, right, self.pos(first, last))
        return left, first, last

    def arithmetic(self):
        left, first, last = self.term()
        while self.at_op("+", "-"):
            op = self.take().text
            right, _, last = self.term()
            self.count()
            left = Binary(op, left, right, self.pos(first, last))
        return left, first, last

    def term(self):
        left, first, last = self.factor()
        while self.at_op("*", "/", "@", "%", "//"):  # Python's precedence: one level
            op = self.take().text
            right, _, last = self.factor()
            self.count()
            left = Binary(op, left, right, self.pos(first, last))
        return left, first, last

    def factor(self):
        """Unary signs and right-associative powers, iteratively: ``-a ** -b ** c`` is
        ``-(a ** (-(b ** c)))`` as in Python. ``^`` is the same as ``**``."""
        items = []  # (unary sign tokens, (node, first, last)) for each operand of the chain
        while True:
            signs = []
            while self.at_op("+", "-"):
                signs.append(self.take())
            items.append((signs, self.postfix()))
            if not self.at_op("**", "^"):
                break
            self.take()
        signs, (node, first, last) = items[-1]
        node, first = self._apply_signs(signs, node, first, last)
        # The value of the chain so far when it is made of number literals only: a power
        # of literals that overflows a float64 (9**9**9**9) is refused as a limit.
        literal = _literal(node)
        for signs, (base, base_first, _) in reversed(items[:-1]):
            self.count()
            node, first = Binary("**", base, node, self.pos(base_first, last)), base_first
            base_value = _literal(base)
            if literal is not None and base_value is not None:
                try:
                    literal = math.pow(base_value, literal)
                except OverflowError:
                    raise self.limit_error(node) from None
                except (ValueError, ZeroDivisionError):  # e.g. (-8)**0.5, 0**-1: numpy's nan/inf
                    literal = None
            else:
                literal = None
            node, first = self._apply_signs(signs, node, first, last)
            if literal is not None:
                literal = -literal if sum(s.text == "-" for s in signs) % 2 else literal
        return node, first, last

    def limit_error(self, node) -> LimitError:
        text = self.text.splitlines()[node.pos.line - 1][node.pos.col:node.pos.col + node.pos.width] \
            if self.text else ""
        shown = text if len(text) <= 40 else text[:37] + "..."
        return LimitError(f"the constant {shown} is too large for a float64 (the number size "
                          f"limit, about 1.8e308)", source=self.text, line=node.pos.line,
                          col=node.pos.col, width=node.pos.width)

    def _apply_signs(self, signs, node, first, last):
        for sign in reversed(signs):
            self.count()
            node, first = Unary(sign.text, node, self.pos(sign, last)), sign
        return node, first

    def postfix(self):
        node, first, last = self.primary()
        while self.at_op("[", "("):
            if self.at_op("("):
                raise self.error(ParseError, "only functions of the table can be called, "
                                             "e.g. sin(x)", first, self.peek())
            self.take()
            items = []
            while True:
                items.append(self.index_item())
                if self.at_op(","):
                    self.take()
                    if self.at_op("]"):
                        break
                    continue
                break
            last = self.expect("]", "to close the index")
            self.count()
            node = Index(node, tuple(items), self.pos(first, last))
            # indices are constant integers
            self._check_static(lambda: static_index(node, self.text, self.shadowed), node)
        return node, first, last

    def index_item(self):
        """An expression or a slice ``lower:upper:step`` (each part optional)."""
        first = self.peek()
        if self.at_op("]", ","):
            raise self.error(ParseError, "empty index", first)
        lower = upper = step = None
        last = first
        if not self.at_op(":"):
            lower, _, last = self.expression()
            if not self.at_op(":"):
                return lower
        last = self.take()  # ':'
        if not self.at_op(":", ",", "]"):
            upper, _, last = self.expression()
        if self.at_op(":"):
            last = self.take()
            if not self.at_op(",", "]"):
                step, _, last = self.expression()
        self.count()
        return Slice(lower, upper, step, self.pos(first, last))

    def primary(self):
        tok = self.peek()
        if tok.kind == "num":
            self.take()
            self.count()
            return Number(float(tok.text), self.pos(tok, tok)), tok, tok
        if tok.kind == "name":
            return self.name_or_call()
        if tok.kind == "str":
            # Only a whole argument of a call can be a string; the binder judges whether
            # its parameter takes one (_check_strings).
            if self.i != self.argument_start:
                raise self.string_refused(tok)
            self.take()
            self.count()
            return Str(tok.text, Pos(tok.line, tok.col, len(tok.text) + 2)), tok, tok
        if tok.kind == "op":
            if tok.text == "(":
                return self.parenthesized()
            if tok.text == "[":
                return self.array_literal()
            if tok.text in ("*", "**"):
                raise self.error(ParseError, "starred expressions (*x, **x) are not allowed", tok)
            if tok.text == "=":
                raise self.error(ParseError, "unexpected '=' (use == to compare)", tok)
        raise self.error(ParseError, f"expected an expression, found {_show(tok)}", tok)

    def name_or_call(self):
        tok = self.take()
        name = tok.text
        is_call = self.at_op("(")
        if name in DECLARE_NAMES:
            raise self.error(ParseError, f"{name}(...) is only allowed as the whole right-hand "
                                         f"side of an assignment, e.g. w = {name}(2.0)", tok)
        if not is_call:
            if name in self.functions:
                raise self.error(ParseError, f"'{name}' is a function: call it, e.g. {name}(x)",
                                 tok)
            self.count()
            return Name(name, self.pos(tok, tok)), tok, tok
        op = self.functions.get(name)
        if op is None:
            # A string given to an unknown function (a payload for Python's own functions)
            # is the problem to name: the language has no use for it
            string = self.string_argument()
            if string is not None:
                raise self.string_refused(string)
            hint = did_you_mean(name, list(self.functions) + list(DECLARE_NAMES))
            raise self.error(UnknownNameError, f"unknown function '{name}'{hint}", tok)
        args, kwargs, last = self.call_arguments(tok)
        self.count()
        _check_strings(name, _written_parameters(op, len(args)), args, kwargs, self.text)
        if op.name == "einsum":
            args, kwargs = self.einsum_arguments(tok, last, args, kwargs)
        call = Call(name, tuple(args), tuple((k, v) for k, (v, _) in kwargs.items()),
                    self.pos(tok, last))
        # arity, keywords, static parameters
        self._check_static(lambda: resolve_call(call, self.text, self.shadowed), call)
        return call, tok, last

    def _check_static(self, check, node) -> None:
        """Run a parse-time check of ``node``; a failure where pi, e or inf appear is left
        to ``build``, which knows whether a declaration shadows them (``--arg e=0``: then
        ``axis=e`` is refused as not a constant, not as the float 2.718...)."""
        try:
            check()
        except ArgumentError:
            if not any(isinstance(n, Name) and n.id in CONSTANT_NAMES
                       for n in iter_postorder(node)):
                raise

    def einsum_arguments(self, name_tok: Tok, last: Tok, args: list, kwargs: dict):
        """``einsum("ij,jk->ik", a, b)`` as the table's einsum: the operands as one list and
        the subscripts as its ``subscripts`` parameter."""
        if not args or not isinstance(args[0], Str):
            raise self.error(ArgumentError, "einsum takes its subscripts first, e.g. "
                                            "einsum(\"ij,jk->ik\", a, b)", name_tok, last)
        if "subscripts" in kwargs:
            raise self.error(ArgumentError, "einsum got two values for 'subscripts'",
                             kwargs["subscripts"][1])
        subscripts, operands = args[0], args[1:]
        pos = subscripts.pos

        def fail(cls, message, col, width=1):
            return cls(message, source=self.text, line=pos.line, col=col, width=width)
        # (their syntax first, the operand count once there are operands)
        _check_subscripts(subscripts.value, fail, pos.col + 1, len(operands) or None)
        if not operands:
            raise self.error(ArgumentError, "einsum needs at least one array after its "
                                            "subscripts", name_tok, last)
        start, end = operands[0].pos, operands[-1].pos
        width = end.col + end.width - start.col if start.line == end.line else start.width
        arrays = TupleLit(tuple(operands), Pos(start.line, start.col, max(1, width)))
        return [arrays], {**kwargs, "subscripts": (subscripts, name_tok)}

    def call_arguments(self, name_tok: Tok):
        """``( args, key=value, ... )`` after a function name."""
        self.take()  # '('
        args: list = []
        kwargs: dict[str, tuple] = {}
        while not self.at_op(")"):
            tok = self.peek()
            if tok.kind == "name" and self.peek(1).kind == "op" and self.peek(1).text == "=":
                self.take()
                self.take()
                if tok.text in kwargs:
                    raise self.error(ArgumentError, f"{name_tok.text}() got keyword "
                                                    f"'{tok.text}' twice", tok)
                value, _, _ = self.argument()
                kwargs[tok.text] = (value, tok)
            else:
                value, first, last = self.argument()
                if kwargs:
                    raise self.error(ParseError, "positional argument after a keyword "
                                                 "argument", first, last)
                args.append(value)
            if not self.at_op(","):
                break
            self.take()
        last = self.expect(")", f"to close the call of {name_tok.text}")
        return args, kwargs, last

    def argument(self):
        """One argument's expression: a string only as the whole of it."""
        self.argument_start = self.i
        value, first, last = self.expression()
        if first.kind == "str" and not isinstance(value, Str):  # 'ij' + x
            raise self.string_refused(first)
        return value, first, last

    def string_argument(self) -> Tok | None:
        """The first string directly among the arguments of the call whose '(' is next."""
        depth = 0
        for tok in self.tokens[self.i:]:
            if tok.kind == "end":
                return None
            if tok.kind == "str" and depth == 1:
                return tok
            if tok.kind == "op" and tok.text in ("(", "["):
                depth += 1
            elif tok.kind == "op" and tok.text in (")", "]"):
                depth -= 1
                if depth == 0:
                    return None
        return None

    def string_refused(self, tok: Tok) -> ParseError:
        return ParseError(_STRINGS_REFUSED, source=self.text, line=tok.line, col=tok.col,
                          width=len(tok.text) + 2)

    def parenthesized(self):
        first = self.take()
        if self.at_op(")"):
            last = self.take()
            self.count()
            return TupleLit((), self.pos(first, last)), first, last
        node, _, _ = self.expression()
        if not self.at_op(","):
            last = self.expect(")", "to close '('")
            return node, first, last
        elements = [node]
        while self.at_op(","):
            self.take()
            if self.at_op(")"):
                break
            node, _, _ = self.expression()
            elements.append(node)
        last = self.expect(")", "to close the tuple")
        self.count()
        return TupleLit(tuple(elements), self.pos(first, last)), first, last

    def array_literal(self):
        first = self.take()
        elements = []
        while not self.at_op("]"):
            node, _, _ = self.expression()
            elements.append(node)
            if not self.at_op(","):
                break
            self.take()
        last = self.expect("]", "to close the array")
        self.count()
        return ArrayLit(tuple(elements), self.pos(first, last)), first, last


def _show(tok: Tok) -> str:
    if tok.kind == "end":
        return "end of input"
    if tok.kind == "newline":
        return "end of line"
    return repr(tok.text)


def _check_length(text: str, what: str) -> None:
    if not isinstance(text, str):
        raise ParseError(f"{what} must be text, not {type(text).__name__}")
    if len(text) > limits.MAX_PROGRAM_CHARS:
        raise LimitError(f"{what} has {len(text):,} characters, over the length limit "
                         f"({limits.MAX_PROGRAM_CHARS:,} characters)")


def parse_program(text: str) -> Program:
    """Parse a program: statements separated by newlines or ``;``, comments after ``#``.

    Raises a ``GradcliError`` subclass (with line, column and caret) for anything that is
    not a program of the language, and ``LimitError`` for input over a limit.

    >>> len(parse_program("a = 1; b = a + 2  # two statements").statements)
    2
    """
    _check_length(text, "program")
    _check_characters(text)
    return _run_parser(_Parser(text, _tokenize(text)))


def _run_parser(parser: _Parser) -> Program:
    # Each bracket level costs about eight Python frames; MAX_NESTING levels must fit even
    # when the caller's stack is already deep (pytest, hypothesis), so make room for them.
    # Python-to-Python calls use no C stack on 3.11+, so a higher limit is safe.
    needed = 12 * limits.MAX_NESTING + 1000
    old = sys.getrecursionlimit()
    if old < needed:
        sys.setrecursionlimit(needed)
    try:
        return parser.program()
    except RecursionError:  # only reachable when the caller's stack is already very deep
        raise LimitError(f"program nested too deeply (the nesting depth limit is "
                         f"{limits.MAX_NESTING})") from None
    finally:
        if old < needed:
            sys.setrecursionlimit(old)


def parse_expression(text: str):
    """Parse text that must be exactly one expression (a declaration value such as
    ``linspace(0, 1, 5)`` or ``-pi/2``); returns the expression node.

    >>> parse_expression("-pi/2") == Binary("/", Unary("-", Name("pi")), Number(2.0))
    True
    """
    _check_length(text, "value")
    _check_characters(text)
    program = _run_parser(_Parser(text, _tokenize(text)))
    statement = program.statements[0]
    if len(program.statements) > 1 or not isinstance(statement, ExprStatement):
        pos = statement.pos if not isinstance(statement, ExprStatement) else program.statements[1].pos
        raise ParseError("expected a single expression (no assignments or ';')", source=text,
                         line=pos.line, col=pos.col, width=pos.width)
    return statement.value


# ---------------------------------------------------------------------------------------
# Walking trees without recursion (left-deep sums of 50,000 terms are valid programs)
# ---------------------------------------------------------------------------------------
def children(node) -> tuple:
    """The direct sub-nodes of a node, in source order."""
    if isinstance(node, (Number, Name, Str)):
        return ()
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, (Binary, Compare)):
        return (node.left, node.right)
    if isinstance(node, Call):
        return node.args + tuple(value for _, value in node.kwargs)
    if isinstance(node, (ArrayLit, TupleLit)):
        return node.elements
    if isinstance(node, Index):
        return (node.value,) + node.items
    if isinstance(node, Slice):
        return tuple(part for part in (node.lower, node.upper, node.step) if part is not None)
    if isinstance(node, (Declare, Assign, ExprStatement)):
        return (node.value,)
    if isinstance(node, Program):
        return node.statements
    raise TypeError(f"not a tree node: {type(node).__name__}")


def iter_postorder(root) -> Iterator:
    """Every node under ``root`` (root included), children before parents, iteratively.

    >>> [type(n).__name__ for n in iter_postorder(parse_expression("1 + x"))]
    ['Number', 'Name', 'Binary']
    """
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        stack.append((node, True))
        for child in reversed(children(node)):
            stack.append((child, False))


# ---------------------------------------------------------------------------------------
# Static values: shapes, axes, indices, keyword flags
# ---------------------------------------------------------------------------------------
class NotStatic(Exception):
    """Raised by ``static_value`` for a node that is not a constant expression."""

    def __init__(self, node) -> None:
        super().__init__(type(node).__name__)
        self.node = node


def static_value(expr, shadowed: frozenset = frozenset()) -> Any:
    """Fold a constant expression to a Python value: a float, a bool (``True``/``False``)
    or a tuple of them (``(2, 3)`` or ``[2, 3]``). Arithmetic is float64 with overflow to
    ``inf`` (never Python big ints, so ``9**9**9**9`` is instant). Raises ``NotStatic``
    naming the first node that is not constant (a declared name, a call, ...); names in
    ``shadowed`` (``pi``, ``e``, ``inf`` when declared) are not constants.

    >>> static_value(parse_expression("(2, 10**3)"))
    (2.0, 1000.0)
    """
    values: dict[int, Any] = {}
    with np.errstate(all="ignore"):
        for node in iter_postorder(expr):
            if isinstance(node, Number):
                value = np.float64(node.value)
            elif isinstance(node, Name):
                if node.id in _CONSTANT_VALUES and node.id not in shadowed:
                    value = np.float64(_CONSTANT_VALUES[node.id])
                elif node.id in BOOL_NAMES:
                    value = node.id == "True"
                else:
                    raise NotStatic(node)
            elif isinstance(node, Unary):
                value = _numeric(values[id(node.operand)], node)
                value = -value if node.op == "-" else value
            elif isinstance(node, Binary) and node.op != "@":
                a = _numeric(values[id(node.left)], node)
                b = _numeric(values[id(node.right)], node)
                value = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide,
                         "**": np.power, "%": np.mod, "//": np.floor_divide}[node.op](a, b)
            elif isinstance(node, (TupleLit, ArrayLit)):
                value = tuple(values[id(e)] for e in node.elements)
            elif isinstance(node, Str):
                value = node.value
            else:
                raise NotStatic(node)
            values[id(node)] = value
    return _to_python(values[id(expr)])


def _numeric(value, node):
    if not isinstance(value, np.float64):
        raise NotStatic(node)
    return value


def _to_python(value):
    if isinstance(value, str):
        return value
    if isinstance(value, tuple):
        return tuple(_to_python(v) for v in value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    return float(value)


def _arg_error(cls, message: str, node, source: str) -> GradcliError:
    pos = node.pos
    return cls(message, source=source, line=pos.line, col=pos.col, width=pos.width)


def _static(expr, what: str, source: str, shadowed: frozenset = frozenset()):
    try:
        return static_value(expr, shadowed)
    except NotStatic as err:
        node = err.node
        if isinstance(node, Name) and node.id in shadowed:
            message = f"'{node.id}' is declared, so it is not a constant here; use a number"
        else:
            detail = f"the name '{node.id}'" if isinstance(node, Name) else "this"
            message = f"{what} must be a constant (numbers, pi, e, inf), not {detail}"
        raise _arg_error(ArgumentError, message, node, source) from None


def _as_int(value, what: str, node, source: str) -> int:
    if isinstance(value, bool) or not isinstance(value, float):
        raise _arg_error(ArgumentError, f"{what} must be an integer, got {_fmt(value)}",
                         node, source)
    if not math.isfinite(value) or value != math.floor(value):
        raise _arg_error(ArgumentError, f"{what} must be an integer, got {_fmt(value)}",
                         node, source)
    if abs(value) > 2.0 ** 62:
        raise _arg_error(LimitError, f"{what} {_fmt(value)} is too large", node, source)
    return int(value)


def _fmt(value) -> str:
    if isinstance(value, float) and math.isfinite(value) and value == math.floor(value) \
            and abs(value) < 1e16:
        return str(int(value))
    if isinstance(value, tuple):
        return "(" + ", ".join(_fmt(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def static_index(index: Index, source: str = "", shadowed: frozenset = frozenset()) -> tuple:
    """The items of an ``Index`` node as Python ints and slices: ``x[1:3, 0]`` ->
    ``(slice(1, 3, None), 0)``. Indices must be constant integers."""
    items = []
    for item in index.items:
        if isinstance(item, Slice):
            parts = []
            for part in (item.lower, item.upper, item.step):
                if part is None:
                    parts.append(None)
                else:
                    parts.append(_as_int(_static(part, "a slice bound", source, shadowed),
                                         "a slice bound", part, source))
            if parts[2] == 0:
                raise _arg_error(ArgumentError, "slice step cannot be zero", item.step, source)
            items.append(slice(*parts))
        else:
            items.append(_as_int(_static(item, "an index", source, shadowed), "an index", item,
                                 source))
    return tuple(items)


# Static parameters that take integers (or tuples of integers); the others take floats,
# except those whose default is a bool (keepdims), which take True or False.
_INT_PARAMS = {"axis", "axes", "shape", "N", "M", "num", "k", "n", "repeats", "reps", "shift",
               "axis1", "axis2", "source", "destination", "indices_or_sections", "pad_width",
               "offset"}
# the integer parameters that also take tuples (pad_width also tuples of pairs)
_TUPLE_PARAMS = {"axis", "axes", "shape", "reps", "shift", "source", "destination",
                 "indices_or_sections", "pad_width"}
_NON_NEGATIVE = {"N", "M", "num", "n", "repeats", "reps", "pad_width"}
_MAX_DIMS = 64  # numpy's own limit on the number of dimensions


class ResolvedCall:
    """A call matched against its table entry: ``inputs`` are the tensor input expressions
    (for ``concatenate``/``stack``, the list's elements) and ``params`` the static
    parameters as Python values, defaults filled in."""
    __slots__ = ("op", "inputs", "params")

    def __init__(self, op: Any, inputs: tuple, params: dict):
        self.op, self.inputs, self.params = op, inputs, params


class _Binding:
    """How a table entry's arguments bind: computed once per entry (``_binding``), since
    the parser resolves every call it reads (twice: once parsing, once building) and a
    signature inspection costs 5-15 µs."""
    __slots__ = ("n_inputs", "names", "defaults", "required", "n_min", "n_max", "text")

    def __init__(self, op) -> None:
        self.n_inputs = 1 if op.variadic else len(op.inputs)
        self.names = [name for name, _ in op.params]
        self.defaults = dict(op.params)
        self.required = _required_params(op)
        self.n_max = self.n_inputs + len(self.names)
        self.n_min = self.n_inputs + sum(1 for name in self.names if name in self.required)
        self.text = _signature_text(op, self.required)


_BINDINGS: dict = {}  # Op -> _Binding (entries compare and hash by identity)


def _binding(op) -> _Binding:
    binding = _BINDINGS.get(op)
    if binding is None:
        binding = _BINDINGS[op] = _Binding(op)
    return binding


def _required_params(op) -> set[str]:
    """Static parameters without a usable default (``reshape``'s shape, ``zeros``' shape):
    read from the forward function's signature, since the table writes them as None."""
    if not op.params:
        return set()
    import inspect  # once per entry (see _Binding); kept off the start-up path
    try:
        signature = inspect.signature(op.forward)
    except (TypeError, ValueError):
        return set()
    names = {name for name, _ in op.params}
    return {p.name for p in signature.parameters.values()
            if p.name in names and p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _signature_text(op, required: set[str]) -> str:
    parts = list(op.inputs) if not op.variadic else ["[arrays]"]
    for name, default in op.params:
        parts.append(name if name in required else f"{name}={default!r}")
    return ", ".join(parts)


# The parameters that take a string: (function, parameter) -> the strings accepted and the
# refusal of another (None: any, left to the function's own check, einsum's subscripts to
# ``check_subscripts``).
_STRING_PARAMETERS = {
    ("einsum", "subscripts"): None,
    ("norm", "ord"): (NORM_ORD_STRINGS, "ord= takes the string 'fro' or 'nuc' (or a number: "
                                        "1, 2, inf, ...)"),
}


def _written_parameters(op, n_args: int) -> tuple:
    """The parameter each of ``n_args`` positional arguments binds to as the call is
    written (einsum's subscripts come first, ``einsum("ij,jk->ik", a, b)``; the table's
    einsum takes them as a parameter after its operands)."""
    if op.name == "einsum":
        return ("subscripts",) + ("operands",) * max(0, n_args - 1)
    return tuple(["arrays"] if op.variadic else op.inputs) + tuple(_binding(op).names)


def _check_strings(func: str, positional: tuple, args: list, kwargs: dict,
                   source: str) -> None:
    """The binder's judgement of string literals: a string is an argument only for a
    parameter of ``_STRING_PARAMETERS`` and one of the strings it accepts. ``positional``
    names the parameter of each positional argument; ``kwargs`` is key -> (value, token)."""
    given = [(positional[i] if i < len(positional) else None, value)
             for i, value in enumerate(args)]
    given += [(key, value) for key, (value, _) in kwargs.items()]
    for i, (param, value) in enumerate(given):
        if not isinstance(value, Str):
            continue
        if (func, param) not in _STRING_PARAMETERS:
            where = (f"{param}=" if i >= len(args) else param if param is not None
                     else f"argument {i + 1}")
            raise _arg_error(ParseError, f"strings are not allowed for {where} of {func} "
                                         f"{_STRINGS_ONLY}", value, source)
        accepted = _STRING_PARAMETERS[func, param]
        if accepted is not None and value.value not in accepted[0]:
            raise _arg_error(ArgumentError, accepted[1], value, source)


def resolve_call(call: Call, source: str = "", shadowed: frozenset = frozenset()) -> ResolvedCall:
    """Match a call's arguments to its table entry and fold its static parameters.

    Checks the argument count (``sin takes 1 argument (x), got 2``), keywords (with "did
    you mean"), the kind of each static value (``axis=1.5`` is refused) and, for
    constructors, the element count against ``limits.MAX_ELEMENTS`` (before allocating).
    ``shadowed``: constant names (pi, e, inf) that a declaration shadows.
    """
    op = registry().get(call.func)
    if op is None:
        raise _arg_error(UnknownNameError, f"unknown function '{call.func}'", call, source)
    binding = _binding(op)
    required, n_inputs, param_names = binding.required, binding.n_inputs, binding.names
    n_max, n_min = binding.n_max, binding.n_min
    # Inputs are positional only, static parameters positional or keyword: a keyword is
    # judged by its name before the count, which it would otherwise only confuse
    # ("sin takes 1 argument (x), got 1" for sin(x=x)).
    for key, value in call.kwargs:
        if key in param_names:
            continue
        if key in op.inputs:
            raise _arg_error(ArgumentError, f"{call.func}: keyword arguments are not accepted "
                                            f"for the input '{key}'; pass it by position: "
                                            f"{call.func}({binding.text})", value, source)
        hint = did_you_mean(key, param_names)
        accepts = (f"it accepts {', '.join(param_names)}" if param_names
                   else "it takes no keywords")
        raise _arg_error(UnknownNameError, f"{call.func} has no keyword '{key}'{hint}; "
                                           f"{accepts}", value, source)
    given_keywords = {key for key, _ in call.kwargs}
    n_positional = len(call.args)
    n_given = n_positional + sum(1 for key in given_keywords if key in required)
    if n_positional > n_max or n_positional < n_inputs or n_given < n_min:
        if n_min == n_max:
            takes = f"{n_min} argument{'s' if n_min != 1 else ''}"
        else:
            takes = f"{n_min} to {n_max} arguments"
        raise _arg_error(ArgumentError, f"{call.func} takes {takes} "
                                        f"({binding.text}), "
                                        f"got {n_positional + len(call.kwargs)}", call, source)
    exprs: dict[str, Any] = dict(zip(param_names, call.args[n_inputs:]))
    for key, value in call.kwargs:  # every key is a parameter's (checked above)
        if key in exprs:
            raise _arg_error(ArgumentError, f"{call.func} got two values for '{key}'",
                             value, source)
        exprs[key] = value
    params = dict(binding.defaults)
    for name, expr in exprs.items():
        value = _static(expr, f"{name} of {call.func}", source, shadowed)
        params[name] = _coerce_param(op, name, value, expr, source)
    if op.variadic:
        arrays = call.args[0]
        if not isinstance(arrays, (ArrayLit, TupleLit)):
            raise _arg_error(ArgumentError, f"{call.func} takes a list of arrays, e.g. "
                                            f"{call.func}([a, b])", arrays, source)
        if not arrays.elements:
            raise _arg_error(ArgumentError, f"{call.func} needs at least one array", arrays,
                             source)
        inputs = arrays.elements
    else:
        inputs = call.args[:n_inputs]
    if op.kind == "constructor":
        _check_constructor(op, params, call, source)
    return ResolvedCall(op, tuple(inputs), params)


def _coerce_param(op, name: str, value, expr, source: str):
    """A static parameter in the form numpy wants: ints, a tuple of ints, a bool, a float."""
    default = _binding(op).defaults.get(name)
    what = f"{name} of {op.name}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise _arg_error(ArgumentError, f"{what} must be True or False, got {_fmt(value)}",
                             expr, source)
        return value
    if name in _INT_PARAMS:
        if isinstance(value, tuple):
            if name not in _TUPLE_PARAMS:
                raise _arg_error(ArgumentError, f"{what} must be an integer, got {_fmt(value)}",
                                 expr, source)
            if len(value) > _MAX_DIMS:
                raise _arg_error(ArgumentError, f"{what} has {len(value)} entries; at most "
                                                f"{_MAX_DIMS} dimensions are allowed", expr, source)
            if name == "axes" and value and all(isinstance(v, tuple) for v in value):
                # tensordot's pair of axis lists: ((1, 2), (0, 1))
                return tuple(tuple(_as_int(v, what, expr, source) for v in part)
                             for part in value)
            if name == "pad_width":  # ((before, after), ...) per axis
                ints = tuple(tuple(_as_int(w, what, expr, source) for w in v)
                             if isinstance(v, tuple) else _as_int(v, what, expr, source)
                             for v in value)
            else:
                ints = tuple(_as_int(v, what, expr, source) for v in value)
        else:
            ints = _as_int(value, what, expr, source)
        if name == "axes" and not isinstance(ints, tuple):
            ints = (ints,)
        entries = ints if isinstance(ints, tuple) else (ints,)
        entries = tuple(w for v in entries for w in (v if isinstance(v, tuple) else (v,)))
        negative_ok = name in ("axis", "axes", "k") or (name == "shape" and op.kind != "constructor")
        lowest = -1 if name == "shape" and negative_ok else None
        if name in _NON_NEGATIVE or (name == "shape" and not negative_ok):
            lowest = 0
        if lowest is not None and any(v < lowest for v in entries):
            kind = "non-negative integers" if lowest == 0 else "integers >= -1"
            raise _arg_error(ArgumentError, f"{what} must be {kind}, got {_fmt(value)}",
                             expr, source)
        return ints
    if isinstance(value, (tuple, bool)):
        raise _arg_error(ArgumentError, f"{what} must be a number, got {_fmt(value)}", expr,
                         source)
    return value


def _check_constructor(op, params: dict, call: Call, source: str) -> None:
    """Refuse a constructor whose array would be over the size limit, before making it."""
    name = op.name
    if name in ("zeros", "ones", "full"):
        shape = params.get("shape")
        dims = shape if isinstance(shape, tuple) else (shape,)
        count = 0 if 0 in dims else 1
        for n in dims:
            count *= n
            if count > limits.MAX_ELEMENTS:
                break
    elif name == "eye":
        n, m = params.get("N"), params.get("M")
        count = n * (n if m is None else m)
    elif name == "linspace":
        count = params.get("num", 50)
    elif name == "arange":
        start, stop, step = params.get("start"), params.get("stop"), params.get("step", 1.0)
        if stop is None:
            start, stop = 0.0, start
        if step == 0:
            raise _arg_error(ArgumentError, "arange step cannot be zero", call, source)
        with np.errstate(all="ignore"):
            span = (stop - start) / step
        if math.isnan(span):
            raise _arg_error(ArgumentError, "arange bounds must be finite numbers", call, source)
        count = max(0.0, math.ceil(span)) if math.isfinite(span) else math.inf
    else:
        return
    try:
        limits.check_elements(count, f"{name}(...)")
    except LimitError as err:
        raise err.at(source, call.pos.line, call.pos.col, call.pos.width) from None
