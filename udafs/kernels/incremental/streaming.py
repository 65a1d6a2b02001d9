"""Streaming evaluation: rows arrive in time order in chunks; state stays small.

:class:`StreamEvaluator` gives the same results as :func:`evaluate_group` over the
concatenation of all pushed chunks. The rows of the latest timestamp are held back
until a later one arrives (more rows at that time may still come). Per mode:

* no WITHIN: a forward-only pass with a carried state of O(pattern length)
  aggregates (:mod:`udafs.kernels.incremental.carry`); the one output row comes from ``finish``.
* WITHIN without SLIDE: each match is attributed to its first row's time. Once rows
  are complete up to T, all matches starting before T - w are known (their rows
  and negation context lie before T), so they are evaluated with the block engine
  restricted to those first rows and folded into running partial aggregates. Only
  rows from the last ~2 windows stay buffered.
* SLIDE: a window [k·s, k·s + w) is final once rows are complete up to its end; it
  is evaluated on its own rows and returned by ``push``. Rows older than every
  unfinished window are dropped.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from udafs.errors import InputDataError, PlanError
from udafs.kernels.counting import paths, quantifiers, within
from udafs.kernels.counting.pattern import Pattern
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.evaluate import GroupResult, evaluate_group, validate
from udafs.kernels.incremental.carry import Agg, Carry, Chunk, Numbers, empty_agg, merge, run_chunk, saturate
from udafs.kernels.options import DEFAULT, KernelOptions
from udafs.kernels.values import nonfinite
from udafs.kernels.values.arith import EXACT_CAP, Arith, Kind, Overflow, too_large, with_fallback
from udafs.kernels.values.channels import Channel, measure_channels
from udafs.kernels.values.measures import (
    Column,
    Partial,
    combine,
    finalize,
    float_key,
    key_float,
    measure_symbols,
    partials,
)
from udafs.plan import CountType, MeasureKind, Plan, ValueType, streamable

_TS_MIN = int(np.iinfo(np.int64).min)
_TS_MAX = int(np.iinfo(np.int64).max)


class RowBuffer:
    """Rows kept for later evaluation: append at the end, drop from the front, amortised O(1)."""

    def __init__(self, columns: Sequence[ValueType]) -> None:
        self.ts = np.zeros(0, dtype=np.int64)
        self.mask = np.zeros(0, dtype=np.int64)
        self.cols: list[Column] = [(np.zeros(0, dtype=_dtype(c)), np.zeros(0, dtype=bool)) for c in columns]
        self._parts: list[tuple[np.ndarray, np.ndarray, list[Column]]] = []

    def append(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column]) -> None:
        if len(ts):
            self._parts.append((ts, mask, cols))

    def view(self) -> tuple[np.ndarray, np.ndarray, list[Column]]:
        """All buffered rows (concatenating pending appends once)."""
        if self._parts:
            parts = [(self.ts, self.mask, self.cols)] + self._parts
            self.ts = np.concatenate([p[0] for p in parts])
            self.mask = np.concatenate([p[1] for p in parts])
            self.cols = [(np.concatenate([p[2][j][0] for p in parts]), np.concatenate([p[2][j][1] for p in parts]))
                         for j in range(len(self.cols))]
            self._parts = []
        return self.ts, self.mask, self.cols

    def drop_before(self, t: int) -> None:
        ts, mask, cols = self.view()
        k = int(np.searchsorted(ts, t, "left"))
        if k:
            self.ts, self.mask = ts[k:].copy(), mask[k:].copy()
            self.cols = [(v[k:].copy(), ok[k:].copy()) for v, ok in cols]

    def take(self) -> tuple[np.ndarray, np.ndarray, list[Column]]:
        """All rows, emptying the buffer."""
        out = self.view()
        self.ts, self.mask = self.ts[:0], self.mask[:0]
        self.cols = [(v[:0], ok[:0]) for v, ok in self.cols]
        return out

    def __len__(self) -> int:
        return len(self.ts) + sum(len(p[0]) for p in self._parts)

    def to_state(self) -> list[object]:
        """The rows as plain data (:mod:`udafs.state_codec`)."""
        ts, mask, cols = self.view()
        return [ts, mask, [[v, ok] for v, ok in cols]]

    def restore(self, state: list) -> None:
        """Replace the rows by those of :meth:`to_state`."""
        ts, mask, cols = state
        self.ts, self.mask, self.cols, self._parts = ts, mask, [(v, ok) for v, ok in cols], []


class StreamEvaluator:
    """Evaluate one group pushed in time-ordered chunks (see module docstring); ``options``
    as for :func:`evaluate_group`.

    Examples
    --------
    >>> from udafs.plan import Element, Plan
    >>> plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0))
    >>> s = StreamEvaluator(plan)
    >>> _ = s.push(np.array([1, 2]), np.array([1, 2]))
    >>> _ = s.push(np.array([2, 5]), np.array([2, 2]))
    >>> int(s.finish().values[0][0])
    3
    """

    def __init__(self, plan: Plan, options: KernelOptions = DEFAULT) -> None:
        reason = streamable(plan)
        if reason is not None:
            raise PlanError(reason)
        self.plan = plan
        self._last = _TS_MIN
        self._held = RowBuffer(plan.columns)  # rows of the latest timestamp
        self._empty = evaluate_group(plan, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                     [(np.zeros(0, dtype=_dtype(c)), np.zeros(0, dtype=bool)) for c in plan.columns])
        self._mode = carry_mode(plan, options) if plan.within is None else (
            WithinMode(plan, options) if plan.slide is None else SlideMode(plan, options))
        self._finished = False

    def push(self, ts: np.ndarray, mask: np.ndarray, columns: Sequence[Column] = ()) -> GroupResult:
        """Add rows (timestamps non-decreasing, also across pushes); return finished windows."""
        if self._finished:
            raise InputDataError("push after finish(): start a new StreamEvaluator")
        ts, mask, cols = validate(self.plan, ts, mask, columns)
        if len(ts) and (ts[0] < self._last or (ts[1:] < ts[:-1]).any()):
            raise InputDataError("StreamEvaluator needs rows in non-decreasing ts order, across pushes too")
        keep = (mask & self.plan.pattern_symbols_mask) != 0
        ts, mask, cols = ts[keep], mask[keep] & self.plan.pattern_symbols_mask, [(v[keep], ok[keep]) for v, ok in cols]
        if not len(ts):
            return self._nothing()
        self._last = int(ts[-1])
        cut = int(np.searchsorted(ts, ts[-1], "left"))
        if cut == 0:  # everything at the latest timestamp: hold it
            self._held.append(ts, mask, cols)
            return self._nothing()
        ready = self._held.take()
        self._held.append(ts[cut:], mask[cut:], [(v[cut:], ok[cut:]) for v, ok in cols])
        head = _concat(ready, (ts[:cut], mask[:cut], [(v[:cut], ok[:cut]) for v, ok in cols]))
        return self._mode.feed(*head, complete_before=self._last) or self._nothing()

    def finish(self) -> GroupResult:
        """Evaluate what is left; without SLIDE this is the group's one output row."""
        if self._finished:
            raise InputDataError("finish() was already called")
        self._finished = True
        return self._mode.finish(*self._held.take()) or self._nothing()

    def _nothing(self) -> GroupResult:
        e = self._empty
        return GroupResult(e.window_start, e.window_end, tuple(v[:0] for v in e.values), tuple(v[:0] for v in e.valid))


def _dtype(vt: ValueType) -> type:
    return np.int64 if vt is ValueType.INT else np.float64


def _concat(a: tuple, b: tuple) -> tuple[np.ndarray, np.ndarray, list[Column]]:
    return (np.concatenate((a[0], b[0])), np.concatenate((a[1], b[1])),
            [(np.concatenate((x[0], y[0])), np.concatenate((x[1], y[1]))) for x, y in zip(a[2], b[2])])


def result_slice(res: GroupResult, keep: np.ndarray) -> GroupResult:
    """The output rows of ``res`` where ``keep`` is True."""
    ends = None if res.window_end is None else res.window_end[keep]
    starts = None if res.window_start is None else res.window_start[keep]
    return GroupResult(starts, ends, tuple(v[keep] for v in res.values), tuple(ok[keep] for ok in res.valid))


def group_result(plan: Plan, parts: Sequence[Partial], starts: np.ndarray | None = None) -> GroupResult:
    values, valid = finalize(plan, parts)
    ends = None if starts is None else starts + plan.within
    return GroupResult(starts, ends, tuple(values), tuple(valid))


class DueWindows(NamedTuple):
    """Final windows of one partition: numbers ``k`` before ``k_end`` holding a row, and
    each window's rows as the range ``[starts, ends)`` of ``rows`` (ts, mask, columns)."""

    k_end: int
    rows: tuple[np.ndarray, np.ndarray, list[Column]]
    k: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


class SlideMode:
    """SLIDE: evaluate each window once rows are complete up to its end."""

    def __init__(self, plan: Plan, options: KernelOptions = DEFAULT) -> None:
        self.plan = plan
        self.options = options
        self.within, self.slide = plan.sliding
        self.buf = RowBuffer(plan.columns)
        self.k_next = _TS_MIN  # windows before this one were returned already

    def feed(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column], complete_before: int) -> GroupResult | None:
        self.buf.append(ts, mask, cols)
        return self._emit((complete_before - self.within) // self.slide + 1)

    def finish(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column]) -> GroupResult | None:
        self.buf.append(ts, mask, cols)
        bts = self.buf.view()[0]
        return self._emit(int(bts[-1]) // self.slide + 1) if len(bts) else None

    def _emit(self, k_end: int) -> GroupResult | None:
        """Windows ``k_next <= k < k_end`` (all final), then forget rows before ``k_end``."""
        due = self.due(k_end)
        if due is None:
            return None
        plan = self.plan
        parts = with_fallback(plan, lambda ar: paths.window_partials(plan, *due.rows, ar, due.starts, due.ends),
                              self.options)
        self.done(due)
        return group_result(plan, parts, due.k * self.slide) if len(due.k) else None

    def due(self, k_end: int) -> DueWindows | None:
        """The windows ``k_next <= k < k_end`` that hold a row, with the rows they need
        (None when there is none to evaluate); :meth:`done` forgets them afterwards."""
        ts, mask, cols = self.buf.view()
        if not len(ts) or k_end <= self.k_next:
            return None
        # only the rows of the finished windows: each row is then looked at once per window
        cut = int(np.searchsorted(ts, (k_end - 1) * self.slide + self.within, "left"))
        rows = (ts[:cut], mask[:cut], [(v[:cut], ok[:cut]) for v, ok in cols])
        k, starts, ends = paths.window_ranges(self.plan, rows[0], (self.k_next, k_end))
        return DueWindows(k_end, rows, k, starts, ends)

    def done(self, due: DueWindows) -> None:
        """The windows of ``due`` were returned: forget the rows no later window needs."""
        self.k_next = due.k_end
        self.buf.drop_before(due.k_end * self.slide)

    def to_state(self) -> dict[str, object]:
        return {"buf": self.buf.to_state(), "k": self.k_next}

    def restore(self, state: dict) -> None:
        self.buf.restore(state["buf"])
        self.k_next = state["k"]


class WithinMode:
    """WITHIN without SLIDE: fold in matches by their first row once they are final."""

    def __init__(self, plan: Plan, options: KernelOptions = DEFAULT) -> None:
        self.plan = plan
        self.options = options
        self.within = plan.window
        self.buf = RowBuffer(plan.columns)
        self.first_lo: int | None = None  # matches starting before this are folded in
        self.parts: list[Partial] | None = None

    def feed(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column], complete_before: int) -> None:
        self.buf.append(ts, mask, cols)
        w = self.within
        lo = self.first_lo if self.first_lo is not None else int(self.buf.view()[0][0])
        hi = complete_before - w  # a match starting before hi has its rows and context before hi + w
        if hi - lo >= w:  # at least a window's worth: each row is evaluated about 3 times
            self._fold((lo, hi))
            self.first_lo = hi
            self.buf.drop_before(hi - w)  # leading negation looks back less than w
        return None

    def finish(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column]) -> GroupResult:
        self.buf.append(ts, mask, cols)
        return group_result(self.plan, self._fold(None if self.first_lo is None else (self.first_lo, _TS_MAX)))

    def snapshot(self) -> GroupResult:
        """The result over the rows fed so far, leaving the state as it is."""
        parts = self._partials(None if self.first_lo is None else (self.first_lo, _TS_MAX))
        return group_result(self.plan, parts if self.parts is None else combine(self.plan, self.parts, parts))

    def _fold(self, first: tuple[int, int] | None) -> list[Partial]:
        """Fold in the partials of the matches whose first row lies in ``first``; all partials so far."""
        parts = self._partials(first)
        self.parts = parts if self.parts is None else combine(self.plan, self.parts, parts)
        return self.parts

    def _partials(self, first: tuple[int, int] | None) -> list[Partial]:
        """Partials of the buffered matches whose first row lies in ``first`` (all: None)."""
        ts, mask, cols = self.buf.view()
        plan = self.plan

        def attempt(ar: Arith) -> list[Partial]:  # a quantified plan: its plain classes on the same rows
            return quantifiers.each(plan, lambda p: partials(
                p, within.within_blocks(p, ts, mask, ar, measure_symbols(p), first), cols, ar))

        return with_fallback(plan, attempt, self.options)

    def to_state(self) -> dict[str, object]:
        parts = None if self.parts is None else [[p.value, p.nn] for p in self.parts]
        return {"buf": self.buf.to_state(), "lo": self.first_lo, "parts": parts}

    def restore(self, state: dict) -> None:
        self.buf.restore(state["buf"])
        self.first_lo = state["lo"]
        self.parts = None if state["parts"] is None else [Partial(v, nn) for v, nn in state["parts"]]


class CarryMode:
    """No WITHIN: forward-only chunks with an O(pattern length) carried state."""

    def __init__(self, plan: Plan, options: KernelOptions = DEFAULT) -> None:
        self.plan = plan
        self.options = options
        self.split = nonfinite.split(plan)  # carried sums of count·a: non-finite values counted apart
        self.inner = plan if self.split is None else self.split.plan
        self.pat = Pattern.of(self.inner)
        self.channels, self.slots = measure_channels(self.inner)
        self.carry = Carry.start(self.pat, self.channels)
        self.ended = empty_agg(self.channels)

    def feed(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column], complete_before: int) -> None:
        self._chunk(ts, mask, cols)
        return None

    def finish(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column]) -> GroupResult:
        self._chunk(ts, mask, cols)
        return self.snapshot()

    def snapshot(self) -> GroupResult:
        """The result over the rows fed so far (the matches ended so far)."""
        if not isinstance(self.ended.matches, float) and self.ended.matches >= EXACT_CAP:
            raise too_large(self.plan)
        return group_result(self.plan, self.partials())

    def to_state(self) -> dict[str, object]:
        return {"pool": [_agg_state(a) for a in self.carry.pool], "kleene": [_agg_state(a) for a in self.carry.kleene],
                "ended": _agg_state(self.ended)}

    def restore(self, state: dict) -> None:
        self.carry = Carry(tuple(_agg(a) for a in state["pool"]), tuple(_agg(a) for a in state["kleene"]))
        self.ended = _agg(state["ended"])

    def _chunk(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column]) -> None:
        if not len(ts):
            return
        if self.split is not None:
            cols = nonfinite.columns(self.split, cols)
        chunk = Chunk(Timeline(ts, mask, np.array([0, len(ts)])), tuple(_xs(c, cols, len(ts)) for c in self.channels))
        real = Arith(Kind.FLOAT)
        try:
            if not self.options.int64_first:
                raise Overflow
            res = run_chunk(chunk, self.pat, self.channels, Numbers(Arith(Kind.INT), real), self.carry)
        except Overflow:
            exact = Arith(Kind.EXACT, capped=False)  # huge state is clamped below instead
            nums = Numbers(Arith(Kind.FLOAT) if self.plan.count_type is CountType.DOUBLE else exact, real)
            with np.errstate(over="ignore", invalid="ignore"):
                res = run_chunk(chunk, self.pat, self.channels, nums, self.carry)
        self.ended = saturate(merge(self.ended, res.ended, self.channels), self.channels)
        self.carry = res.carry.saturated(self.channels)

    def partials(self) -> list[Partial]:
        """The partials of the matches ended so far (one output row)."""
        out = []
        for m, (vi, ni) in zip(self.inner.measures, self.slots):
            value = self.ended.matches if vi is None else self.ended.chans[vi]
            nn = _scalar(self.ended.matches if ni is None else self.ended.chans[ni], None)
            dtype = None if vi is None else self.channels[vi].dtype
            if (m.kind in (MeasureKind.MIN, MeasureKind.MAX) and m.column is not None
                    and self.inner.columns[m.column] is ValueType.FLOAT):
                out.append(Partial(key_float(_scalar(value, dtype)), nn))
            else:
                out.append(Partial(_scalar(value, dtype), nn))
        return out if self.split is None else nonfinite.join(self.split, out)


class ClassesCarryMode:
    """No WITHIN, a quantified plan: one :class:`CarryMode` per plain class of the plan
    (:func:`quantifiers.expand`), fed the same rows; their partials united."""

    def __init__(self, plan: Plan, options: KernelOptions = DEFAULT) -> None:
        self.plan = plan
        self.classes = quantifiers.expand(plan)
        self.modes = [CarryMode(p, options) for p in self.classes]

    def feed(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column], complete_before: int) -> None:
        for mode in self.modes:
            mode.feed(ts, mask, cols, complete_before)

    def finish(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column]) -> GroupResult:
        for mode in self.modes:
            mode.feed(ts, mask, cols, _TS_MAX)
        return self.snapshot()

    def snapshot(self) -> GroupResult:
        """The result over the rows fed so far (the matches ended so far)."""
        for mode in self.modes:
            if not isinstance(mode.ended.matches, float) and mode.ended.matches >= EXACT_CAP:
                raise too_large(self.plan)
        return group_result(self.plan, quantifiers.union(self.plan, self.classes, [m.partials() for m in self.modes]))

    def to_state(self) -> dict[str, object]:
        return {"classes": [mode.to_state() for mode in self.modes]}

    def restore(self, state: dict) -> None:
        for mode, part in zip(self.modes, state["classes"], strict=True):
            mode.restore(part)


def carry_mode(plan: Plan, options: KernelOptions = DEFAULT) -> CarryMode | ClassesCarryMode:
    """The no-WITHIN mode of ``plan``: one carried state, or one per class of a quantified plan."""
    return ClassesCarryMode(plan, options) if plan.quantified else CarryMode(plan, options)


def _agg_state(a: Agg) -> list[object]:
    return [a.matches, list(a.chans)]


def _agg(state: list) -> Agg:
    count, chans = state
    return Agg(count, tuple(chans))


def _scalar(v: object, dtype: np.dtype | None) -> np.ndarray:
    """One-row partial: exact ints as Python ints, others in ``dtype``."""
    if dtype is not None:
        return np.array([v], dtype=dtype)
    return np.array([v], dtype=np.float64 if isinstance(v, float) else object)


def _xs(c: Channel, cols: list[Column], n: int) -> np.ndarray:
    """x(row) of a channel for every row of a chunk."""
    if c.x == "one":
        return np.ones(n, dtype=np.int64)
    if c.column is None:
        raise PlanError(f"channel {c} reads x = {c.x!r} of no column")
    vals, ok = cols[c.column]
    if c.x == "nn":
        return ok.astype(np.int64)
    if c.kind == "sum":
        return np.where(ok, vals, 0).astype(vals.dtype)
    keys = float_key(vals) if vals.dtype.kind == "f" else vals
    return np.where(ok, keys, np.array(c.identity, dtype=np.int64))
