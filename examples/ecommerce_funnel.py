"""The Kindle funnel: how often did each customer go from the Kindle to a case, and what did it bring?

Pattern (SEMANTICS.md section 1), per customer, within 10 minutes:

    SEQ(VK, BK, !REC, VC, BC)   view Kindle, buy Kindle, no recommendation in between,
                                then view a case and buy a case

with COUNT(*) (every match counts, skip-till-any-match) and SUM(BC.price). The plan
is built by hand and the symbol mask is computed in SQL; the engine runs inside
Spark's Python workers without ever listing a match.

Run: ``python -m sparkseq demo`` (or ``bash .ci/demo``).
"""

from __future__ import annotations

import time
from pathlib import Path

import sparkseq
from sparkseq import Element, Measure, MeasureKind, Plan, ValueType

DATA = Path(__file__).resolve().parent / "data" / "clicks.csv"
MINUTE = 60 * 1_000_000  # unix_micros units

# Symbols are bits of the per-row mask: VK = 1, BK = 2, REC = 4, VC = 8, BC = 16.
FUNNEL = Plan(
    symbols=("VK", "BK", "REC", "VC", "BC"),
    elements=(Element(0), Element(1), Element(3), Element(4)),  # VK, BK, VC, BC
    negations=(0, 0, 1 << 2, 0, 0),  # !REC in the gap between BK and VC
    within=10 * MINUTE,
    measures=(Measure(MeasureKind.COUNT_STAR, name="funnels"),
              Measure(MeasureKind.SUM, symbol=4, column=0, name="revenue")),  # SUM(BC.price)
    columns=(ValueType.FLOAT,),
)

EVENTS = """
CREATE OR REPLACE TEMP VIEW kindle_events AS
SELECT customer_id,
       unix_micros(ts) AS ts,
       price,
         CASE WHEN action = 'view' AND item = 'kindle' THEN 1  ELSE 0 END  -- VK
       | CASE WHEN action = 'buy'  AND item = 'kindle' THEN 2  ELSE 0 END  -- BK
       | CASE WHEN action = 'recommendation'           THEN 4  ELSE 0 END  -- REC
       | CASE WHEN action = 'view' AND item = 'case'   THEN 8  ELSE 0 END  -- VC
       | CASE WHEN action = 'buy'  AND item = 'case'   THEN 16 ELSE 0 END  -- BC
         AS mask
FROM clicks
"""


def main(master: str | None = None) -> None:
    """Start Spark, load the sample clicks, run the funnel, print the results."""
    started = time.perf_counter()
    spark = sparkseq.session(master, app_name="sparkseq-demo")
    print(f"Spark {spark.version} ready in {time.perf_counter() - started:.1f} s")

    clicks = spark.read.csv(str(DATA), header=True,
                            schema="customer_id INT, ts TIMESTAMP, action STRING, item STRING, price DECIMAL(10,2)")
    clicks.createOrReplaceTempView("clicks")
    spark.sql(EVENTS)
    query = sparkseq.udaf_query(spark, FUNNEL, "kindle_events", keys=["customer_id"], values=["price"])
    print(f"\nPattern {FUNNEL.describe()} WITHIN 10 MINUTES, per customer. Engine query:\n{query}\n")

    started = time.perf_counter()
    funnels = spark.sql(query).toPandas()  # one row per customer with a funnel symbol
    elapsed = time.perf_counter() - started

    converted = funnels[funnels.funnels > 0]
    top = converted.sort_values(["funnels", "revenue", "customer_id"], ascending=[False, False, True]).head(10)
    print(f"Top customers by completed funnels ({clicks.count():,} clicks):")
    print(top.to_string(index=False, formatters={"revenue": "{:,.2f}".format}))
    print(f"\n{len(funnels):,} customers touched the funnel, {len(converted):,} completed it "
          f"{converted.funnels.sum():,} times, bringing {converted.revenue.sum():,.2f} in case sales "
          f"(engine query: {elapsed:.1f} s).")
    spark.stop()


if __name__ == "__main__":
    main()
