"""Stock patterns at several abstraction levels: the E-Cube paper's company hierarchy and workloads.

E-Cube (Liu et al., SIGMOD 2011) asks one sequence question at several levels of a
concept hierarchy — tickers roll up into sectors, sectors into industries — and
navigates between them. Here the Figure 11 hierarchy is registered as a concept
hierarchy, and a synthetic tick stream (``ticks``: trading day, time, ticker, price)
is queried three ways:

1. **Workload 7** of the paper (10 patterns mixing tickers and sectors, such as
   ``SEQ(DELL, QQQ, ANAT)`` and ``SEQ(Computer, Finance, Education)``) as one
   ``PATTERNS (...)`` statement: one scan, one shuffle, one engine call per day for
   all ten, each output row naming its pattern.
2. **Workload 8** likewise (9 patterns).
3. **A roll-up cube** of ``SEQ(DELL, QQQ, ANAT)``: every position rolled up to its
   sector and industry, the middle one also deleted (pattern roll-up) — 36 cuboids —
   then navigated from Python with :func:`sparkseq.rollup` / :func:`sparkseq.drilldown`,
   which answer from the cube where it holds the pattern and run a new statement
   only where it does not.

Windows are 1 second, as in the paper's experiments. Run:
``python examples/stock_sectors.py [--events N]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a source checkout

from pyspark.sql import DataFrame, SparkSession  # noqa: E402

import sparkseq  # noqa: E402

#: Figure 11 of the E-Cube paper as (child, parent) pairs: tickers -> sectors -> industries.
COMPANIES = {
    "Computer": ("DELL", "IBM", "INTC", "MSFT"),
    "Finance": ("QQQ", "FCF", "ROM", "GS"),
    "Education": ("EFC", "ANAT", "OREL"),
}
INDUSTRIES = {"Technology": ("Computer",), "Services": ("Finance", "Education")}
HIERARCHY = [(c, s) for s, cs in COMPANIES.items() for c in cs] + [(s, i) for i, ss in INDUSTRIES.items() for s in ss]
#: Tickers outside the hierarchy: they trade too, and no pattern mentions them.
OTHERS = ("XOM", "CVX", "PFE", "KO")

WORKLOAD_7 = [
    "SEQ(DELL, QQQ, ANAT)", "SEQ(DELL, QQQ, ANAT, ROM)", "SEQ(FCF, DELL, QQQ, ANAT)",
    "SEQ(DELL, QQQ, ANAT, OREL)", "SEQ(DELL, QQQ, ANAT, INTC)", "SEQ(DELL, QQQ, ANAT, INTC, EFC)",
    "SEQ(Computer, Finance, Education)", "SEQ(Computer, Finance, ANAT)", "SEQ(DELL, Finance, ANAT)",
    "SEQ(QQQ, DELL, Finance, ANAT)",
]
WORKLOAD_8 = [
    "SEQ(Computer, Finance, Education)", "SEQ(Computer, Finance, OREL)", "SEQ(INTC, QQQ, Education)",
    "SEQ(INTC, QQQ, EFC)", "SEQ(MSFT, INTC, QQQ, EFC)", "SEQ(INTC, QQQ, EFC, DELL)",
    "SEQ(Computer, ROM, Education)", "SEQ(Computer, ROM, ANAT)", "SEQ(INTC, ROM, ANAT)",
]

START = 1_714_550_400  # 2024-05-01 08:00:00 UTC, seconds


def make_ticks(spark: SparkSession, events: int, days: int = 8, per_second: int = 20) -> DataFrame:
    """A synthetic tick stream as the temp view ``ticks`` (day, ts, ticker, price).

    ``per_second`` ticks per second and day, tickers drawn uniformly from the
    hierarchy's 11 and 4 others, prices a deterministic walk around 100. Generated
    with ``spark.range`` (deterministic: the same ``events`` give the same rows).
    """
    tickers = [c for cs in COMPANIES.values() for c in cs] + list(OTHERS)
    names = ", ".join(f"'{t}'" for t in tickers)
    df = spark.sql(f"""
        SELECT CAST(id % {days} AS INT) AS day,
               timestamp_micros(CAST(({START} + (id DIV {days}) / {per_second}) * 1000000 AS BIGINT)
                                + CAST(abs(hash(id, 'jitter')) % 50000 AS BIGINT)) AS ts,
               element_at(array({names}), CAST(abs(hash(id, 'ticker')) % {len(tickers)} AS INT) + 1) AS ticker,
               CAST(100 + (abs(hash(id, 'price')) % 2000) / 100.0 AS DECIMAL(8, 2)) AS price
        FROM range({events})""")
    df.createOrReplaceTempView("ticks")
    return df


def patterns_statement(patterns: list[str], extra: str = "") -> str:
    """One E-Cube statement answering every pattern of a workload."""
    return f"""
        SELECT * FROM ticks MATCH_AGGREGATE (
          PARTITION BY day ORDER BY ts
          PATTERNS ({', '.join(patterns)})
          TYPE BY ticker HIERARCHY companies
          MEASURES COUNT(*) AS matches{extra}
          WITHIN INTERVAL 1 SECOND) AS m"""


CUBE = """
    SELECT * FROM ticks MATCH_AGGREGATE (
      PARTITION BY day ORDER BY ts
      PATTERN SEQ(DELL, QQQ, ANAT)
      CUBE (CONCEPT ROLLUP 1, CONCEPT ROLLUP 2, CONCEPT ROLLUP 3, PATTERN ROLLUP 2)
      TYPE BY ticker HIERARCHY companies
      MEASURES COUNT(*) AS matches, AVG(ANAT.price) AS anat_price
      WITHIN INTERVAL 1 SECOND) AS m"""


def totals(df: DataFrame) -> list[tuple[str, int]]:
    """Matches per pattern over all days, largest first."""
    rows = df.groupBy("pattern").sum("matches").collect()
    return sorted(((r[0], r[1]) for r in rows), key=lambda r: (-r[1], r[0]))


def run(spark: SparkSession, events: int) -> dict[str, object]:
    """Generate the ticks, register the hierarchy, answer both workloads and navigate the
    roll-up cube; return what :func:`main` prints."""
    make_ticks(spark, events)
    sparkseq.register_hierarchy(spark, "companies", HIERARCHY)
    out: dict[str, object] = {}
    for name, workload in (("workload 7", WORKLOAD_7), ("workload 8", WORKLOAD_8)):
        began = time.perf_counter()
        out[name] = totals(sparkseq.sql(spark, patterns_statement(workload)))
        out[f"{name} seconds"] = time.perf_counter() - began
    cube = sparkseq.cube(spark, CUBE)
    out["cuboids"] = len(cube.patterns)
    at = cube.at("SEQ(DELL, QQQ, ANAT)")
    steps = []
    for label, step in (("roll up DELL to Computer", lambda r: sparkseq.rollup(r, position=1, to="Computer")),
                        ("roll up QQQ to Services", lambda r: sparkseq.rollup(r, position=2, to="Services")),
                        ("delete the middle position", lambda r: sparkseq.rollup(r, drop=2)),
                        ("drill down Computer to INTC", lambda r: sparkseq.drilldown(r, position=1, to="INTC"))):
        at = step(at)
        steps.append((label, at.pattern, sum(r["matches"] for r in at.df.collect()), at.from_cube))
    out["navigation"] = steps
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="ticks to generate (default 200,000)")
    args = parser.parse_args(argv)
    spark = sparkseq.session()
    results = run(spark, args.events)
    for name, count in (("workload 7", len(WORKLOAD_7)), ("workload 8", len(WORKLOAD_8))):
        print(f"\n{name.capitalize()}: {count} patterns in one statement, {results[f'{name} seconds']:.1f} s")
        for pattern, n in results[name]:  # type: ignore[union-attr]
            print(f"  {pattern:<36} {n:>12,}")
    print(f"\nRoll-up cube of SEQ(DELL, QQQ, ANAT): {results['cuboids']} cuboids, one statement")
    for label, pattern, total, from_cube in results["navigation"]:  # type: ignore[union-attr]
        source = "from the cube" if from_cube else "by a new statement"
        print(f"  {label:<30} -> {pattern:<34} {total:>12,} matches ({source})")
    spark.stop()


if __name__ == "__main__":
    main()
