"""DOUBLE values as the tests draw and compare them: NULL, NaN, +inf, -inf and numbers.

Every strategy that draws a DOUBLE measure value draws the non-finite ones too, so a
kernel that lets ``0 * NaN`` or ``inf - inf`` into a result fails some example.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

NON_FINITE = (math.nan, math.inf, -math.inf)
SMALL = st.floats(-100, 100, width=32)  # sums stay far from overflow


@st.composite
def doubles(draw: st.DrawFn, finite: st.SearchStrategy[float] = SMALL,
            nulls: bool = True, non_finite: int = 1) -> float | None:
    """About one value in ten NULL (when ``nulls``), ``non_finite`` in ten NaN or an
    infinity, the rest ``finite``."""
    pick = draw(st.integers(0, 9))
    if pick == 0 and nulls:
        return None
    if pick <= non_finite:
        return draw(st.sampled_from(NON_FINITE))
    return draw(finite)


def same_double(have: float, want: float, rel_tol: float = 1e-9) -> bool:
    """Equal as Spark reports them: NaN equals NaN, infinities exactly, numbers within rounding."""
    if math.isnan(want) or math.isnan(have):
        return math.isnan(want) and math.isnan(have)
    return math.isclose(have, want, rel_tol=rel_tol, abs_tol=1e-9)



def identical(have: object, want: object) -> bool:
    """``have == want`` for nested lists and tuples, with NaN equal to NaN (exactly equal otherwise)."""
    if isinstance(have, (list, tuple)) and isinstance(want, (list, tuple)):
        return len(have) == len(want) and all(identical(h, w) for h, w in zip(have, want))
    if isinstance(have, float) and isinstance(want, float) and math.isnan(have) and math.isnan(want):
        return True  # np.float64 is a float subclass
    return bool(have == want)


def with_non_finite(rng: np.random.Generator, x: np.ndarray, share: float = 0.05) -> np.ndarray:
    """``x`` (float64) with about ``share`` of its values replaced by NaN, +inf or -inf."""
    out = np.asarray(x, dtype=np.float64).copy()
    hit = rng.random(len(out)) < share
    out[hit] = rng.choice(np.array(NON_FINITE), int(hit.sum()))
    return out
