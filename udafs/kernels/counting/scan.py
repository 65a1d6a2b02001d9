"""Segmented parallel prefix scan of affine maps ``P -> a·P + b``.

Kleene plus needs ``P_{g+1} = (1 + m_g)·P_g + e_g`` over the tie groups g of a
segment. Affine maps compose associatively, so a Hillis–Steele scan solves the
recurrence exactly in ceil(log2(longest segment)) vectorised steps instead of a
Python loop per group.
"""

from __future__ import annotations

import numpy as np

from udafs.kernels.values.arith import Arith


def affine_scan(a: np.ndarray, b: np.ndarray, seg_first: np.ndarray, ar: Arith,
                signed: bool = False) -> np.ndarray:
    """Exclusive segmented scan: ``P[g]`` = value before group g, starting at 0 per segment.

    Parameters
    ----------
    a, b : arrays of the number system ``ar``
        The map of group g is ``P -> a[g]·P + b[g]``.
    seg_first : int array
        Index of the first group of g's segment (non-decreasing).
    ar : Arith
        Number system (checked int64 raises ``Overflow``).
    signed : bool
        ``b`` may be negative (sums of signed values); ``a`` is always >= 1.

    Returns
    -------
    numpy.ndarray
        ``P`` with ``P[g] = 0`` at every segment's first group.
    """
    n = len(a)
    a, b = a.copy(), b.copy()
    idx = np.arange(n)
    longest = int(np.max(idx - seg_first)) + 1 if n else 0
    d = 1
    while d < longest:
        g = idx[d:][idx[:-d] >= seg_first[d:]]  # groups whose partner g - d is in the same segment
        a[g], b[g] = ar.affine_combine(a[g], b[g], a[g - d], b[g - d], signed)
        d *= 2
    p = np.empty(n, dtype=b.dtype)
    if n:
        p[1:] = b[:-1]
        p[0] = 0
        p[seg_first == idx] = 0
    return p


def seg_accumulate(ufunc: np.ufunc, x: np.ndarray, seg_first: np.ndarray) -> np.ndarray:
    """Inclusive segmented ``ufunc.accumulate`` (e.g. running minimum restarting per segment).

    ``seg_first[q]`` is the index where q's segment starts (non-decreasing). Same
    Hillis–Steele doubling as :func:`affine_scan`, for an associative ``ufunc``.
    """
    out = x.copy()
    idx = np.arange(len(x))
    longest = int(np.max(idx - seg_first)) + 1 if len(x) else 0
    d = 1
    while d < longest:
        g = idx[d:][idx[:-d] >= seg_first[d:]]
        out[g] = ufunc(out[g], out[g - d])
        d *= 2
    return out
