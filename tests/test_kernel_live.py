"""LiveEvaluator == evaluate_group over the complete rows, for streams in random order.

A stream is simulated as Spark runs it: rows arrive in micro-batches in a random
order; before each batch the watermark is the largest time seen in earlier batches
minus a delay; rows at or before the previous batch's watermark are dropped as late;
after each batch every row up to the watermark is complete. Each step, and after a
final flush, the evaluator's results must equal the batch engine over the accepted
rows that are complete — windows once each, when final; running results whenever
they change. The state goes through the byte codec at random steps.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.doubles import with_non_finite
from tests.test_kernel_oracle import plans
from tests.test_kernel_predicates import ext_events, ext_plans
from tests.test_kernel_predicates import to_arrays as ext_arrays
from tests.test_kernel_streaming import assert_results_close
from udafs import state_codec
from udafs.errors import CountOverflowError, InputDataError, PlanError, StateError
from udafs.kernels import GroupResult, evaluate_group
from udafs.kernels.incremental.live import LiveEvaluator, advance_all
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, Strategy

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclasses.dataclass
class Stream:
    """Rows (kernel arrays), their arrival in batches, the watermark delay."""

    ts: np.ndarray
    mask: np.ndarray
    cols: list
    batches: list[np.ndarray]
    delay: int
    saves: set[int]


@st.composite
def streams(draw: st.DrawFn, plan: Plan, arrays: tuple | None = None) -> Stream:
    """Random rows (or ``arrays``), shuffled within about two delays, cut into batches."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if arrays is None:
        n = draw(st.integers(0, 60))
        span = draw(st.sampled_from([5, 20, 60]))
        ts = rng.integers(0, span, n)
        mask = rng.integers(0, 1 << len(plan.symbols), n)
        doubles = with_non_finite(rng, rng.normal(size=n).round(2))
        cols = [(rng.integers(-9, 9, n), rng.random(n) < 0.8), (doubles, rng.random(n) < 0.8)]
    else:
        ts, mask, cols = arrays
    delay = draw(st.integers(0, 6))
    arrival = np.argsort(ts + rng.integers(0, 2 * delay + 1, len(ts)), kind="stable")
    cuts = np.sort(rng.integers(0, len(ts) + 1, draw(st.integers(0, 8))))
    batches = np.split(arrival, cuts)
    saves = {i for i in range(len(batches) + 2) if rng.random() < 0.4}
    return Stream(ts, mask, cols, batches, delay, saves)


def run(plan: Plan, s: Stream, check_running: bool = True) -> tuple[list[GroupResult], np.ndarray]:
    """Drive a LiveEvaluator through ``s`` (module docstring); return what it emitted and
    the accepted rows. Running results are checked against the batch engine at every step."""
    live, wm, seen_max = LiveEvaluator(plan), None, None
    out, accepted = [], np.zeros(len(s.ts), dtype=bool)
    last: GroupResult | None = None
    for step, batch in enumerate([*s.batches, np.zeros(0, dtype=np.int64), None]):
        if batch is None:  # the end: a far-future row would push the watermark past everything
            wm = int(s.ts.max()) + 10 * (plan.within or 1) + 10 if len(s.ts) else 0
            batch = np.zeros(0, dtype=np.int64)
        ok = batch if wm is None else batch[s.ts[batch] > wm]  # Spark drops rows at or before it
        accepted[ok] = True
        live.add(s.ts[ok], s.mask[ok], [(v[ok], o[ok]) for v, o in s.cols])
        if len(batch):
            seen_max = max(int(s.ts[batch].max()), seen_max if seen_max is not None else -2**62)
        if seen_max is not None:  # the watermark the next batch filters by, complete after this one
            wm = max(seen_max - s.delay, wm if wm is not None else -2**62)
        if wm is not None:
            res = live.advance(wm + 1)
            if res is not None:
                out.append(res)
                if plan.slide is not None:
                    assert (res.window_end <= wm + 1).all()
                last = res if res is not None else last
            if plan.slide is None and check_running:
                assert_running(plan, s, accepted & (s.ts <= wm), last)
        if step in s.saves:
            live = LiveEvaluator.from_state(plan, state_codec.decode(state_codec.encode(live.to_state())))
    return out, accepted


def assert_running(plan: Plan, s: Stream, rows: np.ndarray, last: GroupResult | None) -> None:
    """The last running result equals the batch result over ``rows`` (none if no instance)."""
    instance = rows & ((s.mask & plan.pattern_symbols_mask) != 0)
    if not instance.any():
        assert last is None
        return
    assert last is not None
    assert_results_close(last, evaluate_group(plan, s.ts[rows], s.mask[rows], [(v[rows], o[rows]) for v, o in s.cols]))


def windows(results: list[GroupResult]) -> GroupResult | None:
    """Emitted windows, ordered by start, each at most once."""
    if not results:
        return None
    starts = np.concatenate([r.window_start for r in results])
    assert len(np.unique(starts)) == len(starts), "a window was emitted twice"
    order = np.argsort(starts)

    def cat(xs: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(xs)[order] if xs[0].dtype != object else np.array(
            [x for a in xs for x in a], dtype=object)[order]

    return GroupResult(starts[order], cat([r.window_end for r in results]),
                       tuple(cat([r.values[j] for r in results]) for j in range(len(results[0].values))),
                       tuple(cat([r.valid[j] for r in results]) for j in range(len(results[0].valid))))


def check_windows(plan: Plan, s: Stream, seq: bool = False) -> None:
    out, acc = run(plan, s)
    rows = acc if plan.strategy.contiguous else acc & ((s.mask & plan.pattern_symbols_mask) != 0)
    ranks = np.unique(s.ts[rows], return_inverse=True)[1] if seq else None
    want = evaluate_group(plan, s.ts[rows], s.mask[rows], [(v[rows], o[rows]) for v, o in s.cols], seq=ranks)
    got = windows(out)
    if got is None:
        assert len(want.window_start) == 0
    else:
        assert_results_close(got, want)


@SETTINGS
@given(st.data())
def test_live_windows(data: st.DataObject) -> None:
    """SLIDE: each window once, when final, equal to the batch window (negation anywhere,
    Kleene, every measure and count type)."""
    plan = data.draw(plans(window="slide", middle_negation=data.draw(st.booleans()), edges=data.draw(st.booleans())))
    check_windows(plan, data.draw(streams(plan)))


@SETTINGS
@given(st.data())
def test_live_running(data: st.DataObject) -> None:
    """WITHIN without SLIDE and no window: after every batch the running result equals
    the batch result over the complete rows (checked inside ``run``); one final row."""
    window = data.draw(st.sampled_from(["within", "none"]))
    plan = data.draw(plans(window=window, middle_negation=data.draw(st.booleans()),
                           edges=window == "within" and data.draw(st.booleans())))
    s = data.draw(streams(plan))
    run(plan, s)


@pytest.mark.parametrize("strategy", list(Strategy))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_live_windows_extended(strategy: Strategy, data: st.DataObject) -> None:
    """Predicates, iterator predicates and every strategy, per SLIDE window; contiguity
    ranks counted over all complete rows (one partition: STRICT = PARTITION)."""
    plan = data.draw(ext_plans(window="slide", strategy=strategy, n_pred=2, middle_negation=data.draw(st.booleans())))
    ev = data.draw(ext_events(plan, max_rows=30, max_ts=20))
    ts, mask, cols = ext_arrays(ev)
    check_windows(plan, data.draw(streams(plan, (ts, mask, cols))), seq=strategy is Strategy.STRICT_CONTIGUITY)


def test_long_stream_state_is_bounded() -> None:
    """Endless SLIDE stream: the state holds about a window of rows; WITHIN: about two."""
    for slide in (None, 50):
        plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=100,
                    slide=slide, measures=(Measure(MeasureKind.COUNT_STAR, name="n"),), count_type=CountType.DECIMAL)
        live = LiveEvaluator(plan)
        for k in range(100):
            ts = np.arange(k * 50, (k + 1) * 50)
            live.add(ts[::-1], np.where(ts % 2 == 0, 1, 2))
            live.advance(int(ts[-1]) - 10)
            assert live.held_rows <= 300
        assert len(state_codec.encode(live.to_state())) < 12_000


def test_late_rows_are_refused_and_extended_plans_need_slide() -> None:
    plan = Plan(symbols=("A",), elements=(Element(0),), negations=(0, 0), within=5, slide=5)
    live = LiveEvaluator(plan)
    live.add(np.array([3]), np.array([1]))
    live.advance(10)
    with pytest.raises(InputDataError, match="late rows must be dropped"):
        live.add(np.array([9]), np.array([1]))
    with pytest.raises(PlanError, match="per SLIDE window"):
        LiveEvaluator(dataclasses.replace(plan, slide=None, strategy=Strategy.SKIP_TILL_NEXT_MATCH))


def test_codec_refuses_foreign_bytes() -> None:
    with pytest.raises(StateError, match="not sparkseq state"):
        state_codec.decode(b"PK\x03\x04" + b"\x00" * 20)
    data = bytearray(state_codec.encode([1, 2]))
    data[4] = 9
    with pytest.raises(StateError, match="format version 9"):
        state_codec.decode(bytes(data))
    with pytest.raises(StateError, match="does not store"):
        state_codec.encode({1: 2})


@SETTINGS
@given(st.data())
def test_advance_all_equals_advance_one_by_one(data: st.DataObject) -> None:
    """Several partitions advanced together (one kernel call for all their windows) give
    what each gives alone, also with a count too large for BIGINT in one of them."""
    plan = data.draw(plans(window=data.draw(st.sampled_from(["slide", "slide", "within"])),
                           middle_negation=data.draw(st.booleans())))
    n_keys = data.draw(st.integers(1, 6))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    together = [LiveEvaluator(plan) for _ in range(n_keys)]
    alone = [LiveEvaluator(plan) for _ in range(n_keys)]
    for step in range(data.draw(st.integers(1, 6))):
        wm = step * 7
        for a, b in zip(together, alone):
            n = int(rng.integers(0, 25))
            ts = wm + 1 + rng.integers(0, 12, n)
            mask = rng.integers(0, 1 << len(plan.symbols), n)
            doubles = with_non_finite(rng, rng.normal(size=n))
            cols = [(rng.integers(-9, 9, n), rng.random(n) < 0.8), (doubles, rng.random(n) < 0.8)]
            a.add(ts, mask, cols)
            b.add(ts, mask, cols)
        got = advance_all(together, wm + 1)
        for g, b in zip(got, alone):
            try:
                want = b.advance(wm + 1)
            except CountOverflowError as exc:
                assert isinstance(g, CountOverflowError) and str(g) == str(exc)
                continue
            assert (g is None) == (want is None)
            if want is not None:
                assert_results_close(g, want)
