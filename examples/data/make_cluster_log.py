"""Generate examples/data/cluster_log.csv: a merged Hadoop + Ganglia log (SASE++ section 6.5).

Hadoop events have microsecond times (JobStart, Mapper, DataIO, Reducer, JobEnd per job;
ReducerStart, DataPull, ReducerEnd per reducer task). Ganglia reports the standard
deviation of the load across the cluster every 15 seconds (``LoadStd``, one row per
sample for the task running on the monitored node): a sample reported at time t
describes a peak somewhere in the 15 seconds before it, so its row carries the
possible times ``ts_lo = t - 14 s`` to ``ts_hi = t`` (one-second steps); Hadoop rows
leave them empty (a point time).

Columns: ts, ts_lo, ts_hi (timestamps, microsecond precision), event, job_id,
task_id, period (seconds), size (bytes, DataIO), val (load std). Deterministic: the
same seed writes the same file.

Usage: python examples/data/make_cluster_log.py [--jobs 12] [--seed 11]
"""

from __future__ import annotations

import argparse
import csv
import random
from datetime import datetime, timedelta
from pathlib import Path

START = datetime(2026, 3, 2, 9, 0, 0)
SAMPLE = 15  # Ganglia's sampling period, seconds
COLUMNS = ["ts", "ts_lo", "ts_hi", "event", "job_id", "task_id", "period", "size", "val"]


def stamp(seconds: float) -> str:
    return (START + timedelta(microseconds=round(seconds * 1e6))).strftime("%Y-%m-%d %H:%M:%S.%f")


def hadoop(t: float, event: str, job: int | None, task: int | None, period: int | None = None,
           size: int | None = None) -> list:
    """A Hadoop event: a point time (no ts_lo / ts_hi)."""
    return [stamp(t), "", "", event, job, task, period, size, ""]


def reducer_task(rng: random.Random, task: int, job: int, start: float) -> tuple[list[list], float]:
    """ReducerStart, DataPulls, ReducerEnd and the Ganglia load samples around them."""
    rows = [hadoop(start, "ReducerStart", None, task)]
    t = start
    for _ in range(rng.randint(2, 4)):
        t += rng.uniform(3, 20)
        rows.append(hadoop(t, "DataPull", None, task, period=rng.randint(2, 40)))
    end = start + rng.uniform(40, 150)  # 3..10 samples inside the reducer's lifetime
    rows.append(hadoop(end, "ReducerEnd", None, task))
    first = (int(start - 60) // SAMPLE + 1) * SAMPLE  # samples from a minute before to a minute after
    for report in range(first, int(end + 60), SAMPLE):
        val = rng.choice([0.08, 0.12, 0.15, 0.19, 0.22, 0.25, 0.3, 0.35])
        rows.append([stamp(report), stamp(report - SAMPLE + 1), stamp(report), "LoadStd", None, task, None, None,
                     val])
    return rows, end


def job_rows(rng: random.Random, job: int, start: float) -> tuple[list[list], float]:
    rows = [hadoop(start, "JobStart", job, None)]
    t = start
    for kind in ("Mapper", "DataIO"):
        for _ in range(rng.randint(2, 5)):
            t += rng.uniform(1, 30)
            if kind == "Mapper":
                rows.append(hadoop(t, kind, job, None, period=rng.randint(5, 120)))
            else:
                rows.append(hadoop(t, kind, job, None, size=rng.randint(1, 64) * 1_000_000))
    for k in range(2):
        t += rng.uniform(5, 40)
        task_rows, end = reducer_task(rng, job * 2 + k, job, t)
        rows += task_rows
        rows.append(hadoop(end, "Reducer", job, None, period=round(end - t)))
        t = end
    t += rng.uniform(1, 30)
    rows.append(hadoop(t, "JobEnd", job, None))
    return rows, t


def generate(jobs: int, seed: int) -> list[list]:
    rng = random.Random(seed)
    rows, clock = [], 0.0
    for job in range(jobs):
        more, clock = job_rows(rng, job, clock + rng.uniform(60, 900))
        rows += more
    return sorted(rows, key=lambda r: (r[0], r[3]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    path = Path(__file__).with_name("cluster_log.csv")
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerows(generate(args.jobs, args.seed))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
