"""Event-time evaluation for live streams: rows in any order, completeness by watermark.

:class:`LiveEvaluator` is one partition's evaluator in a Structured Streaming query.
Rows arrive in micro-batches in any order (:meth:`LiveEvaluator.add`); the stream's
watermark says up to which time they are complete (:meth:`LiveEvaluator.advance`):
every row earlier than ``complete_before`` has arrived, later ones may still come.
Rows not yet complete wait in ``pending``; complete ones go, in time order, into the
mode of :mod:`udafs.kernels.incremental.streaming` that keeps only the state the engine needs:

* SLIDE: a window ``[k·s, k·s + w)`` is returned once, when ``complete_before``
  reaches its end, evaluated on its own rows exactly as the batch engine does; rows
  older than every unfinished window are dropped. Plans with cross-event predicates
  or a selection strategy, and plans measuring STEPS(*) or MAX_STEP(), evaluate each final
  window with :func:`evaluate_group`,
  which supports every feature (contiguity ranks are counted over the partition's
  complete rows, rows of no symbol included).
* WITHIN without SLIDE, and no window: a running result, the batch result over the
  partition's complete rows, returned by ``advance`` whenever it changed.

The state round-trips through plain data (:meth:`LiveEvaluator.to_state`,
:meth:`LiveEvaluator.from_state`; bytes via :mod:`udafs.state_codec`), so Spark's
state store can hold it between micro-batches and across restarts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Sequence

import numpy as np

from udafs.errors import CountOverflowError, InputDataError, PlanError
from udafs.kernels.counting.paths import window_partials
from udafs.kernels.evaluate import GroupResult, evaluate_group, validate
from udafs.kernels.incremental.streaming import (
    CarryMode,
    ClassesCarryMode,
    DueWindows,
    RowBuffer,
    SlideMode,
    WithinMode,
    carry_mode,
    group_result,
    result_slice,
)
from udafs.kernels.values.arith import with_fallback
from udafs.kernels.values.measures import Column, Partial
from udafs.plan import Plan, ValueType, funnel_measures

Rows = tuple[np.ndarray, np.ndarray, list[Column]]


class LiveEvaluator:
    """One partition of a live stream (module docstring).

    Examples
    --------
    >>> from udafs.plan import Element, Plan
    >>> plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
    ...             within=10, slide=10)
    >>> live = LiveEvaluator(plan)
    >>> live.add(np.array([3, 1, 12]), np.array([2, 1, 1]))   # out of order
    >>> live.advance(5) is None                                # window [0, 10) not final yet
    True
    >>> r = live.advance(10)                                   # watermark passed its end
    >>> r.window_start.tolist(), r.values[0].tolist()
    ([0], [1])
    """

    def __init__(self, plan: Plan) -> None:
        if plan.extended and plan.slide is None:
            raise PlanError("cross-event predicates and selection strategies are evaluated on live streams per "
                            "SLIDE window; without SLIDE every row of the partition would have to be kept")
        if funnel_measures(plan) and plan.slide is None:
            raise PlanError("STEPS(*) and MAX_STEP() are evaluated on live streams per SLIDE window; without SLIDE "
                            "every row of the partition would have to be kept")
        self.plan = plan
        self.ranked = plan.strategy.contiguous  # rows of no symbol count for contiguity ranks
        self.pending = RowBuffer(plan.columns)  # rows not yet complete, in arrival order
        self.complete_before: int | None = None
        self.rank = 0  # distinct complete timestamps so far (contiguity ranks)
        self.seen = False  # a complete instance row has been fed (running modes)
        self.last: list[list[np.ndarray]] | None = None  # the last running result returned
        if plan.slide is not None:
            self.mode: SlideMode | _WindowsMode | WithinMode | CarryMode | ClassesCarryMode = (
                _WindowsMode(plan, self.ranked) if plan.extended or funnel_measures(plan) else SlideMode(plan))
        else:
            self.mode = carry_mode(plan) if plan.within is None else WithinMode(plan)

    def add(self, ts: np.ndarray, mask: np.ndarray, columns: Sequence[Column] = ()) -> None:
        """Rows in any order, none earlier than ``complete_before``.

        Raises
        ------
        InputDataError
            Malformed arrays, or a row earlier than what was already complete (the
            stream's late-row filter should have dropped it).
        """
        ts, mask, cols = validate(self.plan, ts, mask, columns)
        if self.complete_before is not None and len(ts) and int(ts.min()) < self.complete_before:
            raise InputDataError(f"a row at time {int(ts.min())} arrived after every row before "
                                 f"{self.complete_before} was complete; late rows must be dropped before the "
                                 "evaluator (Spark drops rows at or before the watermark)")
        if not self.ranked:
            keep = (mask & self.plan.pattern_symbols_mask) != 0
            ts, mask, cols = ts[keep], mask[keep], [(v[keep], ok[keep]) for v, ok in cols]
        self.pending.append(ts, mask, cols)

    def advance(self, complete_before: int) -> GroupResult | None:
        """Every row before ``complete_before`` has arrived: feed them, return what is final.

        With SLIDE: the windows whose end is at most ``complete_before`` (each once),
        None when there is none. Otherwise: the running result when it changed (or
        first exists), else None.
        """
        if self.complete_before is not None and complete_before <= self.complete_before:
            return None
        self.complete_before = complete_before
        ts, mask, cols = self._complete_rows(complete_before)
        if self.plan.slide is not None:
            return self._windows.feed(ts, mask, cols, complete_before)
        running = self._running
        if len(ts):
            running.feed(ts, mask, cols, complete_before)
            self.seen = True
        return self._changed(running.snapshot()) if self.seen else None

    @property
    def _windows(self) -> SlideMode | _WindowsMode:
        """The mode of a plan with SLIDE (final windows, buffered rows)."""
        assert isinstance(self.mode, (SlideMode, _WindowsMode)), "a SLIDE plan's mode"
        return self.mode

    @property
    def _running(self) -> WithinMode | CarryMode | ClassesCarryMode:
        """The mode of a plan without SLIDE (a running result)."""
        assert isinstance(self.mode, (WithinMode, CarryMode, ClassesCarryMode)), "the mode of a plan without SLIDE"
        return self.mode

    def wakeup(self) -> int | None:
        """The least ``complete_before`` at which :meth:`advance` may return something
        (None: only after new rows). A lower bound: advancing there may return nothing."""
        pending = self.pending.view()[0]
        first = int(pending.min()) if len(pending) else None
        if self.plan.slide is None:
            return None if first is None else first + 1
        windows = self._windows
        buffered = windows.buf.view()[0]
        if len(buffered):
            first = int(buffered[0]) if first is None else min(first, int(buffered[0]))
        if first is None:
            return None
        w, s = self.plan.sliding
        k = (first - w) // s + 1  # the first window holding that row
        if windows.k_next is not None:
            k = max(k, windows.k_next)
        return k * s + w

    @property
    def idle(self) -> bool:
        """True when the evaluator holds nothing a later result depends on (it may be
        dropped): with SLIDE, no row is buffered or pending. Running results never are."""
        return self.plan.slide is not None and not len(self.pending) and not len(self._windows.buf)

    @property
    def held_rows(self) -> int:
        """Rows kept in the state: pending plus those the mode buffers."""
        mode = self.mode
        return len(self.pending) + (0 if isinstance(mode, (CarryMode, ClassesCarryMode)) else len(mode.buf))

    def _complete_rows(self, complete_before: int) -> Rows:
        """Take the pending rows before ``complete_before``, in a deterministic time order
        (ties by mask and values: float sums then do not depend on arrival order)."""
        ts, mask, cols = self.pending.view()
        done = ts < complete_before
        if done.all():
            self.pending.take()
        else:
            self.pending.restore([ts[~done], mask[~done], [[v[~done], ok[~done]] for v, ok in cols]])
        ts, mask, cols = ts[done], mask[done], [(v[done], ok[done]) for v, ok in cols]
        keys = [k for v, ok in reversed(cols) for k in (v, ok)] + [mask, ts]
        order = np.lexsort(keys) if len(ts) > 1 else np.arange(len(ts))
        ts, mask, cols = ts[order], mask[order], [(v[order], ok[order]) for v, ok in cols]
        if self.ranked:
            ts, mask, cols = self._ranked(ts, mask, cols)
        return ts, mask, cols

    def _ranked(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column]) -> Rows:
        """Append each row's contiguity rank (dense over the partition's complete rows)
        as a last column, then drop rows of no pattern symbol."""
        times, inverse = np.unique(ts, return_inverse=True)
        seq = (self.rank + inverse).astype(np.int64)
        self.rank += len(times)
        keep = (mask & self.plan.pattern_symbols_mask) != 0
        cols = [*cols, (seq, np.ones(len(ts), dtype=bool))]
        return ts[keep], mask[keep], [(v[keep], ok[keep]) for v, ok in cols]

    def _changed(self, res: GroupResult) -> GroupResult | None:
        current = [[v, ok] for v, ok in zip(res.values, res.valid)]
        if self.last is not None and all(_same(a, b) for a, b in zip(current, self.last)):
            return None
        self.last = current
        return res

    def to_state(self) -> dict[str, object]:
        """The evaluator as plain data (:mod:`udafs.state_codec` stores it)."""
        return {"cb": self.complete_before, "pending": self.pending.to_state(), "rank": self.rank,
                "seen": self.seen, "last": self.last, "mode": self.mode.to_state()}

    @classmethod
    def from_state(cls, plan: Plan, state: dict) -> LiveEvaluator:
        """The evaluator :meth:`to_state` described (for the same ``plan``)."""
        live = cls(plan)
        live.complete_before, live.rank, live.seen, live.last = state["cb"], state["rank"], state["seen"], state["last"]
        live.pending.restore(state["pending"])
        live.mode.restore(state["mode"])
        return live


def advance_all(evaluators: Sequence[LiveEvaluator], complete_before: int
                ) -> list[GroupResult | CountOverflowError | None]:
    """:meth:`LiveEvaluator.advance` of each evaluator (all of one plan), the final
    windows of a plain SLIDE plan evaluated in one kernel call for all partitions (a call
    per partition costs numpy's fixed overhead per partition and micro-batch). A result
    too large for its count type comes back as the error, for its partition only."""
    if not evaluators:
        return []
    plan = evaluators[0].plan
    if plan.slide is None or plan.extended or funnel_measures(plan):  # each window through evaluate_group
        return [_guarded(live.advance, complete_before) for live in evaluators]
    w, s = plan.sliding
    k_end = (complete_before - w) // s + 1
    out: list[GroupResult | CountOverflowError | None] = [None] * len(evaluators)
    dues: list[tuple[int, DueWindows]] = []
    for i, live in enumerate(evaluators):
        if live.complete_before is not None and complete_before <= live.complete_before:
            continue
        live.complete_before = complete_before
        mode = _slide_mode(live)
        mode.buf.append(*live._complete_rows(complete_before))
        due = mode.due(k_end)
        if due is not None:
            dues.append((i, due))
    for (i, due), parts in zip(dues, _window_parts(plan, [d for _, d in dues])):
        if len(due.k):
            out[i] = _guarded(group_result, plan, parts, due.k * s)
        _slide_mode(evaluators[i]).done(due)
    return out


def _slide_mode(live: LiveEvaluator) -> SlideMode:
    """The mode of a plain SLIDE plan (no predicates, no strategy)."""
    assert isinstance(live.mode, SlideMode), "a plain SLIDE plan's mode"
    return live.mode


def _window_parts(plan: Plan, dues: list[DueWindows]) -> list[list[Partial]]:
    """Per due, the partials of its windows — from one kernel call over all of them."""
    if not dues:
        return []
    offsets = np.cumsum([0] + [len(d.rows[0]) for d in dues])
    ts = np.concatenate([d.rows[0] for d in dues])
    mask = np.concatenate([d.rows[1] for d in dues])
    cols = [(np.concatenate([d.rows[2][j][0] for d in dues]), np.concatenate([d.rows[2][j][1] for d in dues]))
            for j in range(len(plan.columns))]
    starts = np.concatenate([d.starts + o for d, o in zip(dues, offsets)])
    ends = np.concatenate([d.ends + o for d, o in zip(dues, offsets)])
    parts = with_fallback(plan, lambda ar: window_partials(plan, ts, mask, cols, ar, starts, ends))
    bounds = np.cumsum([0] + [len(d.k) for d in dues])
    return [[Partial(p.value[a:b], p.nn[a:b]) for p in parts] for a, b in zip(bounds[:-1], bounds[1:])]


def _guarded(step: Callable[..., GroupResult | None], *args: object) -> GroupResult | CountOverflowError | None:
    try:
        return step(*args)
    except CountOverflowError as exc:
        return exc


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    """Equal values where valid, and equal validity."""
    (va, oka), (vb, okb) = a, b
    return np.array_equal(oka, okb) and len(va) == len(vb) and bool(np.all(va[oka] == vb[okb]))


class _WindowsMode:
    """SLIDE for plans with predicates or a strategy: each final window through
    :func:`evaluate_group` (every feature), on the rows of the windows finished now."""

    def __init__(self, plan: Plan, ranked: bool) -> None:
        self.plan = plan
        self.ranked = ranked  # the last buffered column is the contiguity rank
        self.buf = RowBuffer(plan.columns + ((ValueType.INT,) if ranked else ()))
        self.k_next: int | None = None  # windows before this one were returned already

    def feed(self, ts: np.ndarray, mask: np.ndarray, cols: list[Column], complete_before: int) -> GroupResult | None:
        self.buf.append(ts, mask, cols)
        w, s = self.plan.sliding
        return self._emit((complete_before - w) // s + 1)

    def _emit(self, k_end: int) -> GroupResult | None:
        ts, mask, cols = self.buf.view()
        if not len(ts) or (self.k_next is not None and k_end <= self.k_next):
            return None
        w, s = self.plan.sliding
        cut = int(np.searchsorted(ts, (k_end - 1) * s + w, "left"))
        values = [(v[:cut], ok[:cut]) for v, ok in cols]
        seq = values.pop()[0] if self.ranked else None
        res = evaluate_group(self.plan, ts[:cut], mask[:cut], values, seq=seq)
        starts = res.window_start
        assert starts is not None  # a SLIDE plan's result has window bounds
        keep = starts < k_end * s  # windows that end later are not final yet
        if self.k_next is not None:  # those that start earlier lost rows already: returned before
            keep &= starts >= self.k_next * s
        self.k_next = k_end
        self.buf.drop_before(k_end * s)
        return result_slice(res, keep) if keep.any() else None

    def to_state(self) -> dict[str, object]:
        return {"buf": self.buf.to_state(), "k": self.k_next}

    def restore(self, state: dict) -> None:
        self.buf.restore(state["buf"])
        self.k_next = state["k"]


__all__ = ["LiveEvaluator", "advance_all"]
