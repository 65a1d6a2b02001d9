"""Number systems for match counts: checked int64, exact Python ints, float64.

Every kernel is written once against :class:`Arith`; the number system decides the
dtype and whether arithmetic is checked. The fast path is ``INT``: plain int64 with
cheap overflow guards that raise :class:`Overflow` (internal) instead of wrapping.
Then :func:`with_fallback` recomputes the whole group with ``EXACT`` (object arrays of Python
ints: exact, slow) or, for ``count_type=DOUBLE``, with ``FLOAT``.

Why a guard threshold of 2**62 rather than 2**63: every checked value stays below
``LIMIT``, so the sum of two checked values still fits int64 and one float64 shadow
comparison per operation is enough (float64 rounding near 2**62 is far smaller than
the 2**62 headroom).
"""

from __future__ import annotations

import enum
from typing import Callable, TypeVar

import numpy as np

from udafs.errors import CountOverflowError
from udafs.kernels.options import DEFAULT, KernelOptions
from udafs.plan import CountType, Plan

LIMIT = 2**62
_FLIMIT = float(LIMIT)
_F8 = np.float64


#: Exact (Python int) values beyond this are not computed. After pruning dead partial
#: matches every intermediate value is at most (rows x matches before edge negation),
#: so such a value means at least 2**984 matches: far beyond any count type.
EXACT_CAP = 2**1024


class Overflow(ArithmeticError):
    """An int64 intermediate would exceed ``LIMIT``: recompute with exact numbers."""


class TooLarge(ArithmeticError):
    """An exact intermediate reached ``EXACT_CAP``: the answer cannot fit a count type."""


class Kind(enum.Enum):
    INT = "int"
    EXACT = "exact"
    FLOAT = "float"
    RATIONAL = "rational"  # object arrays of fractions.Fraction: expected values, exactly (tests)


class Arith:
    """Array arithmetic on non-negative counts in one number system."""

    def __init__(self, kind: Kind, capped: bool = True, prune: bool | None = None) -> None:
        self.kind = kind
        self.dtype = {Kind.INT: np.int64, Kind.EXACT: object, Kind.FLOAT: np.float64, Kind.RATIONAL: object}[kind]
        self.checked = kind is Kind.INT
        # fallbacks drop dead partial matches first (their counts overflowed int64)
        self.prune = kind in (Kind.EXACT, Kind.FLOAT) if prune is None else prune
        self.capped = capped and kind is Kind.EXACT  # raise TooLarge at EXACT_CAP

    def __repr__(self) -> str:
        return f"Arith({self.kind.value})"

    def ones(self, n: int) -> np.ndarray:
        return np.ones(n, dtype=self.dtype)

    def zeros(self, n: int) -> np.ndarray:
        return np.zeros(n, dtype=self.dtype)

    def asarray(self, x: np.ndarray) -> np.ndarray:
        """Convert non-negative counts (or 0/1 weights) into this number system."""
        if self.dtype is object:
            return np.asarray(x).astype(object) if np.asarray(x).dtype != object else x
        return np.asarray(x, dtype=self.dtype)

    def excl_cumsum(self, x: np.ndarray, signed: bool = False) -> np.ndarray:
        """``out[k] = x[0] + ... + x[k-1]``, length ``len(x) + 1`` (``x >= 0`` unless ``signed``)."""
        out = np.empty(len(x) + 1, dtype=self.dtype)
        out[0] = 0
        np.cumsum(x, out=out[1:])
        if self.capped and not signed and len(x) and out[-1] >= EXACT_CAP:
            raise TooLarge
        if self.checked and len(x):
            if signed:
                if float(np.abs(x).sum(dtype=_F8)) >= _FLIMIT:
                    raise Overflow
            elif not out[-1] < LIMIT or out[-1] < 0 or (len(x) > 2 and out.min() < 0):
                # every x is in [0, 2**62), so the first partial sum to pass 2**63 wraps
                # to a negative value: no negative partial sum means no wrap
                raise Overflow
        return out

    def mul(self, x: np.ndarray, y: np.ndarray, signed: bool = False) -> np.ndarray:
        """Element-wise product of counts (``signed``: of any int64 values)."""
        if self.checked and len(x):
            ax, ay = (np.abs(x), np.abs(y)) if signed else (x, y)
            if float(ax.max()) * float(ay.max()) >= _FLIMIT:
                if float(np.max(ax.astype(_F8) * ay.astype(_F8))) >= _FLIMIT:
                    raise Overflow
        return x * y

    def add(self, x: np.ndarray, y: np.ndarray, signed: bool = False) -> np.ndarray:
        """Element-wise sum of counts (``signed``: of any int64 values)."""
        if self.checked and len(x):
            ax, ay = (np.abs(x), np.abs(y)) if signed else (x, y)
            if float(ax.max()) + float(ay.max()) >= _FLIMIT:
                raise Overflow
        return x + y

    def total(self, x: np.ndarray) -> int | float:
        """Sum of non-negative counts as a Python number."""
        if not len(x):
            return 0
        if self.checked:
            # within ±2**61 in float64 (error far below 2**60 for int64 values and any
            # length that fits in memory) the true sum fits int64, so the int64 sum is it
            if abs(float(x.sum(dtype=_F8))) < _FLIMIT / 2:
                return int(x.sum())
            return int(self.excl_cumsum(x)[-1])
        s = x.sum()
        if self.kind is Kind.RATIONAL:
            return s
        return float(s) if self.kind is Kind.FLOAT else int(s)

    def dot(self, x: np.ndarray, y: np.ndarray) -> int | float:
        """``sum(x * y)`` of non-negative counts."""
        return self.total(self.mul(x, y))

    def affine_combine(self, a_late: np.ndarray, b_late: np.ndarray, a_early: np.ndarray,
                       b_early: np.ndarray, signed: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Compose affine maps ``late ∘ early``: ``(a_l·a_e, a_l·b_e + b_l)``.

        The multipliers ``a`` are products of ``(1 + m)`` factors and only matter when
        multiplied into a non-zero ``b``; in INT they saturate at ``LIMIT`` (a
        saturated ``a`` times ``b != 0`` then overflows, as the exact value would).
        ``signed`` allows negative ``b``.
        """
        if self.dtype is object:
            b = a_late * b_early + b_late
            if self.capped and not signed and len(b) and max(b) >= EXACT_CAP:
                raise TooLarge
            return np.minimum(a_late * a_early, EXACT_CAP), b
        af = a_late.astype(_F8) * a_early
        if self.kind is Kind.FLOAT:
            bf = np.where(b_early == 0, 0.0, np.minimum(a_late, 1e300) * b_early) + b_late
            return np.minimum(af, 1e300), bf
        if len(af):
            be, bl = (np.abs(b_early), np.abs(b_late)) if signed else (b_early, b_late)
            if float(np.max(a_late.astype(_F8) * be + bl)) >= _FLIMIT:
                raise Overflow
        a = np.where(af >= _FLIMIT, LIMIT, a_late * a_early)
        return a, a_late * b_early + b_late


T = TypeVar("T")


def with_fallback(plan: Plan, attempt: Callable[[Arith], T], options: KernelOptions = DEFAULT) -> T:
    """Run ``attempt`` in checked int64; on overflow again in exact Python ints (or in
    float64 for ``count_type=DOUBLE``). Only final values are checked against the
    count type, so huge intermediates with a small answer are fine. Without
    ``options.int64_first`` only the fallback runs."""
    if options.int64_first:
        try:
            return attempt(Arith(Kind.INT))
        except Overflow:
            pass
    if plan.count_type is CountType.DOUBLE:
        with np.errstate(over="ignore", invalid="ignore"):  # beyond 1.8e308 is inf
            return attempt(Arith(Kind.FLOAT))
    try:
        return attempt(Arith(Kind.EXACT))
    except TooLarge:
        raise too_large(plan) from None


def too_large(plan: Plan) -> CountOverflowError:
    """The error for match counts too large to compute exactly (see ``arith.EXACT_CAP``)."""
    target = "BIGINT" if plan.count_type is CountType.BIGINT else "DECIMAL(38,0)"
    return CountOverflowError("the number of matches (at least 2**984)", len(str(EXACT_CAP // 2**40)), target)
