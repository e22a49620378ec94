"""The language's operators and function calls: `%` and `//`, the new table functions by
name with their keyword parameters, the refusals that name the function to use, and the
parser's argument binding read from data each table entry computes once."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from gradcli.lang import parser
from gradcli.lang.parser import parse_program


def test_the_parser_inspects_each_entry_once_not_each_call(monkeypatch):
    """Binding data is computed once per entry: a program calling the same functions
    thousands of times inspects each signature at most once."""
    calls = []
    real = inspect.signature

    def counting(obj, *args, **kwargs):
        calls.append(obj)
        return real(obj, *args, **kwargs)
    monkeypatch.setattr(inspect, "signature", counting)
    monkeypatch.setattr(parser, "_BINDINGS", {})
    text = "\n".join(["y = sum(x, axis=0)", "z = mean(x, keepdims=True)",
                      "w = reshape(x, (2, 3))"] * 1000)
    parse_program(text)
    assert len(calls) <= 3
    assert len(calls) == len(set(map(id, calls)))
