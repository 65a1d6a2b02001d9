"""Cold start of ``sparkseq.session()`` with and without the parser extension.

Each start runs in a fresh Python process (a cold JVM): ``sparkseq.session("local[2]",
parser_extension=...)`` is timed, then — to see what the first use costs — the first
MATCH_AGGREGATE statement over a tiny view, through ``spark.sql`` with the extension
and through ``sparkseq.sql`` without it (the first Python UDF query dominates both).
The two kinds of start alternate, ``--repeat`` times each, and medians are reported
with their ratio (the machine is shared: single timings are noise).

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


def one_start(extension: bool) -> dict[str, float]:
    """Times of one cold start (seconds): the session, then the first MATCH_AGGREGATE."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, "on" if extension else "off", QUERY], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - started
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="starts of each kind (default 5)")
    args = parser.parse_args()
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for _ in range(args.repeat):
        for extension in (False, True):
            runs[extension].append(one_start(extension))
    print(f"cold starts, {args.repeat} of each kind alternating, medians (seconds):")
    print(f"{'':>34} {'without':>9} {'with':>9} {'ratio':>7}")
    for key, label in (("session_s", "sparkseq.session()"), ("first_query_s", "first MATCH_AGGREGATE query"),
                       ("process_s", "whole process")):
        without = statistics.median(r[key] for r in runs[False])
        with_ = statistics.median(r[key] for r in runs[True])
        print(f"{label:>34} {without:9.2f} {with_:9.2f} {with_ / without:7.2f}")
    print("(first query: spark.sql with the extension, sparkseq.sql without it)")


if __name__ == "__main__":
    main()
