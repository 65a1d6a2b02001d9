"""Helpers for the live-stream tests: random partitions written as parquet files that a
Structured Streaming query reads one micro-batch at a time.

A *case* is a list of partitions (``oracle.Events``, group ``g``) whose engine times
become seconds after :data:`T0`. Every row gets an arrival time (its event time plus a
random delay); the rows are written in arrival order into a few files, one file per
micro-batch. Spark's watermark before a file is the largest event time among the rows
that reach it in earlier files, minus the delay (rows of no pattern symbol are
filtered out before the watermark, except for contiguity plans, which keep them);
rows that reach the stateful operator at or before it are late: Spark drops (and
counts) them, and they are left out of the expected answer — the batch MATCH_AGGREGATE
over every row that was not late. A last
file holds one row of partition :data:`FLUSH` far in the future, which moves the
watermark past every other row; that partition is left out of the comparison.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from tests.support import oracle
from tests.support.doubles import same_double
from udafs.plan import Plan

T0 = 1_704_067_200_000_000  # 2024-01-01 00:00:00 UTC, µs
SECOND = 1_000_000
FLUSH = -1
SCHEMA = "g INT, ts TIMESTAMP, mask BIGINT, i BIGINT, f DOUBLE, s DOUBLE"


def json_time(seconds: int) -> str:
    """The event time ``seconds`` after :data:`T0` as a JSON event file writes it (ISO 8601, UTC)."""
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (epoch + timedelta(microseconds=T0, seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Arrival:
    """Rows (one table for all partitions), the file of each row, and which rows are late."""

    table: pa.Table
    file_of: np.ndarray
    late: np.ndarray
    delay: int

    @property
    def files(self) -> int:
        return int(self.file_of.max()) + 1 if len(self.file_of) else 0


def arrival(plan: Plan, groups: Sequence[oracle.Events], delay: int, jitter: int, files: int,
            rng: np.random.Generator, every_row_passes: bool = False) -> Arrival:
    """Rows of ``groups`` in arrival order cut into ``files`` files, and their lateness
    (``every_row_passes``: every row is an instance of a pattern symbol, whatever its mask)."""
    rows = [(g, t, m, *(v[r] for v in ev.values)) for g, ev in enumerate(groups)
            for r, (t, m) in enumerate(zip(ev.ts, ev.mask))]
    n = len(rows)
    ts = np.array([r[1] for r in rows], dtype=np.int64)
    arrive = np.argsort(ts + rng.integers(0, jitter + 1, n), kind="stable")
    file_of = np.empty(n, dtype=np.int64)
    for f, part in enumerate(np.array_split(arrive, files)):
        file_of[part] = f
    passes = np.array([every_row_passes or plan.strategy.contiguous or bool(r[2] & plan.pattern_symbols_mask)
                       for r in rows], dtype=bool)
    late = np.zeros(n, dtype=bool)
    for f in range(1, files):
        seen = passes & (file_of < f)
        if seen.any():
            late |= passes & (file_of == f) & (ts <= ts[seen].max() - delay)
    columns = list(zip(*rows)) if rows else [[] for _ in range(3 + len(groups[0].values if groups else ()))]
    table = _table(columns, ts)
    return Arrival(table, file_of, late, delay)


def _table(columns: list, ts: np.ndarray) -> pa.Table:
    values = [list(c) for c in columns[3:]] + [[None] * len(ts)] * (3 - len(columns[3:]))
    return pa.table({
        "g": pa.array(columns[0], pa.int32()),
        "ts": pa.array(T0 + ts * SECOND, pa.timestamp("us", tz="UTC")),
        "mask": pa.array(columns[2], pa.int64()),
        "i": pa.array(values[0], pa.int64()),
        "f": pa.array(values[1], pa.float64()),
        "s": pa.array(values[2], pa.float64()),
    })


def write_files(a: Arrival, directory: Path, flush_mask: int) -> list[Path]:
    """One parquet file per micro-batch, plus the flush file last (not yet in ``directory``:
    each is moved in when its batch is due, see :func:`release`)."""
    staging = directory.parent / (directory.name + "_staging")
    staging.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in range(a.files):
        path = staging / f"part-{f:03d}.parquet"
        pq.write_table(a.table.filter(pa.array(a.file_of == f)), path)
        paths.append(path)
    far = int(a.table["ts"].to_numpy().astype("datetime64[us]").astype(np.int64).max()) if a.table.num_rows else T0
    flush = pa.table({"g": pa.array([FLUSH], pa.int32()),
                      "ts": pa.array([far + 10**6 * SECOND], pa.timestamp("us", tz="UTC")),
                      "mask": pa.array([flush_mask], pa.int64()), "i": pa.array([0], pa.int64()),
                      "f": pa.array([0.0]), "s": pa.array([0.0])})
    path = staging / f"part-{a.files:03d}.parquet"
    pq.write_table(flush, path)
    return [*paths, path]


def release(path: Path, directory: Path) -> None:
    """Move a finished file into the source directory (atomically, as a file source needs)."""
    os.replace(path, directory / path.name)


def accepted_view(spark: SparkSession, a: Arrival, name: str) -> None:
    """The rows that were not late, plus the flush row, as a batch temp view ``name``."""
    keep = pa.array(~a.late)
    table = a.table.filter(keep)
    spark.createDataFrame(table, SCHEMA).createOrReplaceTempView(name)  # not via pandas: it reads NaN as NULL


def rows_by_key(rows: Sequence[dict], windows: bool) -> dict[tuple, dict]:
    """Rows keyed by (g, window_start), without the flush partition; no key twice."""
    out: dict[tuple, dict] = {}
    for r in rows:
        if r["g"] == FLUSH:
            continue
        key = (r["g"], r.get("window_start") if windows else None)
        assert key not in out, f"output row {key} emitted twice"
        out[key] = r
    return out


def assert_rows_equal(have: dict[tuple, dict], want: dict[tuple, dict]) -> None:
    """Same keys and columns; exact values equal, floats close (summation order may differ),
    NaN and NULL where the batch has them."""
    assert sorted(have, key=repr) == sorted(want, key=repr)
    for key, w in want.items():
        h = have[key]
        assert sorted(h) == sorted(w)
        for name in w:
            hv, wv = h[name], w[name]
            if hv is None or wv is None:
                assert hv is None and wv is None, (key, name, hv, wv)
            elif isinstance(wv, float):
                assert same_double(hv, wv), (key, name, hv, wv)
            else:
                assert type(hv) is type(wv) and hv == wv, (key, name, hv, wv)


Collector = Callable[[object, int], None]


def collector(into: list[tuple[int, list[dict]]]) -> Collector:
    """A ``foreachBatch`` function keeping every batch's rows (with the batch id)."""
    def collect(frame: object, batch: int) -> None:
        into.append((batch, [r.asDict() for r in frame.collect()]))  # type: ignore[attr-defined]

    return collect


__all__ = ["Arrival", "arrival", "write_files", "release", "accepted_view", "rows_by_key", "assert_rows_equal",
           "collector", "T0", "SECOND", "FLUSH", "SCHEMA", "Decimal"]
