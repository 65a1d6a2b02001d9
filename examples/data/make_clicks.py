"""Generate ``sparkseq/data/clicks.csv``: a deterministic e-commerce click stream for the funnel demo.

Customers browse in sessions. Some view the Kindle, some of those buy it; a buyer
may get a recommendation, may look at cases and buy one. Short pauses are seconds
to minutes; now and then a customer leaves for a while, so a 10-minute window
matters. Run ``python examples/data/make_clicks.py`` to rewrite the file; the output
is the same on every run (``random.Random`` with a fixed seed). The file is package data
of sparkseq (``sparkseq.demo``), so that an installed wheel runs the demo too.
"""

from __future__ import annotations

import csv
import random
from datetime import datetime, timedelta
from pathlib import Path

SEED = 20240501
CUSTOMERS = 3_000
START = datetime(2024, 5, 1)
DAYS = 7
PRICES = {"kindle": 99.99, "case": 24.99, "charger": 14.99, "reading_light": 19.99, "ebook": 7.99,
          "headphones": 59.99, "cover": 29.99}
BROWSE = ["charger", "reading_light", "ebook", "headphones", "cover", "case"]
OUT = Path(__file__).resolve().parents[2] / "sparkseq" / "data" / "clicks.csv"


def session(rng: random.Random, customer: int, start: datetime) -> list[tuple[int, str, str, str, str]]:
    """One visit: some browsing, maybe the Kindle funnel, more browsing."""
    t = start
    rows = []

    def click(action: str, item: str) -> None:
        nonlocal t
        rows.append((customer, t.strftime("%Y-%m-%d %H:%M:%S"), action, item, f"{PRICES[item]:.2f}"))
        pause = rng.expovariate(1 / 45) if rng.random() < 0.9 else rng.uniform(300, 1200)
        t += timedelta(seconds=1 + int(pause))

    for _ in range(rng.randint(0, 4)):
        click("view", rng.choice(BROWSE))
    if rng.random() < 0.55:
        for _ in range(rng.randint(1, 2)):
            click("view", "kindle")
        if rng.random() < 0.5:
            click("buy", "kindle")
            if rng.random() < 0.3:
                click("recommendation", rng.choice(["case", "reading_light", "cover"]))
            if rng.random() < 0.7:
                for _ in range(rng.randint(1, 3)):
                    click("view", "case")
                if rng.random() < 0.6:
                    click("buy", "case")
    for _ in range(rng.randint(0, 3)):
        click("view", rng.choice(BROWSE))
    return rows


def main() -> None:
    rng = random.Random(SEED)
    rows = []
    for customer in range(1, CUSTOMERS + 1):
        for _ in range(rng.randint(1, 3)):
            start = START + timedelta(seconds=rng.randrange(DAYS * 86_400))
            rows += session(rng, customer, start)
    rows.sort(key=lambda r: (r[1], r[0]))
    with OUT.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["customer_id", "ts", "action", "item", "price"])
        writer.writerows(rows)
    print(f"wrote {len(rows)} clicks of {CUSTOMERS} customers to {OUT}")


if __name__ == "__main__":
    main()
