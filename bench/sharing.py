"""Workload sharing on Spark: one pass per sharing group vs every statement alone (Sharon, section VIII).

Two synthetic streams, generated once with ``spark.range`` and written to parquet:

* **routes**: vehicles (``--vehicles``) driving random walks on a grid of streets,
  one position report every few seconds; a query counts the trips of each vehicle
  along a route of 10 streets (a walk on the same grid, so routes share sub-routes);
* **funnels**: customers browsing and buying items; a query counts the customer's
  10-step funnels over the item catalogue (popular items recur across funnels).

Every query: ``WITHIN INTERVAL 10 MINUTES SLIDE INTERVAL 1 MINUTE``, ``COUNT(*)`` per
key and window. For 20, 60 and 120 queries (``--queries``) the script prints the time
of (shared) :func:`sparkseq.statements.workloads.collect_workload` on the whole script — planning
and running every statement, the group's pass, and every statement's rows collected to
the driver as Arrow by one result job — and of (alone) each statement run by itself, one
after the other, its rows collected with ``toArrow()`` (shared: the median of ``--repeat``
runs, 3 by default, every run printed; alone: one run after them, or with ``--alternate``
one right after each shared run and the median of those, so that both ways see the same
JVM warm-up and load: the shared runs come first, in a JVM that has run less, and Spark's
compiled code keeps getting faster over the first runs); the results must be equal
statement by statement (names, types, rows). The shared time is also split into
planning and running the statements (plan+run, without the pass: the statistics jobs are
in it), the group's caching job (cache; none when the statements' rows are routed from
the pass, :mod:`sql_rewrites.generation.routed_results`, as they are here) and the result job
(collect; with routed rows, the pass runs in it); the statistics job of the plan-time
timeline decision (:func:`sparkseq.running.statistics.collect`) is also timed apart (stats). The
source is parquet files that do not change between runs, so the first shared run runs
that job and the later ones reuse its statistics (as any repeated run over unchanged
files does); the first shared run is printed with the others.

With ``--kernel`` it times only the group's engine call (no Spark: the group's input
collected once, every partition evaluated in this process): every member one by one; the
shared timelines chosen per partition (a multi-plan without a decision); the decision
made once from the group's statistics (:mod:`sql_rewrites.planning.timeline_plan`, what workloads
run), with prefixes only and with prefixes and suffixes; results checked equal.

With ``--calibrate`` it fits the constants of the shared-timeline cost model
(:mod:`udafs.timelines`) to the engine call's measured seconds (``--save FILE`` keeps the
observations). With ``--compare ROUNDS`` it times the whole shared run
(:func:`collect_workload`) with the decision made at plan time (its statistics job over a
sample of the source, as workloads run, and over all rows) against the decision left to
each partition (no statistics job), alternating in one session. With ``--routed-run ROUNDS``
it times the shared run as it runs (statements whose rows are routed from the pass are not
run on their own) against the same with every statement compiled and analysed again,
alternating in one session.

With ``--masks`` it times reading and masking a 20-query group's input rows (the scan
and the row mask of the group's pass, written to Spark's no-op sink; best of 3 after a
warm-up) in two fresh Spark sessions started one after the other in this run, with and
without ``-XX:-DontCompileHugeMethods`` (:data:`sparkseq.session.JIT_HUGE_METHODS`).

Usage: .venv/bin/python bench/sharing.py [--events N] [--queries 20,60,120] [--stream routes,funnels] [--repeat 3]
                                         [--alternate]
                                         [--kernel | --masks | --calibrate [--save FILE] | --compare N | --routed-run N]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import itertools
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import SparkSession  # noqa: E402

import sparkseq  # noqa: E402
from sparkseq.running import statistics
from sparkseq.spark.session import JIT_HUGE_METHODS, default_conf, scratch_dir  # noqa: E402
from sparkseq.statements import workloads
from sparkseq.statements.workloads import collect_workload, plan_workload, release_workload  # noqa: E402
from sql_rewrites.generation.shared import SharedGroup  # noqa: E402
from sql_rewrites.planning.timeline_plan import plan_timelines  # noqa: E402

START = 1_714_550_400  # 2024-05-01 08:00 UTC, seconds
GRID = 6  # streets: a GRID x GRID grid of intersections, named S<row><col>
ITEMS = 24


def streets() -> list[str]:
    return [f"S{r}{c}" for r in range(GRID) for c in range(GRID)]


def neighbours(street: str) -> list[str]:
    r, c = int(street[1]), int(street[2])
    steps = [(r + dr, c + dc) for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0))]
    return [f"S{a}{b}" for a, b in steps if 0 <= a < GRID and 0 <= b < GRID]


def make_stream(spark: SparkSession, kind: str, events: int, keys: int) -> str:
    """Write the stream once (parquet), register view ``<kind>``; return its name."""
    path = scratch_dir() / f"bench-sharing-{kind}-{events}-{keys}.parquet"
    if not path.exists():
        if kind == "routes":
            names = ", ".join(f"'{s}'" for s in streets())
            # a walk: the street index drifts by +-1 / +-GRID per report (a cheap random walk per vehicle)
            value = (f"element_at(array({names}), CAST(pmod(abs(hash(id % {keys})) + "
                     f"(id DIV {keys}) * (1 + pmod(hash(id), 2) * {GRID - 1}), {GRID * GRID}) AS INT) + 1)")
        else:
            names = ", ".join(f"'{a}_{i}'" for i in range(ITEMS) for a in ("view", "buy"))
            value = f"element_at(array({names}), CAST(pmod(hash(id, 'item'), {2 * ITEMS}) AS INT) + 1)"
        spark.range(events).selectExpr(
            f"CAST(id % {keys} AS INT) AS k",
            f"timestamp_seconds({START} + (id DIV {keys}) * 5 + pmod(hash(id, 't'), 5)) AS ts",
            f"{value} AS type",
        ).write.mode("overwrite").parquet(str(path))
    spark.read.parquet(str(path)).createOrReplaceTempView(kind)
    return kind


def queries(kind: str, count: int, length: int, seed: int = 7) -> list[str]:
    """``count`` distinct patterns of ``length`` types: walks on the grid, or item funnels."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < count:
        if kind == "routes":
            walk = [rng.choice(streets())]
            while len(walk) < length:
                walk.append(rng.choice(neighbours(walk[-1])))
        else:
            hot = rng.sample(range(ITEMS), 4)
            walk = [f"{rng.choice(('view', 'buy'))}_{rng.choice(hot)}" for _ in range(length)]
        text = f"SEQ({', '.join(walk)})"
        if text not in out:
            out.append(text)
    return out


def statement(kind: str, pattern: str) -> str:
    return (f"SELECT k, window_start, n FROM {kind} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN {pattern} "
            "TYPE BY type MEASURES COUNT(*) AS n WITHIN INTERVAL 10 MINUTES SLIDE INTERVAL 1 MINUTE) AS m")


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    """Equal names, types and rows in any order."""
    def ordered(t: pa.Table) -> pa.Table:
        return t.sort_by([(name, "ascending") for name in t.column_names])
    return a.schema == b.schema and ordered(a).equals(ordered(b))


def run(spark: SparkSession, kind: str, count: int, repeat: int, alternate: bool = False) -> None:
    patterns = queries(kind, count, 10)
    script = ";\n".join(statement(kind, p) for p in patterns)
    rounds = []
    alone_rounds: list[float] = []

    def shared_run() -> list:
        spent = {"cache": 0.0, "collect": 0.0}
        began = time.perf_counter()
        with _timing(spent):
            results = collect_workload(spark, script)  # every statement's rows, one result job
        rounds.append((time.perf_counter() - began, spent))
        release_workload(spark, script)
        return results

    def alone_run(results: list) -> None:
        t_alone = 0.0
        for i, (pattern, result) in enumerate(zip(patterns, results)):
            began = time.perf_counter()
            own = sparkseq.sql(spark, statement(kind, pattern)).toArrow()  # the statement alone, all its rows
            t_alone += time.perf_counter() - began
            assert result.arrow is not None and same_rows(result.arrow, own), f"{kind}, {count}: statement {i} differs"
        alone_rounds.append(t_alone)

    for _ in range(repeat):  # the first run of a new workload pays one-time costs (code generation, JIT)
        results = shared_run()
        if alternate:  # both ways in every round: both see the same JVM warm-up and load
            alone_run(results)
    if not alternate:
        alone_run(results)
    t_shared, spent = sorted(rounds, key=lambda r: r[0])[len(rounds) // 2]  # the median round
    t_alone = sorted(alone_rounds)[len(alone_rounds) // 2]  # the median round (of one, or of --repeat)
    plan = plan_workload(spark, script)
    group = plan.groups[0]
    began = time.perf_counter()
    stats = statistics.collect(spark, group, reuse=False)  # the job itself (the runs above reuse its statistics)
    t_stats = time.perf_counter() - began
    decided = plan_timelines(group, stats).plan.timelines or ()
    rows = sum(r.arrow.num_rows for r in results if r.arrow is not None)
    t_plan = t_shared - spent["cache"] - spent["collect"]
    print(f"  {kind:<8} {count:>4} {t_alone:9.1f} s {t_shared:9.1f} s {t_alone / t_shared:8.2f}x "
          f"{t_plan:7.1f} s {spent['cache']:7.1f} s {spent['collect']:7.1f} s {t_stats:7.1f} s   "
          f"{', '.join(str(len(t.members)) for t in decided) or 'none':>9}   {rows:,} result rows; "
          f"shared runs {', '.join(f'{t:.1f}' for t, _ in rounds)} s"
          + (f"; alone runs {', '.join(f'{t:.1f}' for t in alone_rounds)} s" if alternate else ""))


def compare(spark: SparkSession, kind: str, count: int, rounds: int) -> None:
    """The shared run (:func:`collect_workload`) with the shared timelines decided once from
    the group's statistics job (what runs: a sample of the source when Spark estimates it
    as large), the same with the statistics job reading all rows, and the decision left to
    each partition (the multi-plan without one, no statistics job), alternating, same
    session; results equal."""
    script = ";\n".join(statement(kind, p) for p in queries(kind, count, 10))
    decide, needs, every = workloads.plan_timelines, workloads.needs_statistics, statistics.sample_every

    def undecided(group: SharedGroup, statistics: object) -> SharedGroup:
        return dataclasses.replace(group, plan=dataclasses.replace(group.plan, timelines=None))

    times: dict[str, list[float]] = {"planned": [], "planned, all rows": [], "per partition": []}
    jobs: dict[str, list[float]] = {mode: [] for mode in times}  # the statistics job's seconds per run
    collect = statistics.collect
    answers = {}
    for _ in range(rounds):
        for mode in times:
            spent = {"statistics": 0.0}
            statistics.collect = _timed(spent, "statistics", functools.partial(collect, reuse=False))
            if mode == "per partition":
                workloads.plan_timelines, workloads.needs_statistics = undecided, lambda group: False
            if mode == "planned, all rows":
                statistics.sample_every = lambda *estimate: 1
            try:
                began = time.perf_counter()
                results = collect_workload(spark, script)
                times[mode].append(time.perf_counter() - began)
            finally:
                workloads.plan_timelines, workloads.needs_statistics, statistics.sample_every = decide, needs, every
                statistics.collect = collect
            jobs[mode].append(spent["statistics"])
            answers[mode] = [r.arrow for r in results]
            release_workload(spark, script)
    assert all(a is not None and b is not None and same_rows(a, b)
               for mode in times for a, b in zip(answers["per partition"], answers[mode])), \
        "the decision changed a result"
    medians = {mode: float(np.median(values)) for mode, values in times.items()}
    shown = "; ".join(f"{mode} {medians[mode]:6.1f} s ({', '.join(f'{t:.1f}' for t in times[mode])}; "
                      f"statistics job {np.median(jobs[mode]):.2f} s)" for mode in times)
    base = medians["per partition"]
    print(f"  {kind:<8} {count:>4} shared run, median of {rounds}: {shown}; over per partition: planned "
          f"{medians['planned'] / base:4.2f}x, planned from all rows {medians['planned, all rows'] / base:4.2f}x "
          "(results equal)")


def routed_run(spark: SparkSession, kind: str, count: int, rounds: int) -> None:
    """The shared run (:func:`collect_workload`) as it runs, the statements whose rows are
    routed from the pass not run on their own, against the same with every statement
    compiled and analysed again as before (``workloads._Routing.runs`` always true),
    alternating, same session; results equal."""
    script = ";\n".join(statement(kind, p) for p in queries(kind, count, 10))
    runs = workloads._Routing.runs
    times: dict[str, list[float]] = {"not run": [], "run as before": []}
    answers = {}
    for _ in range(rounds):
        for mode in times:
            if mode == "run as before":
                workloads._Routing.runs = lambda self, number: True  # type: ignore[method-assign]
            try:
                began = time.perf_counter()
                results = collect_workload(spark, script)
                times[mode].append(time.perf_counter() - began)
            finally:
                workloads._Routing.runs = runs  # type: ignore[method-assign]
            answers[mode] = [r.arrow for r in results]
            release_workload(spark, script)
    assert all(a is not None and b is not None and same_rows(a, b)
               for a, b in zip(answers["not run"], answers["run as before"])), "not running changed a result"
    medians = {mode: float(np.median(values)) for mode, values in times.items()}
    shown = "; ".join(f"{mode} {medians[mode]:5.2f} s ({', '.join(f'{t:.2f}' for t in times[mode])})"
                      for mode in times)
    print(f"  {kind:<8} {count:>4} shared run, median of {rounds}: routed statements {shown}; "
          f"not run / run {medians['not run'] / medians['run as before']:4.2f} (results equal)")


def _timed(spent: dict[str, float], key: str, function: Callable) -> Callable:
    """``function``, adding the seconds of each call to ``spent[key]``."""
    def call(*args: object, **kwargs: object) -> object:
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[key] += time.perf_counter() - began
    return call


@contextlib.contextmanager
def _timing(spent: dict[str, float]) -> Iterator[None]:
    """Time the group passes' caching jobs and the one result job of a workload run."""
    cache, collect = workloads._cache_group, workloads.collect_results
    workloads._cache_group, workloads.collect_results = _timed(spent, "cache", cache), _timed(spent, "collect", collect)
    try:
        yield
    finally:
        workloads._cache_group, workloads.collect_results = cache, collect


def _group_input(spark: SparkSession, kind: str, count: int) -> tuple[object, list[tuple[np.ndarray, np.ndarray]]]:
    """The sharing group of ``count`` queries and its engine input collected once: per
    partition key, (time, mask) sorted by time."""
    group = plan_workload(spark, ";\n".join(statement(kind, p) for p in queries(kind, count, 10))).groups[0]
    events, (ts, mask, *_) = group.events()
    frame = spark.sql(events.sql(dialect="spark")).toPandas()
    parts = []
    for _, g in frame.groupby("k"):
        t, m = g[ts].to_numpy("int64"), g[mask].to_numpy("int64")
        order = np.argsort(t, kind="stable")
        parts.append((t[order], m[order]))
    return group, parts


def kernel(spark: SparkSession, kind: str, count: int) -> None:
    """The group's engine call alone (no Spark), same input, same run: one by one; the shared
    timelines decided per partition (a multi-plan without a decision); the shared timelines
    decided once from the group's statistics (what runs); and that decision without suffixes."""
    from udafs.kernels.multiplan import many
    from udafs.kernels.multiplan.partitions import evaluate_partitions
    from udafs.kernels.options import KernelOptions
    from udafs.workers.shared import ROWS_PER_CALL

    group, parts = _group_input(spark, kind, count)
    planned = plan_timelines(group, statistics.collect(spark, group)).plan
    undecided = dataclasses.replace(group.plan, timelines=None)
    modes = {"alone": (undecided, KernelOptions(share_prefixes=False, share_suffixes=False)),
             "per partition": (undecided, KernelOptions()),
             "planned, prefixes only": (planned, KernelOptions(share_suffixes=False)),
             "planned": (planned, KernelOptions())}
    calls = _calls(parts, ROWS_PER_CALL)
    times: dict[str, list[float]] = {}
    answers = {}
    for mode in [*modes, "laid end to end", *modes, "laid end to end"]:
        began = time.perf_counter()
        if mode == "laid end to end":  # the planned decision, whole partitions per call as the pass gathers them
            laid = [evaluate_partitions(planned, t, m, [], starts) for t, m, starts in calls]
        else:
            mp, options = modes[mode]
            answers[mode] = [many.evaluate_many(mp, t, m, options=options) for t, m in parts]
        times.setdefault(mode, []).append(time.perf_counter() - began)
    assert all(_same(a, b) for mode in modes for x, y in zip(answers["alone"], answers[mode])
               for a, b in zip(x, y)), "sharing changed a result"
    assert all(r is not None for r in laid) and _same_laid(answers["alone"], laid, calls), \
        "laid end to end changed a result"
    best = {mode: min(times[mode]) for mode in times}
    shown = "; ".join(f"{mode} {t:6.2f} s ({best['alone'] / t:4.2f}x)" for mode, t in best.items())
    decided = ", ".join(str(len(t.members)) for t in planned.timelines or ()) or "none"
    print(f"  {kind:<8} {count:>4} kernel, {len(parts)} partitions ({len(calls)} calls laid end to end), one thread: "
          f"{shown} (best of 2 each, results equal; planned timelines of {decided} members)")


def _calls(parts: list[tuple[np.ndarray, np.ndarray]], rows: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The partitions gathered into calls of ``rows`` rows or more (about as the sorted pass
    gathers them, which also depends on Spark's partitions): (times, masks, first row of
    each partition)."""
    calls, pending = [], []
    for i, part in enumerate(parts):
        pending.append(part)
        if sum(len(t) for t, _ in pending) >= rows or i == len(parts) - 1:
            sizes = [len(t) for t, _ in pending]
            calls.append((np.concatenate([t for t, _ in pending]), np.concatenate([m for _, m in pending]),
                          np.cumsum([0, *sizes[:-1]]).astype(np.int64)))
            pending = []
    return calls


def _same_laid(alone: list, laid: list, calls: list) -> bool:
    """Each partition's rows of the calls laid end to end equal its own (window starts and counts)."""
    rows: list[list] = []
    for (results, parts), (_, _, starts) in zip(laid, calls):
        for p in range(len(starts)):
            mine = [(i, res.window_start[part == p].tolist(), res.values[0][part == p].tolist())
                    for i, (res, part) in enumerate(zip(results, parts)) if res is not None and part is not None]
            rows.append(mine)
    own = [[(i, r.window_start.tolist(), r.values[0].tolist()) for i, r in enumerate(results) if r is not None]
           for results in alone]
    return rows == own


def calibrate(spark: SparkSession, kind: str, count: int) -> list[tuple[list[float], float]]:
    """Observations for the cost model of :mod:`udafs.timelines`: on the group's input
    (every partition, one thread), each member alone and random sets of 2..all members on
    one timeline, cut by :func:`udafs.timelines.choose_cuts`; per observation the model's
    terms (row steps, timeline rows, timeline rows x symbols, plans x calls) and the best
    of 2 seconds; on the whole partitions and on their first 30 rows each (where the fixed
    costs per engine call and per plan show)."""
    group, whole = _group_input(spark, kind, count)
    observed = []
    for rows_per_call in (None, 30):  # the whole partitions, then only their first rows (fixed costs show)
        parts = whole if rows_per_call is None else [(t[:rows_per_call], m[:rows_per_call]) for t, m in whole]
        observed += _observe(group, parts)
    return observed


def _observe(group: SharedGroup, parts: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[list[float], float]]:
    from udafs import timelines
    from udafs.kernels.multiplan import many
    from udafs.multiplan import MultiPlan

    plans = group.plan.plans
    per_symbol = [sum(int(np.count_nonzero(m & (1 << k))) for _, m in parts) for k in range(len(group.symbols))]

    def rows(symbols: int) -> float:
        return sum(r for k, r in enumerate(per_symbol) if symbols >> k & 1)

    def terms(chosen: list[int], cuts: tuple[int, ...]) -> list[float]:
        return list(timelines.cost_terms([plans[i] for i in chosen], cuts, rows, len(parts)))

    def timed(chosen: list[int], together: bool) -> float:
        n = len(chosen)
        cuts = timelines.choose_cuts([plans[i] for i in chosen])
        shared = (timelines.SharedTimeline(tuple(range(n)), cuts),) if together else ()
        mp = MultiPlan(tuple(plans[i] for i in chosen), group.plan.fields, tuple(group.plan.slots[i] for i in chosen),
                       (None,) * n, (False,) * n, shared)
        best = float("inf")
        for _ in range(2):
            began = time.perf_counter()
            for t, m in parts:
                many.evaluate_many(mp, t, m)
            best = min(best, time.perf_counter() - began)
        return best

    rng = random.Random(11)
    observed = [(terms([i], (plans[i].length - 1,)), timed([i], False)) for i in range(len(plans))]
    for size in (2, 3, 5, 8, 12, len(plans)):
        chosen = sorted(rng.sample(range(len(plans)), min(size, len(plans))))
        observed.append((terms(chosen, timelines.choose_cuts([plans[i] for i in chosen])), timed(chosen, True)))
    return observed


def fit(observed: list[tuple[list[float], float]]) -> None:
    """Non-negative least squares of seconds on the model's terms, relative errors (every
    subset of the terms beside the row steps, the best fit with no negative constant);
    the constants in row steps."""
    x = np.array([t for t, _ in observed]) / np.array([[s] for _, s in observed])
    best: tuple[float, np.ndarray] | None = None
    for used in itertools.product((False, True), repeat=4):
        columns = [0] + [j + 1 for j, keep in enumerate(used) if keep]
        u = np.zeros(5)
        u[columns], *_ = np.linalg.lstsq(x[:, columns], np.ones(len(observed)), rcond=None)
        rms = float(np.sqrt(np.mean((x @ u - 1) ** 2)))
        if (u >= 0).all() and (best is None or rms < best[0]):
            best = (rms, u)
    assert best is not None
    u = best[1]
    error = np.abs(x @ u - 1)
    step, per_row, per_symbol, per_call, per_member = u
    print(f"  fit over {len(observed)} observations: {step * 1e9:.1f} ns per row step; TIMELINE_WORK "
          f"{per_row / step:.2f}, SYMBOL_WORK {per_symbol / step:.3f}, CALL_WORK {per_call / step:,.0f}, "
          f"MEMBER_WORK {per_member / step:,.0f} row steps; relative error median {np.median(error):.1%}, "
          f"max {error.max():.1%}")


def masks(kind: str, events: int, keys: int) -> None:
    """Reading and masking a 20-query group's input with and without JIT of huge methods,
    each in a fresh Spark session (a child process of this run)."""
    seconds = {}
    for jit in (True, False):
        child = [sys.executable, __file__, "--mask-child", "on" if jit else "off", "--stream", kind,
                 "--events", str(events), "--keys", str(keys)]
        out = subprocess.run(child, capture_output=True, text=True, check=True).stdout.split()
        seconds[jit], symbols = float(out[-2]), int(out[-1])
    print(f"  {kind:<8}   20 masks: {symbols} symbols; read + mask of the group's input: JIT of huge methods "
          f"{seconds[True]:6.2f} s, without {seconds[False]:6.2f} s: {seconds[False] / seconds[True]:5.1f}x")


def _mask_child(jit: bool, kind: str, events: int, keys: int) -> None:
    conf = {}
    if not jit:
        conf = {"spark.driver.extraJavaOptions": default_conf("local").get("spark.driver.extraJavaOptions", "")
                .replace(JIT_HUGE_METHODS, ""), "spark.executor.extraJavaOptions": ""}
    spark = sparkseq.session(conf=conf)
    make_stream(spark, kind, events, keys)
    group = plan_workload(spark, ";\n".join(statement(kind, p) for p in queries(kind, 20, 10))).groups[0]
    frame = spark.sql(group.events()[0].sql(dialect="spark"))
    times = []
    for _ in range(4):
        began = time.perf_counter()
        frame.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - began)
    print(min(times[1:]), len(group.symbols))
    spark.stop()


def _same(a: object, b: object) -> bool:
    """Two GroupResults (or None) with equal window bounds, values and validity."""
    if a is None or b is None:
        return a is b
    arrays = lambda r: [r.window_start, r.window_end, *r.values, *r.valid]  # noqa: E731
    return all((x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
               for x, y in zip(arrays(a), arrays(b)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--queries", default="20,60,120")
    parser.add_argument("--stream", default="routes,funnels")
    parser.add_argument("--kernel", action="store_true",
                        help="time only the engine call: one by one, shared prefixes, shared prefixes and suffixes")
    parser.add_argument("--repeat", type=int, default=3,
                        help="time the shared run this many times and take the median (the first pays one-time "
                             "costs of a new workload)")
    parser.add_argument("--alternate", action="store_true",
                        help="run the statements alone in every round too, right after the shared run, and take the "
                             "median of each (default: alone once, after the shared runs)")
    parser.add_argument("--compare", type=int, metavar="ROUNDS",
                        help="time the shared run with the timelines decided at plan time against per partition")
    parser.add_argument("--routed-run", type=int, metavar="ROUNDS",
                        help="time the shared run with the routed statements not run (as it runs) against run "
                             "on their own as before, alternating")
    parser.add_argument("--save", metavar="FILE", help="with --calibrate: write the observations (JSON)")
    parser.add_argument("--calibrate", action="store_true",
                        help="fit the shared-timeline cost model (udafs.timelines) to the engine's measured times")
    parser.add_argument("--masks", action="store_true",
                        help="time reading and masking a group's input with and without JIT of huge methods")
    parser.add_argument("--mask-child", choices=("on", "off"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mask_child:
        _mask_child(args.mask_child == "on", args.stream, args.events, args.keys)
        return
    if args.masks:
        print(f"{args.events:,} events per stream, {args.keys} keys; 20 queries of length 10; one run")
        for kind in args.stream.split(","):
            masks(kind, args.events, args.keys)
        return
    spark = sparkseq.session()
    print(f"{spark.sparkContext.master}, Spark {spark.version}; {args.events:,} events per stream, {args.keys} keys; "
          "patterns of length 10, WITHIN 10 minutes SLIDE 1 minute, COUNT(*); one run")
    if args.calibrate:
        observed = []
        for kind in args.stream.split(","):
            make_stream(spark, kind, args.events, args.keys)
            for count in map(int, args.queries.split(",")):
                observed += calibrate(spark, kind, count)
        fit(observed)
        if args.save:
            Path(args.save).write_text(json.dumps(observed))
        spark.stop()
        return
    if args.routed_run or args.compare:  # alternating modes: whole shared runs two ways, after a warm-up
        mode, rounds = (routed_run, args.routed_run) if args.routed_run else (compare, args.compare)
        for kind in args.stream.split(","):
            make_stream(spark, kind, args.events, args.keys)
            warm_up = ";\n".join(statement(kind, p) for p in queries(kind, 2, 10, seed=1))
            collect_workload(spark, warm_up)
            release_workload(spark, warm_up)
            for count in map(int, args.queries.split(",")):
                mode(spark, kind, count, rounds)
        spark.stop()
        return
    if not args.kernel:
        print(f"  {'stream':<8} {'qs':>4} {'alone':>11} {'shared':>11} {'speedup':>9} {'plan+run':>9} "
              f"{'cache':>9} {'collect':>9} {'stats':>9}   timelines of")
    for kind in args.stream.split(","):
        make_stream(spark, kind, args.events, args.keys)
        if args.kernel:
            for count in map(int, args.queries.split(",")):
                kernel(spark, kind, count)
            continue
        # warm-ups, one per path: a statement alone, and a two-statement workload (its Arrow pass)
        sparkseq.sql(spark, statement(kind, queries(kind, 1, 10)[0])).collect()
        warm_up = ";\n".join(statement(kind, p) for p in queries(kind, 2, 10, seed=1))
        collect_workload(spark, warm_up)
        release_workload(spark, warm_up)
        for count in map(int, args.queries.split(",")):
            run(spark, kind, count, args.repeat, args.alternate)
    spark.stop()


if __name__ == "__main__":
    main()
