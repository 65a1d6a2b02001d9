"""Scale: one huge key with and without time split, against the same events over 1,000 keys.

One local[2] session; for each size N a parquet table of N events (times uniform over
N * 6 seconds in microseconds, so a 10-minute window holds ~100 events of one key;
three symbols), read as one key (``k = 0``) and as 1,000 keys. The statement is
SEQ(S0, S1, S2) WITHIN 10 minutes, COUNT(*). Runs, each timed around ``collect()``:

* ``1 key grouped``: ``sparkseq.path = grouped`` (one task, the whole key in one worker),
* ``1 key split``: ``sparkseq.path = time-split`` (chunks of ~1.5 M rows; the query
  finds the big keys itself),
* ``1 key auto``: the default path choice (statistics job included; a key over 4 M rows
  is split, its chunks passed from the statistics to the query),
* ``1000 keys auto``: the default path choice (statistics job included).

For each run: wall time, peak RSS of one Python worker process and busy cores (CPU
seconds of the JVM and every Python worker / wall seconds), read from /proc every
0.1 s. ``--skip-grouped-above N`` skips the single-task run for larger sizes (it needs
~200-265 bytes per row in one worker).

Usage: .venv/bin/python bench/scale.py [--sizes 5000000 20000000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sparkseq  # noqa: E402
from sparkseq.running.execution_paths import PATH_CONF  # noqa: E402
from sparkseq.spark.session import scratch_dir  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
STATEMENT = ("SELECT * FROM {table} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(S0, S1, S2) "
             "DEFINE S0 AS s = 0, S1 AS s = 1, S2 AS s = 2 MEASURES COUNT(*) AS n WITHIN 600000000) AS m")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc/*/stat parent ids)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def sample(pid: int) -> tuple[float, int, bool] | None:
    """(CPU seconds, RSS bytes, is a Python worker) of one process, None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
    except OSError:
        return None
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    return cpu, int(fields[21]) * PAGE, b"python" in os.path.basename(cmd.split(b"\0")[0])


class Monitor:
    """Polls the JVM and Python worker processes under this driver while a run lasts."""

    def __init__(self) -> None:
        self.cpu: dict[int, float] = {}
        self.start_cpu: dict[int, float] = {}
        self.peak_worker = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _poll(self, first: bool = False) -> None:
        for pid in descendants(os.getpid()):
            s = sample(pid)
            if s is None:
                continue
            cpu, rss, python = s
            if first:
                self.start_cpu[pid] = cpu
            self.cpu[pid] = cpu
            if python:
                self.peak_worker = max(self.peak_worker, rss)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._poll()
            time.sleep(0.1)

    def __enter__(self) -> Monitor:
        self._poll(first=True)
        self.peak_worker = 0
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()

    def cpu_seconds(self) -> float:
        return sum(c - self.start_cpu.get(pid, 0.0) for pid, c in self.cpu.items())


def timed(spark, table: str, path: str) -> tuple[float, int, float, int]:  # noqa: ANN001
    """(wall s, peak worker RSS bytes, busy cores, matches) of one run of the statement."""
    spark.conf.set(PATH_CONF, path)
    with Monitor() as monitor:
        t0 = time.perf_counter()
        rows = sparkseq.sql(spark, STATEMENT.format(table=table)).collect()
        wall = time.perf_counter() - t0
    return wall, monitor.peak_worker, monitor.cpu_seconds() / wall, sum(r["n"] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000_000, 20_000_000])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--skip-grouped-above", type=int, default=20_000_000)
    args = parser.parse_args()
    spark = sparkseq.session("local[2]")
    print(f"{'events':>11} {'run':<16} {'wall s':>8} {'worker RSS MB':>14} {'busy cores':>11} {'matches':>14}")
    for n in args.sizes:
        path = str(scratch_dir() / f"scale-{n}.parquet")
        if not Path(path).exists():  # the same rows every time (hashes of the row number)
            spark.range(n).selectExpr(f"pmod(xxhash64(id), {n * 6_000_000}) AS ts",
                                      "CAST(pmod(xxhash64(id, 7), 3) AS INT) AS s",
                                      "CAST(pmod(xxhash64(id, 3), 1000) AS INT) AS k1000"
                                      ).write.parquet(path)
        spark.read.parquet(path).selectExpr("0 AS k", "ts", "s").createOrReplaceTempView("one_key")
        spark.read.parquet(path).selectExpr("k1000 AS k", "ts", "s").createOrReplaceTempView("thousand_keys")
        # the single-task run last: Python workers are reused and keep some of what it grew to
        runs = [("1000 keys grouped", "thousand_keys", "grouped"), ("1000 keys auto", "thousand_keys", "auto"),
                ("1 key split", "one_key", "time-split"), ("1 key auto", "one_key", "auto")]
        if n <= args.skip_grouped_above:
            runs.append(("1 key grouped", "one_key", "grouped"))
        if n == args.sizes[0]:  # warm up, untimed: JIT, Python workers and their imports, functions registered
            spark.conf.set(PATH_CONF, "grouped")
            sparkseq.sql(spark, STATEMENT.format(table="thousand_keys")).collect()
        for _ in range(args.repeat):
            for name, table, mode in runs:
                wall, rss, busy, matches = timed(spark, table, mode)
                print(f"{n:>11,} {name:<16} {wall:>8.1f} {rss / 2**20:>14,.0f} {busy:>11.2f} {matches:>14,}",
                      flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
