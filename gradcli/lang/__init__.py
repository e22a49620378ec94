"""The expression language: program text -> tree -> engine values (SPEC §2).

The command line calls, in order::

    program = parse_program(text)                       # ParseError, LimitError, ...
    decls = Declarations.from_options(var=[...], frozen=[...], arg=[...])
    model = build(program, decls, dtype="float64", target=None)
    value = model.function(*model.arg_values)           # or wrapped by an API mode

Every user error is a ``gradcli.errors.GradcliError`` with a caret position.
"""
from .evaluate import DTYPES, Model, build, evaluate_constant
from .parser import (
                     CONSTANT_NAMES,
                     ResolvedCall,
                     children,
                     function_names,
                     iter_postorder,
                     parse_expression,
                     parse_program,
                     resolve_call,
                     static_index,
                     static_value,
)
from .values import Declaration, Declarations, check_name, load_file, load_value, parse_declaration

__all__ = [
                     "CONSTANT_NAMES",
                     "DTYPES",
                     "Declaration",
                     "Declarations",
                     "Model",
                     "ResolvedCall",
                     "build",
                     "check_name",
                     "children",
                     "evaluate_constant",
                     "function_names",
                     "iter_postorder",
                     "load_file",
                     "load_value",
                     "parse_declaration",
                     "parse_expression",
                     "parse_program",
                     "resolve_call",
                     "static_index",
                     "static_value",
]
