"""Peak memory of the Python workers, all together, for one huge key on each execution path.

The statement of bench/scale.py (SEQ(S0, S1, S2) WITHIN 10 minutes, COUNT(*); its
parquet file of ``--events`` events, here all in one key ``k = 0``, ~100 events per
10 minutes) runs once per path: ``auto`` (the planner's choice, printed from EXPLAIN),
``grouped``, ``time-split``, ``streaming`` and ``jvm``. Each path runs in a fresh
``local[2]`` driver process (Python workers are reused within a session and keep heap
they grew to), so every run starts from the same worker state.

While the statement runs, a thread reads every 0.1 s the memory of all Python processes
below the driver (the worker daemon and its forked workers) and keeps the peak of their
sum: ``RSS`` (the figure the 1 GB target is stated in, which counts pages a forked worker still shares
with the daemon once per process) and ``PSS`` (shared pages split between the sharers:
the memory the workers really take). Also the peak of the driver JVM's used heap
(``MemoryMXBean``; in ``local`` mode it runs the executors) above its level after a
full GC before the run: an upper bound on what the JVM path's aggregate buffers hold,
garbage not yet collected included. Printed per path: wall seconds, peaks in MB, RSS
bytes per event, matches (equal on every path).

Usage: .venv/bin/python bench/memory.py [--events 10000000] [--paths auto grouped time-split streaming jvm]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import STATEMENT, descendants, sample  # noqa: E402  (bench/ is on sys.path as a script)

PATHS = ("auto", "grouped", "time-split", "streaming", "jvm")
PERIOD = 0.1


def _pss(pid: int) -> int:
    """Proportional set size in bytes of ``pid`` (0 when gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class WorkersMemory:
    """Peaks of the summed RSS and PSS of the Python processes below this driver, and of
    the driver JVM's used heap, sampled while a run lasts."""

    def __init__(self, spark) -> None:  # noqa: ANN001
        self.rss = self.pss = self.heap = 0
        self._bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _poll(self) -> None:
        rss = pss = 0
        for pid in descendants(os.getpid()):
            s = sample(pid)
            if s is not None and s[2]:
                rss += s[1]
                pss += _pss(pid)
        self.rss, self.pss = max(self.rss, rss), max(self.pss, pss)
        self.heap = max(self.heap, self._bean.getHeapMemoryUsage().getUsed())

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._poll()
            time.sleep(PERIOD)

    def __enter__(self) -> WorkersMemory:
        self._bean.gc()
        self.heap_before = self._bean.getHeapMemoryUsage().getUsed()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()


def run_one(path: str, events: int) -> None:
    """Run the statement on ``path`` in this process and print one line."""
    import sparkseq
    from sparkseq.running.execution_paths import PATH_CONF
    from sparkseq.spark.session import scratch_dir

    spark = sparkseq.session("local[2]")
    source = str(scratch_dir() / f"scale-{events}.parquet")
    if not Path(source).exists():  # bench/scale.py's rows: the same every time
        spark.range(events).selectExpr(f"pmod(xxhash64(id), {events * 6_000_000}) AS ts",
                                       "CAST(pmod(xxhash64(id, 7), 3) AS INT) AS s",
                                       "CAST(pmod(xxhash64(id, 3), 1000) AS INT) AS k1000").write.parquet(source)
    spark.read.parquet(source).selectExpr("0 AS k", "ts", "s").createOrReplaceTempView("one_key")
    spark.conf.set(PATH_CONF, path)
    text = STATEMENT.format(table="one_key")
    chosen = next((line.strip() for line in sparkseq.explain(spark, text).splitlines()
                   if line.strip().startswith("path")), "?")
    with WorkersMemory(spark) as mem:
        t0 = time.perf_counter()
        rows = sparkseq.sql(spark, text).collect()
        wall = time.perf_counter() - t0
    matches = sum(r["n"] for r in rows)
    heap = max(mem.heap - mem.heap_before, 0)
    print(f"{path:<11} {wall:>7.1f} {mem.rss / 2**20:>12,.0f} {mem.pss / 2**20:>12,.0f} "
          f"{mem.rss / events:>10.1f} {heap / 2**20:>14,.0f} {matches:>14,}  {chosen[:90]}", flush=True)
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--one", choices=PATHS, help=argparse.SUPPRESS)  # a child run: one path, this process
    args = parser.parse_args()
    if args.one:
        run_one(args.one, args.events)
        return
    print(f"{args.events:,} events in one key, SEQ(S0, S1, S2) WITHIN 10 minutes COUNT(*), local[2]")
    print(f"{'path':<11} {'wall s':>7} {'workers RSS':>12} {'workers PSS':>12} {'RSS B/ev':>10} "
          f"{'JVM heap +MB':>14} {'matches':>14}  chosen")
    for path in args.paths:
        subprocess.run([sys.executable, __file__, "--one", path, "--events", str(args.events)], check=True)


if __name__ == "__main__":
    main()
