"""Time-split evaluation: one partition cut into time chunks, evaluated apart, combined exactly.

A partition's time line is cut at boundaries ``B_0 < B_1 < ...``; chunk ``i`` owns
``[lo, hi) = [B_i, B_{i+1})``. Its task evaluates only rows near that range
(:func:`chunk_regions`), and :func:`combine_chunks` adds the chunks' partials up to
the partition's measures (docs/engine.md, "Time split", has the derivation).

``WITHIN w`` without SLIDE: every match is attributed to the chunk holding its last
bound row. Chunk ``i`` gets

* ``L2 = [lo-2w, lo-w)`` negation-only (only with a leading negation),
* ``C  = [lo-w,  lo)``   full rows (context),
* ``O  = [lo,    hi)``   full rows (own),
* ``R  = [hi,    hi+w)`` negation-only (only with a trailing negation),

where *negation-only* rows keep only the bits of negated symbols: they can forbid a
match, never bind in one. The existing kernel runs twice, on ``T1 = L2+C+O+R`` and on
``T0 = L2+C+[lo, lo+w)`` (the latter negation-only). A match whose bound rows all lie
in ``C`` sees the same rows in both (middle negation, Kleene, predicates and measures
look only at rows between its first and last row; its edge negations reach at most
``w`` beyond them), so COUNT, SUM, COUNT(X) of matches ending in ``O`` are
``T1 - T0``, exactly; a DOUBLE sum is differenced as its finite part and the counts
of the pairs binding NaN, +inf and -inf (:mod:`.nonfinite`), since ``inf - inf`` is
NaN. Every match ``T1`` counts is a real match, so MIN and MAX (which are idempotent)
are ``T1``'s. A symbol that is both positive and negated gets a
separate *shadow* bit for its negated role, so that negation-only rows cannot bind.

``WITHIN w SLIDE s``: windows are independent; chunk ``i`` evaluates the windows
whose start lies in ``[lo, hi)`` on rows ``[lo, hi + w)``.

Plans without WITHIN, with a contiguity strategy or with imprecise timestamps are not
split (:func:`udafs.plan.splittable`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from udafs import state_codec
from udafs.errors import PlanError
from udafs.kernels.evaluate import GroupResult, group_partials, validate
from udafs.kernels.values import nonfinite
from udafs.kernels.values.measures import Column, Partial, combine, finalize
from udafs.plan import CountType, MeasureKind, Plan, ValueType, splittable


class ChunkPartial(NamedTuple):
    """One chunk's partial measures: per output row (one without SLIDE, else one per
    window the chunk owns, by ``starts``)."""

    starts: np.ndarray | None
    parts: list[Partial]


def chunk_regions(plan: Plan, ts: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Which rows chunk ``[lo, hi)`` needs: (full, negation_only) boolean masks over ``ts``.

    Without SLIDE: full rows ``[lo-w, hi)``, negation-only rows ``[lo-2w, lo-w)`` (with a
    leading negation) and ``[hi, hi+w)`` (with a trailing negation); with SLIDE: full
    rows ``[lo, hi+w)`` and none negation-only.
    """
    w = plan.window
    if plan.slide is not None:
        return (ts >= lo) & (ts < hi + w), np.zeros(len(ts), dtype=bool)
    full = (ts >= lo - w) & (ts < hi)
    neg = np.zeros(len(ts), dtype=bool)
    if plan.negations[0]:
        neg |= (ts >= lo - 2 * w) & (ts < lo - w)
    if plan.negations[-1]:
        neg |= (ts >= hi) & (ts < hi + w)
    return full, neg


def evaluate_chunk(plan: Plan, ts: np.ndarray, mask: np.ndarray, columns: Sequence[Column],
                   lo: int | None, hi: int | None) -> ChunkPartial:
    """The partial measures of chunk ``[lo, hi)`` of one partition.

    ``ts``, ``mask``, ``columns`` may hold any rows of the partition (in any order);
    rows outside what :func:`chunk_regions` says the chunk needs are ignored. With
    ``lo`` None the rows are the whole partition, evaluated as one chunk.

    Raises
    ------
    PlanError
        When ``plan`` cannot be split (:func:`splittable`) or ``lo >= hi``.
    """
    reason = splittable(plan)
    if reason is not None:
        raise PlanError(f"this plan cannot be evaluated by time split: {reason}")
    ts, mask, cols = validate(plan, ts, mask, columns)
    if lo is None:  # the whole partition as one chunk: its partials as evaluate_group computes them
        parts, starts = group_partials(plan, *_select(plan, ts, mask, cols, np.ones(len(ts), dtype=bool)))
        return ChunkPartial(starts, parts)
    if hi is None or not lo < hi:
        raise PlanError(f"a time chunk needs lo < hi, got [{lo}, {hi})")
    if plan.slide is not None:
        w, s = plan.sliding
        keep = (ts >= lo) & (ts < hi + w)
        windows = (-(-lo // s), -(-hi // s))  # windows k·s in [lo, hi)
        parts, starts = group_partials(plan, *_select(plan, ts, mask, cols, keep), windows)
        return ChunkPartial(starts, parts)
    split, shadow = _shadowed(plan)
    w = plan.window
    neg_bits = _neg_bits(split)
    lead = (ts >= lo - 2 * w) & (ts < lo - w) if plan.negations[0] else np.zeros(len(ts), dtype=bool)
    context = (ts >= lo - w) & (ts < lo)
    own = (ts >= lo) & (ts < hi)
    trail = (ts >= hi) & (ts < hi + w) if plan.negations[-1] else np.zeros(len(ts), dtype=bool)
    full_mask = _with_shadow(mask, shadow)
    neg_mask = full_mask & neg_bits
    head = (ts >= lo) & (ts < lo + w) if plan.negations[-1] else np.zeros(len(ts), dtype=bool)
    # T1 - T0 of a sum holding ±inf would be inf - inf = NaN: DOUBLE sums run as finite
    # parts and counts of the pairs binding NaN, +inf, -inf, differenced apart, then joined
    finite = nonfinite.split(split)
    inner, cols = (split, cols) if finite is None else (finite.plan, nonfinite.columns(finite, cols))
    t1 = _partials(inner, ts, np.where(lead | trail, neg_mask, full_mask), cols, lead | context | own | trail)
    t0 = _partials(inner, ts, np.where(lead | head, neg_mask, full_mask), cols, lead | context | head)
    parts = _difference(inner, t1, t0)
    return ChunkPartial(None, parts if finite is None else nonfinite.join(finite, parts))


#: Rows per kernel call when :func:`evaluate_in_chunks` evaluates one big group: the
#: kernel takes ~160-170 bytes per row of its input at its peak (SEQ(A, B, C) WITHIN,
#: COUNT(*): 1.6 GB at 10 M rows; bench/memory.py), so 1 M rows keep a call near 170 MB.
GROUP_CHUNK_ROWS = 1_000_000


def evaluate_in_chunks(plan: Plan, ts: np.ndarray, mask: np.ndarray, columns: Sequence[Column],
                       chunk_rows: int = GROUP_CHUNK_ROWS) -> GroupResult | None:
    """``evaluate_group``'s result for one big group, evaluated as time chunks of about
    ``chunk_rows`` rows one after the other, so that the kernel's working memory is
    that of a chunk, not of the group (:func:`_parts_in_chunks`).

    None (evaluate the group whole) when the group has at most ``chunk_rows`` rows,
    when the plan cannot be split (:func:`splittable`), when chunking could change a
    result's last bit (a DOUBLE sum or average, ``COUNT TYPE DOUBLE``: floating-point
    additions in another order), or when the rows are too dense in time for chunks of
    at least ``2 * WITHIN`` to cut them.
    """
    parts = _parts_in_chunks(plan, ts, mask, columns, None, None, chunk_rows)
    return None if parts is None else combine_chunks(plan, parts)


def evaluate_chunk_in_parts(plan: Plan, ts: np.ndarray, mask: np.ndarray, columns: Sequence[Column],
                            lo: int | None, hi: int | None, chunk_rows: int = GROUP_CHUNK_ROWS) -> ChunkPartial:
    """:func:`evaluate_chunk`'s partials, with a chunk of more than ``chunk_rows`` rows cut
    into smaller time chunks evaluated one after the other and merged (where
    :func:`evaluate_in_chunks` would cut a group: the same partials, bit for bit)."""
    parts = _parts_in_chunks(plan, ts, mask, columns, lo, hi, chunk_rows)
    return evaluate_chunk(plan, ts, mask, columns, lo, hi) if parts is None else _merge(plan, parts)


def _parts_in_chunks(plan: Plan, ts: np.ndarray, mask: np.ndarray, columns: Sequence[Column],
                     lo: int | None, hi: int | None, chunk_rows: int) -> list[ChunkPartial] | None:
    """The partials of the time chunks of about ``chunk_rows`` rows that cut ``[lo, hi)``
    (``lo`` None: the whole group), in time order; None when they would not be exact
    (:func:`_chunks_exactly`), or the rows are too few or too dense to cut.

    The rows are sorted by time once (as one packed (time, symbols) key sorted in place
    when no value column is needed: 8 bytes a row), and each chunk gets the slice of the
    rows :func:`chunk_regions` says it needs.
    """
    if len(ts) <= chunk_rows or not _chunks_exactly(plan):
        return None
    ts, mask, cols = validate(plan, ts, mask, columns)
    w = plan.within
    assert w is not None  # splittable
    n = len(ts)
    first, last = int(ts.min()), int(ts.max())
    bits = plan.pattern_symbols_mask.bit_length()
    if not cols and not plan.extended and bits < 62 and last - first < 1 << (62 - bits):
        key = ts - first
        key <<= bits
        key |= mask & plan.pattern_symbols_mask
        key.sort()
        del ts, mask

        def time_at(i: int) -> int:
            return (int(key[i]) >> bits) + first

        def rows_from(t: int) -> int:  # the first sorted row at or after time t
            return 0 if t <= first else n if t > last else int(np.searchsorted(key, (t - first) << bits))

        def rows(a: int, b: int) -> tuple[np.ndarray, np.ndarray, list[Column]]:
            part = key[a:b]
            return (part >> bits) + first, part & ((1 << bits) - 1), []
    else:
        order = np.argsort(ts, kind="stable")
        ts, mask, cols = ts[order], mask[order], [(v[order], ok[order]) for v, ok in cols]
        del order

        def time_at(i: int) -> int:
            return int(ts[i])

        def rows_from(t: int) -> int:
            return 0 if t <= first else n if t > last else int(np.searchsorted(ts, t))

        def rows(a: int, b: int) -> tuple[np.ndarray, np.ndarray, list[Column]]:
            return ts[a:b], mask[a:b], [(v[a:b], ok[a:b]) for v, ok in cols]
    if lo is None:  # SLIDE: the first chunk also owns the windows that start up to WITHIN before the first row
        lo, hi = (first - w if plan.slide is not None else first), last + 1
    elif hi is None or not lo < hi:
        raise PlanError(f"a time chunk needs lo < hi, got [{lo}, {hi})")
    own_from, own_to = rows_from(lo), rows_from(hi)
    if own_to - own_from <= chunk_rows:
        return None
    # chunk starts: the time of every step-th own row, at least 2 * WITHIN apart and before hi
    bounds = [lo]
    step = -(-(own_to - own_from) // -(-(own_to - own_from) // chunk_rows))
    for i in range(own_from + step, own_to, step):
        if time_at(i) - bounds[-1] >= 2 * w and hi - time_at(i) >= 2 * w:
            bounds.append(time_at(i))
    if len(bounds) == 1:
        return None
    bounds.append(hi)
    return [evaluate_chunk(plan, *rows(rows_from(a if plan.slide is not None else a - 2 * w), rows_from(b + w)), a, b)
            for a, b in zip(bounds[:-1], bounds[1:])]


def _merge(plan: Plan, chunks: Sequence[ChunkPartial]) -> ChunkPartial:
    """One chunk's partials from those of the consecutive time chunks that cut it."""
    if plan.slide is None:
        total = _empty_parts(plan)
        for chunk in chunks:
            total = combine(plan, total, chunk.parts)
        return ChunkPartial(None, total)
    pieces = [c for c in chunks if c.starts is not None and len(c.starts)]
    if not pieces:
        return ChunkPartial(np.zeros(0, dtype=np.int64), [_cut(p, 0) for p in _empty_parts(plan)])
    return ChunkPartial(np.concatenate([c.starts for c in pieces]),
                        [Partial(*(_concat([c.parts[j][f] for c in pieces]) for f in range(2)))
                         for j in range(len(plan.measures))])


def _chunks_exactly(plan: Plan) -> bool:
    """Whether time chunks give ``plan`` the bit-identical result of one evaluation: it
    splits, and no measure adds floating-point values (their sum depends on the order)."""
    if splittable(plan) is not None or plan.count_type is CountType.DOUBLE:
        return False
    for m in plan.measures:
        column = plan.columns[m.column] if m.column is not None else None
        if column is ValueType.FLOAT and m.kind not in (MeasureKind.MIN, MeasureKind.MAX, MeasureKind.COUNT):
            return False
    return True


def combine_chunks(plan: Plan, chunks: Sequence[ChunkPartial]) -> GroupResult:
    """The partition's measures from the partials of all its chunks (any order).

    Without SLIDE one output row (also for no chunks); with SLIDE the windows of all
    chunks by start (chunks own disjoint windows).

    Raises
    ------
    CountOverflowError
        A result does not fit ``plan.count_type``.
    """
    if plan.slide is None:
        total = _empty_parts(plan)
        with np.errstate(invalid="ignore"):  # +inf in one chunk, -inf in another: NaN, as IEEE
            for chunk in chunks:
                total = combine(plan, total, chunk.parts)
        values, valid = finalize(plan, total)
        return GroupResult(None, None, tuple(values), tuple(valid))
    pieces = [c for c in chunks if c.starts is not None and len(c.starts)]
    if not pieces:
        pieces = [ChunkPartial(np.zeros(0, dtype=np.int64), [_cut(p, 0) for p in _empty_parts(plan)])]
    starts = np.concatenate([c.starts for c in pieces])
    order = np.argsort(starts, kind="stable")
    parts = [Partial(*(_concat([c.parts[j][f] for c in pieces])[order] for f in range(2)))
             for j in range(len(plan.measures))]
    values, valid = finalize(plan, parts)
    starts = starts[order]
    return GroupResult(starts, starts + plan.within, tuple(values), tuple(valid))


def encode_chunk(chunk: ChunkPartial) -> bytes:
    """A chunk's partials as bytes (:mod:`udafs.state_codec`: exact ints of any size)."""
    return state_codec.encode({"starts": chunk.starts, "value": [p.value for p in chunk.parts],
                               "nn": [p.nn for p in chunk.parts]})


def decode_chunk(data: bytes) -> ChunkPartial:
    """Inverse of :func:`encode_chunk`."""
    return chunk_of_state(state_codec.decode(data))


def chunk_of_state(doc: object) -> ChunkPartial:
    """The chunk of a decoded :func:`encode_chunk` value."""
    assert isinstance(doc, dict), type(doc)  # encode_chunk stores a dict
    return ChunkPartial(doc["starts"], [Partial(v, n) for v, n in zip(doc["value"], doc["nn"])])


def _partials(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column], keep: np.ndarray) -> list[Partial]:
    """Partials over all matches among the ``keep`` rows (one output row, no SLIDE)."""
    return group_partials(plan, *_select(plan, ts, mask, cols, keep))[0]


def _select(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column],
            keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[Column]]:
    keep = keep & ((mask & plan.pattern_symbols_mask) != 0)
    return ts[keep], mask[keep], [(v[keep], ok[keep]) for v, ok in cols]


def _difference(plan: Plan, t1: list[Partial], t0: list[Partial]) -> list[Partial]:
    """Partials of the matches ``t1`` counts but ``t0`` does not (``t0``'s are a subset);
    MIN and MAX keep ``t1``'s values, which belong to real matches."""
    out = []
    for m, a, b in zip(plan.measures, t1, t0):
        if m.kind in (MeasureKind.MIN, MeasureKind.MAX):
            out.append(a)
            continue
        nn = _exact(a.nn) - _exact(b.nn)
        value = nn if m.kind in (MeasureKind.COUNT_STAR, MeasureKind.COUNT) else _exact(a.value) - _exact(b.value)
        out.append(Partial(value, nn))
    return out


def _exact(v: np.ndarray) -> np.ndarray:
    return v if v.dtype.kind in "fO" else v.astype(object)


def _shadowed(plan: Plan) -> tuple[Plan, dict[int, int]]:
    """``plan`` with every symbol that is both positive and negated given a separate bit
    for its negated role, and the map symbol -> shadow symbol (:func:`splittable` checked
    that the bits suffice)."""
    both = plan.positive_and_negated
    if not both:
        return plan, {}
    shadow = {s: len(plan.symbols) + j for j, s in enumerate(both)}
    negations = []
    for g in plan.negations:
        for s, t in shadow.items():
            if g >> s & 1:
                g = (g & ~(1 << s)) | (1 << t)
        negations.append(g)
    names = plan.symbols + tuple(f"{plan.symbols[s]} (negated)" for s in both)
    split = Plan(symbols=names, elements=plan.elements, negations=tuple(negations), within=plan.within,
                 slide=plan.slide, measures=plan.measures, columns=plan.columns, count_type=plan.count_type,
                 strategy=plan.strategy, predicates=plan.predicates, iterator_predicates=plan.iterator_predicates)
    return split, shadow


def _with_shadow(mask: np.ndarray, shadow: dict[int, int]) -> np.ndarray:
    out = mask.copy() if shadow else mask
    for s, t in shadow.items():
        out |= ((mask >> s) & 1) << t
    return out


def _neg_bits(plan: Plan) -> int:
    bits = 0
    for g in plan.negations:
        bits |= g
    return bits


def _empty_parts(plan: Plan) -> list[Partial]:
    """Partials of no match at all (one output row)."""
    values, nns = [], []
    for m in plan.measures:
        column = plan.columns[m.column] if m.column is not None else None
        floats = column is not None and column.value == "float" and m.kind is not MeasureKind.COUNT
        values.append(np.zeros(1, dtype=np.float64 if floats else np.int64))
        nns.append(np.zeros(1, dtype=np.int64))
    return [Partial(v, n) for v, n in zip(values, nns)]


def _cut(p: Partial, n: int) -> Partial:
    return Partial(p.value[:n], p.nn[:n])


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    if any(a.dtype == object for a in arrays) and not all(a.dtype == object for a in arrays):
        arrays = [a.astype(object) if a.dtype.kind in "iu" else a for a in arrays]
    return np.concatenate(arrays)


__all__ = [
    "ChunkPartial",
    "chunk_regions",
    "combine_chunks",
    "decode_chunk",
    "encode_chunk",
    "evaluate_chunk",
    "evaluate_chunk_in_parts",
    "evaluate_in_chunks",
]
