"""sparkseq against its peers: same Parquet, same answer, time as a multiple of sparkseq's.

SEQ(A, B, C) WITHIN 10 minutes, COUNT(*) per key, over bench/sequence_events.py's data (its
``generate``: ``k``, ``ts`` TIMESTAMP at microseconds, ``type`` one of A..E, ~100 events
per key per 10 minutes), written once per size as Parquet in the scratch directory and
read from those files by every engine. Sizes (``--sizes``, default all three): ``1m``
(1 M events, 1,000 keys), ``10m`` (10 M events, 1,000 keys), ``5m-one-key`` (5 M events
on one key). Engines (``--engines``, default all):

* ``sparkseq``: ``sparkseq.sql``, ``sparkseq.path=auto`` (the planner's choice);
* ``kernel path``: ``sparkseq.path=grouped`` (one Arrow UDAF call per key);
* ``jvm path``: ``sparkseq.path=jvm``, only when sparkseq has that path;
* ``duckdb``: an expert's DuckDB SQL, running sums per (key, time) and an as-of join;
* ``chdb``: ClickHouse (chdb), window functions with RANGE frames;
* ``count(*)``: Spark's ``SELECT k, count(*) FROM events GROUP BY k`` (the JVM floor);
* ``python floor``: the SQL sparkseq generates with its engine function swapped for a
  UDAF that returns ``len()`` (bench/spark_e2e.py's ``floor_sql``).

DuckDB and chdb (bench/peer_engines.py, their SQL) run in the bench's own environment,
``.venv-bench``, pinned by bench/peers-requirements.txt and installed by this script on
its first run (it says so): never a dependency of sparkseq. They run in one worker
process, 2 threads each, timed there from query to the last row fetched; the Spark
engines are timed in the driver from ``sql`` to the last row collected (1,000 rows or
one). Before the sizes, every matching engine runs once on a small table whose times are
cut to 30 seconds (many equal times) and must give equal counts key by key: ties never
order. At each size every engine runs once (warm-up; the matching engines' counts must
be equal key by key, ``count(*)`` must add up to the events), then ``--rounds`` rounds,
each running every engine once in turn. Prints each round's times, then per engine the
median time and the median over rounds of its time over sparkseq's in the same round,
and at the end one table of those ratios, engine by size.

Usage: .venv/bin/python bench/peers.py [--sizes 1m,10m,5m-one-key] [--rounds 3]
       [--engines sparkseq,kernel path,...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import SparkSession  # noqa: E402

import sparkseq  # noqa: E402
from sequence_events import FLOOR, MATCH, SYMBOLS, generate, spark_counts  # noqa: E402
from spark_e2e import WINDOW_MICROS, floor_sql, write_events  # noqa: E402  (bench/ is on sys.path as a script)
from sparkseq.running.execution_paths import PATH_CONF  # noqa: E402
from sparkseq.spark.session import scratch_dir  # noqa: E402
from sql_rewrites.planning.planner import Path as ExecutionPath  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BENCH_VENV = ROOT / ".venv-bench"
REQUIREMENTS = Path(__file__).resolve().parent / "peers-requirements.txt"
WORKER = Path(__file__).resolve().parent / "peer_engines.py"
SIZES = {"1m": (1_000_000, 1_000), "10m": (10_000_000, 1_000), "5m-one-key": (5_000_000, 1)}
LABELS = {"1m": "1 M events", "10m": "10 M events", "5m-one-key": "5 M events on one key"}
PER_WINDOW = 100
TEXT = MATCH.format(pattern="A, B, C", within="\n  WITHIN INTERVAL 10 MINUTES")
#: sparkseq.path of each sparkseq engine ("jvm path" only where the path exists).
SPARKSEQ_PATHS = {"sparkseq": "auto", "kernel path": "grouped", "jvm path": "jvm"}
PEERS = ("duckdb", "chdb")
FLOORS = ("count(*)", "python floor")
ENGINES = (*SPARKSEQ_PATHS, *PEERS, *FLOORS)
#: The tie check's table: times cut to this many seconds, so that ~5 events of a key share one.
TIE_SECONDS = 30

Counts = dict[int, int]


def bench_python() -> Path:
    """The Python of ``.venv-bench``, created and filled from bench/peers-requirements.txt
    when missing or when the requirements changed since it was filled."""
    python = BENCH_VENV / "bin" / "python"
    stamp = BENCH_VENV / ".peers-installed"
    want = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == want:
        return python
    print(f"installing DuckDB and chdb into {BENCH_VENV} ({REQUIREMENTS.name}, the bench's own environment; "
          "once, about a minute)", file=sys.stderr, flush=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r",
                    str(REQUIREMENTS)], check=True)
    stamp.write_text(want)
    return python


class PeerWorker:
    """bench/peer_engines.py running in ``.venv-bench``: one query per request."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([str(bench_python()), str(WORKER)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.versions: dict[str, str] = json.loads(self.read())

    def read(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"bench/peer_engines.py ended (exit code {self.process.wait()})")
        return line

    def run(self, engine: str, files: str) -> tuple[float, Counts]:
        """The query's time in seconds (measured in the worker) and its counts."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"engine": engine, "path": files, "within": WINDOW_MICROS}) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.read())
        return answer["seconds"], {k: n for k, n in answer["counts"]}

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def spark_engine(spark: SparkSession, name: str) -> Callable[[], tuple[float, Counts]]:
    """A Spark engine of the module docstring, timed in the driver."""
    if name in SPARKSEQ_PATHS:
        counts = spark_counts(spark, TEXT, SPARKSEQ_PATHS[name])
    else:
        counts = spark_counts(spark, FLOOR if name == "count(*)" else floor_sql(spark, "events"), None)

    def run() -> tuple[float, Counts]:
        started = time.perf_counter()
        result = counts()
        return time.perf_counter() - started, result
    return run


def engines(spark: SparkSession, names: list[str], worker: PeerWorker | None,
            files: str) -> dict[str, Callable[[], tuple[float, Counts]]]:
    runs = {}
    for name in names:
        if name in PEERS:
            assert worker is not None
            runs[name] = lambda name=name: worker.run(name, files)
        else:
            runs[name] = spark_engine(spark, name)
    return runs


def check_equal(answers: dict[str, Counts], where: str) -> None:
    """The matching engines' counts equal key by key (the floors count rows, not matches)."""
    matching = [name for name in answers if name not in FLOORS]
    first = matching[0]
    for name in matching[1:]:
        if answers[name] != answers[first]:
            keys = sorted(k for k in answers[name].keys() | answers[first].keys()
                          if answers[name].get(k) != answers[first].get(k))
            raise AssertionError(f"{where}: {name} and {first} differ at {len(keys)} key(s), e.g. key {keys[0]}: "
                                 f"{answers[name].get(keys[0])} against {answers[first].get(keys[0])}")


def check_ties(spark: SparkSession, names: list[str], worker: PeerWorker | None) -> None:
    """Every matching engine on a small table with many equal times: equal counts."""
    path = scratch_dir() / f"bench-peers-ties-{TIE_SECONDS}.parquet"
    if not path.exists():
        source = write_events(spark, 20_000, 10, PER_WINDOW, symbols=SYMBOLS, label="peers-ties-source")
        spark.read.parquet(str(source)).selectExpr(
            "k", f"timestamp_seconds(unix_seconds(ts) DIV {TIE_SECONDS} * {TIE_SECONDS}) AS ts", "type",
        ).write.mode("overwrite").parquet(str(path))
    spark.read.parquet(str(path)).createOrReplaceTempView("events")
    matching = [name for name in names if name not in FLOORS]
    answers = {name: run()[1] for name, run in engines(spark, matching, worker, f"{path}/*.parquet").items()}
    check_equal(answers, f"{TIE_SECONDS}-second times")
    ties = spark.sql("SELECT count(*) AS n FROM (SELECT k, ts FROM events GROUP BY k, ts HAVING count(*) > 1)")
    print(f"ties: {', '.join(matching)} equal key by key on 20,000 events at {TIE_SECONDS}-second times "
          f"({ties.first().n:,} (key, time) pairs shared by several events; "
          f"{sum(answers[matching[0]].values()):,} matches)", flush=True)


def measure(spark: SparkSession, size: str, names: list[str], worker: PeerWorker | None, rounds: int
            ) -> dict[str, float]:
    """One size: warm-up and checks, then the rounds; the median ratio of each engine to sparkseq."""
    events, keys = SIZES[size]
    files = generate(spark, events, keys, PER_WINDOW) + "/*.parquet"
    runs = engines(spark, names, worker, files)
    answers = {name: run()[1] for name, run in runs.items()}  # warm-up, and the answers
    check_equal(answers, LABELS[size])
    if "count(*)" in answers:
        assert sum(answers["count(*)"].values()) == events, "count(*) does not add up to the events"
    matches = next(sum(a.values()) for name, a in answers.items() if name not in FLOORS)
    print(f"{LABELS[size]}, {keys:,} key(s): {matches:,} matches, equal key by key across "
          f"{', '.join(n for n in names if n not in FLOORS)}; {rounds} interleaved round(s)", flush=True)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(rounds):
        for name, run in runs.items():
            times[name].append(run()[0])
        print(f"  round {round_}: " + "  ".join(f"{name} {times[name][-1]:.2f}" for name in runs), flush=True)
    ratios = {}
    for name in runs:
        line = f"  {name:13s} median {statistics.median(times[name]):7.2f} s"
        if "sparkseq" in times:
            ratios[name] = statistics.median(t / s for t, s in zip(times[name], times["sparkseq"]))
            line += f"  {ratios[name]:5.2f}x sparkseq (median of the rounds' ratios)"
        print(line, flush=True)
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(SIZES), help=f"of {', '.join(SIZES)}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, of the module docstring's")
    args = parser.parse_args()
    sizes = args.sizes.split(",")
    names = args.engines.split(",")
    unknown = [x for x in sizes if x not in SIZES] + [x for x in names if x not in ENGINES]
    if unknown:
        parser.error(f"unknown size or engine: {', '.join(unknown)}")
    if "jvm path" in names and "jvm" not in {p.value for p in ExecutionPath}:
        names.remove("jvm path")
        print("jvm path: skipped (this sparkseq has no sparkseq.path=jvm)", file=sys.stderr)
    worker = PeerWorker() if any(name in PEERS for name in names) else None
    spark = sparkseq.session()
    versions = "".join(f", {name} {version}" for name, version in (worker.versions if worker else {}).items())
    print(f"{spark.sparkContext.master}, Spark {spark.version}{versions}; SEQ(A, B, C) WITHIN 10 minutes, "
          f"COUNT(*) per key", flush=True)
    try:
        check_ties(spark, names, worker)
        table = {size: measure(spark, size, names, worker, args.rounds) for size in sizes}
    finally:
        spark.conf.unset(PATH_CONF)
        if worker is not None:
            worker.close()
    if "sparkseq" in names:
        print(f"\ntime as a multiple of sparkseq's (medians of {args.rounds} rounds' ratios)")
        print("| engine | " + " | ".join(LABELS[size] for size in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for name in names:
            print(f"| {name} | " + " | ".join(f"{table[size][name]:.2f}" for size in sizes) + " |")
    spark.stop()


if __name__ == "__main__":
    main()
