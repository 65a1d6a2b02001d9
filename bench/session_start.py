"""Cold start of ``sparkseq.session()``, with and without the parser extension, against
a plain ``SparkSession.builder.getOrCreate()``.

Each start runs in a fresh Python process (a cold JVM). A plain start times importing
PySpark and ``SparkSession.builder.master("local[2]").getOrCreate()``; a sparkseq start
times ``import sparkseq`` and ``sparkseq.session("local[2]", parser_extension=...)``,
then — to see what the first use costs — the first MATCH_AGGREGATE statement over a
tiny view, through ``spark.sql`` with the extension and through ``sparkseq.sql``
without it (the first Python UDF query dominates both). The three kinds of start
alternate, ``--repeat`` times each, and medians are reported with their ratios to the
plain start (the machine is shared: single timings are noise, ratios within one run
are not).

Run: ``.venv/bin/python bench/session_start.py [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERY = ("SELECT k, n FROM bench_events MATCH_AGGREGATE (PARTITION BY k ORDER BY t PATTERN SEQ(view, buy) "
         "TYPE BY action MEASURES COUNT(*) AS n) AS m")

PLAIN_CHILD = """
import json, time
started = time.perf_counter()
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").getOrCreate()
print(json.dumps({"session_s": time.perf_counter() - started}))
spark.stop()
"""

CHILD = """
import json, sys, time
started = time.perf_counter()
import sparkseq
extension = sys.argv[1] == "on"
spark = sparkseq.session("local[2]", parser_extension=extension)
session_s = time.perf_counter() - started
spark.createDataFrame([(1, 1, "view"), (1, 2, "buy")], "k int, t int, action string").createOrReplaceTempView(
    "bench_events")
started = time.perf_counter()
rows = (spark.sql(sys.argv[2]) if extension else sparkseq.sql(spark, sys.argv[2])).collect()
first_query_s = time.perf_counter() - started
assert [tuple(r) for r in rows] == [(1, 1)], rows
print(json.dumps({"session_s": session_s, "first_query_s": first_query_s}))
spark.stop()
"""


#: The kinds of start, in the order they alternate and are printed.
KINDS = ("plain", "without", "with")


def one_start(kind: str) -> dict[str, float]:
    """Times of one cold start (seconds): the session, then (sparkseq) the first MATCH_AGGREGATE."""
    command = [sys.executable, "-c", PLAIN_CHILD] if kind == "plain" else [
        sys.executable, "-c", CHILD, "on" if kind == "with" else "off", QUERY]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"a {kind} start failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - started
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="starts of each kind (default 5)")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    for _ in range(args.repeat):
        for kind in KINDS:
            runs[kind].append(one_start(kind))
    print(f"cold starts, {args.repeat} of each kind alternating, medians (seconds):")
    print(f"{'':>34} {'plain':>9} {'without':>9} {'with':>9} {'without/plain':>14} {'with/plain':>11}")
    for key, label in (("session_s", "session start"), ("first_query_s", "first MATCH_AGGREGATE query"),
                       ("process_s", "whole process")):
        medians = {kind: statistics.median(r[key] for r in runs[kind]) if key in runs[kind][0] else None
                   for kind in KINDS}
        print(f"{label:>34} " + " ".join(_cell(medians[kind]) for kind in KINDS) + " "
              + f"{_ratio(medians['without'], medians['plain']):>14} {_ratio(medians['with'], medians['plain']):>11}")
    print("(session start: plain = import pyspark + SparkSession.builder.getOrCreate(); without / with = "
          "import sparkseq + sparkseq.session() without / with the parser extension. First query: spark.sql "
          "with the extension, sparkseq.sql without it)")


def _cell(seconds: float | None) -> str:
    return f"{seconds:9.2f}" if seconds is not None else f"{'-':>9}"


def _ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}" if value is not None and base else "-"


if __name__ == "__main__":
    main()
