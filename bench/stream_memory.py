"""Peak memory of the streaming path on one huge partition, against the UDAF path.

One partition key holds every event (about one event per 10 ms, three symbols);
SEQ(S0, S1, S2) WITHIN 10 minutes with COUNT(*) and SUM(S2.v). A sampler thread
reads the resident memory (VmRSS from /proc) of every PySpark Python worker every
0.2 s and keeps the peak of the largest one. Printed per run: events, wall time,
events/s, peak worker RSS, and the result row.

* ``stream``: the arrow_udtf path (``sparkseq.stream_query``): rows arrive sorted in
  Arrow batches and the engine keeps O(window) state, so the peak should stay flat
  as the partition grows (target: under 1 GB at 50 million events).
* ``udaf``: the grouped-aggregate path holds the whole group in the worker; run only
  at the smaller size for contrast (``--udaf-events``), and last (worker processes
  are reused and keep their heap); its result is compared with the stream's on that
  same input.

Usage: .venv/bin/python bench/stream_memory.py [--events 50000000] [--udaf-events 5000000]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sparkseq  # noqa: E402
from sparkseq import Element, Measure, MeasureKind, Plan, ValueType  # noqa: E402

STEP_US = 10_000  # mean gap between events: 10 ms
PLAN = Plan(symbols=("S0", "S1", "S2"), elements=(Element(0), Element(1), Element(2)), negations=(0,) * 4,
            within=600_000_000, measures=(Measure(MeasureKind.COUNT_STAR, name="n"),
                                          Measure(MeasureKind.SUM, 2, 0, "s")), columns=(ValueType.FLOAT,))


class WorkerMemory:
    """Samples the RSS of PySpark Python workers until stopped; keeps the peak."""

    def __init__(self, period: float = 0.2) -> None:
        self.period = period
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> WorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in os.listdir("/proc"):
                if pid.isdigit():
                    self.peak = max(self.peak, _worker_rss(pid))
            self._stop.wait(self.period)


def _worker_rss(pid: str) -> int:
    """VmRSS in bytes of ``pid`` if it is a PySpark worker, else 0."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        if b"pyspark.daemon" not in cmd and b"pyspark.worker" not in cmd:
            return 0
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def make_view(spark, n: int) -> tuple[int, int]:
    """Temp view ``events`` of ``n`` events in one partition key; returns the ts bounds."""
    spark.range(n).selectExpr(
        "0 AS k", f"id * {STEP_US} + pmod(xxhash64(id), {STEP_US}) AS ts",
        "shiftleft(1L, CAST(pmod(xxhash64(id, 7), 3) AS INT)) AS mask", "sin(id) AS v",
    ).createOrReplaceTempView("events")
    return 0, n * STEP_US


def measure(spark, query: str) -> tuple[float, int, list]:
    with WorkerMemory() as mem:
        t0 = time.perf_counter()
        rows = spark.sql(query).collect()
        took = time.perf_counter() - t0
    return took, mem.peak, [tuple(r) for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=50_000_000)
    ap.add_argument("--udaf-events", type=int, default=5_000_000)
    args = ap.parse_args()
    spark = sparkseq.session()
    kw = dict(keys=["k"], values=["v"])
    print(f"{'path':>7} {'events':>12} {'seconds':>8} {'M ev/s':>7} {'peak worker RSS':>16}  result (k, n, s)")
    results = {}
    # streaming runs first: PySpark reuses worker processes, and a worker that held a
    # whole group for the UDAF keeps its freed heap, which would inflate later peaks
    for path, n in (("stream", args.events), ("stream", args.udaf_events), ("udaf", args.udaf_events)):
        bounds = make_view(spark, n)
        if path == "udaf":
            query = sparkseq.udaf_query(spark, PLAN, "events", **kw)
        else:
            query = sparkseq.stream_query(spark, PLAN, "events", ts_bounds=bounds, **kw)
        took, peak, rows = measure(spark, query)
        results[(path, n)] = rows
        print(f"{path:>7} {n:>12,} {took:>8.1f} {n / took / 1e6:>7.2f} {peak / 2**20:>13.0f} MB  {rows}")
    print(f"stream == udaf at {args.udaf_events:,} events (count exact, float sum to 1e-9): "
          f"{agree(results[('udaf', args.udaf_events)], results[('stream', args.udaf_events)])}")


def agree(a: list[tuple], b: list[tuple]) -> bool:
    """Same keys and counts; float sums equal up to summation order."""
    return len(a) == len(b) and all(
        x[:2] == y[:2] and math.isclose(x[2], y[2], rel_tol=1e-9) for x, y in zip(sorted(a), sorted(b)))


if __name__ == "__main__":
    main()
