"""Hadoop cluster monitoring: the six case-study queries of the SASE++ paper (Tables 1 and 5).

SASE++ monitors a Hadoop cluster with Kleene+ pattern queries over a merged log of
Hadoop job / task events (microsecond times) and Ganglia metrics (15-second samples).
The bundled log ``examples/data/cluster_log.csv`` (``make_cluster_log.py``) has one
row per event; a Ganglia ``LoadStd`` row carries the possible times of the load peak
it reports, ``ts_lo`` .. ``ts_hi`` (the 15 seconds before the report), which
``UNCERTAIN BETWEEN ts_lo AND ts_hi STEP INTERVAL 1 SECOND`` turns into expected
aggregates over the possible worlds (Hadoop rows leave them NULL: point times).

* **Q1 / Q2** mapper / reducer statistics — ``seq(JobStart a, Mapper+ b[], JobEnd c)
  where [job id] within 1 day return avg(b[].period), max(b[].period)``: ``[job id]`` is
  PARTITION BY, SKIP TILL NEXT MATCH collects every mapper of the job in one match.
* **Q3** data-pull stragglers — ``b[b.len].period > 2 × avg(b[].period)`` compares a
  Kleene set's last row with the *average of the set*: which subsets satisfy it is a
  subset-sum condition, so the set count is #P-hard and the compiler refuses the query
  with that reason (SASE++ enumerates the sets instead).
* **Q4** queued data — ``seq(JobStart a, DataIO+ b[]) within 1 day return sum(b[].size)``:
  the number of (start, non-empty I/O set) matches and their summed bytes.
* **Q5** imbalance episodes — ``seq(Balance a, ReducerStart b, Imbalance+ c[],
  ReducerEnd d, Balance e) where [task id] within 10 minutes``: Balance / Imbalance are
  Ganglia samples (load std below / at least 0.2), so with imprecise times; the expected
  number of episodes per reducer task.
* **Q6** increasingly imbalanced load — ``seq(ReducerStart a, LoadStd+ b[], ReducerEnd c)
  where [task id] and b[i].val >= b[i-1].val`` (option 1) or ``b[i].val >=
  max(b[1..i-1].val)`` (option 2, reduced to option 1 by the compiler: equivalent)
  ``within 10 minutes``: every non-decreasing run of load samples in a reducer's
  lifetime, at the report times (today's answer) and over the samples' possible times
  (expected).

Every figure is compared with a brute-force answer over the same rows
(:func:`brute_force`): the jobs' own statistics for Q1 / Q2, closed forms for Q4,
enumerated load runs for Q6, and for Q5 / Q6 over imprecise times SASE++'s method —
each match enumerated and its probability computed from its events' possible times —
summed. Run: ``python examples/data/make_cluster_log.py; python examples/hadoop_monitoring.py``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a source checkout

from pyspark.sql import SparkSession  # noqa: E402

import sparkseq  # noqa: E402

DATA = Path(__file__).with_name("data") / "cluster_log.csv"
SCHEMA = ("ts TIMESTAMP, ts_lo TIMESTAMP, ts_hi TIMESTAMP, event STRING, job_id BIGINT, task_id BIGINT, "
          "period BIGINT, size BIGINT, val DOUBLE")
MINUTE, SECOND = 60_000_000, 1_000_000
IMBALANCED = 0.2  # a load std at least this is an imbalanced cluster

Q1_MAPPERS = """
SELECT job_id, mappers_avg, mappers_max FROM cluster_log MATCH_AGGREGATE (
  PARTITION BY job_id ORDER BY ts
  PATTERN SEQ(JobStart, Mapper+, JobEnd) TYPE BY event
  MEASURES AVG(Mapper.period) AS mappers_avg, MAX(Mapper.period) AS mappers_max
  WITHIN INTERVAL 1 DAY
  STRATEGY SKIP TILL NEXT MATCH
) AS q1 ORDER BY job_id"""

Q2_REDUCERS = Q1_MAPPERS.replace("Mapper", "Reducer").replace("mappers", "reducers").replace("q1", "q2")

Q3_STRAGGLERS = """
SELECT task_id, stragglers FROM cluster_log MATCH_AGGREGATE (
  PARTITION BY task_id ORDER BY ts
  PATTERN SEQ(ReducerStart, DataPull+) TYPE BY event
  WHERE DataPull[DataPull.len].period > 2 * AVG(DataPull[].period)
  MEASURES COUNT(*) AS stragglers
  WITHIN INTERVAL 10 MINUTES
) AS q3"""

Q4_DATA_IO = """
SELECT job_id, io_matches, io_bytes FROM cluster_log MATCH_AGGREGATE (
  PARTITION BY job_id ORDER BY ts
  PATTERN SEQ(JobStart, DataIO+) TYPE BY event
  MEASURES COUNT(*) AS io_matches, SUM(DataIO.size) AS io_bytes
  WITHIN INTERVAL 1 DAY
) AS q4 ORDER BY job_id"""

Q5_IMBALANCE_EPISODES = f"""
SELECT task_id, episodes FROM cluster_log MATCH_AGGREGATE (
  PARTITION BY task_id ORDER BY ts UNCERTAIN BETWEEN ts_lo AND ts_hi STEP INTERVAL 1 SECOND
  PATTERN SEQ(Balance, ReducerStart, Imbalance+, ReducerEnd, Balance)
  DEFINE Balance AS event = 'LoadStd' AND val < {IMBALANCED},
         ReducerStart AS event = 'ReducerStart',
         Imbalance AS event = 'LoadStd' AND val >= {IMBALANCED},
         ReducerEnd AS event = 'ReducerEnd'
  MEASURES COUNT(*) AS episodes
  WITHIN INTERVAL 10 MINUTES
) AS q5 ORDER BY task_id"""

Q6_RISING = """
SELECT task_id, rising_runs FROM cluster_log MATCH_AGGREGATE (
  PARTITION BY task_id ORDER BY ts{uncertain}
  PATTERN SEQ(ReducerStart, LoadStd+, ReducerEnd) TYPE BY event
  WHERE {condition}
  MEASURES COUNT(*) AS rising_runs
  WITHIN INTERVAL 10 MINUTES
) AS q6 ORDER BY task_id"""
OPTION_1, OPTION_2 = "LoadStd[i].val >= LoadStd[i-1].val", "LoadStd[i].val >= MAX(LoadStd[1..i-1].val)"
UNCERTAIN = " UNCERTAIN BETWEEN ts_lo AND ts_hi STEP INTERVAL 1 SECOND"

QUERIES = {
    "q1": Q1_MAPPERS,
    "q2": Q2_REDUCERS,
    "q4": Q4_DATA_IO,
    "q5": Q5_IMBALANCE_EPISODES,
    "q6_option1": Q6_RISING.format(uncertain="", condition=OPTION_1),
    "q6_option2": Q6_RISING.format(uncertain="", condition=OPTION_2),
    "q6_option1_uncertain": Q6_RISING.format(uncertain=UNCERTAIN, condition=OPTION_1),
    "q6_option2_uncertain": Q6_RISING.format(uncertain=UNCERTAIN, condition=OPTION_2),
}


def load(spark: SparkSession, path: Path = DATA) -> None:
    """The bundled log as the temporary view ``cluster_log``."""
    spark.read.csv(str(path), header=True, schema=SCHEMA).createOrReplaceTempView("cluster_log")


def run(spark: SparkSession, path: Path = DATA) -> dict[str, list[tuple]]:
    """Every query over the log at ``path``; rows as tuples per query, and Q3's refusal."""
    load(spark, path)
    out: dict[str, list[tuple]] = {name: [tuple(r) for r in sparkseq.sql(spark, text).collect()]
                                   for name, text in QUERIES.items()}
    try:
        sparkseq.sql(spark, Q3_STRAGGLERS)
    except ValueError as exc:  # sql_rewrites.errors.PredicateError, before any Spark job
        out["q3"] = [(str(exc).split(" at line")[0],)]
    return out


# -- the brute-force answers ----------------------------------------------------------------

def log_events(spark: SparkSession) -> list[dict]:
    """The log's rows with engine times (microseconds) for :func:`brute_force`."""
    rows = spark.sql("SELECT unix_micros(ts) AS t, unix_micros(ts_lo) AS lo, unix_micros(ts_hi) AS hi, event, "
                     "job_id, task_id, period, size, val FROM cluster_log").collect()
    return [r.asDict() for r in rows]


def brute_force(events: list[dict]) -> dict[str, list[tuple]]:
    """Each query's answer computed directly from the rows, without the engine."""
    jobs: dict[int, list[dict]] = defaultdict(list)
    tasks: dict[int, list[dict]] = defaultdict(list)
    for e in sorted(events, key=lambda e: e["t"]):
        (jobs[e["job_id"]] if e["job_id"] is not None else tasks[e["task_id"]]).append(e)
    out: dict[str, list[tuple]] = {}
    for name, kind in (("q1", "Mapper"), ("q2", "Reducer")):  # S2 takes every mapper / reducer
        periods = {j: [e["period"] for e in rows if e["event"] == kind] for j, rows in jobs.items()}
        out[name] = [(j, sum(p) / len(p), max(p)) for j, p in sorted(periods.items())]
    io = {j: [e["size"] for e in rows if e["event"] == "DataIO"] for j, rows in jobs.items()}
    out["q4"] = [(j, 2 ** len(s) - 1, 2 ** (len(s) - 1) * sum(s)) for j, s in sorted(io.items())]
    out["q5"] = [(k, float(_episodes(rows))) for k, rows in sorted(tasks.items())]
    rising = [(k, _rising_at_reports(rows)) for k, rows in sorted(tasks.items())]
    expected = [(k, float(_rising_expected(rows))) for k, rows in sorted(tasks.items())]
    out["q6_option1"] = out["q6_option2"] = rising
    out["q6_option1_uncertain"] = out["q6_option2_uncertain"] = expected
    return out


def _lifetime(rows: list[dict]) -> tuple[int, int]:
    start = next(e["t"] for e in rows if e["event"] == "ReducerStart")
    return start, next(e["t"] for e in rows if e["event"] == "ReducerEnd")


def _rising_at_reports(rows: list[dict]) -> int:
    """Q6 today: non-empty non-decreasing subsequences of the samples reported inside the lifetime."""
    a, c = _lifetime(rows)
    vals = [e["val"] for e in rows if e["event"] == "LoadStd" and a < e["t"] < c]
    return sum(1 for k in range(1, len(vals) + 1) for sub in itertools.combinations(vals, k)
               if all(x <= y for x, y in zip(sub, sub[1:]))) if c - a < 10 * MINUTE else 0


def _times(e: dict) -> list[int]:
    return list(range(e["lo"], e["hi"] + 1, SECOND)) if e["lo"] is not None else [e["t"]]


def _inside(e: dict, a: int, c: int) -> Fraction:
    """P(a < time of e < c)."""
    times = _times(e)
    return Fraction(sum(1 for t in times if a < t < c), len(times))


def _rising_expected(rows: list[dict]) -> Fraction:
    """Q6 over possible times, SASE++'s way: enumerate every candidate match (a set of
    samples, non-decreasing in time order) and sum its probability. The samples' ranges
    are disjoint, so their time order is their range order and the events are independent:
    a set's probability is the product of P(start < sample < end)."""
    a, c = _lifetime(rows)
    samples = [e for e in rows if e["event"] == "LoadStd"]
    probs = [_inside(e, a, c) for e in samples]
    total = Fraction(0)
    for k in range(1, len(samples) + 1):
        for idx in itertools.combinations(range(len(samples)), k):
            vals = [samples[i]["val"] for i in idx]
            if all(x <= y for x, y in zip(vals, vals[1:])) and c - a < 10 * MINUTE:
                p = Fraction(1)
                for i in idx:
                    p *= probs[i]
                total += p
    return total


def _episodes(rows: list[dict]) -> Fraction:
    """Q5 over possible times: every (Balance a, Balance e, non-empty Imbalance set) with the
    reducer's start b and end d; P = P(a < b, d < e, e - a < 10 min) · Π P(b < c < d), and the
    sets sum to Π (1 + P(b < c < d)) - 1."""
    b, d = _lifetime(rows)
    loads = [e for e in rows if e["event"] == "LoadStd"]
    balance = [e for e in loads if e["val"] < IMBALANCED]
    sets = Fraction(1)
    for e in loads:
        if e["val"] >= IMBALANCED:
            sets *= 1 + _inside(e, b, d)
    total = Fraction(0)
    for first, last in itertools.permutations(balance, 2):
        pairs = sum(1 for ta in _times(first) for te in _times(last) if ta < b and d < te and te - ta < 10 * MINUTE)
        total += Fraction(pairs, len(_times(first)) * len(_times(last)))
    return total * (sets - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    spark = sparkseq.session("local[2]", app_name="hadoop-monitoring")
    try:
        got = run(spark, args.data)
        want = brute_force(log_events(spark))
        for name, rows in got.items():
            check = "" if name not in want else (
                "  (= brute force)" if _close(rows, want[name]) else f"  (brute force: {want[name][:3]} ...)")
            print(f"{name}: {len(rows)} rows; first: {rows[:3]}{check}")
    finally:
        spark.stop()


def _close(got: list[tuple], want: list[tuple]) -> bool:
    """Same rows, floats to 1e-9 relative."""
    return len(got) == len(want) and all(
        len(g) == len(w) and all(abs(x - y) <= 1e-9 * max(1.0, abs(y)) if isinstance(y, float) else x == y
                                 for x, y in zip(g, w)) for g, w in zip(got, want))


if __name__ == "__main__":
    main()
