"""``sparkseq.sql``: where MATCH_AGGREGATE may stand, output types, measures, scripts, EXPLAIN.

The data are the papers' worked examples (SEMANTICS section 8) with known answers,
each also checked against :mod:`tests.oracle`.
"""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal

import pytest
from pyspark.errors import SparkRuntimeException
from pyspark.sql import types as T

from sparkseq.spark.registration import engine_function, engine_function_name
from sparkseq.statements.sql_api import explain, rewrite, sql
from tests import oracle
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, ValueType

# Sharon, Fig. 7: a1 b2 a3 c3 b4 b5 d5 c7 d8; SEQ(A, B, C, D) has 7 matches (a3, c3 share time 3).
FIG7 = [(1, "A"), (2, "B"), (3, "A"), (3, "C"), (4, "B"), (5, "B"), (5, "D"), (7, "C"), (8, "D")]
PRICES = {1: "1.50", 2: None, 3: "2.25", 4: "4.00", 5: "0.10", 7: None, 8: "3.05"}
TYPE_BY = "PARTITION BY k ORDER BY ts PATTERN SEQ({}) TYPE BY type"


@pytest.fixture(scope="module")
def fig7(spark) -> str:
    """p1 holds Fig. 7 with DECIMAL prices (some NULL) and a NULL-time row; p2 two rows; p3 no A..D."""
    rows = [("p1", t, c, None if PRICES[t] is None else Decimal(PRICES[t])) for t, c in FIG7]
    rows += [("p1", None, "A", Decimal(1)), ("p2", 1, "A", Decimal("9.99")), ("p2", 4, "B", None),
             ("p3", 1, "Z", None)]
    spark.createDataFrame(rows, "k string, ts int, type string, price decimal(10,2)").createOrReplaceTempView("fig7")
    return "fig7"


def plan_of(pattern: str, *measures: Measure, within: int | None = None, columns: tuple = ()) -> Plan:
    """A plan over symbols A..D written like ``'A B !C D+'``."""
    elements, negations = [], [0]
    for word in pattern.split():
        symbol = "ABCD".index(word.strip("!+"))
        if word.startswith("!"):
            negations[-1] |= 1 << symbol
        else:
            elements.append(Element(symbol, word.endswith("+")))
            negations.append(0)
    return Plan(symbols=tuple("ABCD"), elements=tuple(elements), negations=tuple(negations), within=within,
                measures=measures or (Measure(MeasureKind.COUNT_STAR, name="n"),), columns=columns)


def oracle_p1(plan: Plan) -> list[object]:
    """The oracle's measures over partition p1 (prices in cents, as exact integers)."""
    cents = [None if PRICES[t] is None else int(Decimal(PRICES[t]) * 100) for t, _ in FIG7]
    ev = oracle.Events([t for t, _ in FIG7], [1 << "ABCD".index(c) for _, c in FIG7], (cents,))
    [(_, _, values)] = oracle.evaluate(ev, plan)
    return values


def test_sharon_fig7_one_row_per_partition_with_an_instance(spark, fig7: str) -> None:
    rows = sql(spark, f"SELECT * FROM fig7 MATCH_AGGREGATE ({TYPE_BY.format('A, B, C, D')}) AS m ORDER BY k")
    assert [tuple(r) for r in rows.collect()] == [("p1", 7), ("p2", 0)]  # p3: no instance, no row
    assert oracle_p1(plan_of("A B C D")) == [7]


def test_view_holds_the_rewritten_sql(spark, fig7: str) -> None:
    sql(spark, f"CREATE OR REPLACE TEMP VIEW counts AS SELECT k, count AS n FROM fig7 "
               f"MATCH_AGGREGATE ({TYPE_BY.format('A, B, C, D')}) AS m")
    assert sorted(map(tuple, spark.sql("SELECT * FROM counts").collect())) == [("p1", 7), ("p2", 0)]


def test_statement_reads_a_view_created_earlier_in_the_script(spark, fig7: str) -> None:
    last = sql(spark, "CREATE OR REPLACE TEMP VIEW only_p1 AS SELECT * FROM fig7 WHERE k = 'p1';\n"
                      f"SELECT k, n FROM only_p1 MATCH_AGGREGATE ({TYPE_BY.format('A, C')} MEASURES COUNT(*) AS n) m")
    assert [tuple(r) for r in last.collect()] == [("p1", 3)]  # a1-c3, a1-c7, a3-c7 (a3, c3 tie)
    assert oracle_p1(plan_of("A C")) == [3]


def test_cte_source_and_operator_inside_a_cte(spark, fig7: str) -> None:
    text = f"""
        WITH early AS (SELECT k, ts, type FROM fig7 WHERE ts <= 5),
             counted AS (SELECT k, n FROM early MATCH_AGGREGATE ({TYPE_BY.format('A, B, D')}
                         MEASURES COUNT(*) AS n) AS m)
        SELECT * FROM counted WHERE k = 'p1'"""
    early = [(t, c) for t, c in FIG7 if t <= 5]
    ev = oracle.Events([t for t, _ in early], [1 << "ABCD".index(c) for _, c in early])
    assert oracle.evaluate(ev, plan_of("A B D"))[0][2] == [3]  # a1 b2 d5, a1 b4 d5, a3 b4 d5
    assert [tuple(r) for r in sql(spark, text).collect()] == [("p1", 3)]


def test_join_with_another_table_and_two_operators_in_one_statement(spark, fig7: str) -> None:
    spark.createDataFrame([("p1", "Ada"), ("p2", "Bob")], "k string, name string").createOrReplaceTempView("owners")
    text = f"""
        SELECT o.name, abcd.n AS abcd, ab.n AS ab
        FROM owners AS o
        JOIN fig7 MATCH_AGGREGATE ({TYPE_BY.format('A, B, C, D')} MEASURES COUNT(*) AS n) AS abcd ON o.k = abcd.k
        JOIN fig7 MATCH_AGGREGATE ({TYPE_BY.format('A, B')} MEASURES COUNT(*) AS n) AS ab ON o.k = ab.k
        ORDER BY o.name"""
    assert oracle_p1(plan_of("A B")) == [5]
    assert [tuple(r) for r in sql(spark, text).collect()] == [("Ada", 7, 5), ("Bob", 0, 1)]


def test_negation_middle_and_kleene(spark, fig7: str) -> None:
    """A-Seq Example 5: a C between B and D removes those matches; B+ counts every non-empty subset."""
    text = f"""SELECT k, neg, kleene FROM fig7 MATCH_AGGREGATE ({TYPE_BY.format('A, B, !C, D')}
                 MEASURES COUNT(*) AS neg) AS m
               JOIN fig7 MATCH_AGGREGATE ({TYPE_BY.format('A, B+, D')} MEASURES COUNT(*) AS kleene) AS q USING (k)
               WHERE k = 'p1'"""
    assert [tuple(r) for r in sql(spark, text).collect()] == [
        ("p1", *oracle_p1(plan_of("A B !C D")), *oracle_p1(plan_of("A B+ D")))]


def test_edge_negation_within(spark, fig7: str) -> None:
    text = f"""SELECT k, n FROM fig7 MATCH_AGGREGATE ({TYPE_BY.format('!C, A, B')} WITHIN 3
               MEASURES COUNT(*) AS n) AS m WHERE k = 'p1'"""
    assert sql(spark, text).first().n == oracle_p1(plan_of("!C A B", within=3))[0]


def test_measures_over_decimal_with_nulls(spark, fig7: str) -> None:
    text = f"""SELECT * FROM fig7 MATCH_AGGREGATE ({TYPE_BY.format('A, B+, D')}
                 MEASURES COUNT(*) AS n, COUNT(B) AS nb, SUM(B.price) AS s, MIN(B.price) AS lo,
                          MAX(D.price) AS hi, AVG(B.price) AS mean) AS m ORDER BY k"""
    df = sql(spark, text)
    types = {f.name: f.dataType for f in df.schema.fields}
    # Spark's types for SUM / MIN / AVG of DECIMAL(10, 2): DECIMAL(20, 2), DECIMAL(10, 2), DECIMAL(14, 6)
    assert types["s"] == T.DecimalType(20, 2) and types["lo"] == T.DecimalType(10, 2)
    assert types["n"] == T.LongType() and types["mean"] == T.DecimalType(14, 6)
    p1, p2 = df.collect()
    plan = plan_of("A B+ D", Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.COUNT, 1, name="nb"),
                   Measure(MeasureKind.SUM, 1, 0, "s"), Measure(MeasureKind.MIN, 1, 0, "lo"),
                   Measure(MeasureKind.MAX, 3, 0, "hi"), Measure(MeasureKind.AVG, 1, 0, "mean", 4, 20),
                   columns=(ValueType.DECIMAL,))
    n, nb, s, lo, hi, mean = oracle_p1(plan)  # cents; the mean in units of 10^-6, rounded half up
    assert (p1.n, p1.nb, p1.s, p1.lo, p1.hi) == (n, nb, Decimal(s) / 100, Decimal(lo) / 100, Decimal(hi) / 100)
    assert p1.mean == Decimal(mean).scaleb(-6)
    assert (p2.k, p2.n, p2.s, p2.lo, p2.hi, p2.mean) == ("p2", 0, None, None, None, None)


@pytest.mark.parametrize(("column", "within", "want"), [
    ("CAST(ts AS BIGINT)", "6", T.LongType()),
    ("ts", "6", T.IntegerType()),
    ("CAST(ts AS DECIMAL(12, 0))", "6", T.DecimalType(12, 0)),
    ("timestamp_seconds(ts)", "INTERVAL 6 SECONDS", T.TimestampType()),
    ("CAST(timestamp_seconds(ts) AS TIMESTAMP_NTZ)", "INTERVAL 6 SECONDS", T.TimestampNTZType()),
])
def test_window_bounds_have_the_order_by_type(spark, fig7: str, column: str, within: str, want: T.DataType) -> None:
    slide = within.replace("6", "2")
    df = sql(spark, f"""SELECT * FROM (SELECT k, {column} AS t, type FROM fig7) MATCH_AGGREGATE (
                PARTITION BY k ORDER BY t PATTERN SEQ(A, B) TYPE BY type WITHIN {within} SLIDE {slide}) AS m""")
    assert [(f.name, f.dataType) for f in df.schema.fields][1:3] == [("window_start", want), ("window_end", want)]


def test_sliding_windows_values(spark, fig7: str) -> None:
    rows = sql(spark, f"""SELECT window_start, window_end, count FROM fig7 MATCH_AGGREGATE (
                 {TYPE_BY.format('A, B, C, D')} WITHIN 6 SLIDE 2) AS m WHERE k = 'p1' ORDER BY window_start""")
    ev = oracle.Events([t for t, _ in FIG7], [1 << "ABCD".index(c) for _, c in FIG7])
    plan = dataclasses.replace(plan_of("A B C D"), within=6, slide=2)
    assert [tuple(r) for r in rows.collect()] == [(a, b, v[0]) for a, b, v in oracle.evaluate(ev, plan)]


def test_timestamp_windows(spark, fig7: str) -> None:
    """p2: a at 1 s, b at 4 s; windows [2k, 2k + 6) s holding an instance; only [0, 6) holds both."""
    rows = sql(spark, f"""SELECT unix_seconds(window_start) AS ws, unix_seconds(window_end) AS we, count
                 FROM (SELECT k, timestamp_seconds(ts) AS ts, type FROM fig7)
                 MATCH_AGGREGATE ({TYPE_BY.format('A, B')} WITHIN INTERVAL 6 SECONDS SLIDE INTERVAL 2 SECONDS) AS m
                 WHERE k = 'p2' ORDER BY ws""").collect()
    plan = dataclasses.replace(plan_of("A B"), within=6, slide=2)
    want = [(a, b, v[0]) for a, b, v in oracle.evaluate(oracle.Events([1, 4], [1, 2]), plan)]
    assert [tuple(r) for r in rows] == want == [(-4, 2, 0), (-2, 4, 0), (0, 6, 1), (2, 8, 0), (4, 10, 0)]


def overflow_view(spark) -> None:
    """70 distinct times: SEQ(A+) has 2**70 - 1 matches, more than BIGINT holds."""
    spark.range(70).selectExpr("'eu' AS region", "'cust-42' AS customer", "id AS ts", "'A' AS type") \
        .union(spark.range(3).selectExpr("'eu'", "'small'", "id", "'A'")).createOrReplaceTempView("many")


OVERFLOW = "SELECT customer, n FROM many MATCH_AGGREGATE (PARTITION BY region, customer ORDER BY ts PATTERN SEQ(A+) " \
           "TYPE BY type MEASURES COUNT(*) AS n {}) AS m ORDER BY customer"


def test_count_overflow_names_the_partition(spark) -> None:
    overflow_view(spark)
    with pytest.raises(SparkRuntimeException) as err:
        sql(spark, OVERFLOW.format("")).collect()
    assert 'in partition {"region":"eu","customer":"cust-42"}' in str(err.value)
    assert "does not fit BIGINT" in str(err.value)


def test_count_type_decimal(spark) -> None:
    overflow_view(spark)
    df = sql(spark, OVERFLOW.format("COUNT TYPE DECIMAL"))
    assert df.schema["n"].dataType == T.DecimalType(38, 0)
    assert [tuple(r) for r in df.collect()] == [("cust-42", 2**70 - 1), ("small", 7)]


def test_plain_sql_passes_through_and_the_last_result_is_returned(spark) -> None:
    df = sql(spark, "SELECT 1 AS a; SELECT :x AS b, 'MATCH_AGGREGATE (' AS c", args={"x": 2})
    assert [tuple(r) for r in df.collect()] == [(2, "MATCH_AGGREGATE (")]


def test_odd_names_are_quoted(spark, fig7: str) -> None:
    spark.sql("CREATE OR REPLACE TEMP VIEW `odd view` AS SELECT k AS `we``ird key`, ts AS `t's`, type AS `ty pe`, "
              "price AS `p``rice` FROM fig7")
    text = """SELECT * FROM `odd view` MATCH_AGGREGATE (PARTITION BY `we``ird key` ORDER BY `t's`
              PATTERN SEQ(`A'`, `B"`, D) DEFINE `A'` AS `ty pe` = 'A', `B"` AS `ty pe` = 'B', D AS `ty pe` = 'D'
              MEASURES COUNT(*) AS `it's`, SUM(D.`p``rice`) AS `"sum"`) AS m ORDER BY 1"""
    df = sql(spark, text)
    assert df.columns == ["we`ird key", "it's", '"sum"']
    n, cents = oracle_p1(plan_of("A B D", Measure(MeasureKind.COUNT_STAR, name="n"),
                                 Measure(MeasureKind.SUM, 3, 0, "s"), columns=(ValueType.INT,)))
    assert [tuple(r) for r in df.collect()] == [("p1", n, Decimal(cents) / 100), ("p2", 0, None)]


def test_explain_shows_plan_and_the_sql_that_runs(spark, fig7: str) -> None:
    text = f"SELECT * FROM fig7 MATCH_AGGREGATE ({TYPE_BY.format('A, B, !C, D')} MEASURES SUM(D.price) AS s) AS m"
    spark.conf.set("sparkseq.path", "grouped")  # without Spark EXPLAIN shows the Python path; auto here: the JVM's
    try:
        shown = explain(spark, text)
        [rewritten] = rewrite(spark, text)
    finally:
        spark.conf.unset("sparkseq.path")
    for part in ("pattern       SEQ(A, B, !C, D)", "C  TYPE_BY    type = 'C'", "s = SUM(D.price) -> DECIMAL(20, 2)",
                 "partition by  k STRING", "order by      ts INT", "Spark SQL:"):
        assert part in shown
    [name] = set(re.findall(r"sparkseq_agg_[0-9a-f]+", rewritten))
    assert name in shown and spark.sql(rewritten).count() == 2
    schema = {"fig7": {"k": "string", "ts": "int", "type": "string", "price": "decimal(10,2)"}}
    unforced = [line for line in shown.splitlines() if not line.startswith("  path ")]
    assert [line for line in explain(schema, text).splitlines() if not line.startswith("  path ")] == unforced
    decimal = Plan(symbols=("A",), elements=(Element(0),), negations=(0, 0), count_type=CountType.DECIMAL)
    assert engine_function_name(decimal) == engine_function(spark, decimal) != name


def test_explain_takes_the_source_first_and_the_former_order_warns() -> None:
    """``explain(source, text)`` as ``sql(spark, text)``; ``explain(text, source)`` still
    answers the same, with a DeprecationWarning; two strings are refused."""
    schema = {"clicks": {"id": "bigint", "ts": "timestamp", "action": "string"}}
    text = "SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY id ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action) m"
    shown = explain(schema, text)
    assert "pattern       SEQ(view, buy)" in shown
    with pytest.warns(DeprecationWarning, match=r"pass the source first, as in sparkseq.sql: explain\(spark, text\)"):
        assert explain(text, schema) == shown
    with pytest.raises(TypeError, match="not a string"):
        explain(text, text)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs the statement text"):
        explain(schema)


def test_hierarchy(spark) -> None:
    spark.createDataFrame([("u", 1, "kindle"), ("u", 2, "case"), ("u", 3, "cover"), ("u", 4, "kindle")],
                          "k string, ts int, item string").createOrReplaceTempView("items")
    text = """SELECT n FROM items MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(kindle, accessory)
              TYPE BY item HIERARCHY products MEASURES COUNT(*) AS n) AS m"""
    hierarchies = {"products": [("kindle", "all"), ("case", "accessory"), ("cover", "accessory"), ("accessory", "all")]}
    assert sql(spark, text, hierarchies=hierarchies).first().n == 2  # kindle1 case2, kindle1 cover3


def test_operator_over_a_view_of_another_operator_in_one_script(spark, fig7: str) -> None:
    """Windows with at least one A-B match, then pairs of such windows in a row (SEQ(HOT, HOT))."""
    script = f"""
        CREATE OR REPLACE TEMP VIEW per_window AS SELECT k, window_start, n FROM fig7 MATCH_AGGREGATE (
          {TYPE_BY.format('A, B')} MEASURES COUNT(*) AS n WITHIN 4 SLIDE 2) AS m;
        SELECT k, hot_pairs FROM per_window MATCH_AGGREGATE (PARTITION BY k ORDER BY window_start
          PATTERN SEQ(HOT, HOT) DEFINE HOT AS n > 0 MEASURES COUNT(*) AS hot_pairs) AS h ORDER BY k"""
    windows = [(a, v[0]) for a, _, v in oracle.evaluate(
        oracle.Events([t for t, _ in FIG7], [1 << "ABCD".index(c) for _, c in FIG7]),
        dataclasses.replace(plan_of("A B"), within=4, slide=2))]
    hot = [start for start, n in windows if n > 0]
    assert [tuple(r) for r in sql(spark, script).collect()] == [("p1", len(hot) * (len(hot) - 1) // 2)]
    assert "analysed when it runs" in explain(spark, script)


def test_within_one_day_is_24_hours_across_daylight_saving_changes(spark) -> None:
    """WITHIN INTERVAL 1 DAY is 24 hours of elapsed time, like the fixed durations of Spark's
    window() — not Spark's calendar-day arithmetic (``ts + INTERVAL 1 DAY`` is 23 or 25 hours
    across a daylight-saving change in the session time zone). Europe/Berlin: 31 March 2024
    has 23 hours, 27 October 2024 has 25."""
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Europe/Berlin")
    try:
        spark.sql("""CREATE OR REPLACE TEMP VIEW dst AS SELECT * FROM VALUES
            ('spring', TIMESTAMP'2024-03-30 12:00:00', 'view'), ('spring', TIMESTAMP'2024-03-31 12:30:00', 'buy'),
            ('autumn', TIMESTAMP'2024-10-26 12:00:00', 'view'), ('autumn', TIMESTAMP'2024-10-27 11:30:00', 'buy')
            AS t(k, ts, action)""")
        ours = sql(spark, """SELECT k, n FROM dst MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(view, buy)
                             TYPE BY action MEASURES COUNT(*) AS n WITHIN INTERVAL 1 DAY) AS m""")
        calendar = spark.sql("""SELECT a.k, count(b.k) AS n FROM dst a LEFT JOIN dst b ON a.k = b.k
                                AND b.action = 'buy' AND b.ts > a.ts AND b.ts < a.ts + INTERVAL 1 DAY
                                WHERE a.action = 'view' GROUP BY a.k""")
        assert dict(map(tuple, ours.collect())) == {"spring": 1, "autumn": 0}  # 23.5 and 24.5 hours apart
        assert dict(map(tuple, calendar.collect())) == {"spring": 0, "autumn": 1}  # Spark's calendar day
        elapsed = spark.sql("SELECT k, (max(unix_micros(ts)) - min(unix_micros(ts))) / 3600e6 FROM dst GROUP BY k")
        assert dict(map(tuple, elapsed.collect())) == {"spring": 23.5, "autumn": 24.5}
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
