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

from udafs.errors import DECIMAL_SUM_OVERFLOW, CountOverflowError, PlanError, measure_words
from udafs.kernels.values.arith import LIMIT, Arith, Kind, Overflow
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
    return {m.symbol for m in plan.measures if m.kind is not MeasureKind.COUNT_STAR and m.symbol is not None}


class Partial(NamedTuple):
    """A measure before finalisation, per output row; partials of disjoint match sets combine.

    ``value``: the count (COUNT), the sum (SUM, AVG) or the extreme (MIN, MAX);
    ``nn``: the number of pairs with a non-NULL value (0 where NULL would result).
    """

    value: np.ndarray
    nn: np.ndarray


def aggregate(plan: Plan, tally: Tally, columns: Sequence[Column], ar: Arith) -> tuple[list, list]:
    """Every measure of ``plan`` per output row: (values, valid) lists."""
    return finalize(plan, partials(plan, tally, columns, ar))


def partials(plan: Plan, tally: Tally, columns: Sequence[Column], ar: Arith, *,
             gathered: bool = False) -> list[Partial]:
    """Every measure of ``plan`` per output row, before finalisation (``gathered``: the
    ``columns`` hold the values of the tally's slots already, ``column[tally.rows]``)."""
    out = []
    for m in plan.measures:
        if m.kind.funnel:  # prefix counts: udafs.kernels.counting.steps, from evaluate_group's dispatch only
            raise PlanError(f"{m.kind.value.upper()} is evaluated on the grouped path (evaluate_group) only; "
                            "this evaluation path counts the whole pattern, not its prefixes")
        if m.kind is MeasureKind.COUNT_STAR:
            out.append(Partial(tally.counts, tally.counts))
        elif m.kind is MeasureKind.COUNT:
            assert m.symbol is not None  # Plan validation: every kind but COUNT(*) binds a symbol
            c = seg_sum(tally.pairs[m.symbol], tally.bounds, ar)
            out.append(Partial(c, c))
        else:
            assert m.column is not None  # Plan validation: SUM/MIN/MAX/AVG read a column
            col_vals, col_ok = columns[m.column]
            if not gathered:
                col_vals, col_ok = col_vals[tally.rows], col_ok[tally.rows]
            out.append(_column_partial(plan, m, tally, col_vals, col_ok, ar))
    return out


def finalize(plan: Plan, parts: Sequence[Partial]) -> tuple[list, list]:
    """SQL values and validity from partials: count types, AVG division, NULLs."""
    values, valid = [], []
    for m, p in zip(plan.measures, parts):
        if m.kind.funnel:
            v = _funnel_value(p.value, plan.count_type, m)
            values.append(v)
            valid.append(np.ones(len(v), dtype=bool))
            continue
        has = np.ones(len(p.value), dtype=bool) if m.kind in _COUNTS else np.asarray(p.nn > 0, dtype=bool)
        column = plan.columns[m.column] if m.column is not None else None
        if m.kind in _COUNTS or (m.kind is MeasureKind.SUM and column is ValueType.INT):
            v = _to_count_type(p.value, plan.count_type, m)
        elif column is ValueType.DECIMAL and m.kind in (MeasureKind.SUM, MeasureKind.AVG):
            v = _decimal_sum(p, m)
        elif m.kind is MeasureKind.SUM:
            v = p.value.astype(_F8)
        elif m.kind is MeasureKind.AVG:
            v = _divide(p.value, p.nn)
        else:
            v = p.value
        values.append(_blank(v, has))
        valid.append(has)
    return values, valid


def _funnel_value(steps: np.ndarray, ct: CountType, m: Measure) -> np.ndarray:
    """STEPS(*): the ``(rows, n)`` prefix counts in the count type (overflow raises, naming the
    measure); MAX_STEP(): the int64 step number per row (:func:`max_steps`)."""
    if m.kind is MeasureKind.MAX_STEP:
        return max_steps(steps)
    return _to_count_type(steps.ravel(), ct, m).reshape(steps.shape)


def combine(plan: Plan, a: Sequence[Partial], b: Sequence[Partial]) -> list[Partial]:
    """Partials of the union of two disjoint match multisets (exact: ints become Python ints)."""
    out = []
    for m, x, y in zip(plan.measures, a, b):
        nn = _exact(x.nn) + _exact(y.nn)
        if m.kind in (MeasureKind.MIN, MeasureKind.MAX):
            pick = np.minimum if m.kind is MeasureKind.MIN else np.maximum
            hx, hy = x.nn > 0, y.nn > 0
            is_f = x.value.dtype.kind == "f"
            u, v = (float_key(x.value), float_key(y.value)) if is_f else (x.value, y.value)
            value = np.where(hx & hy, pick(u, v), np.where(hx, u, v))
            value = key_float(value) if is_f else value
        else:
            value = _exact(x.value) + _exact(y.value)
        out.append(Partial(value, nn))
    return out


def _decimal_sum(p: Partial, m: Measure) -> np.ndarray:
    """SUM of a DECIMAL column: its exact unscaled sum; AVG: sum / count rounded half up
    to ``m.places`` more places — Spark's own decimal average, which divides exactly (to 39
    places, truncated) and then rounds half up to the result scale: the same number. Both
    as DECIMAL(38, 0); beyond 38 digits no DECIMAL holds them."""
    sums = [int(x) for x in _exact(np.asarray(p.value)).tolist()]
    what = measure_words(m.kind.value, m.name)
    if m.kind is MeasureKind.AVG:
        limit = 10**m.digits - 1  # Spark's avg sums into DECIMAL(min(38, p + 10), s) first
        _check_range(np.array(sums + [0], dtype=object), -limit, limit, f"the sum of {what}",
                     f"DECIMAL({m.digits}, s)", DECIMAL_SUM_OVERFLOW)
        sums = [half_up(s * 10**m.places, int(n)) if n else 0 for s, n in zip(sums, _exact(p.nn).tolist())]
    out = np.array(sums + [None], dtype=object)[:-1]
    _check_range(out, -_DECIMAL_MAX, _DECIMAL_MAX, what, "DECIMAL(38, 0)", DECIMAL_SUM_OVERFLOW)
    return out


def half_up(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` (denominator > 0) rounded half away from zero, exactly."""
    q, r = divmod(abs(numerator), denominator)
    q += 2 * r >= denominator
    return q if numerator >= 0 else -q


def _exact(v: np.ndarray) -> np.ndarray:
    return v if v.dtype.kind in "fO" else v.astype(object)


_COUNTS = (MeasureKind.COUNT_STAR, MeasureKind.COUNT)


def _column_partial(plan: Plan, m: Measure, tally: Tally, vals: np.ndarray, ok: np.ndarray,
                    ar: Arith) -> Partial:
    assert m.symbol is not None and m.column is not None  # Plan validation: a column measure binds both
    pairs = tally.pairs[m.symbol]
    nn = seg_sum(pairs if ok.all() else np.where(ok, pairs, 0).astype(pairs.dtype), tally.bounds, ar)
    if m.kind in (MeasureKind.MIN, MeasureKind.MAX):
        if vals.dtype.kind == "f":  # Spark's order: NaN above +inf, MIN skips it unless all NaN
            return Partial(key_float(_extreme(m.kind, float_key(vals), ok & (pairs > 0), tally.bounds, nn > 0)), nn)
        return Partial(_extreme(m.kind, vals, ok & (pairs > 0), tally.bounds, nn > 0), nn)
    exact = plan.columns[m.column] is not ValueType.FLOAT  # INT or the unscaled integers of a DECIMAL
    return Partial(_weighted_sum(pairs, vals, ok, tally.bounds, exact=exact and ar.kind is not Kind.FLOAT), nn)


def _weighted_sum(pairs: np.ndarray, vals: np.ndarray, ok: np.ndarray, bounds: np.ndarray,
                  exact: bool) -> np.ndarray:
    """Σ pairs·vals over ``ok`` slots per output row; exact Python ints when needed.

    Floats follow IEEE over the (match, row) pairs: a slot no match binds (pairs 0) adds
    nothing even when its value is NaN or infinite (``0 * NaN`` would be NaN), a slot bound
    k times adds k·value (inf + -inf = NaN, as Spark sums them), and a zero value adds 0
    however astronomic its float pair count.
    """
    if not exact:
        with np.errstate(invalid="ignore", over="ignore"):
            prod = np.where(ok & (pairs > 0) & (vals != 0), pairs.astype(_F8) * vals, 0.0)
            return seg_sum(prod, bounds)
    if pairs.dtype != object:
        every = ok.all()  # no NULL: no masking
        prod = pairs.astype(_F8) * vals if every else np.where(ok, pairs.astype(_F8) * vals, 0.0)
        if not len(prod) or float(np.abs(prod).sum()) < LIMIT:
            return seg_sum(pairs * vals if every else np.where(ok, pairs * vals, 0), bounds)
    prod = np.where(ok, pairs.astype(object) * vals.astype(object), 0)
    return seg_sum(prod, bounds)


def _divide(total: np.ndarray, nn: np.ndarray) -> np.ndarray:
    """AVG as float64; true division of Python ints is correctly rounded."""
    if total.dtype != object and nn.dtype != object and (not len(total) or (
            float(np.max(np.abs(total.astype(_F8)))) < 2**53 and float(np.max(nn.astype(_F8))) < 2**53)):
        with np.errstate(invalid="ignore", divide="ignore"):
            return total.astype(_F8) / nn.astype(_F8)
    return np.array([_py_div(t, c) for t, c in zip(total.tolist(), nn.tolist())], dtype=_F8)


def _py_div(t: int | float, c: int | float) -> float:
    if not c:
        return float("nan")
    if isinstance(t, float) or isinstance(c, float):
        return float(t) / float(c)
    return t / c


def _extreme(kind: MeasureKind, vals: np.ndarray, sel: np.ndarray, bounds: np.ndarray,
             has: np.ndarray) -> np.ndarray:
    n_out = len(bounds) - 1
    if vals.dtype.kind == "f":
        fill = np.inf if kind is MeasureKind.MIN else -np.inf
    elif vals.dtype == object:  # unscaled DECIMAL(38, s) integers: beyond every one of them
        fill = _DECIMAL_MAX + 1 if kind is MeasureKind.MIN else -_DECIMAL_MAX - 1
    else:
        info = np.iinfo(vals.dtype)
        fill = info.max if kind is MeasureKind.MIN else info.min
    if not len(vals):
        return _blank(np.zeros(n_out, dtype=vals.dtype), has)
    ufunc = np.minimum if kind is MeasureKind.MIN else np.maximum
    masked = np.where(sel, vals, np.array(fill, dtype=vals.dtype)) if vals.dtype != object else \
        np.array([v if s else fill for v, s in zip(vals.tolist(), sel.tolist())] + [None], dtype=object)[:-1]
    empty = bounds[1:] == bounds[:-1]
    out = np.full(n_out, fill, dtype=vals.dtype)
    out[~empty] = ufunc.reduceat(masked, bounds[:-1][~empty])  # as in seg_sum: non-empty starts only
    return _blank(out, has)


_LOW63 = np.int64(0x7FFF_FFFF_FFFF_FFFF)
_NAN_KEY = np.iinfo(np.int64).max


def float_key(x: np.ndarray) -> np.ndarray:
    """int64 keys ordered like Spark orders doubles: -inf < ... < -0.0 < 0.0 < ... < +inf < NaN.

    IEEE bits of non-negative doubles already sort as integers; negative ones sort
    reversed, so flipping their 63 low bits fixes the order. All NaNs share the top key.
    """
    b = np.ascontiguousarray(x, dtype=_F8).view(np.int64)
    return np.where(np.isnan(x), _NAN_KEY, np.where(b < 0, b ^ _LOW63, b))


def key_float(k: np.ndarray) -> np.ndarray:
    """Inverse of :func:`float_key`."""
    out = np.where(k < 0, k ^ _LOW63, k).astype(np.int64).view(_F8).copy()
    out[k == _NAN_KEY] = np.nan
    return out


def _blank(v: np.ndarray, has: np.ndarray) -> np.ndarray:
    """Neutral filler where the value is NULL (0, or NaN for floats)."""
    if v.dtype.kind == "f":
        return np.where(has, v, np.nan)
    if v.dtype == object:
        v = v.copy()
        v[~has] = 0
        return v
    return np.where(has, v, 0).astype(v.dtype)


def seg_sum(x: np.ndarray, bounds: np.ndarray, ar: Arith | None = None) -> np.ndarray:
    """Per-segment sums of ``x`` (segments may be empty), in ``x``'s dtype.

    With a checked ``ar``, ``x`` holds non-negative int64 counts and a float64 shadow
    of the total guards against wrapping.
    """
    n_out = len(bounds) - 1
    if ar is not None and ar.checked and len(x) and float(x.sum(dtype=_F8)) >= LIMIT:
        raise Overflow
    if not len(x):
        return np.zeros(n_out, dtype=x.dtype)
    empty = bounds[1:] == bounds[:-1]
    if not empty.any():
        return np.add.reduceat(x, bounds[:-1])
    # reduceat sums up to the next index given, so only non-empty segments may start one
    # (a trailing empty segment would otherwise cut the last non-empty one short)
    out = np.zeros(n_out, dtype=x.dtype)
    out[~empty] = np.add.reduceat(x, bounds[:-1][~empty])
    return out


def _to_count_type(v: np.ndarray, ct: CountType, m: Measure) -> np.ndarray:
    """Convert exact (or float) results into the SQL count type, raising on overflow."""
    if ct is CountType.DOUBLE:
        out = np.array([float(x) for x in v], dtype=_F8) if v.dtype == object else v.astype(_F8)
        if m.kind in (MeasureKind.COUNT_STAR, MeasureKind.COUNT, MeasureKind.STEPS):
            out[np.isnan(out)] = np.inf  # inf - inf of astronomic float counts: still a count
        return out
    if v.dtype.kind == "f":  # cannot happen: floats are only used for DOUBLE
        raise AssertionError("float counts for an exact count type")
    what = measure_words(m.kind.value, m.name)
    if ct is CountType.BIGINT:
        if v.dtype == object:
            _check_range(v, -_BIGINT_MAX - 1, _BIGINT_MAX, what, "BIGINT")
        return v.astype(np.int64)
    v = v.astype(object) if v.dtype != object else v
    _check_range(v, -_DECIMAL_MAX, _DECIMAL_MAX, what, "DECIMAL(38,0)")
    return np.array([int(x) for x in v], dtype=object)


def _check_range(v: np.ndarray, lo: int, hi: int, what: str, target: str, advice: str | None = None) -> None:
    for x in v:
        if not lo <= x <= hi:
            raise CountOverflowError(what, len(str(abs(int(x)))), target, advice=advice)


def max_steps(steps: np.ndarray) -> np.ndarray:
    """MAX_STEP per output row from the ``(rows, n)`` prefix counts: the largest 1-based i
    with a non-zero count, 0 when none.

    >>> max_steps(np.array([[3, 1, 0], [0, 0, 0], [2, 2, 2]])).tolist()
    [2, 0, 3]
    """
    reached = np.asarray(steps != 0, dtype=bool)
    n = reached.shape[1]
    last = n - np.argmax(reached[:, ::-1], axis=1)
    return np.where(reached.any(axis=1), last, 0).astype(np.int64)
