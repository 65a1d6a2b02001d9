"""Predicate comparisons ``left OP right + offset`` with SQL NULLs and Spark's double order.

Two number systems, chosen per predicate (docs/predicates-and-strategies.md):

* all compared columns INT and an integral offset: exact integers;
* otherwise IEEE doubles ``(float(left) + float(left_offset)) OP (float(right) + float(offset))``
  (each side adds its own constant, as Spark evaluates the expression as written), ordered like
  Spark orders doubles in comparisons: NaN equals NaN and is above every other value,
  ``-0.0`` equals ``0.0``.

A NULL operand makes the predicate not TRUE. Both a scalar form (for the state DP)
and a vectorised form producing order-preserving int64 keys (for the sorted /
Fenwick paths) are here, so that the two cannot drift apart.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from udafs.plan import CmpOp, Plan, ValueType

_NAN_KEY = np.iinfo(np.int64).max


def is_float(plan: Plan, offsets: tuple[int | float, ...], *columns: int) -> bool:
    """True when a comparison of these plan columns with these offsets runs in doubles."""
    return any(isinstance(o, float) for o in offsets) or any(plan.columns[c] is ValueType.FLOAT for c in columns)


def scalar_key(x: int | float | None, as_float: bool) -> object:
    """A Python value ordered like the comparison orders it (None stays None)."""
    if x is None:
        return None
    if not as_float:
        return int(x)
    x = float(x)
    return (1, 0.0) if math.isnan(x) else (0, x + 0.0)  # + 0.0 turns -0.0 into 0.0


def holds(op: CmpOp, a: Any, b: Any) -> bool:
    """``a OP b`` on keys from :func:`scalar_key` (None: False; both keys of one kind)."""
    if a is None or b is None:
        return False
    if op is CmpOp.EQ:
        return a == b
    if op is CmpOp.NE:
        return a != b
    if op is CmpOp.LT:
        return a < b
    if op is CmpOp.LE:
        return a <= b
    if op is CmpOp.GT:
        return a > b
    return a >= b


def shifted(x: int | float | None, offset: int | float, as_float: bool) -> object:
    """Key of ``x + offset`` (either side with its constant), None for NULL."""
    if x is None:
        return None
    if as_float:
        return scalar_key(float(x) + float(offset), True)
    return int(x) + int(offset)


def float_order_key(x: np.ndarray) -> np.ndarray:
    """int64 keys of doubles in comparison order: -inf < ... < 0.0 == -0.0 < ... < +inf < NaN."""
    x = np.asarray(x, dtype=np.float64) + 0.0  # -0.0 + 0.0 == +0.0
    b = np.ascontiguousarray(x).view(np.int64)
    return np.where(np.isnan(x), _NAN_KEY, np.where(b < 0, b ^ np.int64(0x7FFF_FFFF_FFFF_FFFF), b))


def array_keys(vals: np.ndarray, offset: int | float, as_float: bool) -> np.ndarray:
    """Order keys of ``vals + offset`` as int64 (doubles) or as exact integers.

    Integer keys are int64 when ``vals + offset`` provably fits, else Python ints
    (object array), so that no sum wraps.
    """
    if as_float:
        return float_order_key(np.asarray(vals, dtype=np.float64) + float(offset))
    v = np.asarray(vals, dtype=np.int64)
    c = int(offset)
    if not len(v) or (-(2**63) <= int(v.min()) + c and int(v.max()) + c < 2**63):
        return v + np.int64(c)
    return v.astype(object) + c
