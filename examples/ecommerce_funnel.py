"""The Kindle funnel: how often did each customer go from the Kindle to a case, and what did it bring?

The A-Seq thesis's running example (docs/semantics.md section 1), per customer, within 10
minutes:

    SEQ(VK, BK, !REC, VC, BC)   view Kindle, buy Kindle, no recommendation in between,
                                then view a case and buy a case

with COUNT(*) (every match counts, skip-till-any-match) and SUM(BC.price), written as
MATCH_AGGREGATE in plain Spark SQL and run with ``sparkseq.sql``; then the same
funnel over 10-minute windows sliding by a minute, summed over customers. The engine
runs inside Spark's Python workers without ever listing a match.

This example is sparkseq's demo: its queries, sample clicks and report live in the
package (``sparkseq/demo.py``, ``sparkseq/data/clicks.csv``), so that an installed wheel
runs it too; this script runs that module from a source checkout.

Run: ``python -m sparkseq demo`` (or ``bash .ci/demo``, or ``python examples/ecommerce_funnel.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a source checkout

# The example *is* the packaged demo: one copy of the queries and the data.
from sparkseq.demo import BUSIEST_WINDOWS, CLICKS, FUNNELS, QUERIES, SCHEMA, load, main, run  # noqa: E402

__all__ = ["BUSIEST_WINDOWS", "CLICKS", "FUNNELS", "QUERIES", "SCHEMA", "load", "main", "run"]

if __name__ == "__main__":
    main()
