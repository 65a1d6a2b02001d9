"""Cross-event inequality COUNT: the kernel vs a brute-force self-join, on the same data.

Query (the condensed-composition paper's Query 1 style): ``SEQ(A, G) WITHIN w`` with ``A.price >= G.price + 2``,
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

Then (also on local Spark; skipped by ``--no-spark``) the paper's Query 1 shape — three
elements, two cross-event inequalities and one equality: ``SEQ(A, G, C) WITHIN w``, G a
tick of 'GOOG', A and C ticks of other stocks, ``A.price >= G.price + 2 AND C.price <
G.price AND A.name = C.name``, COUNT(*) per partition key k. Data: ``Q1_EVENTS`` ticks
(80,000) in ``Q1_PARTITIONS`` (8) partitions, one tick per time unit per partition (no
ties, so w = events per window), names uniform over 8 stocks (GOOG ≈ 1/8 of ticks),
prices uniform in [0, 100) to the cent (doubles); the same data for w = 10, 100, 1,000.

* sparkseq: ``MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, G, C) DEFINE
  A AS name <> 'GOOG', G AS name = 'GOOG', C AS name <> 'GOOG' WHERE ... MEASURES
  COUNT(*) AS n WITHIN w)`` through :func:`sparkseq.sql`;
* two-step self-join in Spark SQL: step 1 joins A rows with G rows on (k, time block
  ``ts DIV w``), filtered on ``0 < G.ts - A.ts < w`` and ``A.price >= G.price + 2``;
  step 2 joins those pairs with C rows on (k, name, block), filtered on ``G.ts < C.ts``,
  ``C.ts - A.ts < w`` and ``C.price < G.price``; then COUNT per k. The G and C rows are
  listed under their own block and the previous one (``explode(array(b, b - 1))``), so
  the equi-joins pair A with the rows of its block and the next one, each candidate
  once (no UNION ALL: step 1 is computed once). Spark plans equi-joins (broadcast hash
  joins at small sizes), never a cartesian product or nested loop; about 0.013·w²
  step-2 candidate rows per event (≈ 12,600 at w = 1,000).

WITHIN w means ``last.ts - first.ts < w`` (strict; rows with equal times never follow
each other), which the join's ``C.ts - A.ts < w`` and strict ``>`` on times reproduce;
a hand example checks both queries on WITHIN's bound and the predicates' boundaries
(``q1_hand_check``) before the timed runs. Counts must be equal (checked). Printed per
window size: seconds and ns/event for both (one warm-up, then one timed run each) and
self-join / sparkseq. Measured figures only; nothing is extrapolated.

Run: ``.venv/bin/python bench/predicates.py [events_total] [partitions] [spark_events]
[--no-spark]``; the Query 1 section alone: ``.venv/bin/python bench/predicates.py
--query1-only [--query1-events=N] [--query1-partitions=P] [--query1-windows=10,100,1000]``
(the same options apply to it in a full run).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.timing import median_time, timed_after_warmup  # noqa: E402
from udafs.kernels import evaluate_group  # noqa: E402
from udafs.kernels.predicates.methods import choose  # noqa: E402
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

            got, t_m = timed_after_warmup(run_match)
            want, t_j = timed_after_warmup(run_join, w <= 100)  # the large join is its own warm-up cost
            assert {k: v for k, v in got.items() if v} == want, "sparkseq and the self-join disagree"
            ns_m, ns_j = t_m / len(df) * 1e9, t_j / len(df) * 1e9
            base = base or (ns_m, w)
            growth = (ns_m / base[0]) / (math.log2(w) / math.log2(base[1])) if w != base[1] else 1.0
            print(f"w={w:>5} events/window: sparkseq {t_m:7.2f} s ({ns_m:8.0f} ns/event, growth/log-growth "
                  f"{growth:5.2f}); self-join {t_j:7.2f} s ({ns_j:8.0f} ns/event); self-join/sparkseq "
                  f"{t_j / t_m:7.2f}x; matches {sum(want.values()):,} (counts equal)", flush=True)
    finally:
        spark.stop()


# --- Query 1 shape: SEQ(A, G, C), two cross-event inequalities and one equality ---------

Q1_NAMES = ("GOOG", "AAPL", "AMZN", "IBM", "INTC", "MSFT", "ORCL", "SUNW")
Q1_EVENTS = 80_000
Q1_PARTITIONS = 8


def make_ticks(n: int, parts: int, seed: int = 11) -> pd.DataFrame:
    """``n`` ticks over ``parts`` partitions: one tick per time unit each (no ties), a name
    drawn uniformly from :data:`Q1_NAMES` (GOOG about 1/8 of ticks), a random price."""
    rng = np.random.default_rng(seed)
    per = n // parts
    return pd.DataFrame({
        "k": np.repeat(np.arange(parts), per),
        "ts": np.tile(np.arange(per, dtype=np.int64), parts),
        "name": np.array(Q1_NAMES)[rng.integers(0, len(Q1_NAMES), size=per * parts)],
        "price": np.round(rng.uniform(0, 100, size=per * parts), 2),
    })


Q1_MATCH_SQL = """SELECT k, n FROM q1_ticks MATCH_AGGREGATE (
  PARTITION BY k ORDER BY ts PATTERN SEQ(A, G, C)
  DEFINE A AS name <> 'GOOG', G AS name = 'GOOG', C AS name <> 'GOOG'
  WHERE A.price >= G.price + 2 AND C.price < G.price AND A.name = C.name
  MEASURES COUNT(*) AS n WITHIN {w}) AS m"""

# Each G row (step 1) and each C row (step 2) is listed twice, under its own block and
# the previous one (jb = b, b - 1): joining jb = A's block then pairs A with the G / C
# rows of A's block and of the next one, each candidate once, by an equi-join on
# (k, block) and (k, name, block) — no union, so step 1 is computed once.
Q1_SELF_JOIN_SQL = """WITH t AS (SELECT k, ts, name, price, ts DIV {w} AS b FROM q1_ticks),
a AS (SELECT k, ts, name, price, b FROM t WHERE name <> 'GOOG'),
g AS (SELECT k, ts, price, jb FROM t LATERAL VIEW explode(array(b, b - 1)) e AS jb WHERE name = 'GOOG'),
c AS (SELECT k, ts, name, price, jb FROM t LATERAL VIEW explode(array(b, b - 1)) e AS jb WHERE name <> 'GOOG'),
ag AS (
  SELECT a.k, a.ts AS a_ts, a.b AS a_b, a.name, g.ts AS g_ts, g.price AS g_price
    FROM a JOIN g ON g.k = a.k AND g.jb = a.b
   WHERE g.ts > a.ts AND g.ts - a.ts < {w} AND a.price >= g.price + 2),
agc AS (
  SELECT ag.k FROM ag JOIN c ON c.k = ag.k AND c.name = ag.name AND c.jb = ag.a_b
   WHERE c.ts > ag.g_ts AND c.ts - ag.a_ts < {w} AND c.price < ag.g_price)
SELECT k, COUNT(*) AS n FROM agc GROUP BY k"""


def q1_hand_check(spark) -> None:
    """WITHIN's bound and the predicates' boundaries on a hand example, both queries agree.

    k=0: A@0 (IBM 7), G@1 (GOOG 5), C@2 and C@3 (IBM 1): (0, 1, 2) spans 2, (0, 1, 3)
    spans 3, and A.price = G.price + 2 exactly qualifies (>=). k=1: a C at G's price (not
    <) and a C of another name: never a match. k=2: A@0 (IBM 7), G@1 (GOOG 5), G@3
    (GOOG 4), C@4 (IBM 1): two matches, both spanning 4. WITHIN w means
    last.ts - first.ts < w (strict): w=3 counts spans up to 2, w=4 up to 3, w=5 up to 4.
    """
    import sparkseq

    rows = [(0, 0, "IBM", 7.0), (0, 1, "GOOG", 5.0), (0, 2, "IBM", 1.0), (0, 3, "IBM", 1.0),
            (1, 0, "IBM", 7.0), (1, 1, "GOOG", 5.0), (1, 2, "IBM", 5.0), (1, 3, "ORCL", 1.0),
            (2, 0, "IBM", 7.0), (2, 1, "GOOG", 5.0), (2, 3, "GOOG", 4.0), (2, 4, "IBM", 1.0)]
    spark.createDataFrame(pd.DataFrame(rows, columns=["k", "ts", "name", "price"])) \
        .createOrReplaceTempView("q1_ticks")
    for w, want in ((3, {0: 1}), (4, {0: 2}), (5, {0: 2, 2: 2})):
        got = {r.k: r.n for r in sparkseq.sql(spark, Q1_MATCH_SQL.format(w=w)).collect() if r.n}
        joined = {r.k: r.n for r in spark.sql(Q1_SELF_JOIN_SQL.format(w=w)).collect()}
        assert got == want == joined, (w, got, want, joined)


def query1_comparison(df: pd.DataFrame, windows: tuple[int, ...] = (10, 100, 1000)) -> None:
    """sparkseq.sql vs the two-step Spark SQL self-join for Query 1's shape on ``df``."""

    import sparkseq

    spark = sparkseq.session("local[2]", app_name="bench-predicates-q1")
    try:
        q1_hand_check(spark)
        spark.createDataFrame(df).cache().createOrReplaceTempView("q1_ticks")
        spark.sql("SELECT COUNT(*) FROM q1_ticks").collect()  # materialise the cache
        print(f"Query 1 shape: SEQ(A, G, C) WITHIN w, G = GOOG, A.price >= G.price + 2 AND C.price < G.price "
              f"AND A.name = C.name, COUNT(*) per k. Spark local[2], {len(df):,} ticks, {df['k'].nunique()} "
              f"partitions, {len(Q1_NAMES)} names, same data for every w (one run each, after a warm-up)",
              flush=True)
        for w in windows:
            def run_match() -> dict[int, int]:
                return {r.k: r.n for r in sparkseq.sql(spark, Q1_MATCH_SQL.format(w=w)).collect() if r.n}

            def run_join() -> dict[int, int]:
                return {r.k: r.n for r in spark.sql(Q1_SELF_JOIN_SQL.format(w=w)).collect()}

            got, t_m = timed_after_warmup(run_match)
            want, t_j = timed_after_warmup(run_join)
            assert got == want, "sparkseq and the self-join disagree"
            ns_m, ns_j = t_m / len(df) * 1e9, t_j / len(df) * 1e9
            print(f"w={w:>5} events/window: sparkseq {t_m:7.2f} s ({ns_m:8.0f} ns/event); self-join {t_j:7.2f} s "
                  f"({ns_j:8.0f} ns/event); self-join/sparkseq {t_j / t_m:7.2f}x; matches {sum(want.values()):,} "
                  f"(counts equal)", flush=True)
    finally:
        spark.stop()


def option(name: str, default: str) -> str:
    """The value of ``--name=value`` on the command line, else ``default``."""
    for a in sys.argv[1:]:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def run_query1() -> None:
    """The Query 1 section with its command-line options (module docstring)."""
    n = int(option("query1-events", str(Q1_EVENTS)))
    parts = int(option("query1-partitions", str(Q1_PARTITIONS)))
    windows = tuple(int(w) for w in option("query1-windows", "10,100,1000").split(","))
    query1_comparison(make_ticks(n, parts), windows)


def main() -> None:
    if "--query1-only" in sys.argv:
        run_query1()
        return
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
        ch = choose(plan, g0["ts"].to_numpy(), g0["mask"].to_numpy(),
                    [(g0["price"].to_numpy(), np.ones(len(g0), dtype=bool))])
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
        run_query1()


if __name__ == "__main__":
    main()
