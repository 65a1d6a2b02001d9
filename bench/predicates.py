"""Cross-event inequality COUNT: the kernel vs a brute-force self-join, on the same data.

Query (seed 002, Query 1 style): ``SEQ(A, G) WITHIN w`` with ``A.price >= G.price + 2``,
COUNT(*) per partition. One event per time unit, so w = events per window; the total
number of events stays fixed while w grows 10 → 100 → 1,000.

* kernel: ``evaluate_group`` per partition (the vectorised sorted/condensed pass,
  O(n log² n) per partition, independent of w up to the log factor);
* self-join: what a SQL engine without MATCH_AGGREGATE does — a pandas band join of
  A rows with G rows per partition (equi-join on (partition, time block) for the
  block and the next one, then filter on time and price), O(n · w) pairs. Run on as
  many partitions as keep it under ``MAX_PAIRS`` candidate pairs (the kernel is then
  timed on the same partitions for the ratio).

Printed per window size: ns/event for both, the kernel's growth relative to the
first size divided by the growth of log2(window size) (≈ 1 means the cost grows
like log w), and self-join / kernel.

Then the same comparison end to end on local Spark (``--spark``, on by default; one
run after a warm-up, same data for both):

* sparkseq: ``MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, G) ...
  WHERE A.price >= G.price + 2 MEASURES COUNT(*) ... WITHIN w)`` through
  :func:`sparkseq.sql`;
* two-step self-join in Spark SQL: step 1 joins A rows with G rows on (k, time
  block) and (k, time block + 1) — an equi-join, so Spark hash/sort-merge joins
  instead of a cartesian product — and filters on time (``0 < G.ts - A.ts < w``) and
  the predicate; step 2 counts per k. O(n · w) joined pairs.

Both must return the same counts (checked). Printed per window size: seconds, ns/event,
sparkseq's growth relative to the first size over log2 growth, and self-join /
sparkseq. Measured figures only; nothing is extrapolated.

Run: ``.venv/bin/python bench/predicates.py [events_total] [partitions] [spark_events]
[--no-spark]``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.timing import median_time  # noqa: E402
from udafs.kernels import evaluate_group  # noqa: E402
from udafs.kernels.predicates import choose  # noqa: E402
from udafs.plan import CmpOp, CountType, Element, Plan, Predicate, ValueType  # noqa: E402

MAX_PAIRS = 30_000_000


def make_data(n: int, parts: int, seed: int = 7) -> pd.DataFrame:
    """``n`` events over ``parts`` partitions: one event per time unit each, A or G, random price."""
    rng = np.random.default_rng(seed)
    per = n // parts
    return pd.DataFrame({
        "k": np.repeat(np.arange(parts), per),
        "ts": np.tile(np.arange(per, dtype=np.int64), parts),
        "mask": rng.choice(np.array([1, 2], dtype=np.int64), size=per * parts),
        "price": np.round(rng.uniform(0, 100, size=per * parts), 2),
    })


def plan_for(w: int) -> Plan:
    return Plan(symbols=("A", "G"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=w,
                columns=(ValueType.FLOAT,), count_type=CountType.BIGINT,
                predicates=(Predicate(0, 0, CmpOp.GE, 1, 0, 2.0),))


def kernel_counts(df: pd.DataFrame, plan: Plan) -> np.ndarray:
    """COUNT per partition through ``evaluate_group`` (rows shuffled: input order is irrelevant)."""
    out = []
    for _, g in df.groupby("k", sort=True):
        price = g["price"].to_numpy()
        cols = [(price, np.ones(len(price), dtype=bool))]
        out.append(int(evaluate_group(plan, g["ts"].to_numpy(), g["mask"].to_numpy(), cols).values[0][0]))
    return np.array(out)


def self_join_counts(df: pd.DataFrame, w: int) -> np.ndarray:
    """The same counts by a band join: A x G on (k, block) and (k, block + 1), then filters."""
    a = df[df["mask"] == 1][["k", "ts", "price"]].assign(b=lambda d: d["ts"] // w)
    g = df[df["mask"] == 2][["k", "ts", "price"]].assign(b=lambda d: d["ts"] // w)
    total = None
    for shift in (0, 1):
        j = a.merge(g.assign(b=g["b"] - shift), on=["k", "b"], suffixes=("_a", "_g"))
        ok = (j["ts_g"] > j["ts_a"]) & (j["ts_g"] - j["ts_a"] < w) & (j["price_a"] >= j["price_g"] + 2.0)
        c = ok.groupby(j["k"]).sum()
        total = c if total is None else total.add(c, fill_value=0)
    return total.reindex(sorted(df["k"].unique()), fill_value=0).to_numpy().astype(np.int64)


MATCH_SQL = """SELECT k, n FROM bench_ticks MATCH_AGGREGATE (
  PARTITION BY k ORDER BY ts PATTERN SEQ(A, G) DEFINE A AS mask = 1, G AS mask = 2
  WHERE A.price >= G.price + 2 MEASURES COUNT(*) AS n WITHIN {w}) AS m"""

SELF_JOIN_SQL = """WITH a AS (SELECT k, ts, price, ts DIV {w} AS b FROM bench_ticks WHERE mask = 1),
g AS (SELECT k, ts, price, ts DIV {w} AS b FROM bench_ticks WHERE mask = 2),
pairs AS (
  SELECT a.k FROM a JOIN g ON g.k = a.k AND g.b = a.b
   WHERE g.ts > a.ts AND g.ts - a.ts < {w} AND a.price >= g.price + 2
  UNION ALL
  SELECT a.k FROM a JOIN g ON g.k = a.k AND g.b = a.b + 1
   WHERE g.ts > a.ts AND g.ts - a.ts < {w} AND a.price >= g.price + 2)
SELECT k, COUNT(*) AS n FROM pairs GROUP BY k"""


def spark_comparison(df: pd.DataFrame, windows: tuple[int, ...] = (10, 100, 1000)) -> None:
    """sparkseq.sql vs the two-step Spark SQL self-join on ``df`` (module docstring)."""
    import time

    import sparkseq

    spark = sparkseq.session("local[2]", app_name="bench-predicates")
    try:
        spark.createDataFrame(df).cache().createOrReplaceTempView("bench_ticks")
        spark.sql("SELECT COUNT(*) FROM bench_ticks").collect()  # materialise the cache
        print(f"Spark local[2], {len(df):,} events, {df['k'].nunique()} partitions (one run each, after a warm-up)")
        base = None
        for w in windows:
            def run_match() -> dict[int, int]:
                return {r.k: r.n for r in sparkseq.sql(spark, MATCH_SQL.format(w=w)).collect()}

            def run_join() -> dict[int, int]:
                return {r.k: r.n for r in spark.sql(SELF_JOIN_SQL.format(w=w)).collect()}

            run_match()
            started = time.perf_counter()
            got = run_match()
            t_m = time.perf_counter() - started
            run_join() if w <= 100 else None  # warm-up (the large join is its own warm-up cost)
            started = time.perf_counter()
            want = run_join()
            t_j = time.perf_counter() - started
            assert {k: v for k, v in got.items() if v} == want, "sparkseq and the self-join disagree"
            ns_m, ns_j = t_m / len(df) * 1e9, t_j / len(df) * 1e9
            base = base or (ns_m, w)
            growth = (ns_m / base[0]) / (math.log2(w) / math.log2(base[1])) if w != base[1] else 1.0
            print(f"w={w:>5} events/window: sparkseq {t_m:7.2f} s ({ns_m:8.0f} ns/event, growth/log-growth "
                  f"{growth:5.2f}); self-join {t_j:7.2f} s ({ns_j:8.0f} ns/event); self-join/sparkseq "
                  f"{t_j / t_m:7.2f}x; matches {sum(want.values()):,} (counts equal)", flush=True)
    finally:
        spark.stop()


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if len(args) > 0 else 200_000
    parts = int(args[1]) if len(args) > 1 else 20
    spark_events = int(args[2]) if len(args) > 2 else 200_000
    df = make_data(n, parts)
    shuffled = df.sample(frac=1.0, random_state=1)
    print(f"{len(df):,} events, {parts} partitions, SEQ(A, G) WITHIN w, A.price >= G.price + 2, COUNT(*)")
    base = None
    for w in (10, 100, 1000):
        plan = plan_for(w)
        g0 = df[df["k"] == 0].sort_values("ts")
        ch = choose(plan, g0["ts"].to_numpy(), g0["mask"].to_numpy(), [(g0["price"].to_numpy(), np.ones(len(g0), dtype=bool))])
        got = kernel_counts(shuffled, plan)
        t_k = median_time(lambda: kernel_counts(shuffled, plan), 3)
        ns_k = t_k / len(df) * 1e9
        base = base or (ns_k, w)
        growth = (ns_k / base[0]) / (math.log2(w) / math.log2(base[1]))
        line = (f"w={w:>5} events/window: kernel {ns_k:8.0f} ns/event (method {ch.method}, degree {ch.degree:.3f}), "
                f"growth/log-growth {growth:5.2f}")
        per_part = len(df) // parts
        fit = min(parts, MAX_PAIRS // max(per_part // 2 * w, 1))  # A x G pairs within two blocks, roughly
        if fit == 0:
            line += f"; self-join skipped (> {MAX_PAIRS:,} candidate pairs in one partition)"
        else:
            sub = df[df["k"] < fit]
            sub_shuffled = shuffled[shuffled["k"] < fit]
            want = self_join_counts(sub, w)
            assert np.array_equal(got[:fit], want), (got[:5], want[:5])
            t_j = median_time(lambda: self_join_counts(sub, w), 3)
            t_ks = t_k if fit == parts else median_time(lambda: kernel_counts(sub_shuffled, plan), 3)
            where = "" if fit == parts else f" on {fit} of {parts} partitions"
            line += (f"; self-join{where} {t_j / len(sub) * 1e9:8.0f} ns/event, "
                     f"self-join/kernel {t_j / t_ks:6.2f}x (counts equal)")
        print(line, flush=True)
    if "--no-spark" not in sys.argv:
        spark_comparison(make_data(spark_events, parts))


if __name__ == "__main__":
    main()
