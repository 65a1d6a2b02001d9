"""The JVM path on local Spark: the same rows as the Python (kernel) path and the oracle.

Random plans of the JVM shapes (:func:`sql_rewrites.generation.jvm_path.jvm_shape`: 1-6 positive
elements with repeated symbols, negations between them, with or without WITHIN (some
wider than any span), SLIDE windows, leading and trailing negations, COUNT(*),
COUNT(X) and SUM/AVG/MIN/MAX of one column, every COUNT TYPE) over random events with
ties, NULLs, NaN and infinities run through :func:`sparkseq.sql` forced ``jvm`` and
forced ``grouped``, both compared with :func:`tests.support.oracle.evaluate` partition by
partition; then the edges (strict WITHIN, ties, a WITHIN wider than any span, negation
at a tie or at a block boundary), the overflow message, COUNT TYPE DOUBLE past BIGINT,
and the choice and EXPLAIN. A session whose JVM lacks the jar (one warning, the Python
path, the same rows): tests/spark/test_spark_jvm_without_jar.py.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from math import comb
from pathlib import Path

import pyspark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import PySparkException
from sqlglot import exp

import sparkseq
from sparkseq.running.execution_paths import CHUNK_ROWS_CONF, JVM_ROWS_CONF, PATH_CONF, SPLIT_ROWS_CONF
from sparkseq.spark import jars
from sparkseq.spark.jvm_path import jvm_path_missing
from sparkseq.statements.sql_api import sql
from sql_rewrites.generation.jvm_path import JVM_FUNCTION, jvm_shape, plan_literal
from sql_rewrites.planning.planner import JVM_COUNT_ROWS
from sql_rewrites.syntax.dialect import SparkSeq
from tests.conftest import run_property
from tests.kernels.test_kernel_oracle import events, plans
from tests.support import oracle
from tests.support.doubles import same_double
from tests.support.spark_cases import assert_same, events_frame, expected, got
from tests.support.sql_cases import jobs_started, select_sql
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))


def test_the_shipped_jar_is_built_from_the_shipped_source(tmp_path: Path) -> None:
    jar = jars.AGGREGATES_JAR
    assert jars.check_jar(jar, jars.AGGREGATES_SOURCES) == jar, \
        "sparkseq/jvm/sparkseq-aggregates.jar is stale: run python -m sparkseq.spark.jars --build"
    assert jars.build_info(jars.AGGREGATES_JAR)["pyspark"] == pyspark.__version__
    edited = tmp_path / jars.AGGREGATES_SOURCE.name
    edited.write_text(jars.AGGREGATES_SOURCE.read_text() + "// edited\n")
    with pytest.raises(jars.JvmParserUnavailable, match="built from another version of SparkSeqAggregates"):
        jars.check_jar(jars.AGGREGATES_JAR, edited)


@pytest.fixture()
def path_conf(spark) -> Iterator[None]:
    yield
    spark.conf.unset(PATH_CONF)


@st.composite
def jvm_plans(draw: st.DrawFn) -> Plan:
    """Random plans cut down to the JVM shapes."""
    window = draw(st.sampled_from(["none", "within", "slide"]))
    plan = draw(plans(max_len=6, max_kleene=0, window=window, middle_negation=draw(st.booleans()),
                      edges=window != "none" and draw(st.booleans()), sql=True))
    column = draw(st.integers(0, 1))  # the one value column (tests.support.spark_cases: i BIGINT, f DOUBLE)
    kept = [m for m in plan.measures if m.column is None or m.column == column]
    if plan.slide is None and plan.within is not None and draw(st.integers(0, 4)) == 0:
        plan = dataclasses.replace(plan, within=2**40)  # wider than any span (times below 0 in another block)
    count_type = draw(st.sampled_from(list(CountType)))
    plan = dataclasses.replace(plan, measures=tuple(kept), count_type=count_type)
    read = {m.column for m in plan.measures if m.column is not None}
    compiled = dataclasses.replace(plan, columns=tuple(plan.columns[c] for c in read),
                                   measures=tuple(dataclasses.replace(m, column=None if m.column is None else 0)
                                                  for m in plan.measures))
    assert jvm_shape(compiled) is None  # what the SQL compiles to: one value column
    return plan


@st.composite
def cases(draw: st.DrawFn) -> tuple[Plan, list[oracle.Events]]:
    plan = draw(jvm_plans())
    return plan, draw(st.lists(events(plan), min_size=1, max_size=10))


def run(spark, plan: Plan, groups: list[oracle.Events], path: str, view: str = "jvm_cases") -> dict:
    events_frame(spark, groups).createOrReplaceTempView(view)
    spark.conf.set(PATH_CONF, path)
    return got(plan, sql(spark, select_sql(plan, view)).collect())


def test_random_jvm_plans_match_the_python_path_and_the_oracle(spark, path_conf: None) -> None:
    assert jvm_path_missing(spark) is None  # else sparkseq.path=jvm would fall back to the Python path
    @SETTINGS
    @given(cases())
    def check(case: tuple[Plan, list[oracle.Events]]) -> None:
        plan, groups = case
        want = expected(plan, groups)
        assert_same(plan, run(spark, plan, groups, "jvm"), want)
        assert_same(plan, run(spark, plan, groups, "grouped"), want)

    run_property(check)


def abc(within: int | None = 10, negation: int = 0) -> Plan:
    """SEQ(A, B, [!N,] C) with COUNT(*) AS n; A, B, C, N are mask bits 1, 2, 4, 8."""
    return Plan(symbols=("A", "B", "C", "N"), elements=(Element(0), Element(1), Element(2)),
                negations=(0, 0, negation, 0), within=within, measures=(Measure(MeasureKind.COUNT_STAR, name="n"),))


def nulls(n: int) -> tuple[list[None], list[None]]:
    return [None] * n, [None] * n


#: What the parser extension takes for the operator in a statement (``SparkSeqExtension.OPERATOR``).
OPERATOR = re.compile(r"(?i)\bMATCH_AGGREGATE\s*\(")


@pytest.mark.parametrize("count_type", [CountType.BIGINT, CountType.DECIMAL])
def test_the_plan_literal_never_reads_as_the_operator(count_type: CountType) -> None:
    """The overflow words the plan literal carries name MATCH_AGGREGATE; as SQL they must not
    read as the operator, else the parser extension hands the generated statement to the
    rewriter (the DEFINE conditions' origins dropped: errors quote generated SQL) or, with
    no rewriter installed, refuses it."""
    literal = plan_literal(dataclasses.replace(abc(None), count_type=count_type))
    words = "".join(json.loads(literal)["measures"][0]["overflow"])
    assert OPERATOR.search(words) or count_type is CountType.DECIMAL, words
    assert "(" not in literal and not OPERATOR.search(exp.Literal.string(literal).sql(dialect=SparkSeq))


@pytest.mark.parametrize("gap", [9, 10, 11])
def test_within_boundary_is_strict(spark, path_conf: None, gap: int) -> None:
    """a at 0, b at 1, c at gap: a match only when gap < 10 (WITHIN 10)."""
    ev = oracle.Events([0, 1, gap], [1, 2, 4], nulls(3))
    assert run(spark, abc(), [ev], "jvm") == {(0, None): [1 if gap < 10 else 0]} == expected(abc(), [ev])


def test_ties_never_follow_each_other(spark, path_conf: None) -> None:
    """a, b and c all at time 5, then b and c at 6, c at 7: only a5 b6 c7 is a match."""
    ev = oracle.Events([5, 5, 5, 6, 6, 7], [1, 2, 4, 2, 4, 4], nulls(6))
    for within in (None, 10):
        assert run(spark, abc(within), [ev], "jvm") == expected(abc(within), [ev]) == {(0, None): [1]}


def test_times_spread_wider_than_the_packed_sort_orders_by_rank(spark, path_conf: None) -> None:
    """Times from -2**62 to 2**62 (a span no offset from the earliest packs beside a row
    index): the aggregate sorts the rows by the rank of their time, ties kept together, in
    any arrival order. SEQ(A, B, C) without a window and WITHIN 2**62 + 1, against the oracle."""
    times = [2**62, -2**62, 0, 0, 2**62, -2**62, 5, -7, 2**61, 2**61, -1]
    masks = [4, 1, 2, 4, 2, 1, 2, 1, 4, 2, 4]
    ev = oracle.Events(times, masks, nulls(len(times)))
    for within in (None, 2**62 + 1):
        want = expected(abc(within), [ev])
        assert run(spark, abc(within), [ev], "jvm") == want == run(spark, abc(within), [ev], "grouped")
        assert want[(0, None)][0] > 0


def test_a_negation_at_the_time_of_either_neighbour_cuts_nothing(spark, path_conf: None) -> None:
    """SEQ(A, B, !N, C): n at b's time and at c's time leave a1 b2 c4; n at 3 cuts b2's matches."""
    plan = abc(within=None, negation=8)
    kept = oracle.Events([1, 2, 2, 4, 4], [1, 2, 8, 8, 4], nulls(5))
    cut = oracle.Events([1, 2, 3, 4, 5, 6], [1, 2, 8, 4, 2, 4], nulls(6))
    have = run(spark, plan, [kept, cut], "jvm")
    assert have == expected(plan, [kept, cut]) == {(0, None): [1], (1, None): [1]}


def test_a_negation_across_a_block_boundary_cuts_as_it_should(spark, path_conf: None) -> None:
    """SEQ(A, B, !N, C) WITHIN 10: the JVM path counts with time blocks [0, 10), [10, 20), so a
    match with b in one block and c in the next splits the negation's gap at 10; n at 9,
    10 or 11 cuts it, n at b's or c's time or after c does not."""
    counts = (Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.COUNT, 1, name="nb"))
    plan = dataclasses.replace(abc(within=10, negation=8), measures=counts)
    a, b, c, n = 1, 2, 4, 8
    groups = [oracle.Events(ts, mask, nulls(len(ts))) for ts, mask in [
        ([5, 8, 9, 12], [a, b, n, c]), ([5, 8, 10, 12], [a, b, n, c]), ([5, 8, 11, 12], [a, b, n, c]),
        ([5, 8, 12, 12], [a, b, n, c]), ([5, 8, 8, 12], [a, b, n, c]), ([5, 8, 12, 13], [a, b, c, n]),
        ([9, 10, 11, 12], [a, b, n, c]), ([9, 10, 9, 12], [a, b, n, c]), ([3, 9, 10, 12, 14], [a, b, c, n, c])]]
    have = run(spark, plan, groups, "jvm")
    assert have == expected(plan, groups) == run(spark, plan, groups, "grouped")
    assert [have[(g, None)][0] for g in range(len(groups))] == [0, 0, 0, 1, 1, 1, 0, 1, 1]


def test_slide_windows_count_their_own_rows_and_edge_negations_inside_them(spark, path_conf: None) -> None:
    """SEQ(!N, A, B, !M) WITHIN 10 SLIDE 5: windows [5k, 5k + 10); an n before a match's a
    in the window cuts it, an m after its b too, and neither outside the window."""
    plan = Plan(symbols=("A", "B", "N", "M"), elements=(Element(0), Element(1)), negations=(4, 0, 8), within=10,
                slide=5, measures=(Measure(MeasureKind.COUNT_STAR, name="n"),))
    a, b, n, m = 1, 2, 4, 8
    groups = [oracle.Events([1, 3, 6, 7, 9, 12, 13], [a, b, n, a, b, m, b], nulls(7)),
              oracle.Events([1, 3, 7, 9, 12, 13], [a, b, a, b, m, b], nulls(6))]
    have = run(spark, plan, groups, "jvm")
    assert have == expected(plan, groups) == run(spark, plan, groups, "grouped")
    assert have == {(0, -5): [1], (0, 0): [2], (0, 5): [0], (0, 10): [0],
                    (1, -5): [1], (1, 0): [3], (1, 5): [1], (1, 10): [0]}


def test_leading_and_trailing_negations_under_within(spark, path_conf: None) -> None:
    """SEQ(!N, A, B, !M) WITHIN 10: no n in (t_b - 10, t_a), no m in (t_b, t_a + 10); a match
    violating both is subtracted once (added back after the two subtractions)."""
    plan = Plan(symbols=("A", "B", "N", "M"), elements=(Element(0), Element(1)), negations=(4, 0, 8), within=10,
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.COUNT, 1, name="nb")))
    a, b, n, m = 1, 2, 4, 8
    groups = [oracle.Events(ts, mask, nulls(len(ts))) for ts, mask in [
        ([0, 5, 8], [n, a, b]), ([-5, 5, 8], [n, a, b]), ([5, 8, 12], [a, b, m]), ([5, 8, 16], [a, b, m]),
        ([4, 5, 8, 9], [n, a, b, m]), ([1, 5, 6, 7, 8, 12, 20], [n, a, b, n, a, b, m])]]
    have = run(spark, plan, groups, "jvm")
    assert have == expected(plan, groups) == run(spark, plan, groups, "grouped")
    assert [have[(g, None)][0] for g in range(len(groups))] == [0, 1, 0, 1, 0, 1]


def test_events_without_time_or_instance_take_no_part(spark, path_conf: None) -> None:
    """NULL times, NULL and non-finite DEFINE values: both paths, the same rows."""
    spark.createDataFrame(
        [("u", 1, 1.0), ("u", None, 2.0), ("u", 2, float("nan")), ("u", 3, float("inf")), ("u", 4, None),
         ("u", 5, float("-inf")), ("v", None, 1.0), ("w", 1, None)],
        "k STRING, ts BIGINT, x DOUBLE").createOrReplaceTempView("jvm_nulls")
    text = ("SELECT k, n FROM jvm_nulls MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B) "
            "DEFINE A AS x < 2, B AS x > 2 MEASURES COUNT(*) AS n) AS m")
    rows = {}
    for path in ("jvm", "grouped"):
        spark.conf.set(PATH_CONF, path)
        rows[path] = sorted(map(tuple, sparkseq.sql(spark, text).collect()))
    assert rows["jvm"] == rows["grouped"] == [("u", 2)]  # 1.0 before NaN (above every value) and inf


BIG = ("SELECT k, n, nb FROM big MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ({pattern}) "
       "DEFINE A AS TRUE MEASURES COUNT(*) AS n, COUNT(A) AS nb{count_type}{within}) AS m")


@pytest.fixture()
def big(spark) -> str:
    """One key of 2,000 rows with distinct times and one of 4,000: SEQ of six A over 4,000
    rows has C(4000, 6) = 5.7e18 matches (a BIGINT), and COUNT(A) is six times that (not)."""
    spark.range(6000).selectExpr("CASE WHEN id < 2000 THEN 'small' ELSE 'large' END AS k",
                                 "id AS ts").createOrReplaceTempView("big")
    return "big"


def test_overflow_raises_the_python_message_naming_the_partition(spark, path_conf: None, big: str) -> None:
    six = BIG.format(pattern="A, A, A, A, A, A", count_type="", within="")
    messages = []
    for path in ("jvm", "grouped"):
        spark.conf.set(PATH_CONF, path)
        with pytest.raises(PySparkException) as info:  # COUNT(A) = 6 C(4000, 6) = 3.4e19 > 2**63
            sparkseq.sql(spark, six).collect()
        text = str(info.value)
        start = text.index("measure 'nb' (COUNT)")
        messages.append(text[start:text.index("COUNT TYPE DOUBLE", start)])
    assert messages[0] == messages[1]
    assert '{"k":"large"}' in messages[0] and "20 decimal digits" in messages[0]


@pytest.mark.parametrize("within", ["", " WITHIN 100000"])
def test_double_counts_beyond_bigint_are_the_exact_count_rounded_once(spark, path_conf: None, big: str,
                                                                      within: str) -> None:
    """COUNT TYPE DOUBLE: the JVM counts exactly and rounds once; the Python path, past int64,
    counts in floating point (the same number up to rounding)."""
    text = BIG.format(pattern="A, A, A, A, A, A", count_type=" COUNT TYPE DOUBLE", within=within)
    rows = {}
    for path in ("jvm", "grouped"):
        spark.conf.set(PATH_CONF, path)
        frame = sparkseq.sql(spark, text)
        assert frame.schema["n"].dataType.simpleString() == "double"
        rows[path] = {r["k"]: (r["n"], r["nb"]) for r in frame.collect()}
    assert rows["jvm"]["large"] == (float(comb(4000, 6)), float(6 * comb(4000, 6)))
    assert rows["jvm"]["small"] == (float(comb(2000, 6)), float(6 * comb(2000, 6)))
    for key, pair in rows["grouped"].items():
        assert all(same_double(have, want) for have, want in zip(pair, rows["jvm"][key])), (key, pair)


@pytest.mark.parametrize("within", ["", " WITHIN 100000"])
def test_decimal_counts_beyond_bigint(spark, path_conf: None, big: str, within: str) -> None:
    """Intermediates overflow long: the JVM counts again exactly, as the kernels do."""
    text = BIG.format(pattern="A, A, A, A, A, A", count_type=" COUNT TYPE DECIMAL", within=within)
    rows = {}
    for path in ("jvm", "grouped"):
        spark.conf.set(PATH_CONF, path)
        rows[path] = {r["k"]: (r["n"], r["nb"]) for r in sparkseq.sql(spark, text).collect()}
    assert rows["jvm"] == rows["grouped"]
    assert rows["jvm"]["large"] == (comb(4000, 6), 6 * comb(4000, 6))


def test_auto_picks_the_jvm_path_explains_it_and_runs_no_python(spark, path_conf: None, big: str) -> None:
    text = BIG.format(pattern="A, A, A", count_type="", within=" WITHIN 100")
    spark.conf.set(PATH_CONF, "auto")
    explained = sparkseq.explain(spark, text)
    assert "path          jvm (counted in the JVM" in explained and JVM_FUNCTION in explained
    frame = sparkseq.sql(spark, text)
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "Python" not in plan and "ObjectHashAggregate" in plan
    rows = {r["k"]: r["n"] for r in frame.collect()}
    spark.conf.set(PATH_CONF, "grouped")
    assert "grouped (forced by sparkseq.path)" in sparkseq.explain(spark, text)
    assert rows == {r["k"]: r["n"] for r in sparkseq.sql(spark, text).collect()}
    # a3 < a2 < a1 consecutive ids within 100: per last row t, C(min(t, 99), 2) pairs before it
    assert rows["small"] == sum(comb(min(t, 99), 2) for t in range(2000))


def test_forcing_the_jvm_path_on_an_uncovered_shape_names_the_reason(spark, path_conf: None, big: str) -> None:
    spark.conf.set(PATH_CONF, "jvm")
    text = BIG.format(pattern="A, A+", count_type="", within="")
    with pytest.raises(Exception, match="cannot run on the JVM path: a Kleene"):
        sparkseq.sql(spark, text)
    spark.conf.set(PATH_CONF, "auto")
    assert "path          grouped" in sparkseq.explain(spark, text)  # auto: uncovered shapes stay in Python


@pytest.mark.parametrize("jvm_rows", [3000, None])
def test_big_keys_keep_the_time_split_and_the_others_run_in_the_jvm(spark, path_conf: None, big: str,
                                                                   jvm_rows: int | None) -> None:
    """Keys of 2,000 and 4,000 rows, a time split over 1,000 rows. A statement that only
    counts keeps keys up to ``sparkseq.jvm.countRows`` on the JVM path: 3,000 — the 4,000-row
    key is counted as the statement runs and split, the other counted in the JVM; the
    default (JVM_COUNT_ROWS) — Spark's estimate of the 6,000 rows rules such a key out,
    every key in the JVM, no key counted. EXPLAIN says which and why; the rows are the kernel path's."""
    text = BIG.format(pattern="A, A, A", count_type="", within=" WITHIN 100")
    spark.conf.set(SPLIT_ROWS_CONF, "1000")
    spark.conf.set(CHUNK_ROWS_CONF, "500")
    if jvm_rows is not None:
        spark.conf.set(JVM_ROWS_CONF, str(jvm_rows))
    try:
        spark.conf.set(PATH_CONF, "auto")
        explained = sparkseq.explain(spark, text)
        frame = sparkseq.sql(spark, text)
        plan = frame._jdf.queryExecution().executedPlan().toString()
        rows = {r["k"]: r["n"] for r in frame.collect()}
        spark.conf.set(PATH_CONF, "grouped")
        assert rows == {r["k"]: r["n"] for r in sparkseq.sql(spark, text).collect()}
    finally:
        for key in (SPLIT_ROWS_CONF, CHUNK_ROWS_CONF, JVM_ROWS_CONF):
            spark.conf.unset(key)
    assert JVM_FUNCTION in explained
    if jvm_rows is not None:
        assert "per key, counted when the statement runs: time-split for keys over 3,000 rows, jvm for the " \
               "others (" in explained
        assert "the other keys counted in the JVM" in explained
        assert "Python" in plan  # the split key's chunks
    else:
        assert "path          jvm (counted in the JVM" in explained
        assert f"Spark's size estimate of the source rules out a key over {JVM_COUNT_ROWS:,} rows)" in explained
        assert "Python" not in plan


@pytest.mark.parametrize("value", ["many", "0", "-6000000", "1.5"])
def test_a_count_rows_setting_that_is_no_positive_integer_is_refused_by_name(spark, path_conf: None, big: str,
                                                                             value: str) -> None:
    """``sparkseq.jvm.countRows`` as the other row settings: a positive integer (``_`` allowed),
    else the statement and its EXPLAIN fail naming the setting and the value given — through
    plain ``spark.sql`` (the parser extension) too, before any job."""
    text = BIG.format(pattern="A, A", count_type="", within="")
    message = f"sparkseq.jvm.countRows must be a positive integer, got '{value}'"
    spark.conf.set(JVM_ROWS_CONF, value)
    try:
        for run in (lambda: sparkseq.explain(spark, text), lambda: sparkseq.sql(spark, text)):
            with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
                run()
        before = jobs_started(spark)
        with pytest.raises(Exception) as caught:  # noqa: PT011 - Spark's own class carries our message
            spark.sql(text).collect()
        assert message in str(caught.value) and "Traceback" not in str(caught.value), str(caught.value)[:2000]
        assert jobs_started(spark) == before
        spark.conf.set(JVM_ROWS_CONF, "6_000_000")
        assert "path          jvm (counted in the JVM" in sparkseq.explain(spark, text)
    finally:
        spark.conf.unset(JVM_ROWS_CONF)


DECIMALS = ("SELECT k, n, s, a, lo, hi FROM dec MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B, !N, A) "
            "DEFINE A AS type = 'A', B AS type = 'B', N AS type = 'N' "
            "MEASURES COUNT(*) AS n, SUM(A.x) AS s, AVG(A.x) AS a, MIN(A.x) AS lo, MAX(A.x) AS hi{within}) AS m")


@pytest.mark.parametrize("within", ["", " WITHIN 3", " WITHIN 6"])
@pytest.mark.parametrize("x_type", ["DECIMAL(10, 2)", "DECIMAL(20, 3)", "DECIMAL(38, 2)", "BIGINT", "DOUBLE"])
def test_value_measures_with_negation_match_the_python_path(spark, path_conf: None, x_type: str,
                                                            within: str) -> None:
    """SUM, AVG, MIN and MAX of one column (NULLs, NaN and infinities among the DOUBLEs),
    a negation between two elements, ties, with and without WITHIN: the two paths, the
    same values and types."""
    values = ["1.5", "-2.25", "NULL", "1000000.125", "3", "-0.001", "7.75", "NULL"]
    if x_type == "BIGINT":
        values = ["15", "-2", "NULL", "1000000", "3", "-1", "9223372036854775", "NULL"]
    if x_type == "DOUBLE":
        values = ["1.5", "double('NaN')", "NULL", "double('inf')", "-0.0", "0.0", "double('-inf')", "2.5"]
    types = ["A", "B", "A", "N", "A", "B", "A", "A"]
    rows = ", ".join(f"('{k}', {t}, '{ty}', CAST({v} AS {x_type}))" for k in ("u", "w")
                     for t, (ty, v) in enumerate(zip(types, values)) if k == "u" or t % 3)
    spark.sql(f"CREATE OR REPLACE TEMP VIEW dec AS SELECT * FROM VALUES {rows}, ('u', 4, 'B', NULL) "
              "AS t(k, ts, type, x)")
    out = {}
    text = DECIMALS.format(within=within)
    for path in ("jvm", "grouped"):
        spark.conf.set(PATH_CONF, path)
        frame = sparkseq.sql(spark, text)
        out[path] = (frame.schema.simpleString(), sorted(map(repr, frame.collect())))
    assert out["jvm"] == out["grouped"]
    assert any("n=0" not in row for row in out["jvm"][1])  # some key has a match
    spark.conf.set(PATH_CONF, "auto")
    assert "path          jvm" in sparkseq.explain(spark, text)


@pytest.mark.parametrize("within", ["", " WITHIN 2"])
def test_sum_overflow_names_the_measure_and_partition_as_the_python_path(spark, path_conf: None, within: str) -> None:
    spark.sql("CREATE OR REPLACE TEMP VIEW sums AS SELECT 'u' AS k, id AS ts, 4611686018427387904 AS x "
              "FROM range(3)")
    text = ("SELECT k, s FROM sums MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, A) DEFINE A AS TRUE "
            f"MEASURES SUM(A.x) AS s{within}) AS m")
    messages = []
    for path in ("jvm", "grouped"):
        spark.conf.set(PATH_CONF, path)
        with pytest.raises(PySparkException) as info:  # 2 * 3 pairs of 2**62 (WITHIN 2: 2 * 2)
            sparkseq.sql(spark, text).collect()
        text_of = str(info.value)
        start = text_of.index("measure 's' (SUM)")
        messages.append(text_of[start:text_of.index("COUNT TYPE DOUBLE", start)])
    assert messages[0] == messages[1] and '{"k":"u"}' in messages[0]
