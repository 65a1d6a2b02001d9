"""The Kindle funnel demo (``python -m sparkseq demo``): its sample clicks, queries and report.

The A-Seq thesis's running example (docs/semantics.md section 1), per customer, within
10 minutes:

    SEQ(VK, BK, !REC, VC, BC)   view Kindle, buy Kindle, no recommendation in between,
                                then view a case and buy a case

with COUNT(*) (every match counts, skip-till-any-match) and SUM(BC.price), written as
MATCH_AGGREGATE in plain Spark SQL and run with ``sparkseq.sql``; then the same funnel
over 10-minute windows sliding by a minute, summed over customers. The engine runs
inside Spark's Python workers without ever listing a match.

The sample clicks (:data:`CLICKS`) and the queries ship inside the package, so the demo
runs the same from an installed wheel as from a source checkout, where
``bash .ci/demo`` and ``examples/ecommerce_funnel.py`` run this module too
(``examples/data/make_clicks.py`` regenerates the clicks).
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sparkseq.spark.session import session
from sparkseq.statements.sql_api import sql

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

#: A week of deterministic clicks of 3,000 customers (30,812 rows), package data of sparkseq.
CLICKS = Path(__file__).resolve().parent / "data" / "clicks.csv"
#: The columns of :data:`CLICKS` as a Spark DDL schema.
SCHEMA = "customer_id INT, ts TIMESTAMP, action STRING, item STRING, price DECIMAL(10,2)"

DEFINE = """
  DEFINE VK  AS action = 'view' AND item = 'kindle',
         BK  AS action = 'buy'  AND item = 'kindle',
         REC AS action = 'recommendation',
         VC  AS action = 'view' AND item = 'case',
         BC  AS action = 'buy'  AND item = 'case'"""

#: Completed funnels and their case revenue per customer, most funnels first.
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

#: The five sliding 10-minute windows with the most funnels, all customers together.
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
MONEY = {"revenue": "{:,.2f}".format}


def load(spark: SparkSession) -> int:
    """Register the sample clicks as view ``clicks``; return their number.

    Parameters
    ----------
    spark
        Any SparkSession whose driver can read the installed package's files.
    """
    clicks = spark.read.csv(str(CLICKS), header=True, schema=SCHEMA)
    clicks.createOrReplaceTempView("clicks")
    return clicks.count()


def run(spark: SparkSession) -> dict[str, pd.DataFrame]:
    """Every query of :data:`QUERIES` over the view ``clicks``, as pandas frames."""
    return {name: sql(spark, text).toPandas() for name, text in QUERIES.items()}


def report(results: dict[str, pd.DataFrame], n_clicks: int) -> str:
    """The demo's printed summary of :func:`run`'s ``results`` over ``n_clicks`` clicks."""
    funnels = results["funnels per customer"]
    converted = funnels[funnels.funnels > 0]
    return "\n".join([
        f"Top customers by completed funnels ({n_clicks:,} clicks):",
        converted.head(10).to_string(index=False, formatters=MONEY),
        f"\n{len(funnels):,} customers touched the funnel, {len(converted):,} completed it "
        f"{converted.funnels.sum():,} times, bringing {converted.revenue.sum():,.2f} in case sales.",
        "\nBusiest 10-minute windows (sliding by 1 minute), all customers:",
        results["busiest 10-minute windows"].to_string(index=False, formatters=MONEY),
    ])


def main(master: str | None = None) -> None:
    """Start Spark, load the sample clicks, run the funnel queries, print the results.

    Parameters
    ----------
    master
        Spark master URL; None for ``$SPARKSEQ_MASTER`` or ``local[2]`` (see
        :func:`sparkseq.session`).
    """
    started = time.perf_counter()
    spark = session(master, app_name="sparkseq-demo")
    print(f"Spark {spark.version} ready in {time.perf_counter() - started:.1f} s")
    n_clicks = load(spark)
    print(f"\n{FUNNELS.strip()}\n")
    started = time.perf_counter()
    results = run(spark)
    elapsed = time.perf_counter() - started
    print(report(results, n_clicks))
    print(f"\n(both queries: {elapsed:.1f} s; to see what they compile to: "
          f"python -m sparkseq explain --table {shlex.quote(f'clicks={CLICKS}')} "
          f"--schema {shlex.quote(f'clicks={SCHEMA}')} '<query>')")
    spark.stop()
