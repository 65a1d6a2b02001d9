"""The BI functions (``seq_count`` … ``seq_max_windows``) on local Spark against the oracle.

Symbols are type values: symbol ``S<k>`` matches rows whose ``type`` is ``'S<k>'``, so
every row is an instance of at most one symbol (the random masks of the kernel tests
keep their lowest bit). One query computes every function for up to 25 groups.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import PythonException
from sqlglot import parse_one

from sql_rewrites.analysis.seq_functions import check_calls, check_statement_calls
from sql_rewrites.errors import SqlRewriteError
from tests import oracle
from tests.doubles import same_double
from tests.test_kernel_oracle import COLUMNS, events, plans
from udafs.plan import Measure, MeasureKind, Plan

SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
MEASURES = ((MeasureKind.SUM, 0, "i"), (MeasureKind.AVG, 1, "f"), (MeasureKind.MIN, 0, "i"), (MeasureKind.MAX, 1, "f"))
TIME = {"bigint": ("ts", "{}"), "timestamp": ("timestamp_micros(ts)", "INTERVAL {} MICROSECONDS"),
        "timestamp_ntz": ("CAST(timestamp_micros(ts) AS TIMESTAMP_NTZ)", "INTERVAL {} MICROSECONDS")}


def single_symbol(ev: oracle.Events) -> oracle.Events:
    """Each row an instance of its lowest symbol only (a type column holds one value)."""
    return oracle.Events(ev.ts, [m & -m for m in ev.mask], ev.values)


@st.composite
def cases(draw: st.DrawFn, window: str) -> tuple[Plan, list[oracle.Events], int, str]:
    plan = draw(plans(window=window, sql=True))
    symbol = draw(st.sampled_from([e.symbol for e in plan.elements]))
    measures = (Measure(MeasureKind.COUNT_STAR, name="n"),
                *(Measure(kind, symbol, column, kind.value) for kind, column, _ in MEASURES))
    plan = dataclasses.replace(plan, measures=measures, columns=COLUMNS)
    groups = [single_symbol(ev) for ev in draw(st.lists(events(plan), min_size=1, max_size=25))]
    time = "timestamp" if window == "slide" else draw(st.sampled_from(sorted(TIME)))
    return plan, [ev for ev in groups if oracle.cheap(plan, ev)], symbol, time


def cases_view(spark, plan: Plan, groups: list[oracle.Events], time: str) -> None:
    rows = []
    for g, ev in enumerate(groups):
        types = [plan.symbols[m.bit_length() - 1] if m else None for m in ev.mask]
        rows += [(g, t, ty, i, f) for t, ty, i, f in zip(ev.ts, types, *ev.values)]
        rows.append((g, None, plan.symbols[0], 1, 1.0))  # NULL time: takes part in nothing
    spark.createDataFrame(rows, "g int, ts bigint, type string, i bigint, f double").createOrReplaceTempView("raw")
    spark.sql(f"CREATE OR REPLACE TEMP VIEW events AS SELECT g, {TIME[time][0]} AS ts, type, i, f FROM raw")


def close(have: object, want: object) -> bool:
    if want is None or have is None:
        return have is None and want is None
    return same_double(float(have), float(want))


def check_groups(spark, plan: Plan, groups: list[oracle.Events], symbol: int, time: str) -> None:
    cases_view(spark, plan, groups, time)
    pattern, name = plan.describe(), plan.symbols[symbol]
    within = "NULL" if plan.within is None else TIME[time][1].format(plan.within)
    count_args = f"ts, type, '{pattern}'" + ("" if plan.within is None else f", {within}")
    calls = [f"seq_count({count_args}) AS n"] + [
        f"seq_{kind.value}(ts, type, '{pattern}', {within}, '{name}', {col}) AS {kind.value}"
        for kind, _, col in MEASURES]
    rows = spark.sql(f"SELECT g, {', '.join(calls)} FROM events GROUP BY g").collect()
    assert sorted(r.g for r in rows) == list(range(len(groups)))
    for r in rows:
        [(_, _, want)] = oracle.evaluate(groups[r.g], plan)
        assert r.n == want[0], (r.g, r.n, want)
        for (kind, _, _), w in zip(MEASURES, want[1:]):
            assert close(r[kind.value], w), (r.g, kind, r[kind.value], w)


def check_windows(spark, plan: Plan, groups: list[oracle.Events], symbol: int) -> None:
    cases_view(spark, plan, groups, "timestamp")
    pattern, name = plan.describe(), plan.symbols[symbol]
    lengths = f"INTERVAL {plan.within} MICROSECONDS, INTERVAL {plan.slide} MICROSECONDS"
    flat = "transform({0}, x -> struct(unix_micros(x.window_start) AS ws, unix_micros(x.window_end) AS we, " \
           "x.`{1}` AS v)) AS {0}"
    calls = [f"seq_count_windows(ts, type, '{pattern}', {lengths}) AS count"] + [
        f"seq_{kind.value}_windows(ts, type, '{pattern}', {lengths}, '{name}', {col}) AS {kind.value}"
        for kind, _, col in MEASURES]
    measures = ["count", *(kind.value for kind, _, _ in MEASURES)]
    rows = spark.sql(f"SELECT g, {', '.join(flat.format(m, m) for m in measures)} FROM "
                     f"(SELECT g, {', '.join(calls)} FROM events GROUP BY g)").collect()
    for r in rows:
        want = oracle.evaluate(groups[r.g], plan)
        for j, measure in enumerate(measures):
            have = [(x.ws, x.we, x.v) for x in r[measure]]
            assert [h[:2] for h in have] == [w[:2] for w in want], (r.g, measure)
            assert all(close(h[2], w[2][j]) for h, w in zip(have, want)), (r.g, measure, have, want)


@pytest.mark.parametrize("window", ["none", "within"])
def test_functions_match_oracle(spark, window: str) -> None:
    @SETTINGS
    @given(cases(window))
    def check(case: tuple[Plan, list[oracle.Events], int, str]) -> None:
        check_groups(spark, *case)

    check()


def test_window_functions_match_oracle(spark) -> None:
    @SETTINGS
    @given(cases("slide"))
    def check(case: tuple[Plan, list[oracle.Events], int, str]) -> None:
        plan, groups, symbol, _ = case
        check_windows(spark, plan, groups, symbol)

    check()


@pytest.fixture(scope="module")
def clicks(spark) -> str:
    spark.sql("""CREATE OR REPLACE TEMP VIEW bi_clicks AS SELECT * FROM VALUES
        (1, TIMESTAMP'2024-05-01 10:00:00', 'View Kindle', 10.25BD),
        (1, TIMESTAMP'2024-05-01 10:03:00', 'buy', 99.99BD),
        (1, TIMESTAMP'2024-05-01 10:04:00', 'buy', CAST(NULL AS DECIMAL(4, 2))),
        (1, TIMESTAMP'2024-05-01 10:30:00', 'buy', 5.00BD),
        (2, TIMESTAMP'2024-05-01 11:00:00', 'buy', 1.00BD)
        AS t(id, ts, action, price)""")
    return "bi_clicks"


def test_quoted_values_string_windows_and_decimals(spark, clicks: str) -> None:
    rows = spark.sql("""SELECT id,
        seq_count(ts, action, 'SEQ(''View Kindle'', buy)', '10 minutes') AS n,
        seq_count(ts, action, 'SEQ(''View Kindle'', buy)') AS n_all,
        seq_sum(ts, action, 'SEQ(''View Kindle'', buy)', INTERVAL 10 MINUTES, 'buy', price) AS s,
        seq_max(ts, action, 'SEQ(''View Kindle'', buy)', NULL, 'View Kindle', price) AS hi
        FROM bi_clicks GROUP BY id ORDER BY id""").collect()
    assert [tuple(r) for r in rows] == [(1, 2, 3, 99.99, 10.25), (2, 0, 0, None, None)]


@pytest.mark.parametrize(("call", "message"), [
    # placed in the statement: "Kindle", where the pattern needs ) after the symbol View
    ("seq_count(ts, action, 'SEQ(View Kindle, buy)')", r"SqlParseError: Expecting \) at line 1, column 40"),
    ("seq_count(ts, action, 'SEQ(buy, !x)')", r"EdgeNegationWithoutWindowError: .*trailing negation"),
])
def test_literal_mistakes_are_errors_when_spark_sql_parses(spark, clicks: str, call: str, message: str) -> None:
    """spark.sql hands seq_* calls to sparkseq's rewriter (the parser extension), which
    checks literal patterns before any job."""
    from pyspark.errors.exceptions.captured import SparkRuntimeException

    with pytest.raises(SparkRuntimeException, match=message):
        spark.sql(f"SELECT {call} FROM bi_clicks GROUP BY id")


@pytest.mark.parametrize(("call", "message"), [
    ("seq_count(ts, action, action)", r"pattern must be the same for every row of a group"),
    ("seq_count(ts, action, 'SEQ(buy)', 600)", r"ts is a timestamp, so within takes an interval"),
    ("seq_count(id, action, 'SEQ(buy)', INTERVAL 1 MINUTE)", r"ts is numeric, so within takes a plain number"),
    ("seq_count(CAST(id AS DOUBLE), action, 'SEQ(buy)')", r"ts is DOUBLE; the event time must be TIMESTAMP"),
    ("seq_sum(ts, action, 'SEQ(buy)', NULL, 'buy', action)", r"the value column is STRING, not numeric"),
    ("seq_count_windows(id, action, 'SEQ(buy)', 5, 1)", r"needs a TIMESTAMP event time"),
    ("seq_count_windows(ts, action, 'SEQ(buy)', '1 minute', '61 seconds')",
     r"SLIDE 61 seconds is longer than WITHIN 1 minute; the slide must be at most the window length"),
])
def test_errors_raised_by_the_functions(spark, clicks: str, call: str, message: str) -> None:
    with pytest.raises(PythonException, match=message):
        spark.sql(f"SELECT {call} FROM bi_clicks GROUP BY id").collect()


def test_count_overflow(spark) -> None:
    with pytest.raises(PythonException, match=r"seq_count: .* does not fit BIGINT; use MATCH_AGGREGATE with COUNT"):
        spark.sql("SELECT seq_count(id, 'A', 'SEQ(A+)') FROM range(70)").collect()


@pytest.mark.parametrize(("call", "error"), [
    ("seq_count(ts, t, 'SEQ(a,, b)')", "SqlParseError"),
    ("seq_count(ts, t, 'SEQ(!a, b)', NULL)", "EdgeNegationWithoutWindowError"),
    ("seq_sum(ts, t, 'SEQ(a, b)', NULL, 'c', v)", "UnknownSymbolError"),
    ("seq_min(ts, t, 'SEQ(a, !c, b)', NULL, 'c', v)", "NegatedMeasureError"),
    ("seq_max(ts, t, 'SEQ(a)', NULL, 'a')", "FunctionArgumentError"),
    ("seq_count_windows(ts, t, 'SEQ(a)', INTERVAL 1 MINUTE)", "FunctionArgumentError"),
    ("seq_count_windows(ts, t, 'SEQ(a)', INTERVAL 1 MINUTE, INTERVAL 2 MINUTES)", "SlideLongerThanWithinError"),
    ("seq_count(ts, t, 'SEQ(a, b) STRATEGY SKIP TILL SOME MATCH')", "SqlParseError"),
    ("seq_count(ts, t, 'SEQ(a, b) STRATEGY STRICT CONTIGUITY')", "FunctionArgumentError"),
    ("seq_count(ts, t, 'SEQ(a, b) HIERARCHY h STRATEGY SKIP TILL NEXT MATCH HIERARCHY g')", "SqlParseError"),
])
def test_literal_arguments_are_checked_without_spark(call: str, error: str) -> None:
    with pytest.raises(Exception) as caught:
        check_calls(parse_one(f"SELECT {call} FROM t", read="spark"))
    assert type(caught.value).__name__ == error
    check_calls(parse_one("SELECT seq_sum(ts, t, 'SEQ(a, !c, B)', INTERVAL 1 MINUTE, 'b', v) FROM t", read="spark"))


@pytest.mark.parametrize(("call", "message"), [
    ("seq_count_windows(ts, t, 'SEQ(a)', INTERVAL 1 MINUTE, INTERVAL 0 SECONDS)", "slide must be positive"),
    ("seq_count_windows(ts, t, 'SEQ(a)', INTERVAL 1 MINUTE, INTERVAL 1 MONTH)", "slide interval unit MONTH"),
    ("seq_count_windows(ts, t, 'SEQ(a)', INTERVAL 0 SECONDS, INTERVAL 1 MINUTE)", "within must be positive"),
    ("seq_count(ts, t, 'SEQ(a)', INTERVAL -1 MINUTE)", "within must be positive"),
])
def test_a_bad_window_argument_is_named_and_placed_at_its_call(call: str, message: str) -> None:
    """The argument the message names is the one written wrong; sqlglot keeps no position
    for an interval, so the error points at the call (line 2, column 3), not its pattern."""
    with pytest.raises(SqlRewriteError) as caught:
        check_statement_calls(f"SELECT k,\n  {call} FROM t", written=True)
    assert caught.value.message.startswith(message), caught.value.message
    assert caught.value.position is not None
    assert (caught.value.position.line, caught.value.position.column) == (2, 3)
