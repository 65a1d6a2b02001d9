"""UNCERTAIN BETWEEN lo AND hi [STEP s] without Spark: parsing, printing, analysis, errors, SQL shape."""

from __future__ import annotations

import pytest

from sql_rewrites import rewrite
from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.errors import ImpreciseTimeError, SqlParseError, UnknownColumnError
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement
from udafs.plan import CmpOp, CountType, IteratorPredicate, Plan, ValueType

LOG = {"log": {"k": "int", "ts": "timestamp", "lo": "timestamp", "hi": "timestamp", "n": "bigint", "nlo": "bigint",
               "nhi": "bigint", "ntz": "timestamp_ntz", "e": "string", "v": "double", "q": "int",
               "d": "decimal(30,2)"}}


def text(clauses: str, uncertain: str = "UNCERTAIN BETWEEN lo AND hi", order: str = "ts",
         measures: str = "COUNT(*) AS c, SUM(B.v) AS s, COUNT(B) AS nb") -> str:
    return (f"SELECT * FROM log MATCH_AGGREGATE (PARTITION BY k ORDER BY {order} {uncertain} "
            f"PATTERN SEQ(A, B+, !N, C) TYPE BY e MEASURES {measures} {clauses}) AS m")


def analyse(sql: str):
    [query] = analyze_sql(sql, LOG)
    return query


@pytest.mark.parametrize("clause", ["UNCERTAIN BETWEEN lo AND hi",
                                    "UNCERTAIN BETWEEN log.lo AND hi STEP INTERVAL 1 SECOND"])
def test_the_clause_prints_back_after_order_by(clause: str) -> None:
    sql = (f"SELECT * FROM log MATCH_AGGREGATE (PATTERN SEQ(A) {clause} ORDER BY ts TYPE BY e "
           "WITHIN INTERVAL 1 MINUTE) AS m")
    printed = parse_statement(sql).sql(dialect=SparkSeq)
    assert "ORDER BY ts UNCERTAIN BETWEEN" in printed
    assert parse_statement(printed).sql(dialect=SparkSeq) == printed


def test_plan_and_outputs() -> None:
    q = analyse(text("WITHIN INTERVAL 10 MINUTES", "UNCERTAIN BETWEEN lo AND hi STEP INTERVAL 15 SECONDS"))
    assert q.plan.uncertain == 15_000_000 and q.plan.count_type is CountType.DOUBLE
    assert [(o.name, o.type_text) for o in q.outputs] == [("k", "INT"), ("c", "DOUBLE"), ("s", "DOUBLE"),
                                                         ("nb", "DOUBLE")]
    assert Plan.from_json(q.plan.to_json()) == q.plan
    assert analyse(text("WITHIN 600", order="n", uncertain="UNCERTAIN BETWEEN nlo AND nhi")).plan.uncertain == 1
    assert analyse(text("COUNT TYPE DOUBLE WITHIN INTERVAL 1 HOUR")).plan.uncertain == 1


def test_decimal_sums_and_double_constants_combine_with_uncertain_times() -> None:
    """A SUM over a DECIMAL column is an expected value, DOUBLE: the column travels as FLOAT
    (as with COUNT TYPE DOUBLE); a DOUBLE iterator predicate keeps a constant on each side."""
    q = analyse(text("WITHIN INTERVAL 1 HOUR WHERE B[i].v + 0.5 >= B[i-1].v - 0.25",
                     measures="SUM(B.d) AS s, COUNT(B) AS nb"))
    assert q.plan.columns == (ValueType.FLOAT, ValueType.FLOAT)
    assert [(o.name, o.type_text) for o in q.outputs][1:] == [("s", "DOUBLE"), ("nb", "DOUBLE")]
    assert q.plan.iterator_predicates == (IteratorPredicate(1, 1, CmpOp.GE, -0.25, 0.5),)
    assert Plan.from_json(q.plan.to_json()) == q.plan


def test_generated_sql_passes_the_bounds_after_the_mask() -> None:
    sql = rewrite(text("WITHIN INTERVAL 1 HOUR SLIDE INTERVAL 10 MINUTES"), LOG, lambda plan: "sparkseq_engine")
    assert ("sparkseq_engine(`__sparkseq_ts`, `__sparkseq_mask`, `__sparkseq_lo`, `__sparkseq_hi`, `__sparkseq_v0`)"
            in sql)
    assert "unix_micros(`lo`) AS `__sparkseq_lo`" in sql and "unix_micros(`hi`) AS `__sparkseq_hi`" in sql
    plain = rewrite(text("WITHIN INTERVAL 1 HOUR", uncertain=""), LOG, lambda plan: "sparkseq_engine")
    assert "__sparkseq_lo" not in plain


@pytest.mark.parametrize("clauses, uncertain, measures, message", [
    ("", "UNCERTAIN BETWEEN lo AND n", None,
     "UNCERTAIN BETWEEN: column n is BIGINT, but the possible times must have the ORDER BY column's type (TIMESTAMP)"),
    ("", "UNCERTAIN BETWEEN ntz AND hi", None, "column ntz is TIMESTAMP_NTZ"),
    ("", "UNCERTAIN BETWEEN lo AND hi", "MAX(B.v) AS x", "measure MAX(B.v) AS x: with UNCERTAIN every measure is an "
     "expected value"),
    ("", "UNCERTAIN BETWEEN lo AND hi", "AVG(B.v) AS x", "(AVG of a random set is no sum over matches)"),
    ("COUNT TYPE BIGINT", "UNCERTAIN BETWEEN lo AND hi", None, "COUNT TYPE BIGINT: with UNCERTAIN the counts are"),
    ("STRATEGY STRICT CONTIGUITY", "UNCERTAIN BETWEEN lo AND hi", None, "evaluated under SKIP TILL ANY MATCH only"),
    ("WHERE A.v < C.v", "UNCERTAIN BETWEEN lo AND hi", None, "cross-event predicates (comparisons of two symbols)"),
    ("WHERE B[i].v >= MIN(B[1..i-1].v)", "UNCERTAIN BETWEEN lo AND hi", None, "a comparison with B[1]"),
    ("", "UNCERTAIN BETWEEN lo AND hi STEP 5", None, "STEP takes an interval"),
    ("", "UNCERTAIN BETWEEN lo AND hi STEP INTERVAL 0 SECONDS", None, "STEP must be positive"),
])
def test_errors_point_at_the_clause(clauses: str, uncertain: str, measures: str | None, message: str) -> None:
    sql = text(clauses or "WITHIN INTERVAL 1 HOUR", uncertain, measures=measures or "COUNT(*) AS c")
    if clauses:
        sql = sql.replace(f" {clauses})", f" WITHIN INTERVAL 1 HOUR {clauses})")
    with pytest.raises((ImpreciseTimeError, ValueError)) as info:
        analyse(sql)
    assert message in str(info.value)
    assert "at line 1, column" in str(info.value) or "COUNT TYPE" in message


def test_unknown_column_and_malformed_clause() -> None:
    with pytest.raises(UnknownColumnError, match="lox"):
        analyse(text("", "UNCERTAIN BETWEEN lox AND hi"))
    with pytest.raises(SqlParseError, match="Expecting BETWEEN after UNCERTAIN"):
        analyse(text("", "UNCERTAIN lo AND hi"))
    with pytest.raises(SqlParseError, match="Expecting UNCERTAIN BETWEEN <column> AND <column>"):
        analyse(text("", "UNCERTAIN BETWEEN lo, hi"))
    with pytest.raises(ImpreciseTimeError, match="not supported with CUBE"):
        analyze_sql("SELECT * FROM log MATCH_AGGREGATE (ORDER BY ts UNCERTAIN BETWEEN lo AND hi PATTERN SEQ(A, B) "
                    "CUBE (PATTERN ROLLUP 1) TYPE BY e) AS m", LOG)
