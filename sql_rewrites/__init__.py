"""sparkseq's compiler: MATCH_AGGREGATE in Spark SQL -> plain Spark SQL.

Phases, one module each: :mod:`~sql_rewrites.syntax.dialect` (the ``SparkSeq`` sqlglot
dialect: :mod:`~sql_rewrites.syntax.parser`, :mod:`~sql_rewrites.syntax.generator`,
:mod:`~sql_rewrites.syntax.expressions`), :mod:`~sql_rewrites.analysis.analyzer` (checks and types,
into :mod:`~sql_rewrites.logical.query`), :mod:`~sql_rewrites.generation.generate` (plain Spark SQL),
:mod:`~sql_rewrites.rewriter` (the entry points). :mod:`~sql_rewrites.clauses.pattern` parses
stand-alone pattern strings such as ``'SEQ(A, !B, C+)'``.

Imports sqlglot and ``udafs.plan`` / ``udafs.errors`` only; never Spark.
"""

from __future__ import annotations

from sql_rewrites.analysis.analyzer import Analyzer, analyze, analyze_sql
from sql_rewrites.clauses.pattern import TypePattern, compile_type_pattern, parse_pattern
from sql_rewrites.engine_contract import engine_result_type
from sql_rewrites.errors import SqlParseError, SqlRewriteError
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.rewriter import explain, rewrite, rewrite_statements
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement

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
