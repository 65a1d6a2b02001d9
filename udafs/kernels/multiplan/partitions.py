"""Many partitions of a sliding-window multi-plan in one engine call.

A grouped pass hands the engine one partition key's rows at a time. With hundreds of
small partitions, numpy's fixed cost per array operation (a few µs, and a 20-statement
workload runs a few hundred of them per partition) outweighs the work itself. When every
plan has ``WITHIN w SLIDE s``, each window is evaluated on its own rows only (SEMANTICS
§4), so partitions laid end to end on one time axis give every partition exactly its own
windows and numbers in one evaluation, provided that

* each partition is shifted by a multiple of every plan's slide (windows stay aligned
  to ``k·s``), and
* each starts at least the longest WITHIN after the one before it ends (no window
  holds rows of two partitions).

Each reported window then holds a row of exactly one partition (the last partition
starting at or before the window's last instant, ``start + w - 1``): it is given back
to that partition and shifted back. Plans without SLIDE report one row per partition
over all of its rows, so they are not laid end to end (:func:`laid_end_to_end` says
which multi-plans are); neither are partitions whose shifted times would leave
``±``:data:`TIME_LIMIT` (None: the caller evaluates them one by one).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from udafs.errors import PlanError
from udafs.kernels.evaluate import GroupResult
from udafs.kernels.multiplan.many import evaluate_many
from udafs.kernels.options import DEFAULT, KernelOptions
from udafs.kernels.values.measures import Column
from udafs.multiplan import MultiPlan
from udafs.plan import CountType

TIME_LIMIT = 1 << 62
"""Shifted times stay within ``±TIME_LIMIT`` (window arithmetic adds WITHIN and SLIDE to
them in int64); partitions that would leave it are evaluated one by one."""

PartitionResults = tuple[list[GroupResult | None], list[np.ndarray | None]]
"""Per plan (as :func:`udafs.kernels.multiplan.many.evaluate_many`): the rows of every partition,
and the partition index of each row (None for hidden plans)."""


def laid_end_to_end(mp: MultiPlan) -> bool:
    """True when ``mp``'s partitions can share one evaluation: every plan has SLIDE, counts
    exactly (a DOUBLE count falls back to float arithmetic once a running total passes
    int64, and several partitions' totals pass it sooner than one's) and has exact
    timestamps (imprecise ones carry a second time column that is not shifted)."""
    return all(p.slide is not None and p.count_type is not CountType.DOUBLE and p.uncertain is None
               for p in mp.plans)


def evaluate_partitions(mp: MultiPlan, ts: np.ndarray, mask: np.ndarray, columns: Sequence[Column],
                        starts: np.ndarray, *, options: KernelOptions = DEFAULT) -> PartitionResults | None:
    """Every plan of ``mp`` over several partitions in one evaluation (module docstring).

    Parameters
    ----------
    mp : MultiPlan
        Plans that all have WITHIN ... SLIDE (PlanError otherwise).
    ts, mask, columns
        The rows of all partitions, partition after partition, as for
        :func:`udafs.kernels.multiplan.many.evaluate_many` (int64 times, in any order within a
        partition).
    starts : ndarray
        The first row of each partition: ``starts[0] == 0``, strictly increasing, every
        partition non-empty.

    Returns
    -------
    tuple or None
        Per plan, what ``evaluate_many`` gives for all partitions' windows together
        (partition by partition, each by window start) and each row's partition index;
        None when the shifted times would leave ``±TIME_LIMIT``.

    Raises
    ------
    InputDataError, CountOverflowError
        As ``evaluate_many`` (which partition failed is not known here).
    """
    if not laid_end_to_end(mp):
        raise PlanError("partitions are laid end to end only when every plan has WITHIN ... SLIDE, an exact count "
                        "type and exact timestamps")
    ts = np.asarray(ts, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    lows, highs = np.minimum.reduceat(ts, starts), np.maximum.reduceat(ts, starts)
    offsets = _offsets(mp, lows.tolist(), highs.tolist())
    if offsets is None:
        return None
    shift = np.asarray(offsets, dtype=np.int64)
    firsts = lows + shift
    results = evaluate_many(mp, ts + np.repeat(shift, np.diff(np.append(starts, len(ts)))), mask, columns,
                            options=options)
    parts: list[np.ndarray | None] = []
    back: list[GroupResult | None] = []
    for plan, res in zip(mp.plans, results):
        if res is None or res.window_start is None or res.window_end is None or plan.within is None:
            back.append(res)
            parts.append(None)
            continue
        part = np.searchsorted(firsts, res.window_start + (plan.within - 1), side="right") - 1
        back.append(res._replace(window_start=res.window_start - shift[part], window_end=res.window_end - shift[part]))
        parts.append(part)
    return back, parts


def _offsets(mp: MultiPlan, lows: list[int], highs: list[int]) -> list[int] | None:
    """Each partition's shift (Python integers, exact): the first keeps its times; each next
    one starts the longest WITHIN or more after the one before it ends, by a multiple of
    every SLIDE. None when a shifted time would leave ``±TIME_LIMIT``."""
    unit = math.lcm(*(p.slide for p in mp.plans if p.slide is not None))
    gap = max(p.within for p in mp.plans if p.within is not None)
    steps = (-((lo - hi - gap) // unit) * unit for hi, lo in zip(highs, lows[1:]))  # ceil to a multiple of unit
    offsets = list(itertools.accumulate(steps, initial=0))
    if any(not -TIME_LIMIT <= t + o <= TIME_LIMIT for t, o in zip(itertools.chain(lows, highs), offsets * 2)):
        return None
    return offsets


__all__ = ["PartitionResults", "TIME_LIMIT", "evaluate_partitions", "laid_end_to_end"]
