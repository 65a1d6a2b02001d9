"""The statistics of a workload's timeline decision, reused while the source is unchanged.

:mod:`sparkseq.running.statistics` keeps the statistics job's result of recent sources: a later run
or EXPLAIN over the same unchanged files reads them instead of running the job again, and
EXPLAIN says so; new files, another source, in-memory data or a nondeterministic source
run the job.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sparkseq
from sparkseq.running import statistics
from sparkseq.statements.workloads import explain_workload, plan_workload
from tests.sql_cases import jobs_started

STATEMENTS = [f"SELECT k, n FROM stats_source MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN {p} TYPE BY type "
              "MEASURES COUNT(*) AS n) AS m" for p in ("SEQ(a, b)", "SEQ(a, b, c)", "SEQ(a, c)")]
SCRIPT = ";\n".join(STATEMENTS)
ROWS = "SELECT CAST(id % 3 AS INT) AS k, timestamp_seconds(id) AS ts, element_at(array('a', 'b', 'c'), " \
       "CAST(id % 7 % 3 AS INT) + 1) AS type FROM range({start}, {end})"


def _write(spark, path: Path, start: int, end: int, mode: str = "overwrite") -> None:  # noqa: ANN001
    spark.sql(ROWS.format(start=start, end=end)).write.mode(mode).parquet(str(path))
    spark.read.parquet(str(path)).createOrReplaceTempView("stats_source")


def _counted_run(spark) -> tuple[int, list]:  # noqa: ANN001
    before = jobs_started(spark)
    try:
        results = [r.arrow for r in sparkseq.collect_workload(spark, SCRIPT)]
    finally:
        sparkseq.release_workload(spark, SCRIPT)
    return jobs_started(spark) - before, results


def test_an_unchanged_file_source_reuses_its_statistics_and_new_files_do_not(spark, tmp_path: Path) -> None:  # noqa: ANN001
    path = tmp_path / "events"
    _write(spark, path, 0, 300)
    explained = explain_workload(spark, SCRIPT)
    assert "rows per symbol from the statistics job (all rows)" in explained
    again = explain_workload(spark, SCRIPT)
    assert "rows per symbol from an earlier run's statistics job over the same unchanged source (all rows)" in again
    assert again.replace("an earlier run's statistics job over the same unchanged source", "the statistics job") \
        == explained  # the same decision

    reusing, first = _counted_run(spark)
    _write(spark, path, 0, 300, mode="append")  # more files: the same view name, other data
    fresh, second = _counted_run(spark)
    assert fresh > reusing  # the statistics job (its stages), once more
    reused, third = _counted_run(spark)
    assert reused == reusing
    assert [t.num_rows for t in second] == [t.num_rows for t in third] and second != first


@pytest.mark.parametrize("source", ["in memory", "nondeterministic"])
def test_sources_without_files_or_nondeterministic_run_the_job_every_time(spark, tmp_path: Path, source: str) -> None:  # noqa: ANN001
    if source == "in memory":
        spark.createDataFrame(spark.sql(ROWS.format(start=0, end=100)).toPandas()).createOrReplaceTempView(
            "stats_source")
    else:
        _write(spark, tmp_path / "events", 0, 100)
        spark.sql("SELECT * FROM stats_source WHERE rand() < 2").createOrReplaceTempView("stats_source_maybe")
        spark.table("stats_source_maybe").createOrReplaceTempView("stats_source")
    [group] = plan_workload(spark, SCRIPT).groups
    first, second = statistics.collect(spark, group), statistics.collect(spark, group)
    assert not first.reused and not second.reused and first == second
