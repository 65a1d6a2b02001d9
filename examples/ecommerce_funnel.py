"""The Kindle funnel: how often did each customer go from the Kindle to a case, and what did it bring?

The A-Seq thesis's running example (SEMANTICS.md section 1), per customer, within 10
minutes:

    SEQ(VK, BK, !REC, VC, BC)   view Kindle, buy Kindle, no recommendation in between,
                                then view a case and buy a case

with COUNT(*) (every match counts, skip-till-any-match) and SUM(BC.price), written as
MATCH_AGGREGATE in plain Spark SQL and run with ``sparkseq.sql``; then the same
funnel over 10-minute windows sliding by a minute, summed over customers. The engine
runs inside Spark's Python workers without ever listing a match.

Run: ``python -m sparkseq demo`` (or ``bash .ci/demo``, or ``python examples/ecommerce_funnel.py``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a source checkout

from pyspark.sql import SparkSession  # noqa: E402

import sparkseq  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "clicks.csv"
SCHEMA = "customer_id INT, ts TIMESTAMP, action STRING, item STRING, price DECIMAL(10,2)"

DEFINE = """
  DEFINE VK  AS action = 'view' AND item = 'kindle',
         BK  AS action = 'buy'  AND item = 'kindle',
         REC AS action = 'recommendation',
         VC  AS action = 'view' AND item = 'case',
         BC  AS action = 'buy'  AND item = 'case'"""

FUNNELS = f"""
SELECT customer_id, funnels, revenue
FROM clicks MATCH_AGGREGATE (
  PARTITION BY customer_id
  ORDER BY ts
  PATTERN SEQ(VK, BK, !REC, VC, BC){DEFINE}
  MEASURES COUNT(*) AS funnels, SUM(BC.price) AS revenue
  WITHIN INTERVAL 10 MINUTES
) AS m
ORDER BY funnels DESC, revenue DESC, customer_id"""

BUSIEST_WINDOWS = f"""
SELECT window_start, window_end, SUM(funnels) AS funnels, COUNT_IF(funnels > 0) AS customers,
       SUM(revenue) AS revenue
FROM clicks MATCH_AGGREGATE (
  PARTITION BY customer_id
  ORDER BY ts
  PATTERN SEQ(VK, BK, !REC, VC, BC){DEFINE}
  MEASURES COUNT(*) AS funnels, SUM(BC.price) AS revenue
  WITHIN INTERVAL 10 MINUTES
  SLIDE INTERVAL 1 MINUTE
) AS m
GROUP BY window_start, window_end
ORDER BY funnels DESC, window_start
LIMIT 5"""

QUERIES = {"funnels per customer": FUNNELS, "busiest 10-minute windows": BUSIEST_WINDOWS}


def load(spark: SparkSession) -> int:
    """Register the sample clicks as view ``clicks``; return their number."""
    clicks = spark.read.csv(str(DATA), header=True, schema=SCHEMA)
    clicks.createOrReplaceTempView("clicks")
    return clicks.count()


def run(spark: SparkSession) -> dict[str, pd.DataFrame]:
    """Every query of :data:`QUERIES` over the view ``clicks``, as pandas frames."""
    return {name: sparkseq.sql(spark, text).toPandas() for name, text in QUERIES.items()}


def main(master: str | None = None) -> None:
    """Start Spark, load the sample clicks, run the funnel queries, print the results."""
    started = time.perf_counter()
    spark = sparkseq.session(master, app_name="sparkseq-demo")
    print(f"Spark {spark.version} ready in {time.perf_counter() - started:.1f} s")
    n_clicks = load(spark)
    print(f"\n{FUNNELS.strip()}\n")

    started = time.perf_counter()
    results = run(spark)
    elapsed = time.perf_counter() - started
    funnels = results["funnels per customer"]
    converted = funnels[funnels.funnels > 0]
    money = {"revenue": "{:,.2f}".format}
    print(f"Top customers by completed funnels ({n_clicks:,} clicks):")
    print(converted.head(10).to_string(index=False, formatters=money))
    print(f"\n{len(funnels):,} customers touched the funnel, {len(converted):,} completed it "
          f"{converted.funnels.sum():,} times, bringing {converted.revenue.sum():,.2f} in case sales.")
    print("\nBusiest 10-minute windows (sliding by 1 minute), all customers:")
    print(results["busiest 10-minute windows"].to_string(index=False, formatters=money))
    print(f"\n(both queries: {elapsed:.1f} s; to see what they compile to: "
          "python -m sparkseq explain --table clicks=examples/data/clicks.csv '<query>')")
    spark.stop()


if __name__ == "__main__":
    main()
