"""Range timelines (``udafs.kernels.counting.segments.RangeTimeline``: segments that are index ranges
of one sorted base array, per-symbol indexes built from each symbol's base rows) give
exactly what the plain ``Timeline`` over the same copied rows gives, method by method,
in both time directions: row lists, segments, tie starts, predecessor ranges with and
without gap negation, edge-negation flags, and the rows themselves. Counts through these
indexes are checked against the oracle in test_kernel_oracle.py and test_kernel_pretree.py."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from udafs.kernels.counting.segments import RangeTimeline, concat_ranges, range_timeline, sliding_windows
from udafs.kernels.counting.timeline import Timeline

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
N_SYM = 4


@st.composite
def based_ranges(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sorted timestamps with ties, masks of one symbol each or of several (and rows of
    no symbol), and non-empty ranges in any order, overlapping, often cutting tie groups."""
    n = draw(st.integers(1, 30))
    ts = np.cumsum(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))).astype(np.int64)
    single = draw(st.booleans())
    top = N_SYM - 1 if single else (1 << N_SYM) - 1
    codes = draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
    mask = np.array([1 << c for c in codes] if single else codes, dtype=np.int64)
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, n)), min_size=1, max_size=8))
    starts = np.array([min(a, b - 1) for a, b in pairs], dtype=np.int64)
    ends = np.array([max(a + 1, b) for a, b in pairs], dtype=np.int64)
    return ts, mask, starts, ends


def plain(ts: np.ndarray, mask: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Timeline:
    idx, bounds = concat_ranges(starts, ends)
    return Timeline(ts[idx], mask[idx], bounds, origin=idx)


def same_array(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """``np.testing.assert_array_equal``, which passes and fails exactly where it would; only
    its message is built where the arrays differ (it was most of the time of these properties,
    thousands of comparisons per example, nearly all equal)."""
    if not (np.shape(got) == np.shape(want) and np.array_equal(got, want)):
        np.testing.assert_array_equal(got, want, err_msg=what)


def same_indexes(got: Timeline, want: Timeline) -> None:
    for name in ("ts", "mask", "origin"):
        same_array(getattr(got, name), getattr(want, name), name)
    assert got.n == want.n and got.n_seg == want.n_seg
    for neg in range(1 << N_SYM):
        same_array(got.segments_holding(neg), want.segments_holding(neg), f"segments_holding({neg})")
    for sym in range(N_SYM):
        for method in ("rows", "seg_of", "sym_segments", "tie_start_of"):
            same_array(getattr(got, method)(sym), getattr(want, method)(sym), f"{method}({sym})")
        assert got.n_rows(sym) == want.n_rows(sym)
        for neg in range(1 << N_SYM):
            for method in ("no_neg_before", "no_neg_after"):
                same_array(getattr(got, method)(sym, neg), getattr(want, method)(sym, neg), f"{method}({sym}, {neg})")
            for prev in range(N_SYM):
                for g, w in zip(got.prev_ranges(prev, sym, neg), want.prev_ranges(prev, sym, neg)):
                    same_array(g, w, f"prev_ranges({prev}, {sym}, {neg})")


@SETTINGS
@given(based_ranges())
def test_a_range_timeline_indexes_its_rows_as_the_plain_timeline_does(case: tuple[np.ndarray, ...]) -> None:
    ts, mask, starts, ends = case
    got, want = RangeTimeline(ts, mask, starts, ends), plain(ts, mask, starts, ends)
    same_indexes(got, want)
    same_indexes(got.reversed(), want.reversed())


@SETTINGS
@given(based_ranges(), st.integers(1, 6), st.integers(1, 4))
def test_sliding_windows_as_range_timelines_index_as_the_plain_timeline(case: tuple[np.ndarray, ...],
                                                                         within: int, slide: int) -> None:
    """The windows that paths.sliding and pretree build: ranges by time, never cutting ties."""
    ts, mask, _, _ = case
    k = sliding_windows(ts, within, slide)
    starts, ends = np.searchsorted(ts, k * slide, "left"), np.searchsorted(ts, k * slide + within, "left")
    got = range_timeline(ts, mask, starts, ends)
    assert isinstance(got, RangeTimeline) and not got.cuts_ties
    want = plain(ts, mask, starts, ends)
    same_indexes(want.reversed(), got.reversed())  # the reversed twin first: built before the forward one
    same_indexes(got, want)
