"""How the kernels choose among their exact paths: one frozen value passed to the entry points.

Every path gives the same exact answer; the defaults pick by cost. Tests and benchmarks
pass other values to run a slower path on every input (to cross-check it against the
oracle, or to measure what sharing saves) — never by changing module state.
"""

from __future__ import annotations

import dataclasses
import enum


class Method(enum.Enum):
    """How an extended plan (predicates, strategies) is evaluated
    (:func:`udafs.kernels.predicates.methods.choose`); a predicate step is ``CONDENSED`` or ``SORTED``."""

    CONDENSED = "condensed"  # per-value prefix counters / dense per-value table
    SORTED = "sorted"  # merge-sort tree over (index, value rank)
    FENWICK = "fenwick"  # iterator predicates only: rising runs
    PREFIX = "prefix"  # a strategy alone: plain prefix counts
    STATE_DP = "state-dp"  # the general state DP (:mod:`udafs.kernels.predicates.statedp`)


class WithinPath(enum.Enum):
    """How three plain elements under WITHIN are counted (:func:`udafs.kernels.predicates.methods.within_path`)."""

    TRIPLES = "triples"  # blocks and trie bands, no replication (:mod:`udafs.kernels.predicates.triples`)
    ANCHORED = "anchored"  # one segment per distinct first-row time


@dataclasses.dataclass(frozen=True)
class KernelOptions:
    """Which exact paths the kernels may take.

    Attributes
    ----------
    int64_first : bool
        Try checked int64 before the exact (or, for DOUBLE, float) number system; off:
        run the fallback on every input.
    state_dp : bool
        Evaluate every extended plan with the general state DP instead of the vectorised paths.
    share_prefixes : bool
        Evaluate COUNT(*) plans of a multi-plan together, common prefixes counted once.
    share_suffixes : bool
        Let shared evaluation also count common suffixes once (cut plans in two).
    within_path : WithinPath or None
        Force the WITHIN path of three-element plans where both apply (None: by cost).
    predicate_method : Method or None
        Force every predicate step to ``Method.CONDENSED`` or ``Method.SORTED`` (None: by
        the condensation degree).
    """

    int64_first: bool = True
    state_dp: bool = False
    share_prefixes: bool = True
    share_suffixes: bool = True
    within_path: WithinPath | None = None
    predicate_method: Method | None = None

    def __post_init__(self) -> None:
        if self.predicate_method not in (None, Method.CONDENSED, Method.SORTED):
            raise ValueError(f"predicate_method must be Method.CONDENSED, Method.SORTED or None, "
                             f"got {self.predicate_method!r}")


#: The options every production caller uses: each path chosen by cost.
DEFAULT = KernelOptions()

__all__ = ["DEFAULT", "KernelOptions", "Method", "WithinPath"]
