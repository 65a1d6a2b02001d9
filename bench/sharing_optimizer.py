"""Sharing-optimizer wall time on Sharon-style workloads (Sharon ICDE 2018, section VIII).

Two workloads of 20, 60 and 120 queries with patterns of length 10:

* traffic: vehicle routes over a street grid (event type = street). Routes follow a few
  popular corridors with detours, so sub-routes recur across queries (Sharon q1-q7);
  WITHIN 600 SLIDE 60 (seconds), one partition per vehicle.
* e-commerce: purchase funnels over 50 item types built from a few common item chains
  (Sharon q8-q11); WITHIN 1200 SLIDE 60.

Statistics are what sparkseq would collect: per-type counts of a synthetic event
sample (Zipf-distributed type frequencies) turned into rates by
``Statistics.from_counts``. Prints candidates found, graph vertices (candidates and
query-subset options with benefit > 0), vertices pruned (dominated, conflict-ridden),
searched and conflict-free, patterns chosen, the estimated saving against not sharing,
the gap (how far the plan's score may be below the best possible, from the plan
finder's upper bound; 0 when exact), how the plan was found, and the median optimizer
time. Target: under 1 s at 120 queries.

Usage: .venv/bin/python bench/sharing_optimizer.py [--repeat R] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sql_rewrites.sharing import Query, Statistics, Window, optimize  # noqa: E402
from timing import median_time  # noqa: E402  (bench/ is on sys.path when run as a script)

LENGTH = 10


def traffic(n: int, seed: int) -> tuple[list[Query], list[str]]:
    """Routes of LENGTH streets on a 10 x 10 grid, along 8 popular corridors."""
    rng = random.Random(seed)
    side = 10
    streets = [f"St{x}_{y}" for x in range(side) for y in range(side)]

    def walk(x: int, y: int, steps: int) -> list[str]:
        out = []
        for _ in range(steps):
            out.append(f"St{x}_{y}")
            dx, dy = rng.choice([(1, 0), (0, 1), (1, 0), (0, 1), (-1, 0), (0, -1)])
            x, y = min(max(x + dx, 0), side - 1), min(max(y + dy, 0), side - 1)
        return out

    corridors = [walk(rng.randrange(side), rng.randrange(side), 3 * LENGTH) for _ in range(8)]
    queries = []
    for i in range(n):
        c = rng.choice(corridors)
        s = rng.randrange(len(c) - LENGTH)
        route = c[s:s + LENGTH]
        if rng.random() < 0.5:  # a detour: the route leaves the corridor
            k = rng.randrange(2, LENGTH)
            x, y = (int(v) for v in route[k - 1][2:].split("_"))
            route = route[:k] + walk(x, y, LENGTH - k + 1)[1:]
        queries.append(Query(f"route{i}", tuple(route), Window(600, 60), "vehicles"))
    return queries, streets


def ecommerce(n: int, seed: int) -> tuple[list[Query], list[str]]:
    """Funnels of LENGTH purchases over 50 item types, from 12 common item chains."""
    rng = random.Random(seed)
    items = [f"Item{k:02d}" for k in range(50)]
    chains = [rng.sample(items, 4) for _ in range(12)]
    queries = []
    for i in range(n):
        funnel: list[str] = []
        while len(funnel) < LENGTH:
            part = rng.choice(chains) if rng.random() < 0.7 else rng.sample(items, rng.randint(1, 3))
            funnel += [t for t in part if not funnel or t != funnel[-1]]
        queries.append(Query(f"funnel{i}", tuple(funnel[:LENGTH]), Window(1200, 60), "customers"))
    return queries, items


def sampled_statistics(types: list[str], events_per_second: float, partitions: int, seed: int) -> Statistics:
    """Statistics from a synthetic one-hour sample with Zipf type frequencies."""
    rng = np.random.default_rng(seed)
    span = 3600.0
    weights = 1.0 / np.arange(1, len(types) + 1) ** 1.1
    rng.shuffle(weights)
    sample = rng.choice(len(types), size=int(events_per_second * span * partitions * 0.1), p=weights / weights.sum())
    counts = np.bincount(sample, minlength=len(types))
    return Statistics.from_counts({t: int(c) for t, c in zip(types, counts)}, span=span, partitions=partitions,
                                  sample_fraction=0.1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--budget", type=float, default=0.3, help="plan finder time budget (s)")
    args = ap.parse_args()
    print(f"pattern length {LENGTH}; time budget {args.budget} s; median of {args.repeat} runs")
    print(f"{'workload':<12}{'queries':>8}{'cands':>7}{'vertices':>9}{'pruned':>8}{'searched':>9}{'free':>6}"
          f"{'chosen':>7}{'saving':>9}{'gap':>7}  {'found by':<15}{'time':>7}")
    for name, make, rate in (("traffic", traffic, 1 / 30), ("e-commerce", ecommerce, 1 / 120)):
        for n in (20, 60, 120):
            queries, types = make(n, seed=n)
            stats = sampled_statistics(types, rate, partitions=1000, seed=n)
            plan = optimize(queries, stats, time_budget=args.budget)
            seconds = median_time(lambda: optimize(queries, stats, time_budget=args.budget), args.repeat)
            (rep,) = plan.classes
            red = rep.reduction
            saving = 100 * (plan.cost_unshared - plan.cost) / plan.cost_unshared
            gap = 100 * (plan.score_bound - plan.score) / plan.score_bound if plan.score_bound else 0.0
            print(f"{name:<12}{n:>8}{len(rep.candidates):>7}{len(rep.graph.vertices):>9}"
                  f"{len(red.dominated) + len(red.conflict_ridden):>8}{red.remaining.bit_count():>9}"
                  f"{red.conflict_free.bit_count():>6}{len(plan.shared):>7}{saving:>8.1f}%{gap:>6.1f}%"
                  f"  {plan.method:<15}{seconds:>6.3f}s")


if __name__ == "__main__":
    main()
