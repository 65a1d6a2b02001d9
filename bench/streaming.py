"""Live MATCH_AGGREGATE on local Spark: sustained events/s at increasing rates.

One local session, one run. ``--keys`` partitions (customers) click through
view / cart / rec / buy / other; the statement is the funnel
``SEQ(view, cart, !rec, buy) ... WITHIN 1 MINUTE SLIDE 10 SECONDS``. Event time runs
``--speedup`` times faster than the wall clock (48: a day of event time in 30 minutes),
so windows close and state must be evicted as in a long run.

Rate phases: for each rate R of ``--rates`` the feeder moves one pre-written parquet
file of R events into the source directory every second, for ``--seconds`` seconds;
the query runs micro-batches back to back (a file source, a watermark of 5 s, the
RocksDB state store, a parquet sink). Per phase it prints the input rate, the rate the
query processed, micro-batch latency (p50, p95 of the trigger's duration), the backlog
at the phase's end (rows released but not yet read, in files of the phase's size: a growing backlog means the rate
is not sustained) and the state (rows = buckets with state, bytes) at the phase's end.

Reference, same run: the batch MATCH_AGGREGATE (``sparkseq.sql`` over a static read of
the same files), its events/s, and the check that every window the stream emitted
equals the batch row for it.

``--operators``: the same events through these shapes, each as one AvailableNow query
reading one file per micro-batch (median of ``--repeat``, runs interleaved): the
stateless floor (shuffle by key hash + an Arrow map that only counts rows: the floor of a
Python operator), the JVM's stateless floor (shuffle by key into the session's shuffle
partitions, each row consumed by a no-op sink: no Python, no state), Spark's own stateful
``groupBy(k).count()`` (a state store per shuffle partition, no Python), sparkseq's
two live operators — in the JVM (``sparkseq/jvm/SparkSeqLive.java``, ``flatMapGroupsWithState``
per key, ``sparkseq.path=jvm``) and in Python (``applyInPandasWithState`` per bucket of
keys, ``sparkseq.path=grouped``) —, ``applyInPandasWithState`` per key and
``transformWithStateInPandas`` per key (both with a function that only counts rows; the
latter needs ``protobuf``). Ratios are to both floors, as medians and per round.
``--only`` keeps the shapes whose names contain one of its words (the two floors always run).
``--path`` chooses the live operator
of the rate phases (default ``auto``: the JVM one where it loads).

Last, a summary: the highest rate sustained (backlog of at most the file in flight)
against the targets (0.5 M events/s, p95 latency < 2 s) and its ratio to the batch
events/s; with ``--flink PYTHON`` (an interpreter with ``apache-flink``, e.g. a
bench-only venv; not a sparkseq dependency) also Flink SQL's MATCH_RECOGNIZE over the
first ``--flink-files`` files (bench/flink_match_recognize.py: what it computes and
why that is less than sparkseq computes) and the ratio to it.

Usage: .venv/bin/python bench/streaming.py [--keys K] [--rates R1,R2,...] [--seconds S]
       [--speedup X] [--path auto|jvm|grouped] [--flink PYTHON [--flink-files N]]
       [--operators [--events N] [--files F] [--repeat R] [--only WORD,...]]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import SparkSession  # noqa: E402

import sparkseq  # noqa: E402
from sparkseq.running import live  # noqa: E402
from sparkseq.spark.session import scratch_dir  # noqa: E402

START = 1_714_521_600_000_000  # 2024-05-01 00:00:00 UTC in microseconds
SCHEMA = "k INT, ts TIMESTAMP, action STRING, price DECIMAL(10,2)"
ACTIONS = np.array(["view", "cart", "rec", "buy", "other"])
WEIGHTS = np.array([0.4, 0.2, 0.1, 0.1, 0.2])
FUNNEL = """SELECT k, window_start, window_end, funnels, revenue FROM {source} MATCH_AGGREGATE (
  PARTITION BY k ORDER BY ts
  PATTERN SEQ(view, cart, !rec, buy) TYPE BY action
  MEASURES COUNT(*) AS funnels, SUM(buy.price) AS revenue
  WITHIN INTERVAL 1 MINUTE SLIDE INTERVAL 10 SECONDS) AS m"""
DELAY = "5 seconds"


def write_file(path: Path, rows: int, keys: int, t0: int, span: int, rng: np.random.Generator) -> None:
    """``rows`` events over event times [t0, t0 + span) µs, up to 2 s out of order."""
    ts = np.sort(rng.integers(t0, t0 + span, rows))
    ts = np.maximum(t0, ts - rng.integers(0, 2_000_000, rows) * (rng.random(rows) < 0.2))
    table = pa.table({
        "k": pa.array(rng.integers(0, keys, rows), pa.int32()),
        "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "action": pa.array(ACTIONS[rng.choice(len(ACTIONS), rows, p=WEIGHTS)]),
        "price": pa.array(rng.integers(100, 10_000, rows) / 100).cast(pa.decimal128(10, 2)),
    })
    pq.write_table(table, path)


def prepare(staging: Path, rates: list[int], seconds: int, keys: int, speedup: int) -> list[list[Path]]:
    """Pre-written files per phase: each covers ``speedup`` seconds of event time."""
    rng = np.random.default_rng(15)
    staging.mkdir(parents=True)
    phases, t0, n = [], START, 0
    span = speedup * 1_000_000
    for rate in rates:
        files = []
        for _ in range(seconds):
            path = staging / f"events-{n:05d}.parquet"
            write_file(path, rate, keys, t0, span, rng)
            files.append(path)
            t0, n = t0 + span, n + 1
        phases.append(files)
    return phases


def session() -> SparkSession:
    return sparkseq.session("local[2]", app_name="bench-streaming",
                            conf={"spark.sql.streaming.numRecentProgressUpdates": "100000"})


def run_rates(spark: SparkSession, args: argparse.Namespace, work: Path) -> None:
    rates = [int(r) for r in args.rates.split(",")]
    print(f"preparing {sum(rates) * args.seconds:,} events in {len(rates) * args.seconds} files ...", flush=True)
    phases = prepare(work / "staging", rates, args.seconds, args.keys, args.speedup)
    source = work / "src"
    source.mkdir()
    spark.readStream.schema(SCHEMA).parquet(str(source)).withWatermark("ts", DELAY).createOrReplaceTempView("clicks")
    query = (live_frame(spark, "clicks", args.path).writeStream.format("parquet")
             .option("path", str(work / "out")).option("checkpointLocation", str(work / "ck")).start())
    print(f"{'rate ev/s':>10} {'processed ev/s':>15} {'p50 s':>6} {'p95 s':>6} {'backlog files':>14} "
          f"{'state rows':>11} {'state MB':>9}", flush=True)
    released, phases_seen = 0, []  # rows moved into the source directory so far
    for rate, files in zip(rates, phases):
        started, first_batch = time.monotonic(), len(query.recentProgress)
        for k, path in enumerate(files):
            os.replace(path, source / path.name)
            released += rate
            time.sleep(max(0.0, started + k + 1 - time.monotonic()))
        phases_seen.append(report_phase(rate, query, first_batch, time.monotonic() - started, released))
    query.processAllAvailable()
    progress = [live.progress(p) for p in query.recentProgress]
    query.stop()
    report_state(progress)
    batch_rate = reference(spark, work, source, sum(rates) * args.seconds)
    summary(phases_seen, progress, batch_rate, flink(args, work, source) if args.flink else None)


def summary(phases: list[dict], progress: list[dict | None], batch_rate: float, flink_rate: float | None) -> None:
    """The highest rate sustained (all released files read by the phase's end, give or
    take the one in flight) against the targets; the rate while busy (all input rows
    over the sum of the micro-batches' durations); the ratios of the latter."""
    kept = [p for p in phases if p["backlog"] <= 1]
    if kept:
        best = max(kept, key=lambda p: p["processed"])
        print(f"sustained: {best['rate']:,} ev/s offered, {best['processed']:,.0f} ev/s processed "
              f"(target 500,000: {best['processed'] / 500_000:.2f}x); micro-batch latency p50 {best['p50']:.2f} s, "
              f"p95 {best['p95']:.2f} s (target < 2 s)")
    else:
        print("sustained: no phase kept up with its input rate")
    data = [p for p in progress if p and p["input_rows"]]
    busy = sum(p["input_rows"] for p in data) / max(sum(p["duration_ms"] for p in data) / 1000, 1e-9)
    latency = sorted(p["duration_ms"] / 1000 for p in data) or [float("nan")]
    print(f"while busy: {busy:,.0f} ev/s in {len(data)} micro-batches (target 500,000: {busy / 500_000:.2f}x), "
          f"latency p50 {_pct(latency, 50):.2f} s, p95 {_pct(latency, 95):.2f} s")
    print(f"ratio live (busy) / batch MATCH_AGGREGATE events/s: {busy / batch_rate:.2f}")
    if flink_rate:
        print(f"ratio live (busy) / Flink MATCH_RECOGNIZE events/s: {busy / flink_rate:.1f} (target 20)")


def flink(args: argparse.Namespace, work: Path, source: Path) -> float | None:
    """Flink's MATCH_RECOGNIZE events/s over the first ``--flink-files`` files, as CSV
    (bench/flink_match_recognize.py, run by the ``--flink`` interpreter)."""
    csv_dir = work / "flink_csv"
    csv_dir.mkdir()
    events = 0
    for path in sorted(source.glob("*.parquet"))[:args.flink_files]:
        table = pq.read_table(path).to_pandas()
        table["ts"] = table["ts"].dt.strftime("%Y-%m-%d %H:%M:%S.%f").str[:-3]  # TIMESTAMP(3) for Flink's rowtime
        table.to_csv(csv_dir / (path.stem + ".csv"), header=False, index=False)
        events += len(table)
    script = Path(__file__).with_name("flink_match_recognize.py")
    done = subprocess.run([args.flink, str(script), str(csv_dir), str(events)], capture_output=True, text=True,
                          cwd=work)
    lines = done.stdout.splitlines()
    if done.returncode or not lines:
        print(f"flink run failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
        return None
    print(lines[0])
    return float(lines[-1].split()[-1])


def report_phase(rate: int, query: object, first_batch: int, wall: float, released: int) -> dict:
    """One line per phase; ``released`` is the number of rows released so far. The
    backlog is counted in rows (released minus the input rows of every micro-batch so
    far: a file source's offset counts micro-batches, not files) and shown in files of
    this phase's size."""
    everything = [live.progress(p) for p in query.recentProgress]  # type: ignore[attr-defined]
    batches = everything[first_batch:]
    data = [b for b in batches if b["input_rows"]]
    latency = sorted(b["duration_ms"] / 1000 for b in data) or [float("nan")]
    rows = sum(b["input_rows"] for b in batches)
    backlog = -(-(released - sum(b["input_rows"] for b in everything)) // rate)
    last = batches[-1] if batches else {"state_rows": 0, "state_bytes": 0}
    print(f"{rate:>10,} {rows / wall:>15,.0f} {_pct(latency, 50):>6.2f} {_pct(latency, 95):>6.2f} "
          f"{backlog:>14} {last['state_rows']:>11,} {last['state_bytes'] / 1e6:>9.1f}", flush=True)
    return {"rate": rate, "processed": rows / wall, "p50": _pct(latency, 50), "p95": _pct(latency, 95),
            "backlog": backlog}


def _pct(values: list[float], q: int) -> float:
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def report_state(progress: list[dict]) -> None:
    """State bytes over the run, in tenths (flat state: no upward trend)."""
    sizes = [p["state_bytes"] for p in progress if p]
    if not sizes:
        return
    tenths = [sizes[min(len(sizes) - 1, i * len(sizes) // 10)] / 1e6 for i in range(10)] + [sizes[-1] / 1e6]
    print("state MB over the run (tenths):", " ".join(f"{s:.1f}" for s in tenths))


def reference(spark: SparkSession, work: Path, source: Path, events: int) -> float:
    """The batch MATCH_AGGREGATE over the same files, and the stream's windows checked against it."""
    spark.read.schema(SCHEMA).parquet(str(source)).createOrReplaceTempView("clicks_batch")
    text = FUNNEL.format(source="clicks_batch")
    sparkseq.sql(spark, text).write.mode("overwrite").parquet(str(work / "batch_warmup"))
    started = time.perf_counter()
    sparkseq.sql(spark, text).write.mode("overwrite").parquet(str(work / "batch"))
    seconds = time.perf_counter() - started
    print(f"batch MATCH_AGGREGATE over the same {events:,} events: {seconds:.1f} s, {events / seconds:,.0f} events/s")
    s = spark.read.parquet(str(work / "out")).alias("s")
    b = spark.read.parquet(str(work / "batch")).alias("b")
    bad = s.join(b, ["k", "window_start"], "left").where(
        "b.funnels IS NULL OR s.funnels <> b.funnels OR NOT (s.revenue <=> b.revenue)").count()
    print(f"windows the stream emitted: {s.count():,}; differing from the batch answer: {bad}")
    return events / seconds


def run_operators(spark: SparkSession, args: argparse.Namespace, work: Path) -> None:
    """The stateful shapes of the module docstring on the same files."""
    from pyspark.sql import functions as F

    rng = np.random.default_rng(7)
    source = work / "ops"
    source.mkdir()
    per_file, span = args.events // args.files, args.speedup * 1_000_000
    for f in range(args.files):
        path = source / f"events-{f:05d}.parquet"
        write_file(path, per_file, args.keys, START + f * span, span, rng)
        os.utime(path, (1_000_000 + f, 1_000_000 + f))
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source)).withWatermark(
        "ts", DELAY)
    frame.createOrReplaceTempView("clicks_ops")
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    shapes = {
        "floor: shuffle + count (stateless)": lambda: frame.repartition(2, F.xxhash64("k")).mapInArrow(
            _count_batches, "n BIGINT"),
        "JVM floor: shuffle by key, no Python (stateless)": lambda: frame.repartition(partitions, "k"),
        "Spark's own stateful count per key (groupBy.count)": lambda: frame.groupBy("k").count(),
        "sparkseq live, Python operator (per bucket of keys)": lambda: live_frame(spark, "clicks_ops", "grouped"),
        "sparkseq live, JVM operator (per key)": lambda: live_frame(spark, "clicks_ops", "jvm"),
        "applyInPandasWithState per key, count only": lambda: frame.groupBy("k").applyInPandasWithState(
            _count_group, "n BIGINT", "n BIGINT", "Update", "NoTimeout"),
    }
    try:
        import google.protobuf  # noqa: F401 - transformWithStateInPandas needs it
        shapes["transformWithStateInPandas per key, count only"] = lambda: (
            frame.groupBy("k").transformWithStateInPandas(_CountRows(), "n BIGINT", "Update", "None"))
    except ImportError:
        print("(transformWithStateInPandas left out: it needs protobuf, not installed)")
    if args.only:
        words = args.only.split(",")
        shapes = {name: build for i, (name, build) in enumerate(shapes.items())
                  if i < 2 or any(word in name for word in words)}
    times: dict[str, list[float]] = {name: [] for name in shapes}
    for rep in range(args.repeat):
        for name, build in shapes.items():
            mode = "append" if name.startswith(("floor", "JVM floor", "sparkseq")) else "update"
            started = time.perf_counter()
            query = (build().writeStream.format("noop").outputMode(mode)
                     .option("checkpointLocation", str(work / f"ck_ops_{rep}_{len(times[name])}_{hash(name)}"))
                     .trigger(availableNow=True).start())
            query.awaitTermination()
            times[name].append(time.perf_counter() - started)
    floor, jvm_floor = (statistics.median(times[name]) for name in list(shapes)[:2])
    print(f"{args.events:,} events, {args.keys:,} keys, {args.files} micro-batches of one file, "
          f"{partitions} shuffle partitions; median of {args.repeat}:")
    print(f"  {'':<50} {'time':>9}  {'events/s':>10}  {'/ floor':>7}  {'/ JVM floor':>11}")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:<50} {med:7.1f} s  {args.events / med:>10,.0f}  {med / floor:6.2f}x  {med / jvm_floor:10.2f}x")
    print("  per round (time / floor, time / JVM floor):")
    for rep in range(args.repeat):
        ratios = "  ".join(f"{times[name][rep] / times[list(shapes)[0]][rep]:.2f}/"
                           f"{times[name][rep] / times[list(shapes)[1]][rep]:.2f}" for name in list(shapes)[2:])
        print(f"    round {rep + 1}: {ratios}")


def live_frame(spark: SparkSession, source: str, path: str) -> object:
    """The funnel over ``source`` as a live operator, built with ``sparkseq.path=path``:
    ``jvm`` the JVM live operator, ``grouped`` the Python one, ``auto`` the JVM one where it loads."""
    spark.conf.set("sparkseq.path", path)
    try:
        return sparkseq.sql(spark, FUNNEL.format(source=source))
    finally:
        spark.conf.unset("sparkseq.path")


def _count_batches(batches):  # noqa: ANN001, ANN202 - an Arrow map function
    n = sum(b.num_rows for b in batches)
    yield pa.RecordBatch.from_pydict({"n": pa.array([n], pa.int64())})


def _count_group(key, frames, state):  # noqa: ANN001, ANN202 - applyInPandasWithState function
    import pandas as pd

    yield pd.DataFrame({"n": [sum(len(f) for f in frames)]})


class _CountRows:
    """A transformWithStateInPandas processor that only counts rows (defined lazily below)."""

    def __new__(cls):  # noqa: ANN204 - builds the StatefulProcessor subclass on first use
        from pyspark.sql.streaming import StatefulProcessor

        class CountRows(StatefulProcessor):
            def init(self, handle):  # noqa: ANN001, ANN202
                pass

            def handleInputRows(self, key, rows, timerValues):  # noqa: ANN001, ANN202, N802, N803
                import pandas as pd

                yield pd.DataFrame({"n": [sum(len(f) for f in rows)]})

            def close(self):  # noqa: ANN202
                pass

        return CountRows()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--rates", default="25000,50000,100000,200000,400000",
                        help="events per second, one phase each (comma-separated)")
    parser.add_argument("--seconds", type=int, default=20, help="seconds per rate phase")
    parser.add_argument("--speedup", type=int, default=48, help="event-time seconds per wall-clock second")
    parser.add_argument("--path", choices=("auto", "jvm", "grouped"), default="auto",
                        help="the live operator of the rate phases: jvm, grouped (Python) or auto (default)")
    parser.add_argument("--operators", action="store_true", help="compare stateful shapes instead (docstring)")
    parser.add_argument("--events", type=int, default=2_000_000, help="--operators: events in all")
    parser.add_argument("--files", type=int, default=10, help="--operators: files = micro-batches")
    parser.add_argument("--repeat", type=int, default=3, help="--operators: runs per shape")
    parser.add_argument("--only", help="--operators: the shapes whose names hold one of these comma-separated "
                        "words (e.g. JVM,stateful), besides the two floors")
    parser.add_argument("--flink", metavar="PYTHON", help="an interpreter with apache-flink: also run "
                        "bench/flink_match_recognize.py over the first --flink-files files")
    parser.add_argument("--flink-files", type=int, default=10)
    args = parser.parse_args()
    work = scratch_dir() / "bench-streaming"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spark = session()
    print(f"Spark {spark.version}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    try:
        (run_operators if args.operators else run_rates)(spark, args, work)
    finally:
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
