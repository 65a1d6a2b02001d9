"""sparkseq's compiler: MATCH_AGGREGATE in Spark SQL -> plain Spark SQL.

Phases, one module each: :mod:`~sql_rewrites.dialect` (the ``SparkSeq`` sqlglot
dialect: :mod:`~sql_rewrites.parser`, :mod:`~sql_rewrites.generator`,
:mod:`~sql_rewrites.expressions`), :mod:`~sql_rewrites.analysis` (checks and types,
into :mod:`~sql_rewrites.logical`), :mod:`~sql_rewrites.generate` (plain Spark SQL),
:mod:`~sql_rewrites.rewriter` (the entry points). :mod:`~sql_rewrites.pattern` parses
stand-alone pattern strings such as ``'SEQ(A, !B, C+)'``.

Imports sqlglot and ``udafs.plan`` / ``udafs.errors`` only; never Spark.
"""

from __future__ import annotations

from sql_rewrites.analysis import Analyzer, analyze, analyze_sql
from sql_rewrites.dialect import SparkSeq, parse_statement
from sql_rewrites.engine_contract import engine_result_type
from sql_rewrites.errors import SqlParseError, SqlRewriteError
from sql_rewrites.logical import MatchAggregateQuery
from sql_rewrites.pattern import TypePattern, compile_type_pattern, parse_pattern
from sql_rewrites.rewriter import explain, rewrite, rewrite_statements

__all__ = [
    "Analyzer",
    "MatchAggregateQuery",
    "SparkSeq",
    "SqlParseError",
    "SqlRewriteError",
    "TypePattern",
    "analyze",
    "analyze_sql",
    "compile_type_pattern",
    "engine_result_type",
    "explain",
    "parse_pattern",
    "parse_statement",
    "rewrite",
    "rewrite_statements",
]
