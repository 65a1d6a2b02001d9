"""``evaluate_group``: validate one group's events, sort once, pick a path, aggregate."""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from udafs.errors import InputDataError, PlanError
from udafs.kernels.counting import paths, quantifiers, steps, within
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.imprecise import uncertain
from udafs.kernels.options import DEFAULT, KernelOptions
from udafs.kernels.predicates import extended
from udafs.kernels.values.arith import Arith, with_fallback
from udafs.kernels.values.measures import Column, Partial, Tally, finalize, measure_symbols, partials
from udafs.plan import MeasureKind, Plan, ValueType, funnel_measures


class GroupResult(NamedTuple):
    """Measures of one group: one entry per output row in every array.

    ``window_start`` / ``window_end`` are int64 window bounds (None without SLIDE);
    ``values[j]`` holds measure ``plan.measures[j]`` (for ``STEPS(*)`` a 2-D array: one
    row of the n prefix counts per output row); ``valid[j]`` is False where the value is
    SQL NULL (the value there is 0, or NaN for floats).
    """

    window_start: np.ndarray | None
    window_end: np.ndarray | None
    values: tuple[np.ndarray, ...]
    valid: tuple[np.ndarray, ...]


def evaluate_group(plan: Plan, ts: np.ndarray, mask: np.ndarray,
                   columns: Sequence[Column] = (), seq: np.ndarray | None = None,
                   bounds: tuple[np.ndarray, np.ndarray] | None = None, *,
                   options: KernelOptions = DEFAULT) -> GroupResult:
    """Exact aggregates over all matches of ``plan`` in one group of events.

    Parameters
    ----------
    plan : Plan
        The compiled pattern (see :mod:`udafs.plan`).
    ts : array of int64
        Event timestamps, in any order.
    mask : array of int64
        Per-event symbol bitmask (bit k: instance of ``plan.symbols[k]``).
    columns : sequence of (values, valid)
        One pair per ``plan.columns`` entry: int64 or float64 values (a DECIMAL
        column's unscaled integers as int64, or as Python ints in an object array)
        and a bool validity array (False = NULL).
    seq : array of int64, optional
        Only for contiguity strategies (docs/predicates-and-strategies.md):
        STRICT_CONTIGUITY needs the dense rank of ts over the whole input stream;
        PARTITION_CONTIGUITY takes the dense rank within the partition, or derives it
        when every row of the partition (mask 0 included) is passed. Ignored by
        other plans.
    bounds : (lo, hi) arrays of int64, optional
        Only for plans with imprecise timestamps (``plan.uncertain``): the first and
        last possible time of each row (default: ``ts`` for both, point times).
        Measures are then expected values over the possible worlds
        (:mod:`udafs.kernels.imprecise.uncertain`).
    options : KernelOptions, optional
        Which exact paths may run (:mod:`udafs.kernels.options`; default: chosen by cost).

    Returns
    -------
    GroupResult
        Without SLIDE exactly one output row (also for empty input); with SLIDE one
        row per window holding an instance of a pattern symbol, by window start.

    Raises
    ------
    InputDataError
        Arrays of the wrong shape, length or dtype.
    CountOverflowError
        A result does not fit ``plan.count_type``.

    Examples
    --------
    >>> from udafs.plan import Element, Plan
    >>> plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0))
    >>> r = evaluate_group(plan, np.array([1, 2, 3]), np.array([1, 2, 2]))
    >>> int(r.values[0][0])
    2
    """
    ts, mask, cols = validate(plan, ts, mask, columns)
    if plan.uncertain is not None:  # imprecise timestamps: expected values
        lo, hi = _bounds(ts, bounds)
        parts, starts = uncertain.evaluate_uncertain(plan, ts, mask, cols, lo, hi)
        values, valid = finalize(plan, parts)
        ends = None if starts is None else starts + plan.within
        return GroupResult(starts, ends, tuple(values), tuple(valid))
    parts, starts = group_partials(plan, ts, mask, cols, seq=seq, options=options)
    values, valid = finalize(plan, parts)
    ends = None if starts is None else starts + plan.within
    return GroupResult(starts, ends, tuple(values), tuple(valid))


def group_partials(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column],
                   windows: tuple[int, int] | None = None, seq: np.ndarray | None = None,
                   options: KernelOptions = DEFAULT) -> tuple[list[Partial], np.ndarray | None]:
    """The partials of one group of validated rows (in any order) and, with SLIDE, the
    window starts they belong to (None without SLIDE: one output row).

    The engine's one dispatch for plans with precise timestamps: extended plans
    (strategies, predicates) by :func:`extended.evaluate_extended`, the others sorted
    once and tallied in checked int64 with the exact fallback. ``windows = (k0, k1)``
    keeps only the SLIDE windows ``k·s`` with ``k0 <= k < k1``; ``seq`` is the
    contiguity rank (see :func:`evaluate_group`).
    """
    if funnel_measures(plan):  # STEPS / MAX_STEP: every prefix through this same dispatch
        if not plan.extended:
            ts, mask, cols = sorted_instances(steps.without_funnel(plan), ts, mask, cols)  # once for all prefixes
        return steps.funnel_partials(plan, ts, mask, cols, windows, seq, options, group_partials)
    classes = quantifiers.expand(plan)  # plain plans whose matches partition plan's ((plan,) when plain)
    if plan.extended:  # strategies, cross-event and iterator predicates: their own window loop
        parts, starts = extended.evaluate_extended(plan, ts, mask, cols, seq, options)
        s = plan.slide
        if windows is None or starts is None or s is None:
            return parts, starts
        owned = (starts >= windows[0] * s) & (starts < windows[1] * s)
        return [Partial(p.value[owned], p.nn[owned]) for p in parts], starts[owned]
    ts, mask, cols = sorted_instances(plan, ts, mask, cols)  # every class sees plan's rows: the same windows
    shared = None  # the classes of a quantified plan share one timeline, and the passes of their common parts
    if len(classes) > 1 and plan.slide is None:  # (SLIDE: per batch of windows, in paths.window_partials)
        shared = (Timeline(ts, mask, np.array([0, len(ts)])) if plan.within is None
                  else within.block_timeline(ts, mask, plan.within))
        shared.keeps_passes = True

    def one(p: Plan, ar: Arith) -> list[Partial]:
        if shared is None:
            return partials(p, tally(p, ts, mask, ar), cols, ar)
        symbols = measure_symbols(p)
        if p.within is None:
            return partials(p, paths.no_window(p, ts, mask, ar, symbols, timeline=shared), cols, ar)
        return partials(p, within.within_blocks(p, ts, mask, ar, symbols, timeline=shared), cols, ar)

    def attempt(ar: Arith) -> tuple[list[Partial], np.ndarray | None]:
        if plan.slide is not None:  # quantified plans too: their classes share each batch of windows
            return paths.sliding(plan, ts, mask, cols, ar, windows)
        return quantifiers.each(plan, lambda p: one(p, ar)), None

    return with_fallback(plan, attempt, options)


def _bounds(ts: np.ndarray, bounds: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
    """Validated (lo, hi) possible-time bounds; point times without ``bounds``."""
    if bounds is None:
        return ts, ts
    lo, hi = (np.asarray(b) for b in bounds)
    if lo.shape != ts.shape or hi.shape != ts.shape or (len(ts) and (lo.dtype.kind not in "iu" or
                                                                    hi.dtype.kind not in "iu")):
        raise InputDataError(f"bounds must be two integer arrays of shape {ts.shape}")
    return lo.astype(np.int64, copy=False), hi.astype(np.int64, copy=False)


def tally(plan: Plan, ts: np.ndarray, mask: np.ndarray, ar: Arith) -> Tally:
    symbols = measure_symbols(plan)
    if plan.within is None:
        return paths.no_window(plan, ts, mask, ar, symbols)
    return within.within_blocks(plan, ts, mask, ar, symbols)


def validate(plan: Plan, ts: object, mask: object,
             columns: Sequence[Column]) -> tuple[np.ndarray, np.ndarray, list[Column]]:
    """Check shapes and dtypes; return int64 ts and mask and int64/float64 columns."""
    ts, mask = np.asarray(ts), np.asarray(mask)
    if ts.ndim != 1 or mask.shape != ts.shape:
        raise InputDataError(f"ts and mask must be 1-D of equal length, got shapes {ts.shape} and {mask.shape}")
    for name, arr in (("ts", ts), ("mask", mask)):
        if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
            raise InputDataError(f"{name} must be an integer array, got dtype {arr.dtype}")
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise InputDataError(f"{name} values must fit int64")
    if len(columns) != len(plan.columns):
        raise InputDataError(f"plan declares {len(plan.columns)} value columns, got {len(columns)}")
    cols = [_validate_column(c, vt, j, len(ts)) for j, (c, vt) in enumerate(zip(columns, plan.columns))]
    return ts.astype(np.int64, copy=False), mask.astype(np.int64, copy=False), cols


def _validate_column(col: Column, vt: ValueType, j: int, n: int) -> Column:
    try:
        vals, ok = (np.asarray(x) for x in col)
    except (TypeError, ValueError):
        raise InputDataError(f"column {j} must be a (values, valid) pair of arrays") from None
    if vals.shape != (n,) or ok.shape != (n,):
        raise InputDataError(f"column {j} arrays must have shape ({n},), got {vals.shape} and {ok.shape}")
    if ok.dtype != bool:
        raise InputDataError(f"column {j} validity must be bool, got dtype {ok.dtype}")
    if vt is ValueType.DECIMAL:  # unscaled integers: int64 when they fit, else Python ints
        if vals.dtype.kind not in "iuO" and n:
            raise InputDataError(f"column {j} is declared decimal but has dtype {vals.dtype}")
        return (vals if vals.dtype == object else vals.astype(np.int64, copy=False)), ok
    want = np.int64 if vt is ValueType.INT else np.float64
    kinds = "iub" if vt is ValueType.INT else "iuf"
    if vals.dtype.kind not in kinds and n:
        raise InputDataError(f"column {j} is declared {vt.value} but has dtype {vals.dtype}")
    return vals.astype(want, copy=False), ok


def sorted_instances(plan: Plan, ts: np.ndarray, mask: np.ndarray,
                     cols: list[Column]) -> tuple[np.ndarray, np.ndarray, list[Column]]:
    """Drop rows that are no pattern symbol's instance and sort the rest by time, once.

    Such rows take part in nothing (not even windows). When no value column is
    needed and the time range allows, sort one packed ``(ts, mask)`` key with
    ``np.sort`` (≈5x cheaper than ``argsort`` plus gathers on random input).

    Plans with predicates or strategies never get here from :func:`evaluate_group`; other
    callers (e.g. ``many.evaluate_many``) would silently drop their strategy and
    predicates, so they get a ``PlanError`` instead.
    """
    if plan.extended or plan.uncertain is not None:
        raise PlanError("a plan with a selection strategy, cross-event or iterator predicates, or imprecise "
                        "timestamps is evaluated by evaluate_group only; this path would ignore them")
    pm = plan.pattern_symbols_mask
    m = mask & pm
    keep = m != 0
    if not keep.all():
        ts, m = ts[keep], m[keep]
        cols = [(v[keep], ok[keep]) for v, ok in cols]
    if len(ts) < 2 or not (ts[1:] < ts[:-1]).any():
        return ts, m, cols
    needs_cols = any(me.kind not in (MeasureKind.COUNT_STAR, MeasureKind.COUNT) for me in plan.measures)
    bits = pm.bit_length()
    lo, hi = int(ts.min()), int(ts.max())
    if not needs_cols and bits < 62 and (hi - lo) < (1 << (62 - bits)):
        key = np.sort(((ts - lo) << bits) | m)
        return (key >> bits) + lo, key & ((1 << bits) - 1), []
    order = np.argsort(ts)
    return ts[order], m[order], [(v[order], ok[order]) for v, ok in cols]


def evaluate_rows(plan: Plan, rows: Sequence[Sequence[object]]) -> GroupResult:
    """Convenience wrapper: ``rows`` of ``(ts, mask, value_0, value_1, ...)``, None = NULL.

    Examples
    --------
    >>> from udafs.plan import Element, Plan
    >>> plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0))
    >>> int(evaluate_rows(plan, [(1, 1), (2, 2), (3, 2)]).values[0][0])
    2
    """
    ts = np.array([r[0] for r in rows], dtype=np.int64)
    mask = np.array([r[1] for r in rows], dtype=np.int64)
    columns = []
    for j, vt in enumerate(plan.columns):
        raw = [r[2 + j] for r in rows]
        ok = np.array([v is not None for v in raw], dtype=bool)
        dtype = {ValueType.INT: np.int64, ValueType.FLOAT: np.float64, ValueType.DECIMAL: object}[vt]
        column = [0 if v is None else v for v in raw]
        columns.append((np.array(column + [0], dtype=dtype)[:-1], ok))
    return evaluate_group(plan, ts, mask, columns)
