"""The runnable examples in the compiler's docstrings stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["dialect", "analysis", "pattern", "rewriter", "hierarchy_statements", "markers"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"sql_rewrites.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_explain_docstring_example_runs_without_spark() -> None:
    module = importlib.import_module("sparkseq.sql_api")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
