"""WHERE / STRATEGY end to end: MATCH_AGGREGATE text on local Spark equals the oracle.

Random extended plans (``tests.test_kernel_predicates.ext_plans``: every operator,
offsets, NULLs, NaN / -0.0, ties, rows of no symbol, WITHIN / SLIDE, negation, Kleene
with iterator predicates, all four strategies) are written as MATCH_AGGREGATE text
(:mod:`tests.predicate_cases`), run through :func:`sparkseq.sql` over one table of many
partitions and compared with :func:`tests.oracle.evaluate` partition by partition.
STRICT CONTIGUITY ranks the whole table, so the oracle gets the table-wide rank. A
Spark query costs about a second: few examples, each with up to 12 partitions.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkseq.statements.sql_api import sql
from sql_rewrites.errors import PredicateError
from tests import oracle
from tests.predicate_cases import events_frame, select_sql, sql_expressible, with_stream_ranks
from tests.spark_cases import assert_same, expected, got
from tests.sql_cases import jobs_started
from tests.test_kernel_predicates import ext_events, ext_plans
from udafs.plan import Plan, Strategy

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def cases(draw: st.DrawFn, **options: object) -> tuple[Plan, list[oracle.Events], int]:
    plan = sql_expressible(draw(ext_plans(**options, sql=True)))
    groups = [ev for ev in draw(st.lists(ext_events(plan), min_size=1, max_size=12)) if oracle.cheap(plan, ev)]
    return plan, groups, draw(st.integers(0, 1000))


def run(spark, plan: Plan, groups: list[oracle.Events], seed: int) -> None:
    events_frame(spark, groups).createOrReplaceTempView("pcases")
    if plan.strategy is Strategy.STRICT_CONTIGUITY:
        groups = with_stream_ranks(groups)
    assert_same(plan, got(plan, sql(spark, select_sql(plan, seed)).collect()), expected(plan, groups))


@pytest.mark.parametrize("strategy", list(Strategy))
def test_strategies_and_predicates_match_oracle(spark, strategy: Strategy) -> None:
    @SETTINGS
    @given(cases(strategy=strategy, window=["none", "within", "slide"][list(Strategy).index(strategy) % 3],
                 n_pred=2, need_pred=True, middle_negation=True))
    def check(case: tuple[Plan, list[oracle.Events], int]) -> None:
        run(spark, *case)

    check()


def test_iterator_predicates_match_oracle(spark) -> None:
    @SETTINGS
    @given(cases(need_kleene=True, n_pred=1, window="slide"))
    def check(case: tuple[Plan, list[oracle.Events], int]) -> None:
        run(spark, *case)

    check()


def test_contiguity_counts_rows_of_no_symbol(spark) -> None:
    """Worked example 4: A@1, (no instance)@2, B@3 -> 0 under contiguity; the same pair
    in another partition without the row at 2 -> 1 (PARTITION) but 0 (STRICT: the
    other partition's row at 2 lies between them in the stream)."""
    spark.createDataFrame([(0, 1, "a"), (0, 2, "x"), (0, 3, "b"), (1, 1, "a"), (1, 3, "b")],
                          "g int, ts bigint, kind string").createOrReplaceTempView("contig")
    text = ("SELECT g, n FROM contig MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(A, B) "
            "DEFINE A AS kind = 'a', B AS kind = 'b' STRATEGY {} MEASURES COUNT(*) AS n) AS m ORDER BY g")
    counts = {s: [r.n for r in sql(spark, text.format(s)).collect()]
              for s in ("PARTITION CONTIGUITY", "STRICT CONTIGUITY", "SKIP TILL NEXT MATCH")}
    assert counts == {"PARTITION CONTIGUITY": [0, 1], "STRICT CONTIGUITY": [0, 0], "SKIP TILL NEXT MATCH": [1, 1]}


def test_string_equality_and_decimal_offsets(spark) -> None:
    """Worked example 3 (the condensed-composition paper's Query 1) with names as STRING and prices as DECIMAL."""
    rows = [(1, "T", "IBM", "6"), (2, "T", "Sun", "7"), (3, "G", None, "4"), (4, "T", "IBM", "3"),
            (5, "T", "Sun", "5"), (6, "G", None, "5"), (7, "T", "IBM", "2"), (8, "T", None, "1")]
    spark.createDataFrame(rows, "ts bigint, kind string, name string, p string").selectExpr(
        "ts", "kind", "name", "CAST(p AS DECIMAL(10, 2)) AS price").createOrReplaceTempView("q1")
    text = ("SELECT n, total FROM q1 MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(T1, G, T3) "
            "DEFINE T1 AS kind = 'T', G AS kind = 'G', T3 AS kind = 'T' "
            "WHERE T1.name = T3.name AND T1.price >= G.price + 2 AND T3.price < G.price "
            "MEASURES COUNT(*) AS n, SUM(T1.price) AS total WITHIN 500)")
    [row] = sql(spark, text).collect()
    assert (row.n, str(row.total)) == (2, "12.00")
    [row] = sql(spark, text.replace("+ 2 ", "+ 1.995 ")).collect()  # 1.995 -> 199.5: >= rounds up to 200
    assert row.n == 2


def test_double_constants_stay_where_written(spark) -> None:
    """``A.f + 0.3 = B.f`` is Spark's double arithmetic as written: -2.3 + 0.3 is
    -1.9999999999999998, not -2.0; ``A.f = B.f - 0.3`` does hold (-2.0 - 0.3 is -2.3).
    Every answer equals Spark's own evaluation of the same condition over the pair."""
    spark.sql("CREATE OR REPLACE TEMP VIEW doubles AS SELECT * FROM VALUES (1L, 'a', -2.3D), (2L, 'b', -2.0D) "
              "AS t(ts, kind, f)")
    text = ("SELECT n FROM doubles MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B) DEFINE A AS kind = 'a', "
            "B AS kind = 'b' WHERE {} MEASURES COUNT(*) AS n)")
    for condition in ("A.f + 0.3 = B.f", "A.f = B.f - 0.3", "B.f = 0.3 + A.f", "B.f - 0.3 = A.f", "A.f + 0.3 < B.f",
                      "A.f + 0.3 >= B.f"):
        [(ours,)] = sql(spark, text.format(condition)).collect()
        [(sparks,)] = spark.sql(f"SELECT count(*) FROM doubles A JOIN doubles B ON A.kind = 'a' AND B.kind = 'b' "
                                f"AND {condition}").collect()
        assert ours == sparks, condition
    assert [sql(spark, text.format(c)).collect()[0].n for c in ("A.f + 0.3 = B.f", "A.f = B.f - 0.3")] == [0, 1]


def test_errors_before_any_job(spark) -> None:
    spark.createDataFrame([(1, 1, "a")], "g int, ts bigint, kind string").createOrReplaceTempView("errs")
    before = jobs_started(spark)
    with pytest.raises(PredicateError, match="stands at 2 positions"):
        sql(spark, "SELECT * FROM errs MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B, A) "
                   "DEFINE A AS kind = 'a', B AS kind = 'b' WHERE A.g < B.g)")
    assert jobs_started(spark) == before


def test_functions_take_a_strategy_suffix(spark) -> None:
    """``seq_count`` with ``STRATEGY``: PARTITION CONTIGUITY sees the group's rows of no
    symbol; SASE++ Fig. 3 under skip-till-next-match; STRICT is refused before any job."""
    spark.createDataFrame([(0, 1, "a"), (0, 2, "x"), (0, 3, "b"), (1, 1, "a"), (1, 3, "b")],
                          "g int, ts bigint, kind string").createOrReplaceTempView("fcontig")
    text = "SELECT g, seq_count(ts, kind, 'SEQ(a, b) {}') AS n FROM fcontig GROUP BY g ORDER BY g"
    assert [r.n for r in sql(spark, text.format("STRATEGY PARTITION CONTIGUITY")).collect()] == [0, 1]
    assert [r.n for r in sql(spark, text.format("")).collect()] == [1, 1]
    spark.createDataFrame([(1, "a"), (2, "a"), (5, "b"), (6, "b"), (7, "c")],
                          "ts bigint, kind string").createOrReplaceTempView("fig3")
    fig3 = "SELECT seq_count(ts, kind, 'SEQ(a, b+, c) {}', 10) AS n FROM fig3"
    counts = [sql(spark, fig3.format(s)).collect()[0].n
              for s in ("", "STRATEGY SKIP TILL NEXT MATCH", "STRATEGY PARTITION CONTIGUITY")]
    assert counts == [6, 2, 1]
    before = jobs_started(spark)
    with pytest.raises(Exception, match="STRICT CONTIGUITY needs each event's rank"):
        sql(spark, text.format("STRATEGY STRICT CONTIGUITY"))
    assert jobs_started(spark) == before


def test_three_elements_within_wide_windows_equal_the_self_join(spark) -> None:
    """The condensed-composition paper's Query 1 shape over windows of ~300 events: the engine takes the
    replication-free triples path (checked on the same data), Spark SQL's three-way
    self-join gives the reference counts."""
    import numpy as np
    import pandas as pd

    from udafs.kernels.options import WithinPath
    from udafs.kernels.predicates import methods as predicates
    from udafs.kernels.predicates import predpass
    from udafs.plan import CmpOp, Element, Measure, MeasureKind, Predicate, ValueType
    from udafs.plan import Plan as KernelPlan

    rng = np.random.default_rng(5)
    names = np.array(["GOOG", "IBM", "ORCL", "SUNW"])
    per, parts, w = 1500, 3, 300
    frame = pd.DataFrame({"k": np.repeat(np.arange(parts), per),
                          "ts": np.tile(np.sort(rng.integers(0, per, size=per)), parts),  # ties too
                          "name": names[rng.integers(0, len(names), size=per * parts)],
                          "price": rng.integers(0, 40, size=per * parts)})
    spark.createDataFrame(frame).createOrReplaceTempView("q1wide")
    match = sql(spark, f"""SELECT k, n FROM q1wide MATCH_AGGREGATE (PARTITION BY k ORDER BY ts
        PATTERN SEQ(A, G, C) DEFINE A AS name <> 'GOOG', G AS name = 'GOOG', C AS name <> 'GOOG'
        WHERE A.price >= G.price + 2 AND C.price < G.price AND A.name = C.name
        MEASURES COUNT(*) AS n WITHIN {w}) AS m""").collect()
    joined = spark.sql(f"""SELECT a.k, COUNT(*) AS n FROM q1wide a
        JOIN q1wide g ON g.k = a.k AND g.name = 'GOOG' AND g.ts > a.ts AND a.price >= g.price + 2
        JOIN q1wide c ON c.k = a.k AND c.name = a.name AND c.ts > g.ts AND c.ts - a.ts < {w} AND c.price < g.price
        WHERE a.name <> 'GOOG' GROUP BY a.k""").collect()
    assert {r.k: r.n for r in match if r.n} == {r.k: r.n for r in joined}
    assert sum(r.n for r in joined) > 10_000

    part = frame[frame["k"] == 0]
    goog = (part["name"] == "GOOG").to_numpy()
    plan = KernelPlan(symbols=("A", "G", "C"), elements=(Element(0), Element(1), Element(2)),
                      negations=(0, 0, 0, 0), within=w, measures=(Measure(MeasureKind.COUNT_STAR, name="n"),),
                      columns=(ValueType.INT,),
                      predicates=(Predicate(0, 0, CmpOp.GE, 1, 0, 2), Predicate(2, 0, CmpOp.LT, 1, 0, 0)))
    mask = np.where(goog, 2, 5).astype(np.int64)
    path = predicates.within_path(plan, part["ts"].to_numpy(), mask, predpass.PredPattern.of(plan, None), False)
    assert path is WithinPath.TRIPLES
