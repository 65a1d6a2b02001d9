"""Rows per symbol of a sharing group's source, for the plan-time timeline decision: one Spark job.

:func:`collect` runs the one aggregate of :func:`sql_rewrites.generation.shared.statistics_sql`
over the group's source — over a sample of it when Spark estimates the source as large
(:func:`sql_rewrites.planning.symbol_statistics.sample_every`) — and returns the rows of each
symbol (its DEFINE / TYPE BY condition) and the number of partitions as a
:class:`~sql_rewrites.planning.symbol_statistics.SymbolStatistics`.

**Reused while the source is unchanged**, as a database keeps a table's statistics until
the table changes: the statistics of the last :data:`RECENT_SOURCES` sources are kept, and
a later run (or EXPLAIN, then the run) over the same source reads them instead of running
the job again (``SymbolStatistics.reused``; EXPLAIN says so). The same source means the
same statistics query, the same optimised plan of the source (Spark's canonical
``semanticHash``: the same views, filters and literal data) and the same input files
(Spark's file listing of the source: files written, added or removed make new names).
Sources over no files (in-memory data, ranges, JDBC) and sources Spark calls
nondeterministic are never reused. Statistics only choose among plans that all give the
exact answer (which members share a timeline), so even statistics that no longer
describe the data could only make a run slower, never change a result. :func:`recent`
gives the kept statistics without running anything (``sparkseq.workload``, whose
DataFrames are read later, runs no job before its rows are asked for).

The job evaluates every DEFINE condition of the group: an error it raises (a malformed
value cast under ANSI mode) points at the condition in the script as written
(:func:`sparkseq.spark.jvm_parser.with_origins`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass

from pyspark.sql import SparkSession

from sparkseq.running.execution_paths import source_size
from sparkseq.spark.jvm_parser import with_origins
from sql_rewrites.generation.shared import SharedGroup, statistics_sql, symbol_keys
from sql_rewrites.planning.planner import KeyStatistics, SourceSize
from sql_rewrites.planning.symbol_statistics import SymbolStatistics, sample_every
from sql_rewrites.planning.timesplit import MAX_KEYS_REPORTED

#: How many sources' statistics are kept for reuse (the least recently used go first).
RECENT_SOURCES = 64

_recent: OrderedDict[tuple, Measured] = OrderedDict()
_recent_lock = threading.Lock()


@dataclass(frozen=True)
class Measured:
    """What one statistics job measured of a sharing group's source: rows per symbol of
    every member (``symbols``), and the keys over the threshold it was asked for, the
    largest first (``big_keys``; None: not asked)."""

    symbols: SymbolStatistics
    big_keys: tuple[KeyStatistics, ...] | None = None

    def of(self, group: SharedGroup) -> SymbolStatistics:
        """The rows per symbol of ``group`` (the members of the measured group that share
        the pass: a subset of its symbols)."""
        measured = self.symbols
        rows = {key: measured.rows_of(key) for key in symbol_keys(group)}
        return dataclasses.replace(measured, rows=tuple(rows.items()))


def collect(spark: SparkSession, group: SharedGroup, *, reuse: bool = True, text: str | None = None,
            size: SourceSize | None = None) -> SymbolStatistics:
    """Rows per symbol and partitions of the group's source (one job, or none when an
    earlier job's are reused; ``reuse=False`` always runs it; module docstring). ``text``:
    the script the members were compiled from, where an error of the job is placed;
    ``size``: Spark's estimate of the source, when already asked."""
    return measure(spark, group, reuse=reuse, text=text, size=size).symbols


def measure(spark: SparkSession, group: SharedGroup, *, reuse: bool = True, text: str | None = None,
            size: SourceSize | None = None, big_key_rows: int | None = None) -> Measured:
    """:func:`collect`, and with ``big_key_rows`` from the same scan the keys with more
    rows than that (row count, time range, key hash; at most
    :data:`~sql_rewrites.planning.timesplit.MAX_KEYS_REPORTED`, the largest): what a sharing
    group's paths and its timelines are decided from, one job
    (:func:`sql_rewrites.generation.shared.statistics_sql`)."""
    sql, every, key = _query(spark, group, reuse, size, big_key_rows)
    if key is not None:
        kept = _kept(key)
        if kept is not None:
            return kept
    row = spark.sql(with_origins(spark, sql, group.members, text) if text is not None else sql).first()
    assert row is not None  # an aggregate without GROUP BY has one row
    counts = {key: int(row[f"c{k}"] or 0) for k, key in enumerate(symbol_keys(group))}
    statistics = SymbolStatistics.from_sample(counts, int(row["partitions"] or 0), every)
    big = None
    if big_key_rows is not None:
        keyed = bool(group.members[0].query.partition_keys)
        found = sorted((KeyStatistics(int(k["n"]), int(k["t0"]), int(k["t1"]), int(k["h"]) if keyed else None)
                        for k in row["big"] or [] if k["t0"] is not None), key=lambda k: -k.rows)
        big = tuple(found[:MAX_KEYS_REPORTED])
    measured = Measured(statistics, big)
    if key is not None:
        with _recent_lock:
            _recent[key] = measured
            while len(_recent) > RECENT_SOURCES:
                _recent.popitem(last=False)
    return measured


def recent(spark: SparkSession, group: SharedGroup) -> SymbolStatistics | None:
    """The statistics :func:`collect` keeps for the group's source as it is now, or None;
    no job (module docstring)."""
    *_, key = _query(spark, group, True)
    kept = None if key is None else _kept(key)
    return None if kept is None else kept.symbols


def _query(spark: SparkSession, group: SharedGroup, reuse: bool, size: SourceSize | None = None,
           big_key_rows: int | None = None) -> tuple[str, int, tuple | None]:
    """The statistics query of the group, its sampling (one row in how many), and the key
    of its result (None: not reused)."""
    size = source_size(spark, group.members[0].query) if size is None else size
    every = sample_every(size.bytes, size.rows)
    sql = statistics_sql(group, sample_every=every, big_key_rows=big_key_rows)
    return sql, every, _source_key(spark, group, sql) if reuse else None


def _kept(key: tuple) -> Measured | None:
    with _recent_lock:
        kept = _recent.get(key)
        if kept is None:
            return None
        _recent.move_to_end(key)
        return dataclasses.replace(kept, symbols=dataclasses.replace(kept.symbols, reused=True))


def _source_key(spark: SparkSession, group: SharedGroup, sql: str) -> tuple | None:
    """What identifies the group's source and its data (module docstring), or None when
    that cannot be told: no files, a nondeterministic plan, no JVM session (Connect)."""
    try:
        frame = spark.sql(group.members[0].query.scoped_sql())
        execution = frame._jdf.queryExecution()
        if not execution.analyzed().deterministic():  # as written (the optimiser may drop e.g. rand() < 2)
            return None
        plan = execution.optimizedPlan()
        files = tuple(sorted(frame.inputFiles()))
        if not files:
            return None
        return spark.sparkContext.applicationId, sql, int(plan.semanticHash()), files
    except Exception:  # noqa: BLE001 - reuse is an optimisation only: without a key, the job runs
        return None


__all__ = ["RECENT_SOURCES", "Measured", "collect", "measure", "recent"]
