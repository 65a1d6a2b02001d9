"""The Kindle funnel, step by step: how far did each customer get, and where did the others drop off?

The demo's funnel (``examples/ecommerce_funnel.py``) counts complete runs of

    SEQ(VK, BK, !REC, VC, BC)   view Kindle, buy Kindle, no recommendation in between,
                                then view a case and buy a case

within 10 minutes. Product analysts ask the other question first: of the customers who
started, how many reached each step? ``STEPS(*)`` gives, per customer, the number of
matches of every prefix of the pattern (VK; VK, BK; VK, BK, VC; the whole pattern), and
``MAX_STEP()`` the longest prefix the customer completed (docs/sql-reference.md,
MEASURES). Grouping customers by ``max_step`` is the drop-off table; customers with
``max_step >= i`` reached step i.

The same two numbers are SQL functions for BI tools (``seq_steps`` / ``seq_max_step``),
shown at the end. For people who would rather look than read, the funnel is drawn as a
chart into a PNG with matplotlib, an optional extra: ``pip install 'sparkseq[chart]'``
(without it the example prints how to get it and skips the chart).

Run: ``python examples/kindle_funnel_steps.py [--chart kindle_funnel.png | --no-chart]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a source checkout

import sparkseq  # noqa: E402
from sparkseq.demo import DEFINE, load  # noqa: E402

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

#: What each step of SEQ(VK, BK, !REC, VC, BC) means, in order.
STEP_NAMES = ("viewed a Kindle", "bought the Kindle", "viewed a case, no recommendation", "bought a case")

#: Per customer: how many times each prefix of the funnel matched, and the longest one matched.
STEPS_PER_CUSTOMER = f"""
SELECT customer_id, steps, max_step
FROM clicks MATCH_AGGREGATE (
  PARTITION BY customer_id
  ORDER BY ts
  PATTERN SEQ(VK, BK, !REC, VC, BC){DEFINE}
  MEASURES STEPS(*) AS steps, MAX_STEP() AS max_step
  WITHIN INTERVAL 10 MINUTES
) AS m"""

#: The drop-off table: customers by the last step they reached (0: touched the funnel's
#: symbols, never viewed a Kindle before them).
DROP_OFF = f"""
SELECT max_step, count(*) AS customers
FROM ({STEPS_PER_CUSTOMER}) AS per_customer
GROUP BY max_step
ORDER BY max_step"""

#: The same drop-off table with the BI function ``seq_max_step`` in a plain GROUP BY: the
#: symbols are values of a type column, here a CASE over the clicks' action and item.
BI_FUNCTIONS = """
SELECT max_step, count(*) AS customers
FROM (SELECT customer_id,
             seq_max_step(ts, step_type, 'SEQ(VK, BK, !REC, VC, BC)', INTERVAL 10 MINUTES) AS max_step
      FROM (SELECT customer_id, ts,
                   CASE WHEN action = 'recommendation' THEN 'REC'
                        WHEN item = 'kindle' AND action IN ('view', 'buy') THEN upper(substr(action, 1, 1)) || 'K'
                        WHEN item = 'case' AND action IN ('view', 'buy') THEN upper(substr(action, 1, 1)) || 'C'
                   END AS step_type
            FROM clicks)
      WHERE step_type IS NOT NULL
      GROUP BY customer_id)
GROUP BY max_step
ORDER BY max_step"""

CHART_HELP = ("the funnel chart needs matplotlib, an optional extra of sparkseq: "
              "pip install 'sparkseq[chart]' (or pip install matplotlib); the tables above are complete without it")


def reached(drop_off: pd.DataFrame, steps: int = len(STEP_NAMES)) -> list[int]:
    """Customers who reached each step 1..steps: those whose ``max_step`` is at least i.

    >>> import pandas as pd
    >>> reached(pd.DataFrame({"max_step": [0, 1, 2, 4], "customers": [5, 3, 2, 1]}))
    [6, 3, 1, 1]
    """
    return [int(drop_off.customers[drop_off.max_step >= i].sum()) for i in range(1, steps + 1)]


def funnel_table(counts: list[int]) -> str:
    """Each step with its customers, the share of the first step, and the drop from the step before."""
    lines = [f"{'step':<46}{'customers':>10}{'of step 1':>11}{'kept':>8}"]
    for i, (name, n) in enumerate(zip(STEP_NAMES, counts)):
        share = f"{n / counts[0]:.1%}" if counts[0] else "-"
        kept = f"{n / counts[i - 1]:.0%}" if i and counts[i - 1] else ""
        lines.append(f"{i + 1}. {name:<43}{n:>10,}{share:>11}{kept:>8}")
    return "\n".join(lines)


def write_chart(counts: list[int], path: Path) -> bool:
    """Draw the funnel as horizontal bars into the PNG ``path``; False (with a message on
    stderr) when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        print(CHART_HELP, file=sys.stderr)
        return False
    matplotlib.use("Agg")  # files only: no display needed
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.8))
    top = max(counts) or 1
    labels = [f"{i + 1}. {name}" for i, name in enumerate(STEP_NAMES)]
    bars = ax.barh(labels, counts, left=[(top - n) / 2 for n in counts], color="#3b7dd8")
    ax.invert_yaxis()  # step 1 on top
    for bar, n in zip(bars, counts):
        share = f" ({n / counts[0]:.0%})" if counts[0] else ""
        ax.text(top / 2, bar.get_y() + bar.get_height() / 2, f"{n:,}{share}", ha="center", va="center",
                color="black", fontsize=10, bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})
    ax.set_xticks([])
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    fig.suptitle("The Kindle funnel: customers reaching each step within 10 minutes", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def run(spark: SparkSession) -> dict[str, pd.DataFrame]:
    """The per-customer steps, the drop-off table, and the drop-off table by the BI functions."""
    return {"steps": sparkseq.sql(spark, STEPS_PER_CUSTOMER + "\nORDER BY max_step DESC, customer_id").toPandas(),
            "drop_off": sparkseq.sql(spark, DROP_OFF).toPandas(),
            "bi_drop_off": sparkseq.sql(spark, BI_FUNCTIONS).toPandas()}


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> dict[str, pd.DataFrame]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chart", type=Path, default=Path("kindle_funnel.png"), help="PNG file of the funnel chart")
    parser.add_argument("--no-chart", action="store_true", help="print the tables only")
    args = parser.parse_args(argv)
    spark = spark or sparkseq.session(app_name="sparkseq-funnel-steps")
    n_clicks = load(spark)
    results = run(spark)
    print(f"{STEPS_PER_CUSTOMER.strip()}\n\nThe customers who got furthest ({n_clicks:,} clicks):")
    print(results["steps"].head(8).to_string(index=False))
    print(f"\nDrop-off table:{DROP_OFF}\n")
    print(results["drop_off"].to_string(index=False))
    counts = reached(results["drop_off"])
    print(f"\n{funnel_table(counts)}")
    same = results["bi_drop_off"].equals(results["drop_off"])
    print(f"\nThe same table with seq_max_step in a plain GROUP BY: {'identical' if same else 'DIFFERENT'}")
    if not args.no_chart and write_chart(counts, args.chart):
        print(f"\nFunnel chart written to {args.chart}")
    return results


if __name__ == "__main__":
    main()
