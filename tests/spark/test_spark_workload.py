"""Workloads on local Spark: shared execution returns exactly what each statement returns alone.

Each hypothesis example is 2-4 random plans (symbol ``S<k>`` DEFINEd as bit k of the
table's ``mask``, so equal conditions share one bit of the group's mask), each a
``CREATE TEMP VIEW`` statement of one script over one table of many partitions. The
script runs through :func:`sparkseq.workload` — one cached pass for the group — and
every view must equal the oracle for its own plan, partition by partition.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import SparkRuntimeException
from pyspark.sql import DataFrame

import sparkseq
from sparkseq.running.workload_results import STATEMENT_COLUMN, collect_results
from sparkseq.statements.scripts import run_checked
from sparkseq.statements.workloads import explain_workload
from sql_rewrites.errors import UnknownColumnError
from sql_rewrites.syntax.statements import split_statements
from tests.kernels.test_kernel_oracle import events, plans
from tests.kernels.test_kernel_pretree import families
from tests.support import oracle
from tests.support.spark_cases import assert_same, events_frame, expected, got
from tests.support.sql_cases import jobs_started, match_aggregate
from udafs.plan import Plan

SETTINGS = settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))


def statement(i: int, plan: Plan) -> str:
    bounds = ["window_start", "window_end"] if plan.slide else []
    measures = [f"`{m.name}`" for m in plan.measures]
    return (f"CREATE OR REPLACE TEMP VIEW wl{i} AS SELECT {', '.join(['g', *bounds, *measures])} "
            f"FROM {match_aggregate(plan, alias=f'm{i}')}")


@SETTINGS
@given(data=st.data(), count=st.integers(2, 4))
def test_shared_workload_equals_each_statement_alone(spark, data, count: int) -> None:  # noqa: ANN001
    workload = [data.draw(plans(sql=True)) for _ in range(count)]
    widest = max(workload, key=lambda p: len(p.symbols))
    groups = data.draw(st.lists(events(widest), min_size=1, max_size=12))
    groups = [ev for ev in groups if all(oracle.cheap(p, ev) for p in workload)]
    events_frame(spark, groups).createOrReplaceTempView("cases")
    script = ";\n".join(statement(i, p) for i, p in enumerate(workload))
    plan = sparkseq.plan_workload(spark, script)
    assert [len(g.members) for g in plan.groups] == [count]  # one source, keys and time: one group
    sparkseq.workload(spark, script)
    for i, p in enumerate(workload):
        assert_same(p, got(p, spark.table(f"wl{i}").collect()), expected(p, groups))


@SETTINGS
@given(data=st.data())
def test_members_sharing_prefixes_equal_each_statement_alone(spark, data) -> None:  # noqa: ANN001
    """COUNT(*) members of one window shape: counted on one timeline, prefixes once."""
    workload = data.draw(families(data.draw(st.sampled_from(["none", "slide"])), sql=True))
    groups = data.draw(st.lists(events(workload[0]), min_size=1, max_size=12))
    groups = [ev for ev in groups if all(oracle.cheap(p, ev) for p in workload)]
    events_frame(spark, groups).createOrReplaceTempView("cases")
    script = ";\n".join(statement(i, p) for i, p in enumerate(workload))
    sparkseq.workload(spark, script)
    for i, p in enumerate(workload):
        assert_same(p, got(p, spark.table(f"wl{i}").collect()), expected(p, groups))


EXPLAINED = (("SEQ(A, B, C)", "COUNT(*) AS n"), ("SEQ(A, B, D)", "COUNT(*) AS n"), ("SEQ(A, C)", "COUNT(*) AS n"),
             ("SEQ(A, B)", "COUNT(B) AS n"), ("SEQ(D, A, B, C, D)", "COUNT(*) AS n"),
             ("SEQ(C, A, B, C, D)", "COUNT(*) AS n"), ("SEQ(B, A, B, C, D)", "COUNT(*) AS n"),
             ("SEQ(D, D, A, B, C, D)", "COUNT(*) AS n"))


def explained_script(spark) -> str:  # noqa: ANN001
    """Eight members over ``cases`` (one row per symbol, many keys): seven COUNT(*) members
    of one window shape with common prefixes and suffixes, one COUNT(B)."""
    rows = [oracle.Events(list(range(1, 9)), [1, 2, 4, 8, 1, 2, 4, 8], ([0] * 8, [0.0] * 8))] * 6
    events_frame(spark, rows).createOrReplaceTempView("cases")
    bit = {"A": 1, "B": 2, "C": 4, "D": 8}

    def define(pattern: str) -> str:
        return "DEFINE " + ", ".join(f"{s} AS mask = {bit[s]}" for s in sorted(set(pattern[4:-1].split(", "))))

    return ";\n".join(
        f"SELECT * FROM cases MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN {pattern} {define(pattern)} "
        f"MEASURES {measure} WITHIN 10 SLIDE 5) AS m" for pattern, measure in EXPLAINED)


def test_explain_names_the_prefixes_and_suffixes_the_engine_shares(spark) -> None:  # noqa: ANN001
    text = explain_workload(spark, explained_script(spark))
    assert "in the engine call, as collect_workload and workload(output=...) execute it (udafs.timelines cost " \
           "model; rows per symbol from the statistics job (all rows), 6 partitions)" in text
    assert "workload() (DataFrames read later) runs no statistics job before rows are asked for: its engine calls " \
           "each decide from their own rows by the same model" in text
    assert "timeline 1: members 0, 1, 2, 4, 5, 6, 7 on one timeline; estimated" in text
    assert "prefix counted once: SEQ(A, B, ...) for members 0, 1" in text
    assert "suffix counted once: SEQ(..., A, B, C, D) for members 5, 6" in text  # Chop-Connect after element 1
    assert "suffix counted once: SEQ(..., D, A, B, C, D) for members 4, 7" in text
    assert "members 3: counted one by one (measures other than COUNT(*), strategies or predicates)" in text
    assert "execution: one scan, one shuffle and engine calls over about 100,000 rows of whole partitions (sorted " \
           "by key and time), all partitions of a call evaluated at once, laid end to end on one time axis" in text
    assert "results of collect_workload and workload(output=...): routed: every member's statement only selects " \
           "its columns" in text


def test_explain_prints_the_timelines_the_engine_runs(spark, monkeypatch) -> None:  # noqa: ANN001
    """What EXPLAIN prints is the decision the group's pass is given (the multi-plan JSON
    bound into the pass), and ``evaluate_many`` runs exactly that decision on the pass's
    input, partition by partition."""
    import numpy as np

    from sparkseq.statements import workloads
    from sql_rewrites.planning.timeline_plan import describe_timelines
    from sql_rewrites.syntax.dialect import SparkSeq
    from udafs.kernels.multiplan.many import evaluate_many
    from udafs.multiplan import MultiPlan
    from udafs.timelines import SharedTimeline

    script = explained_script(spark)
    text = explain_workload(spark, script)
    given: list[str] = []
    real = workloads.sorted_pass
    monkeypatch.setattr(workloads, "sorted_pass", lambda plan, *args: (given.append(plan), real(plan, *args))[1])
    sparkseq.collect_workload(spark, script)  # the group's pass runs, as its results are delivered
    assert len(given) == 1
    ran_plan = MultiPlan.from_json(given[0])
    assert ran_plan.timelines  # a decision, not left to each partition
    group = dataclasses.replace(sparkseq.plan_workload(spark, script).groups[0], plan=ran_plan)
    for line in describe_timelines(group, None):  # EXPLAIN's lines for what ran, without the cost figures
        assert any(printed.strip().startswith(line.strip()) for printed in text.splitlines()), line
    events, (ts, mask, *_) = group.events()
    for _, rows in spark.sql(events.sql(dialect=SparkSeq)).toPandas().groupby("g"):
        ran: list[SharedTimeline] = []
        evaluate_many(ran_plan, rows[ts].to_numpy(np.int64), rows[mask].to_numpy(np.int64), ran=ran)
        assert ran == list(ran_plan.timelines)
    sparkseq.release_workload(spark, script)


def test_a_large_source_is_sampled_and_decides_as_from_all_its_rows(spark) -> None:  # noqa: ANN001
    """Over a source Spark estimates at more than a million rows, the statistics job reads
    about one row in 16 — by a hash of key and time, so the same rows each time — scales the
    counts up, still finds every key, and the shared timelines decided from it are the ones
    all rows decide."""
    from sparkseq.running import statistics
    from sql_rewrites.generation.shared import statistics_sql, symbol_keys
    from sql_rewrites.planning.symbol_statistics import SAMPLE_EVERY, SymbolStatistics
    from sql_rewrites.planning.timeline_plan import plan_timelines

    spark.range(1_200_000).selectExpr("id % 40 AS g", "id AS ts", "CAST(1 << (id % 3) AS INT) AS mask") \
        .createOrReplaceTempView("big_cases")
    script = ";\n".join(
        f"SELECT * FROM big_cases MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN {pattern} "
        "DEFINE A AS mask = 1, B AS mask = 2, C AS mask = 4 MEASURES COUNT(*) AS n WITHIN 100 SLIDE 50) AS m"
        for pattern in ("SEQ(A, B, C)", "SEQ(A, C, B)", "SEQ(B, C, A)"))
    group = sparkseq.plan_workload(spark, script).groups[0]
    sampled = statistics.collect(spark, group)
    assert sampled == statistics.collect(spark, group)  # the same sample each time
    assert sampled.sampled == 1 / SAMPLE_EVERY and sampled.partitions == 40
    for key in symbol_keys(group):
        assert abs(sampled.rows_of(key) - 400_000) < 40_000, (key, sampled.rows_of(key))
    row = spark.sql(statistics_sql(group)).first()
    every = SymbolStatistics.of({key: row[f"c{k}"] for k, key in enumerate(symbol_keys(group))}, row["partitions"])
    assert every.rows_of(symbol_keys(group)[0]) == 400_000 and every.partitions == 40
    assert plan_timelines(group, sampled).plan.timelines == plan_timelines(group, every).plan.timelines
    # one scan for the paths too: the same sampled counts, and every key over the threshold, exactly
    measured = statistics.measure(spark, group, reuse=False, big_key_rows=29_999)
    assert measured.symbols == sampled
    assert sorted((k.rows, k.first, k.last) for k in measured.big_keys) == sorted(
        (30_000, g, 1_200_000 - 40 + g) for g in range(40))
    assert len({k.key_hash for k in measured.big_keys}) == 40
    assert statistics.measure(spark, group, reuse=False, big_key_rows=30_000).big_keys == ()


def test_a_bad_statement_fails_before_any_job_and_creates_nothing(spark) -> None:  # noqa: ANN001
    events_frame(spark, [oracle.Events([1, 2], [1, 2], ([1, 2], [1.0, 2.0]))]).createOrReplaceTempView("cases")
    spark.sql("DROP VIEW IF EXISTS wl_good")
    good = "CREATE TEMP VIEW wl_good AS SELECT * FROM cases MATCH_AGGREGATE (PARTITION BY g ORDER BY ts " \
           "PATTERN SEQ(A, B) DEFINE A AS mask = 1, B AS mask = 2) AS m"
    bad = "SELECT * FROM cases MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(A, B) " \
          "DEFINE A AS mask = 1, B AS maks = 2) AS m"
    before = jobs_started(spark)
    with pytest.raises(UnknownColumnError, match="maks") as caught:
        sparkseq.workload(spark, f"{good};\n{good.replace('wl_good', 'wl_good2')};\n{bad}")
    assert caught.value.position is not None and caught.value.position.line == 3
    assert jobs_started(spark) == before
    assert not spark.catalog.tableExists("wl_good")


def test_unshareable_operators_run_alone(spark) -> None:  # noqa: ANN001
    events_frame(spark, [oracle.Events([1, 2], [1, 2], ([1, 2], [1.0, 2.0]))]).createOrReplaceTempView("cases")
    one = "SELECT * FROM cases MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(A, B) " \
          "DEFINE A AS mask = 1, B AS mask = 2) AS m"
    other_keys = one.replace("PARTITION BY g ", "")
    subquery = one.replace("FROM cases", "FROM (SELECT * FROM cases)")
    plan = sparkseq.plan_workload(spark, ";".join([one, other_keys, subquery]))
    assert plan.groups == ()
    frames = sparkseq.workload(spark, ";".join([one, other_keys, subquery]))
    assert [f.collect()[0][-1] for f in frames] == [1, 1, 1]


def test_operators_without_partition_by_share_one_pass(spark) -> None:  # noqa: ANN001
    events_frame(spark, [oracle.Events([1, 2, 3], [1, 2, 2], ([1, 2, 3], [1.0, 2.0, 3.0])),
                         oracle.Events([1, 5], [1, 2], ([4, 5], [4.0, 5.0]))]).createOrReplaceTempView("cases")
    one = "SELECT n FROM cases MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B) " \
          "DEFINE A AS mask = 1, B AS mask = 2 MEASURES COUNT(*) AS n) AS m"
    two = (one.replace("MEASURES COUNT(*) AS n)", "MEASURES COUNT(*) AS n, SUM(B.i) AS s)")
           .replace("SELECT n", "SELECT s"))
    plan = sparkseq.plan_workload(spark, f"{one};{two}")
    assert [len(g.members) for g in plan.groups] == [2]
    first, second = sparkseq.workload(spark, f"{one};{two}")
    # all rows are one partition: A at 1, 1, 1 (ts), B at 2, 3, 5 -> 2 A rows at ts 1 before 3 Bs = 6
    assert [tuple(r) for r in first.collect()] == [(6,)]
    assert [tuple(r) for r in second.collect()] == [(2 * (2 + 3 + 5),)]


def test_operators_with_predicates_or_strategies_run_alone(spark) -> None:  # noqa: ANN001
    events_frame(spark, [oracle.Events([1, 2, 3], [1, 2, 2], ([1, 2, 3], [1.0, 2.0, 3.0]))]
                 ).createOrReplaceTempView("cases")
    plain = "SELECT n FROM cases MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(A, B) " \
            "DEFINE A AS mask = 1, B AS mask = 2 MEASURES COUNT(*) AS n) AS m"
    where = plain.replace("MEASURES", "WHERE B.i > A.i + 1 MEASURES")
    strategy = plain.replace("MEASURES", "STRATEGY SKIP TILL NEXT MATCH MEASURES")
    script = ";".join([plain, where, strategy, plain])
    assert [len(g.members) for g in sparkseq.plan_workload(spark, script).groups] == [2]  # the two plain ones
    counts = [f.collect()[0].n for f in sparkseq.workload(spark, script)]
    assert counts == [2, 1, 1, 2]  # A(1)->B(2), A(1)->B(3); i: 3 > 1 + 1 only; next match: B(2) only


def test_a_view_replaced_mid_script_is_read_as_it_is_then(spark) -> None:  # noqa: ANN001
    """Schemas are read once per script while only queries run (sparkseq.statements.scripts.evict_changed):
    a statement that replaces the view makes the next one read it again — here its
    DEFINE column only exists in the new view."""
    events_frame(spark, [oracle.Events([1, 2, 3], [1, 2, 2], ([1, 2, 3], [1.0, 2.0, 3.0]))]
                 ).createOrReplaceTempView("cases")
    spark.sql("CREATE OR REPLACE TEMP VIEW shifting AS SELECT g, ts, mask FROM cases")
    query = "SELECT n FROM shifting MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(A, B) " \
            "DEFINE A AS {a}, B AS mask = 2 MEASURES COUNT(*) AS n) AS m"
    script = ";\n".join([query.format(a="mask = 1"), query.format(a="mask = 1"),
                         "CREATE OR REPLACE TEMP VIEW shifting AS SELECT g, ts, mask, mask * 10 AS tens FROM cases",
                         query.format(a="tens = 10")])
    try:
        for run in (sparkseq.workload, sparkseq.sql):
            spark.sql("CREATE OR REPLACE TEMP VIEW shifting AS SELECT g, ts, mask FROM cases")
            frames = run(spark, script) if run is sparkseq.workload else [
                f for _, f in sparkseq.statements.sql_api.run_statements(spark, script)]
            assert [frames[i].collect()[0].n for i in (0, 1, 3)] == [2, 2, 2], run.__name__
    finally:
        spark.catalog.dropTempView("shifting")


def test_a_workload_runs_again_on_new_data_and_is_released(spark) -> None:  # noqa: ANN001
    one = "SELECT n FROM again MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(A, B) " \
          "DEFINE A AS mask = 1, B AS mask = 2 MEASURES COUNT(*) AS n) AS m"
    script = f"{one};\n{one.replace('SEQ(A, B)', 'SEQ(A, B, B)')}"
    rows = oracle.Events([1, 2, 3], [1, 2, 2], ([1, 2, 3], [1.0, 2.0, 3.0]))
    events_frame(spark, [rows]).createOrReplaceTempView("again")
    assert [f.collect()[0].n for f in sparkseq.workload(spark, script)] == [2, 1]
    more = oracle.Events([1, 2, 3, 4], [1, 1, 2, 2], ([1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0]))
    events_frame(spark, [more]).createOrReplaceTempView("again")
    assert [f.collect()[0].n for f in sparkseq.workload(spark, script)] == [4, 2]  # recomputed, not reused
    more = oracle.Events([1, 2, 3, 4, 5], [1, 1, 2, 2, 2], ([1, 2, 3, 4, 5], [1.0] * 5))
    events_frame(spark, [more]).createOrReplaceTempView("again")
    assert [f.collect()[0].n for f in sparkseq.workload(spark, script)] == [6, 6]
    table = sparkseq.plan_workload(spark, script).table(0)
    kept = spark.table(table)
    assert kept.storageLevel.useMemory
    assert sparkseq.release_workload(spark, script) == [table]
    assert not spark.catalog.tableExists(table) and not (kept.storageLevel.useMemory or kept.storageLevel.useDisk)
    assert sparkseq.release_workload(spark, script) == []


def test_the_session_jit_compiles_the_wide_row_masks_of_a_group(spark) -> None:  # noqa: ANN001
    """A group over many symbols ORs one CASE WHEN per symbol into the row mask; Spark's
    generated method for it exceeds HotSpot's 8,000-byte compile limit, so sparkseq's
    sessions lift the limit (sparkseq.session.JIT_HUGE_METHODS; bench/sharing.py's
    funnels read 2 M rows 10x slower without it)."""
    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert "-XX:-DontCompileHugeMethods" in list(runtime.getInputArguments())


@pytest.mark.parametrize("order_type", ["TIMESTAMP", "TIMESTAMP_NTZ", "INT"])
def test_window_bounds_of_shared_members_equal_their_own_rewrite(spark, order_type: str) -> None:  # noqa: ANN001
    """The cached result keeps window starts only; each member's window_end is its start plus
    its own WITHIN, in the ORDER BY column's type — as each statement alone returns it."""
    ts = {"TIMESTAMP": "timestamp_seconds(t)", "TIMESTAMP_NTZ": "CAST(timestamp_seconds(t) AS TIMESTAMP_NTZ)",
          "INT": "t"}[order_type]
    spark.sql(f"CREATE OR REPLACE TEMP VIEW bounded AS SELECT g, {ts} AS ts, kind FROM VALUES "
              + ", ".join(f"({g}, {t}, '{k}')" for g, t, k in [(1, 60, 'a'), (1, 100, 'b'), (1, 170, 'b'),
                                                              (2, 30, 'a'), (2, 95, 'a'), (2, 290, 'b')])
              + " AS v(g, t, kind)")
    interval = (lambda s: f"INTERVAL {s} SECONDS") if order_type != "INT" else str
    query = ("SELECT g, window_start, window_end, n FROM bounded MATCH_AGGREGATE (PARTITION BY g ORDER BY ts "
             "PATTERN SEQ(a, b) TYPE BY kind MEASURES COUNT(*) AS n WITHIN {w} SLIDE {s}) AS m")
    script = ";\n".join([query.format(w=interval(120), s=interval(60)), query.format(w=interval(200), s=interval(60))])
    assert len(sparkseq.plan_workload(spark, script).groups) == 1
    try:
        shared = [sorted(map(tuple, f.collect())) for f in sparkseq.workload(spark, script)]
        alone = [sorted(map(tuple, f.collect())) for _, f in sparkseq.statements.sql_api.run_statements(spark, script)]
        assert shared == alone and all(shared)
        assert shared[0] != shared[1]  # the two WITHINs give other window ends
    finally:
        sparkseq.release_workload(spark, script)
        spark.catalog.dropTempView("bounded")


# --- all results from one job -----------------------------------------------------------------


def query(i: int, plan: Plan) -> str:
    """Statement ``i`` as a query of ``plan`` (its rows are a result of the workload)."""
    bounds = ["window_start", "window_end"] if plan.slide else []
    measures = [f"`{m.name}`" for m in plan.measures]
    return f"SELECT {', '.join(['g', *bounds, *measures])} FROM {match_aggregate(plan, alias=f'm{i}')}"


def types(frame: DataFrame) -> list[tuple]:
    """Column names and types (a written result reads back with every column nullable)."""
    return [(field.name, field.dataType) for field in frame.schema.fields]


def rows(table: pa.Table) -> list[tuple]:
    """A result's rows in a canonical order."""
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


@SETTINGS
@given(data=st.data(), count=st.integers(2, 4))
def test_one_job_results_equal_the_oracle_and_the_write_path_too(spark, data, count: int, tmp_path) -> None:  # noqa: ANN001
    workload = [data.draw(plans(sql=True)) for _ in range(count)]
    widest = max(workload, key=lambda p: len(p.symbols))
    groups = data.draw(st.lists(events(widest), min_size=1, max_size=12))
    groups = [ev for ev in groups if all(oracle.cheap(p, ev) for p in workload)]
    events_frame(spark, groups).createOrReplaceTempView("cases")
    script = ";\n".join(query(i, p) for i, p in enumerate(workload))
    try:
        results = sparkseq.collect_workload(spark, script)
        written = sparkseq.workload(spark, script, output=tmp_path / "out", overwrite=True)
        for p, result, frame in zip(workload, results, written):
            assert result.arrow is not None and result.arrow.column_names == result.frame.columns
            assert_same(p, got(p, result.arrow.to_pylist()), expected(p, groups))
            assert_same(p, got(p, frame.collect()), expected(p, groups))
            assert types(frame) == types(result.frame)
    finally:
        sparkseq.release_workload(spark, script)


def pair(first: str, second: str) -> str:
    """A COUNT(*) statement of SEQ(first, second) over ``cases`` (A, B, C: mask 1, 2, 4)."""
    bit = {"A": 1, "B": 2, "C": 4}
    return (f"SELECT g, n FROM cases MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ({first}, {second}) "
            f"DEFINE {first} AS mask = {bit[first]}, {second} AS mask = {bit[second]} MEASURES COUNT(*) AS n) AS m")


def test_the_results_of_all_statements_are_one_job(spark) -> None:  # noqa: ANN001
    events_frame(spark, [oracle.Events([1, 2, 3], [1, 2, 4], ([1, 2, 3], [1.0, 2.0, 3.0]))]).createOrReplaceTempView(
        "cases")
    script = ";\n".join([pair("A", "B"), pair("A", "C"), pair("B", "C"), "SELECT g, g, ts FROM cases WHERE ts = 2"])
    try:
        ran = [frame for _, frame in sparkseq.statements.workloads.run_workload(spark, script)]  # the pass, cached
        spark.table(sparkseq.plan_workload(spark, script).table(0)).count()  # lazily: by its first reader
        before = jobs_started(spark)
        tables = collect_results(list(enumerate(ran)))
        assert jobs_started(spark) == before + 1
        # to_pylist keeps one "g" of the two in its dict
        assert [t.to_pylist() for t in tables.values()] == [[{"g": 0, "n": 1}]] * 3 + [[{"g": 0, "ts": 2}]]
        assert tables[3].column_names == ["g", "g", "ts"]  # duplicate names kept
    finally:
        sparkseq.release_workload(spark, script)


@pytest.fixture()
def kinds(spark):  # noqa: ANN001, ANN201
    spark.sql("CREATE OR REPLACE TEMP VIEW kinds AS SELECT g, timestamp_seconds(t) AS ts, kind, v FROM VALUES "
              + ", ".join(f"({g}, {t}, '{k}', {v})" for g, t, k, v in [
                  (1, 60, 'a', 1.5), (1, 100, 'b', 2.0), (1, 170, 'b', 3.0), (1, 200, 'c', 4.0),
                  (2, 30, 'a', 5.0), (2, 95, 'a', 6.0), (2, 290, 'b', 7.0), (2, 300, 'c', 8.0)])
              + " AS v(g, t, kind, v)")
    spark.createDataFrame([("a", "ab"), ("b", "ab"), ("c", "cc")], "child string, parent string") \
        .createOrReplaceTempView("kind_groups")
    yield "kinds"
    for view in ("kinds", "kind_groups", "wl_view"):
        spark.catalog.dropTempView(view)


VARIED = [
    # shared, SLIDE, timestamp bounds
    "SELECT g, window_start, window_end, n FROM kinds MATCH_AGGREGATE (PARTITION BY g ORDER BY ts "
    "PATTERN SEQ(a, b) TYPE BY kind MEASURES COUNT(*) AS n WITHIN INTERVAL 120 SECONDS "
    "SLIDE INTERVAL 60 SECONDS) AS m",
    # shared, no window, other measures: another layout of result columns
    "SELECT g, n, s, lo FROM kinds MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(a, b+) TYPE BY kind "
    "MEASURES COUNT(*) AS n, SUM(b.v) AS s, MIN(a.v) AS lo) AS m",
    # a hierarchy's concept
    "SELECT g, n FROM kinds MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(ab, cc) "
    "TYPE BY kind HIERARCHY groups MEASURES COUNT(*) AS n) AS m",
    # over a subquery: runs alone, its rows in the same result job
    "SELECT g, n FROM (SELECT * FROM kinds WHERE g = 2) MATCH_AGGREGATE (PARTITION BY g ORDER BY ts "
    "PATTERN SEQ(a, c) TYPE BY kind MEASURES COUNT(*) AS n) AS m",
    "CREATE OR REPLACE TEMP VIEW wl_view AS SELECT g, n FROM kinds MATCH_AGGREGATE (PARTITION BY g ORDER BY ts "
    "PATTERN SEQ(a, c) TYPE BY kind MEASURES COUNT(*) AS n) AS m",
    "SELECT w.g, w.n, k.kind FROM wl_view w JOIN kinds k ON k.g = w.g AND k.kind = 'c'",
    "SELECT g, n FROM kinds MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(c, a) TYPE BY kind "
    "MEASURES COUNT(*) AS n) AS m WHERE n > 0",  # no rows
    "SELECT kind, count(*) AS c FROM kinds GROUP BY kind",
]


def test_varied_scripts_give_each_statements_own_result(spark, kinds: str, tmp_path) -> None:  # noqa: ANN001
    sparkseq.register_hierarchy(spark, "groups", "kind_groups")
    script = ";\n".join(VARIED)
    try:
        statements = split_statements(script)
        alone = [(s, f.toArrow() if s.is_query else None)
                 for s, (_, f) in zip(statements, sparkseq.statements.sql_api.run_statements(spark, script))]
        assert len(sparkseq.plan_workload(spark, script).groups) == 1
        results = sparkseq.collect_workload(spark, script)
        written = sparkseq.workload(spark, script, output=tmp_path / "out")
        assert [r.arrow is None for r in results] == [s.keyword == "CREATE" for s, _ in alone]
        for (statement, own), result, frame in zip(alone, results, written):
            if own is None:
                continue
            assert result.arrow.schema == own.schema, statement.text
            assert rows(result.arrow) == rows(own), statement.text
            assert types(frame) == types(result.frame) and rows(frame.toArrow()) == rows(own), statement.text
        assert results[6].arrow.num_rows == 0  # no rows: an empty table of its columns
        assert all(results[i].arrow.num_rows > 0 for i in (0, 1, 2, 3, 5, 7))
    finally:
        sparkseq.release_workload(spark, script)
        sparkseq.drop_hierarchy(spark, "groups")


def test_queries_before_a_write_are_collected_before_it(spark) -> None:  # noqa: ANN001
    spark.sql("DROP TABLE IF EXISTS wl_written")
    count = "SELECT count(*) AS c FROM wl_written"
    script = ";\n".join(["CREATE TABLE wl_written (x INT) USING parquet", "INSERT INTO wl_written VALUES (1)", count,
                         "CREATE OR REPLACE TEMP VIEW wl_seen AS SELECT * FROM wl_written", count,
                         "INSERT INTO wl_written VALUES (2), (3)", count])
    try:
        results = sparkseq.collect_workload(spark, script)
        assert [r.arrow.to_pylist() for r in results if r.arrow is not None] == [[{"c": 1}], [{"c": 1}], [{"c": 3}]]
    finally:
        spark.sql("DROP TABLE IF EXISTS wl_written")
        spark.catalog.dropTempView("wl_seen")


def test_the_write_path_refuses_existing_output_before_any_job(spark, tmp_path) -> None:  # noqa: ANN001
    events_frame(spark, [oracle.Events([1, 2, 3], [1, 2, 4], ([1, 2, 3], [1.0, 2.0, 3.0]))]).createOrReplaceTempView(
        "cases")
    script = f"{pair('A', 'B')};\n{pair('A', 'C')}"
    output = tmp_path / "out"
    try:
        first = sparkseq.workload(spark, script, output=output)
        assert [f.collect()[0].n for f in first] == [1, 1]
        assert sorted(p.name for p in output.iterdir() if p.is_dir()) == [
            f"{STATEMENT_COLUMN}=0", f"{STATEMENT_COLUMN}=1"]
        before = jobs_started(spark)
        with pytest.raises(FileExistsError, match="exists"):
            sparkseq.workload(spark, script, output=output)
        assert jobs_started(spark) == before
        again = sparkseq.workload(spark, pair("B", "C"), output=output, overwrite=True)
        assert [f.collect()[0].n for f in again] == [1]
        assert sorted(p.name for p in output.iterdir() if p.is_dir()) == [f"{STATEMENT_COLUMN}=0"]
    finally:
        sparkseq.release_workload(spark, script)


def test_errors_of_one_job_results_are_those_of_each_statement(spark) -> None:  # noqa: ANN001
    events_frame(spark, [oracle.Events([1, 2], [1, 2], ([1, 2], [1.0, 2.0]))]).createOrReplaceTempView("cases")
    good = "SELECT * FROM cases MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(A, B) " \
           "DEFINE A AS mask = 1, B AS mask = 2) AS m"
    before = jobs_started(spark)
    with pytest.raises(UnknownColumnError, match="maks") as caught:
        sparkseq.collect_workload(spark, f"{good};\n{good};\n{good.replace('B AS mask', 'B AS maks')}")
    assert caught.value.position is not None and caught.value.position.line == 3
    assert jobs_started(spark) == before
    spark.range(70).selectExpr("'eu' AS region", "'cust-42' AS customer", "id AS ts", "'A' AS type") \
        .union(spark.range(3).selectExpr("'eu'", "'small'", "id", "'A'")).createOrReplaceTempView("many")
    overflow = "SELECT customer, n FROM many MATCH_AGGREGATE (PARTITION BY region, customer ORDER BY ts " \
               "PATTERN {} TYPE BY type MEASURES COUNT(*) AS n) AS m"
    script = f"{overflow.format('SEQ(A+)')};\n{overflow.format('SEQ(A, A+)')}"
    assert len(sparkseq.plan_workload(spark, script).groups) == 1
    try:
        with pytest.raises(SparkRuntimeException) as err:
            sparkseq.collect_workload(spark, script)
        assert "in partition ('eu', 'cust-42')" in str(err.value)  # as the shared pass names it
        assert "does not fit BIGINT" in str(err.value)
    finally:
        sparkseq.release_workload(spark, script)
        spark.catalog.dropTempView("many")


def test_statements_selecting_columns_are_routed_from_one_uncached_pass(spark, kinds: str, tmp_path,
                                                                        monkeypatch) -> None:  # noqa: ANN001
    """Statements that only select their operator's columns (renamed, reordered, ``*``) get
    their rows from one select over the group's pass, which is not cached, and are not run
    themselves; one statement doing more (a WHERE) makes the group cached, as before."""
    sparkseq.register_hierarchy(spark, "groups", "kind_groups")
    plain = [VARIED[0].replace("SELECT g, window_start, window_end, n", "SELECT n AS count, m.window_end, G"),
             VARIED[1].replace("SELECT g, n, s, lo", "SELECT *"), VARIED[2]]
    mixed = [*plain, VARIED[6]]
    run = []  # the statements compiled and handed to spark.sql by the workload's run

    def counted(spark, text, item, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        run.append(item.number)
        return run_checked(spark, text, item, *args, **kwargs)

    monkeypatch.setattr(sparkseq.statements.workloads, "run_checked", counted)
    own_rows: dict[str, pa.Table] = {}  # each statement's rows alone, by its text (both scripts hold plain's)
    try:
        for script, cached in ((";\n".join(plain), False), (";\n".join(mixed), True)):
            delivery = ("statement(s) 4 do more than select their operator's columns" if cached else
                        "routes each row to its statement; the statements are not run on their own")
            assert delivery in explain_workload(spark, script)
            alone = list(sparkseq.statements.sql_api.run_statements(spark, script))
            run.clear()
            results = sparkseq.collect_workload(spark, script)
            # routed statements are not run: the check found their result columns
            assert run == ([0, 1, 2, 3] if cached else [])
            assert spark.catalog.isCached(sparkseq.plan_workload(spark, script).table(0)) is cached
            written = sparkseq.workload(spark, script, output=tmp_path / "out", overwrite=True)
            for (text, own), result, frame in zip(alone, results, written):
                if text not in own_rows:
                    own_rows[text] = own.toArrow()
                expected_rows = own_rows[text]
                assert result.arrow.schema == expected_rows.schema and rows(result.arrow) == rows(expected_rows)
                assert types(result.frame) == types(own) and rows(result.frame.toArrow()) == rows(expected_rows)
                assert types(frame) == types(own) and rows(frame.toArrow()) == rows(expected_rows)
            assert all(r.arrow.num_rows > 0 for r in results[:3])
            sparkseq.release_workload(spark, script)
    finally:
        sparkseq.drop_hierarchy(spark, "groups")


KEYED = ("SELECT {key}, window_start, n FROM keyed MATCH_AGGREGATE (PARTITION BY {key} ORDER BY ts "
         "PATTERN {pattern} TYPE BY type MEASURES COUNT(*) AS n WITHIN 20 SLIDE 10) AS m")


@pytest.mark.parametrize(("key", "calls"), [
    ("kd", "all partitions of a call evaluated at once, laid end to end"),
    ("ks, kt", "all partitions of a call evaluated at once, laid end to end"),
    ("kdate, ki", "all partitions of a call evaluated at once, laid end to end"),
    ("kl", "one engine call per partition (grouped by the partition keys)"),
])
def test_keys_of_every_type_give_each_statement_its_own_partitions(spark, key: str, calls: str) -> None:  # noqa: ANN001
    """Partition keys the sorted pass compares in Arrow (doubles with NaN, -0.0, 0.0 and
    NULL; strings with NULL and ''; timestamps; dates and integers) and a string of a
    case-insensitive collation (the grouped pass): each statement's rows equal its rows
    alone, and EXPLAIN names how the pass calls the engine."""
    spark.range(240).selectExpr(
        "element_at(array(CAST('NaN' AS DOUBLE), -0.0D, 0.0D, 1.5D, CAST(NULL AS DOUBLE)), "
        "CAST(id % 5 AS INT) + 1) AS kd",
        "element_at(array(CAST(NULL AS STRING), '', 'a'), CAST(id % 3 AS INT) + 1) AS ks",
        "timestamp_seconds(id % 2 * 1000) AS kt",
        "date_add(DATE'2026-01-01', CAST(id % 4 AS INT)) AS kdate",
        "CAST(id % 7 AS INT) AS ki",
        "CAST(element_at(array('a', 'A', 'b'), CAST(id % 3 AS INT) + 1) AS STRING COLLATE UTF8_LCASE) AS kl",
        "id DIV 3 AS ts", "IF(id % 4 < 2, 'A', 'B') AS type").createOrReplaceTempView("keyed")
    statements = [KEYED.format(key=key, pattern=p) for p in ("SEQ(A, B)", "SEQ(B, A)", "SEQ(A, A, B)")]
    script = ";\n".join(statements)
    assert calls in explain_workload(spark, script)

    def rows(table: pa.Table) -> list[str]:  # NaN equal to NaN, -0.0 and 0.0 both 0.0
        return sorted(repr([v + 0.0 if isinstance(v, float) and v == v else v if not isinstance(v, float)
                            else "NaN" for v in r.values()]) for r in table.to_pylist())

    try:
        results = sparkseq.collect_workload(spark, script)
        for statement, result in zip(statements, results):
            own = sparkseq.sql(spark, statement).toArrow()
            assert result.arrow is not None and result.arrow.schema == own.schema
            assert rows(result.arrow) == rows(own) and own.num_rows > 10
    finally:
        sparkseq.release_workload(spark, script)


def test_a_count_overflow_in_one_of_many_partitions_laid_end_to_end_names_it(spark) -> None:  # noqa: ANN001
    """Sliding-window members over several partitions in one engine call: the partition
    whose count does not fit BIGINT is found and named, as one partition per call would."""
    spark.range(70).selectExpr("'eu' AS region", "'cust-42' AS customer", "id AS ts", "'A' AS type") \
        .union(spark.range(3).selectExpr("'eu'", "'small'", "id", "'A'")) \
        .union(spark.range(3).selectExpr("'us'", "'other'", "id", "'A'")).createOrReplaceTempView("many")
    overflow = "SELECT customer, n FROM many MATCH_AGGREGATE (PARTITION BY region, customer ORDER BY ts " \
               "PATTERN {} TYPE BY type MEASURES COUNT(*) AS n WITHIN 100 SLIDE 100) AS m"
    script = f"{overflow.format('SEQ(A+)')};\n{overflow.format('SEQ(A, A+)')}"
    assert "laid end to end" in explain_workload(spark, script)
    from udafs.workers.shared import sorted_pass

    group = sparkseq.plan_workload(spark, script).groups[0]
    events, (ts, mask, *values) = group.events()
    frame = spark.sql(events.sql(dialect="spark")).orderBy("region", "customer", ts)
    body = sorted_pass(group.plan.to_json(), ["region", "customer"], ts, mask, values, (*group.output_names, "e"))
    out = pa.Table.from_batches(list(body(iter(frame.toArrow().to_batches()))))  # all three partitions in one call
    errors = [(r["customer"], r["e"]) for r in out.to_pylist() if r["e"] is not None]
    assert [c for c, _ in errors] == ["cust-42"] and "does not fit BIGINT" in errors[0][1]
    assert {r["customer"] for r in out.to_pylist() if r["e"] is None} == {"small", "other"}
    try:
        with pytest.raises(SparkRuntimeException) as err:
            sparkseq.collect_workload(spark, script)
        assert "in partition ('eu', 'cust-42')" in str(err.value)
        assert "does not fit BIGINT" in str(err.value)
    finally:
        sparkseq.release_workload(spark, script)
        spark.catalog.dropTempView("many")
