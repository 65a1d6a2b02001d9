"""From match counts and (match, row) pair counts to the plan's measures.

A :class:`Tally` is what every evaluation path produces: the number of matches per
output row, and for each measured symbol X the pair counts ("in how many matches is
this row bound to X, summed over X's positions") over *slots*. A slot is a row of
the sorted input as seen by one output row; output row k owns slots
``bounds[k]:bounds[k+1]`` (sliding windows replicate rows, so one input row can own
several slots). SEMANTICS section 5 then reads off directly:
COUNT(X) = Σ pairs, SUM(X.a) = Σ pairs·a over non-NULL a, AVG = SUM / Σ pairs over
non-NULL a, MIN/MAX over slots with pairs > 0.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from udafs.errors import CountOverflowError
from udafs.kernels.arith import LIMIT, Arith, Kind
from udafs.plan import CountType, Measure, MeasureKind, Plan, ValueType

_F8 = np.float64
_BIGINT_MAX = 2**63 - 1
_DECIMAL_MAX = 10**38 - 1


class Tally(NamedTuple):
    """Counts per output row and pair counts per slot (see module docstring)."""

    counts: np.ndarray
    rows: np.ndarray
    bounds: np.ndarray
    pairs: dict[int, np.ndarray]


Column = tuple[np.ndarray, np.ndarray]


def measure_symbols(plan: Plan) -> set[int]:
    """Symbols whose pair counts some measure needs."""
    return {m.symbol for m in plan.measures if m.kind is not MeasureKind.COUNT_STAR}


def aggregate(plan: Plan, tally: Tally, columns: Sequence[Column], ar: Arith) -> tuple[list, list]:
    """Every measure of ``plan`` per output row: (values, valid) lists."""
    values, valid = [], []
    n_out = len(tally.bounds) - 1
    for m in plan.measures:
        if m.kind is MeasureKind.COUNT_STAR:
            v, ok = _to_count_type(tally.counts, plan.count_type, m), np.ones(n_out, dtype=bool)
        elif m.kind is MeasureKind.COUNT:
            v = _to_count_type(seg_sum(tally.pairs[m.symbol], tally.bounds), plan.count_type, m)
            ok = np.ones(n_out, dtype=bool)
        else:
            col_vals, col_ok = columns[m.column]
            v, ok = _column_measure(plan, m, tally, col_vals[tally.rows], col_ok[tally.rows], ar)
        values.append(v)
        valid.append(ok)
    return values, valid


def _column_measure(plan: Plan, m: Measure, tally: Tally, vals: np.ndarray, ok: np.ndarray,
                    ar: Arith) -> tuple[np.ndarray, np.ndarray]:
    pairs = tally.pairs[m.symbol]
    nn = seg_sum(np.where(ok, pairs, 0).astype(pairs.dtype), tally.bounds)
    has = nn > 0
    is_int = plan.columns[m.column] is ValueType.INT
    if m.kind in (MeasureKind.MIN, MeasureKind.MAX):
        return _extreme(m.kind, vals, ok & (pairs > 0), tally.bounds, has), has
    total = _weighted_sum(pairs, vals, ok, tally.bounds, exact=is_int and ar.kind is not Kind.FLOAT)
    if m.kind is MeasureKind.SUM:
        out = _to_count_type(total, plan.count_type, m) if is_int else total.astype(_F8)
        return _blank(out, has), has
    return _blank(_divide(total, nn), has), has


def _weighted_sum(pairs: np.ndarray, vals: np.ndarray, ok: np.ndarray, bounds: np.ndarray,
                  exact: bool) -> np.ndarray:
    """Σ pairs·vals over ``ok`` slots per output row; exact Python ints when needed."""
    if not exact:
        return seg_sum(np.where(ok, pairs.astype(_F8) * vals, 0.0), bounds)
    if pairs.dtype != object:
        prod = np.where(ok, pairs.astype(_F8) * vals, 0.0)
        if not len(prod) or float(np.abs(prod).sum()) < LIMIT:
            return seg_sum(np.where(ok, pairs * vals, 0), bounds)
    prod = np.where(ok, pairs.astype(object) * vals.astype(object), 0)
    return seg_sum(prod, bounds)


def _divide(total: np.ndarray, nn: np.ndarray) -> np.ndarray:
    """AVG as float64; true division of Python ints is correctly rounded."""
    if total.dtype != object and nn.dtype != object and (not len(total) or (
            float(np.max(np.abs(total.astype(_F8)))) < 2**53 and float(np.max(nn.astype(_F8))) < 2**53)):
        with np.errstate(invalid="ignore", divide="ignore"):
            return total.astype(_F8) / nn.astype(_F8)
    return np.array([int(t) / int(c) if c else np.nan for t, c in zip(total, nn)], dtype=_F8)


def _extreme(kind: MeasureKind, vals: np.ndarray, sel: np.ndarray, bounds: np.ndarray,
             has: np.ndarray) -> np.ndarray:
    n_out = len(bounds) - 1
    if vals.dtype.kind == "f":
        fill = np.inf if kind is MeasureKind.MIN else -np.inf
    else:
        info = np.iinfo(vals.dtype)
        fill = info.max if kind is MeasureKind.MIN else info.min
    if not len(vals):
        return _blank(np.zeros(n_out, dtype=vals.dtype), has)
    ufunc = np.minimum if kind is MeasureKind.MIN else np.maximum
    masked = np.where(sel, vals, np.array(fill, dtype=vals.dtype))
    out = ufunc.reduceat(masked, np.minimum(bounds[:-1], len(vals) - 1))
    return _blank(out, has)


def _blank(v: np.ndarray, has: np.ndarray) -> np.ndarray:
    """Neutral filler where the value is NULL (0, or NaN for floats)."""
    if v.dtype.kind == "f":
        return np.where(has, v, np.nan)
    if v.dtype == object:
        v = v.copy()
        v[~has] = 0
        return v
    return np.where(has, v, 0).astype(v.dtype)


def seg_sum(x: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Per-segment sums of ``x`` (segments may be empty), in ``x``'s dtype."""
    n_out = len(bounds) - 1
    if not len(x):
        return np.zeros(n_out, dtype=x.dtype)
    out = np.add.reduceat(x, np.minimum(bounds[:-1], len(x) - 1))
    empty = bounds[1:] == bounds[:-1]
    if empty.any():
        out[empty] = 0
    return out


def _to_count_type(v: np.ndarray, ct: CountType, m: Measure) -> np.ndarray:
    """Convert exact (or float) results into the SQL count type, raising on overflow."""
    if ct is CountType.DOUBLE:
        return np.array([float(x) for x in v], dtype=_F8) if v.dtype == object else v.astype(_F8)
    if v.dtype.kind == "f":  # cannot happen: floats are only used for DOUBLE
        raise AssertionError("float counts for an exact count type")
    what = f"{m.kind.value.upper()} measure {m.name!r}" if m.name else f"{m.kind.value.upper()} measure"
    if ct is CountType.BIGINT:
        if v.dtype == object:
            _check_range(v, -_BIGINT_MAX - 1, _BIGINT_MAX, what, "BIGINT")
        return v.astype(np.int64)
    v = v.astype(object) if v.dtype != object else v
    _check_range(v, -_DECIMAL_MAX, _DECIMAL_MAX, what, "DECIMAL(38,0)")
    return np.array([int(x) for x in v], dtype=object)


def _check_range(v: np.ndarray, lo: int, hi: int, what: str, target: str) -> None:
    for x in v:
        if not lo <= x <= hi:
            raise CountOverflowError(what, len(str(abs(int(x)))), target)
