"""Building replicated timelines from row ranges of one sorted base array.

Sliding windows and negation-anchored intervals are both "a list of [start, end)
index ranges into the sorted events"; concatenating them gives a timeline whose
segments are those ranges, evaluated by one forward pass. Building it is one
``np.repeat`` (no Python loop per range).
"""

from __future__ import annotations

import numpy as np

from udafs.kernels.counting.timeline import Timeline


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


def range_timeline(ts: np.ndarray, mask: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> RangeTimeline:
    """Timeline whose segments are the non-empty ``[starts, ends)`` ranges of the base rows."""
    return RangeTimeline(ts, mask, starts, ends)


_NONE = np.zeros(0, dtype=np.int64)


class _Base:
    """One sorted base array's rows grouped by symbol, and its tie-group starts."""

    def __init__(self, ts: np.ndarray, mask: np.ndarray) -> None:
        self.ts, self.mask, self.n = ts, mask, len(ts)
        self._cache: dict[object, np.ndarray] = {}
        self._grouped: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def grouped(self) -> tuple[np.ndarray, np.ndarray]:
        """Base indices of the rows of symbol 0, then of symbol 1, ... (each ascending; a row
        of several symbols once per symbol), and the bounds of each symbol's (length 65)."""
        if self._grouped is None:
            mask = self.mask
            if self.n and (mask > 0).all() and not (mask & (mask - 1)).any():  # one symbol per row
                sym = np.frexp(mask.astype(np.float64))[1] - 1  # exact: powers of two
                order = np.argsort(sym, kind="stable").astype(np.int64, copy=False)
                counts = np.bincount(sym, minlength=64)
            else:
                present = int(np.bitwise_or.reduce(mask)) if self.n else 0
                per = [np.flatnonzero((mask & (1 << s)) != 0) if present >> s & 1 else _NONE
                       for s in range(63)] + [_NONE]  # bit 63: no symbol
                order = np.concatenate(per).astype(np.int64, copy=False)
                counts = np.array([len(p) for p in per])
            bounds = np.zeros(65, dtype=np.int64)
            np.cumsum(counts, out=bounds[1:])
            self._grouped = order, bounds
        return self._grouped

    def positions(self, bits: int) -> np.ndarray:
        """Sorted base indices of the rows holding any of the symbols ``bits``."""
        if bits > 0 and not bits & (bits - 1):  # one symbol: its group
            order, bounds = self.grouped
            s = bits.bit_length() - 1
            return order[bounds[s]:bounds[s + 1]]
        key = ("pos", bits)
        if key not in self._cache:  # a bool test before nonzero: ~10x faster than nonzero on int64
            self._cache[key] = np.flatnonzero((self.mask & bits) != 0).astype(np.int64, copy=False)
        return self._cache[key]

    @property
    def tie_start(self) -> np.ndarray:
        """Index of the first base row with each row's timestamp."""
        if "ties" not in self._cache:
            idx = np.arange(self.n, dtype=np.int64)
            new = np.ones(self.n, dtype=bool)
            np.not_equal(self.ts[1:], self.ts[:-1], out=new[1:])
            self._cache["ties"] = idx if new.all() else np.maximum.accumulate(np.where(new, idx, 0))
        return self._cache["ties"]

    def tie_start_of(self, sym: int) -> np.ndarray:
        """``tie_start`` of the ``sym`` rows."""
        key = ("tso", sym)
        if key not in self._cache:
            self._cache[key] = self.tie_start[self.positions(1 << sym)]
        return self._cache[key]

    def rank_before(self, sym: int, at: np.ndarray) -> np.ndarray:
        """Per base index of ``at``, the number of ``sym`` rows before it."""
        return np.searchsorted(self.positions(1 << sym), at)

    def last_neg_before(self, neg: int) -> np.ndarray:
        """Per base row, the tie-group start of the last ``neg`` row strictly before the
        row's tie group, or -1 (:meth:`Timeline.last_neg_before` on the base rows)."""
        key = ("lnb", neg)
        if key not in self._cache:
            marks = np.full(self.n + 1, -1, dtype=np.int64)
            at = self.positions(neg)
            marks[at + 1] = self.tie_start[at]
            self._cache[key] = np.maximum.accumulate(marks)[self.tie_start]
        return self._cache[key]


def _rows_before(rows: np.ndarray, group: np.ndarray, n_groups: int, at: np.ndarray) -> np.ndarray:
    """``out[g, k]`` = number of ``rows`` of group ``g`` below ``at[k]`` (``rows`` ascending
    within each group): one binary search per row among the sorted ``at`` and a count per
    (group, k), instead of one binary search per (group, k)."""
    perm = None
    if len(at) > 1 and (at[1:] < at[:-1]).any():
        perm = np.argsort(at, kind="stable")
        at = at[perm]
    w = len(at) + 1
    first_above = np.searchsorted(at, rows, "right")  # row < at[k] exactly for k >= first_above
    hist = np.bincount(group * w + first_above, minlength=n_groups * w).reshape(n_groups, w)
    out = np.cumsum(hist[:, :-1], axis=1)
    if perm is not None:
        out[:, perm] = out.copy()
    return out


class RangeTimeline(Timeline):
    """A timeline whose segment ``k`` is the base rows ``[starts[k], ends[k])`` of one sorted
    base array (sliding windows, negation intervals), with its per-symbol indexes built from
    the symbols' base rows instead of from the whole timeline.

    A symbol's rows in segment k are its base rows in that range, found by binary search
    in the symbol's sorted base positions (all symbols' at once); its row list, segment
    bounds, tie starts and predecessor ranges then cost its own replicated rows plus the
    segments, where the plain :class:`Timeline` scans and sums the whole timeline per
    symbol; the replicated rows' ``ts``, ``mask`` and ``origin`` are built only if read.
    Every method returns what :class:`Timeline` returns on the same rows
    (tests/test_kernel_segments.py). Ranges may be empty and may cut a tie group (the cut
    part is then a tie group of its segment, as in :class:`Timeline`).
    """

    def __init__(self, ts: np.ndarray, mask: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
        lengths = ends - starts
        # the base is cut to the rows some range holds: a batch of windows of a long sorted
        # array then indexes only its own stretch (per-symbol grouping, ranks, tie starts)
        held = lengths > 0
        lo = int(starts[held].min()) if held.any() else 0
        hi = int(ends[held].max()) if held.any() else 0
        if lo > 0 or hi < len(ts):
            ts, mask = ts[lo:hi], mask[lo:hi]
            starts = np.where(held, starts - lo, 0)
            ends = np.where(held, ends - lo, 0)
        self.offset = lo  # base row + offset = the caller's row
        bounds = np.zeros(len(starts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=bounds[1:])
        super().__init__(_NONE, _NONE, bounds)
        self.n = int(bounds[-1])
        self.base = _Base(ts, mask)
        self.starts, self.ends = starts, ends
        self.shift = bounds[:-1] - starts  # timeline row = base row + shift[segment]
        # a range starting inside a tie group cuts it: tie starts are then clipped to the range
        inner = starts[(starts > 0) & (lengths > 0)]
        self.cuts_ties = bool(len(inner)) and bool((ts[inner] == ts[inner - 1]).any())
        self._rows_made: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._lists_made: tuple[np.ndarray, ...] | None = None

    # -- the replicated rows, built when read --------------------------------------
    def _made(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._rows_made is None:
            idx, _ = concat_ranges(self.starts, self.ends)
            self._rows_made = self.base.ts[idx], self.base.mask[idx], idx
        return self._rows_made

    @property
    def ts(self) -> np.ndarray:
        return self._made()[0]

    @property
    def mask(self) -> np.ndarray:
        return self._made()[1]

    @property
    def origin(self) -> np.ndarray:
        return self._made()[2] + self.offset if self.offset else self._made()[2]

    # -- per-symbol indexes ----------------------------------------------------------
    def _all_lists(self) -> tuple[np.ndarray, ...]:
        """Every symbol's rows segment by segment, all symbols at once: the symbols with
        base rows, per (symbol, segment) the first of its rows in :attr:`_Base.grouped`,
        the bounds of each (symbol, segment) in the concatenated lists, and per listed
        row its index in ``grouped`` and its segment."""
        if self._lists_made is None:
            order, gb = self.base.grouped
            counts = np.diff(gb)
            symbols = np.flatnonzero(counts)
            group = np.repeat(np.arange(len(symbols), dtype=np.int64), counts[symbols])  # of each grouped row
            first = gb[symbols][:, None]
            lo = first + _rows_before(order, group, len(symbols), self.starts)
            hi = first + _rows_before(order, group, len(symbols), self.ends)
            idx, bounds = concat_ranges(lo.ravel(), hi.ravel())
            segment = np.arange(len(symbols) * self.n_seg, dtype=np.int64) % max(self.n_seg, 1)
            seg = np.repeat(segment, (hi - lo).ravel())
            self._lists_made = symbols, lo, bounds, idx, seg
        return self._lists_made

    def _lists(self, sym: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The ``sym`` rows: per segment the first of them in the symbol's base positions
        (``lo``), the segment bounds in the row list, and per row its base position's
        index and its segment."""
        key = ("lists", sym)
        if key not in self._cache:
            symbols, lo, bounds, idx, seg = self._all_lists()
            j = int(np.searchsorted(symbols, sym))
            if j == len(symbols) or symbols[j] != sym:
                z = np.zeros(self.n_seg, dtype=np.int64)
                self._cache[key] = (z, np.zeros(self.n_seg + 1, dtype=np.int64), _NONE, _NONE)
            else:
                first = self.base.grouped[1][sym]
                w = self.n_seg
                a, b = int(bounds[j * w]), int(bounds[(j + 1) * w])
                self._cache[key] = (lo[j] - first, bounds[j * w:(j + 1) * w + 1] - a, idx[a:b] - first, seg[a:b])
        return self._cache[key]

    def rows(self, sym: int) -> np.ndarray:
        key = ("rows", sym)
        if key not in self._cache:
            _, _, idx, seg = self._lists(sym)
            self._cache[key] = self.base.positions(1 << sym)[idx] + self.shift[seg]
        return self._cache[key]

    def seg_of(self, sym: int) -> np.ndarray:
        return self._lists(sym)[3]

    def n_rows(self, sym: int) -> int:
        return int(self._lists(sym)[1][-1])

    def segments_holding(self, bits: int) -> np.ndarray:
        symbols, lo, bounds, _, _ = self._all_lists()
        mine = np.flatnonzero((bits >> symbols) & 1)
        w = self.n_seg
        if not (len(mine) and w):
            return np.zeros(w, dtype=bool)
        counts = (bounds[1:] - bounds[:-1]).reshape(-1, w)  # per (listed symbol, segment)
        return (counts[mine] > 0).any(axis=0)

    def sym_segments(self, sym: int) -> np.ndarray:
        return self._lists(sym)[1]

    def _base_tie_start(self, sym: int) -> np.ndarray:
        """Per ``sym`` row, the base index of its tie group's first row in its segment."""
        key = ("bts", sym)
        if key not in self._cache:
            _, _, idx, seg = self._lists(sym)
            ties = self.base.tie_start_of(sym)[idx]
            self._cache[key] = np.maximum(ties, self.starts[seg]) if self.cuts_ties else ties
        return self._cache[key]

    def tie_start_of(self, sym: int) -> np.ndarray:
        key = ("ts_of", sym)
        if key not in self._cache:
            self._cache[key] = self._base_tie_start(sym) + self.shift[self.seg_of(sym)]
        return self._cache[key]

    def _offsets(self, sym: int) -> np.ndarray:
        """Per segment, the ``sym`` row list's index of a ``sym`` row minus its rank among the
        base ``sym`` rows."""
        key = ("off", sym)
        if key not in self._cache:
            lo, bounds, _, _ = self._lists(sym)
            self._cache[key] = bounds[:-1] - lo
        return self._cache[key]

    def prev_ranges(self, prev_sym: int, sym: int, neg: int) -> tuple[np.ndarray, np.ndarray]:
        key = ("pr", prev_sym, sym, neg)
        if key not in self._cache:
            p_lo, p_bounds, _, _ = self._lists(prev_sym)
            _, _, idx, seg = self._lists(sym)
            # a prev row's place in the row list = its rank among the base prev rows + (bounds - lo)
            # of its segment; ranks are taken once per base row, then copied with it
            offset = self._offsets(prev_sym)[seg]
            hi = self.base.rank_before(prev_sym, self.base.tie_start_of(sym))[idx]
            if self.cuts_ties:
                np.maximum(hi, p_lo[seg], out=hi)
            hi += offset
            if neg:
                limit = self.base.rank_before(prev_sym, self.base.last_neg_before(neg)[self.base.positions(1 << sym)])
                lo = np.maximum(limit[idx], p_lo[seg])
                lo += offset
            else:
                lo = p_bounds[seg]
            self._cache[key] = (lo, hi)
        return self._cache[key]

    def no_neg_before(self, sym: int, neg: int) -> np.ndarray:
        if not neg:
            return np.ones(len(self.seg_of(sym)), dtype=bool)
        at = self.base.positions(neg)
        k = np.searchsorted(at, self.starts)  # the first neg row at or after each segment start
        first = np.append(at, self.base.n)[k]
        return self._base_tie_start(sym) <= first[self.seg_of(sym)]

    def no_neg_after(self, sym: int, neg: int) -> np.ndarray:
        if not neg:
            return np.ones(len(self.seg_of(sym)), dtype=bool)
        at = self.base.positions(neg)
        seg = self.seg_of(sym)
        k = np.searchsorted(at, self.ends)  # one past the last neg row before each segment end
        inside = np.concatenate(([-1], at))[k] >= self.starts
        last = np.maximum(np.concatenate(([-1], self.base.tie_start[at]))[k], self.starts)
        return ~inside[seg] | (last[seg] <= self._base_tie_start(sym))

    def _make_reversed(self) -> Timeline:
        n = self.base.n
        twin = _Reversed(-self.base.ts[::-1], self.base.mask[::-1], n - self.ends[::-1], n - self.starts[::-1])
        twin.offset = self.offset  # its origin maps to this base's rows (see _Reversed.origin)
        return twin


class _Reversed(RangeTimeline):
    """A range timeline's reversed twin: row ``k`` is the twin's row ``n - 1 - k``, and its
    ``origin`` maps to the twin's base rows (as :meth:`Timeline.reversed` keeps it)."""

    @property
    def origin(self) -> np.ndarray:
        return self.base.n - 1 - self._made()[2] + self.offset


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
