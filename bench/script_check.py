"""What checking a script before it runs costs (sparkseq.statements.scripts).

``sparkseq.sql`` checks every statement — compiled, then parsed and analysed by Spark in a
scratch copy of the session — before the first runs (a one-statement script is left to
``spark.sql``'s own analysis). This times, in one run, for scripts of N statements (half
``CREATE OR REPLACE TEMP VIEW v AS SELECT ... MATCH_AGGREGATE``, half ``SELECT ... FROM v``
over them, every operator with its own WITHIN, so its own plan and engine function; N = 1:
the operator alone):

* **checked**: ``sparkseq.sql(spark, script)``: check all, then run all;
* **unchecked**: the same statements run without the check (each compiled and handed to
  ``spark.sql`` in turn: what ``sparkseq.sql`` did before the check existed);
* **check only**: ``check_script``.

Nothing is collected: ``spark.sql`` analyses each statement (and creates the views); no
Spark job runs in any variant. Each variant runs ``--repeat`` times, alternating, after one
warm-up round; medians are printed with the ratio checked / unchecked.

Usage: .venv/bin/python bench/script_check.py [--statements 1,2,10,40] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import SparkSession  # noqa: E402

import sparkseq  # noqa: E402
from sparkseq.statements.scripts import Checked, check_script, run_script  # noqa: E402
from sql_rewrites.syntax.statements import split_statements  # noqa: E402

OPERATOR = ("SELECT k, n FROM bench_events MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(a, b, !c) "
            "DEFINE a AS kind = 'a', b AS kind = 'b' AND v > 1, c AS kind = 'c' "
            "MEASURES COUNT(*) AS n WITHIN INTERVAL {minutes} MINUTES) AS m")


def script(count: int, salt: int) -> str:
    """``count`` statements: views over distinct operators, and a query over each view."""
    if count == 1:
        return OPERATOR.format(minutes=salt + 1)
    statements = []
    for i in range(count // 2):
        statements.append(f"CREATE OR REPLACE TEMP VIEW bench_v{i} AS {OPERATOR.format(minutes=salt + i + 1)}")
        statements.append(f"SELECT k, n * 2 AS twice FROM bench_v{i} WHERE n > 0")
    return ";\n".join(statements)


def unchecked(spark: SparkSession, text: str) -> None:
    for _ in run_script(spark, text, [Checked(i, s) for i, s in enumerate(split_statements(text))]):
        pass


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", default="1,2,10,40")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    spark = sparkseq.session()
    spark.sql("""CREATE OR REPLACE TEMP VIEW bench_events AS SELECT id % 10 AS k, timestamp_seconds(id) AS ts,
                 element_at(array('a', 'b', 'c'), CAST(id % 3 AS INT) + 1) AS kind, CAST(id AS DOUBLE) AS v
                 FROM range(1000)""")
    print(f"{'statements':>10} {'checked s':>10} {'unchecked s':>12} {'ratio':>6} {'check only s':>13}")
    for count in (int(n) for n in args.statements.split(",")):
        variants = {"checked": lambda t: sparkseq.sql(spark, t), "unchecked": lambda t: unchecked(spark, t),
                    "check": lambda t: check_script(spark, t)}
        times: dict[str, list[float]] = {name: [] for name in variants}
        for repeat in range(args.repeat + 1):  # round 0 warms up (JIT, engine function registration)
            for name, run in variants.items():
                text = script(count, salt=0)  # the same plans every round: registration is once per session
                elapsed = timed(lambda: run(text))
                if repeat:
                    times[name].append(elapsed)
        med = {name: statistics.median(values) for name, values in times.items()}
        print(f"{count:>10} {med['checked']:>10.3f} {med['unchecked']:>12.3f} "
              f"{med['checked'] / med['unchecked']:>6.2f} {med['check']:>13.3f}")


if __name__ == "__main__":
    main()
