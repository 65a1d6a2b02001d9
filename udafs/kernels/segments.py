"""Building replicated timelines from row ranges of one sorted base array.

Sliding windows and negation-anchored intervals are both "a list of [start, end)
index ranges into the sorted events"; concatenating them gives a timeline whose
segments are those ranges, evaluated by one forward pass. Building it is one
``np.repeat`` (no Python loop per range).
"""

from __future__ import annotations

import numpy as np

from udafs.kernels.timeline import Timeline


def concat_ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``concat(range(s, e))`` and the bounds of each range in it.

    Empty ranges are kept (their bounds are equal); callers drop them first when a
    timeline needs non-empty segments.
    """
    lengths = ends - starts
    bounds = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    idx = np.repeat(starts - bounds[:-1], lengths) + np.arange(bounds[-1], dtype=np.int64)
    return idx, bounds


#: Replicated rows per timeline. A replicated row costs ~100-150 bytes across the
#: timeline's arrays and caches (both time directions), so 2**20 rows keep a batch
#: near 150 MB while a Python-level batch loop stays negligible next to 1 M rows.
BATCH_ROWS = 1 << 20


def batches(lengths: np.ndarray, budget: int | None = None) -> list[tuple[int, int]]:
    """Consecutive ranges ``[a, b)`` of segments holding at most ``budget`` rows each
    (default :data:`BATCH_ROWS`; a single longer segment gets a batch of its own)."""
    budget = BATCH_ROWS if budget is None else budget
    ends = np.cumsum(lengths)
    out, a, base = [], 0, 0
    while a < len(lengths):
        b = max(int(np.searchsorted(ends, base + budget, "right")), a + 1)
        out.append((a, b))
        base, a = int(ends[b - 1]), b
    return out


def range_timeline(ts: np.ndarray, mask: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Timeline:
    """Timeline whose segments are the non-empty ``[starts, ends)`` ranges of the base rows."""
    idx, bounds = concat_ranges(starts, ends)
    return Timeline(ts[idx], mask[idx], bounds, origin=idx)


def open_ranges(ts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index ranges of the rows with ``lo < ts < hi`` in the sorted ``ts``."""
    return np.searchsorted(ts, lo, "right"), np.searchsorted(ts, hi, "left")


def sliding_windows(ts: np.ndarray, within: int, slide: int) -> np.ndarray:
    """Window numbers k of every window [k·slide, k·slide + within) holding a row.

    Row t lies in windows ``floor((t - within) / slide) + 1 .. floor(t / slide)``.
    Those intervals are non-decreasing in both ends for sorted ``ts``, so the union
    is each row's interval minus what the rows before it already covered.
    """
    if not len(ts):
        return np.zeros(0, dtype=np.int64)
    k_lo = (ts - within) // slide + 1
    k_hi = ts // slide
    covered = np.maximum.accumulate(k_hi)
    first_new = k_lo.copy()
    first_new[1:] = np.maximum(k_lo[1:], covered[:-1] + 1)
    counts = np.maximum(k_hi - first_new + 1, 0)
    idx, _ = concat_ranges(first_new, first_new + counts)
    return idx
