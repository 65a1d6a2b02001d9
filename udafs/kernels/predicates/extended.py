"""Evaluation of extended plans (strategies, cross-event and iterator predicates).

``evaluate_extended`` is what :func:`udafs.kernels.evaluate.evaluate_group` calls for
a plan with ``plan.extended``. It prepares the group (contiguity ranks before rows
that are no instance are dropped, one sort), picks a method per segment
(:func:`udafs.kernels.predicates.methods.choose` — the vectorised sorted/condensed passes
when they apply, else the exact state DP of :mod:`udafs.kernels.predicates.statedp`), and turns
the aggregates into :class:`~udafs.kernels.values.measures.Partial` rows.

State-DP segments: without SLIDE the whole group (WITHIN is a span limit checked against the
first row; edge negation looks at the whole group); with SLIDE every window
``[k·s, k·s + w)`` holding an instance of a pattern symbol, on its own rows.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from udafs.errors import InputDataError
from udafs.kernels.counting import quantifiers
from udafs.kernels.counting.segments import sliding_windows
from udafs.kernels.options import DEFAULT, KernelOptions
from udafs.kernels.predicates import methods as predicates
from udafs.kernels.predicates import statedp
from udafs.kernels.values.arith import EXACT_CAP, too_large, with_fallback
from udafs.kernels.values.channels import Channel, measure_channels
from udafs.kernels.values.measures import Column, Partial, key_float
from udafs.plan import CountType, MeasureKind, Plan, Strategy, ValueType


def _classes(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column], seq: np.ndarray | None,
             options: KernelOptions) -> tuple[list[Partial], np.ndarray | None]:
    """A quantified extended plan as the union of its classes (:mod:`udafs.kernels.counting.quantifiers`).
    With SLIDE a class reports the windows holding its own symbols: the class binding every
    element has all of ``plan``'s, the others are spread onto them (no match elsewhere)."""
    classes = quantifiers.expand(plan)
    results = [evaluate_extended(p, ts, mask, cols, seq, options) for p in classes]
    full = max(range(len(classes)), key=lambda k: classes[k].pattern_symbols_mask == plan.pattern_symbols_mask)
    starts = results[full][1]
    assert starts is None or all(np.isin(s, starts).all() for _, s in results if s is not None)

    def spread(parts: list[Partial], own: np.ndarray | None) -> list[Partial]:
        if starts is None or own is None or len(own) == len(starts):
            return parts
        at = np.searchsorted(starts, own)
        return [Partial(_placed(p.value, at, len(starts)), _placed(p.nn, at, len(starts))) for p in parts]

    return quantifiers.union(plan, classes, [spread(parts, own) for parts, own in results]), starts


def _placed(x: np.ndarray, at: np.ndarray, n: int) -> np.ndarray:
    """``x`` at positions ``at`` of ``n`` zeros (no match in the other windows)."""
    out = np.zeros(n, dtype=x.dtype)
    out[at] = x
    return out


def contiguity_rank(plan: Plan, ts: np.ndarray, seq: np.ndarray | None) -> np.ndarray | None:
    """Per row, the rank whose +1 steps contiguity strategies require (None otherwise).

    STRICT_CONTIGUITY: ``seq`` is required (dense rank of ts in the whole input
    stream, supplied by the caller). PARTITION_CONTIGUITY: ``seq`` if given, else the
    dense rank of ts among the rows passed in, which must then be *all* rows of the
    partition (mask 0 included).
    """
    if not plan.strategy.contiguous:
        return None
    if seq is not None:
        seq = np.asarray(seq)
        if seq.shape != ts.shape or (seq.dtype.kind not in "iu" and len(seq)):
            raise InputDataError(f"seq must be an integer array of shape {ts.shape}, got {seq.dtype} {seq.shape}")
        return seq.astype(np.int64, copy=False)
    if plan.strategy is Strategy.STRICT_CONTIGUITY:
        raise InputDataError("STRICT_CONTIGUITY needs seq: the dense rank of ts over the whole input stream")
    return np.unique(ts, return_inverse=True)[1].astype(np.int64).reshape(ts.shape)


def evaluate_extended(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column],
                      seq: np.ndarray | None = None,
                      options: KernelOptions = DEFAULT) -> tuple[list[Partial], np.ndarray | None]:
    """Partials of an extended plan over one group (what ``evaluate_group`` finalises).

    Parameters
    ----------
    plan : Plan
        A validated plan with ``plan.extended``.
    ts, mask : arrays of int64
        Validated group rows in any order; for PARTITION_CONTIGUITY without ``seq``,
        every row of the partition (mask 0 for rows that are no instance).
    cols : list of (values, valid)
        Validated value columns.
    seq : array of int64, optional
        Contiguity ranks (see :func:`contiguity_rank`).
    options : KernelOptions, optional
        ``state_dp`` forces the state DP; the rest is passed on to the vectorised paths.

    Returns
    -------
    (list of Partial, array or None)
        Per measure, values per output row; window starts with SLIDE, else None.

    Raises
    ------
    InputDataError
        STRICT_CONTIGUITY without ``seq``, or ``seq`` of the wrong shape or dtype.
    CountOverflowError
        A count too large for the count type.
    """
    if plan.quantified:  # the union of its plain classes, each an extended plan of its own
        return _classes(plan, ts, mask, cols, seq, options)
    rank = contiguity_rank(plan, ts, seq)
    keep = (mask & plan.pattern_symbols_mask) != 0
    order = np.argsort(ts[keep], kind="stable")
    ts, mask = ts[keep][order], (mask[keep] & plan.pattern_symbols_mask)[order]
    cols = [(v[keep][order], ok[keep][order]) for v, ok in cols]
    rank = None if rank is None else rank[keep][order]
    if predicates.vectorised(plan) is None and not options.state_dp:
        try:
            return with_fallback(plan, lambda ar: predicates.evaluate(plan, ts, mask, cols, ar, rank, options),
                                 options)
        except predicates.NotVectorised:
            pass
    chans = measure_channels(plan).channels
    if plan.slide is None:
        totals = [_state_dp(plan, ts, mask, cols, rank, 0, len(ts), chans, _group_edges(plan, ts, mask))]
        return _partials(plan, totals), None
    w, s = plan.sliding
    k = sliding_windows(ts, w, s)
    los = np.searchsorted(ts, k * s, "left")
    his = np.searchsorted(ts, k * s + w, "left")
    totals = []
    for lo, hi in zip(los.tolist(), his.tolist()):
        seg_ts, seg_mask = ts[lo:hi].tolist(), mask[lo:hi].tolist()
        lead = [t for t, m in zip(seg_ts, seg_mask) if m & plan.negations[0]]
        trail = [t for t, m in zip(seg_ts, seg_mask) if m & plan.negations[-1]]
        edges = statedp.Edges(None, lead, trail, True)
        totals.append(_state_dp(plan, ts, mask, cols, rank, lo, hi, chans, edges))
    return _partials(plan, totals), k * s


def _state_dp(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column], rank: np.ndarray | None,
              lo: int, hi: int, chans: Sequence[Channel], edges: statedp.Edges) -> list[object]:
    """Aggregates of the matches among sorted rows ``lo..hi-1`` by the state DP."""
    g = statedp.make_group(ts[lo:hi], mask[lo:hi], [(v[lo:hi], ok[lo:hi]) for v, ok in cols],
                           None if rank is None else rank[lo:hi])
    return statedp.evaluate_segment(plan, g, 0, hi - lo, edges, chans)


def _group_edges(plan: Plan, ts: np.ndarray, mask: np.ndarray) -> statedp.Edges:
    lead = ts[(mask & plan.negations[0]) != 0].tolist() if plan.negations[0] else []
    trail = ts[(mask & plan.negations[-1]) != 0].tolist() if plan.negations[-1] else []
    return statedp.Edges(plan.within, lead, trail, False)


def _partials(plan: Plan, totals: Sequence[list]) -> list[Partial]:
    """Partials from per-output-row aggregates ``[count, channel...]`` (channels of
    :func:`~udafs.kernels.values.channels.measure_channels`)."""
    counts = _counts(plan, [t[0] for t in totals])
    out = []
    for m, (val, nn_slot) in zip(plan.measures, measure_channels(plan).slots):
        if val is None or nn_slot is None:  # COUNT(*)
            out.append(Partial(counts, counts))
            continue
        if m.kind is MeasureKind.COUNT:
            c = _counts(plan, [t[1 + val] for t in totals])
            out.append(Partial(c, c))
            continue
        nn = _counts(plan, [t[1 + nn_slot] for t in totals])
        assert m.column is not None  # a measure with a value channel reads a column
        column_type = plan.columns[m.column]
        is_float = column_type is ValueType.FLOAT
        raw = [t[1 + val] for t in totals]
        if m.kind in (MeasureKind.SUM, MeasureKind.AVG):
            value = np.array(raw, dtype=np.float64) if is_float else _counts(plan, raw, signed=True)
            out.append(Partial(value, nn))
            continue
        wide = column_type is ValueType.DECIMAL  # unscaled DECIMAL(38, s) integers: Python ints
        keys = np.array([0 if v is None else v for v in raw] + [0], dtype=object if wide else np.int64)[:-1]
        out.append(Partial(key_float(keys) if is_float else keys, nn))
    return out


def _counts(plan: Plan, values: list, signed: bool = False) -> np.ndarray:
    """Exact counts (or exact integer sums) as an object array; float64 for DOUBLE.

    Values past ``EXACT_CAP`` cannot fit an exact count type: the same error as the
    other paths (``too_large``); for DOUBLE they become inf.
    """
    if plan.count_type is CountType.DOUBLE:
        return np.array([_to_float(v) for v in values], dtype=np.float64)
    if any(abs(v) >= EXACT_CAP for v in values):
        raise too_large(plan)
    return np.array(values + [None], dtype=object)[:-1] if values else np.zeros(0, dtype=object)


def _to_float(v: int | float) -> float:
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")
