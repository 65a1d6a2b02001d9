"""Context managers that force the kernels' slow exact paths, for tests that compare them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def exact_number_systems() -> Iterator[None]:
    """Skip checked int64: run the exact (or float, for DOUBLE) fallback as if it overflowed."""
    import udafs.kernels.evaluate as evaluate_mod

    evaluate_mod.FAST_PATH = False
    try:
        yield
    finally:
        evaluate_mod.FAST_PATH = True


@contextlib.contextmanager
def forced_state_dp() -> Iterator[None]:
    """Evaluate extended plans with the general state DP instead of the vectorised paths."""
    from udafs.kernels import extended

    extended.FORCE_STATE_DP = True
    try:
        yield
    finally:
        extended.FORCE_STATE_DP = False


@contextlib.contextmanager
def forced_within_path(path: str) -> Iterator[None]:
    """Evaluate three-element WITHIN plans by ``path`` ("triples" or "anchored") where both apply."""
    from udafs.kernels import predicates

    saved = predicates.FORCE_WITHIN
    predicates.FORCE_WITHIN = path
    try:
        yield
    finally:
        predicates.FORCE_WITHIN = saved
