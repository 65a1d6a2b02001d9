"""Positive sub-patterns: what one forward pass evaluates.

A :class:`Pattern` is a run of positive elements with the middle-gap negations
between them; edge negations are handled by callers (as start/end weights or by
subtraction), so they are not part of it.
"""

from __future__ import annotations

from typing import NamedTuple

from udafs.errors import PlanError
from udafs.plan import Plan


class Pattern(NamedTuple):
    """Elements ``symbols[i]`` (Kleene when ``kleene[i]``); ``gaps[i]`` lies between i and i+1."""

    symbols: tuple[int, ...]
    kleene: tuple[bool, ...]
    gaps: tuple[int, ...]

    @staticmethod
    def of(plan: Plan) -> Pattern:
        """The plan's positive elements with their middle negations (a plain plan: a
        quantified one is evaluated as its classes, :mod:`udafs.kernels.counting.quantifiers`)."""
        if plan.quantified:  # a path that would read X{2,4} as X+ and X? as X: refuse, never miscount
            raise PlanError(f"{plan.describe()} reached an evaluation of plain patterns; quantified and optional "
                            "elements are evaluated as unions of plain patterns (udafs.kernels.counting.quantifiers)")
        return Pattern(tuple(e.symbol for e in plan.elements), tuple(e.kleene for e in plan.elements),
                       tuple(plan.negations[1:-1]))

    @property
    def length(self) -> int:
        return len(self.symbols)

    def reversed(self) -> Pattern:
        return Pattern(self.symbols[::-1], self.kleene[::-1], self.gaps[::-1])

    def slice(self, lo: int, hi: int) -> Pattern:
        """Elements ``lo..hi-1`` with the gaps between them."""
        return Pattern(self.symbols[lo:hi], self.kleene[lo:hi], self.gaps[lo:hi - 1])


class Split(NamedTuple):
    """Where a block boundary B cuts a match: ``left`` before B, ``right`` from B on.

    ``seam`` is the negation mask of the cut gap (0 when B falls inside a Kleene
    set): "no instance between the two sides" splits into no instance after
    ``left`` in its block and none before ``right`` in the next block.
    """

    left: Pattern
    right: Pattern
    seam: int


def splits(pat: Pattern) -> list[Split]:
    """Every way a block boundary can fall inside a match of ``pat``."""
    out = [Split(pat.slice(0, j), pat.slice(j, pat.length), pat.gaps[j - 1]) for j in range(1, pat.length)]
    out += [Split(pat.slice(0, k + 1), pat.slice(k, pat.length), 0) for k in range(pat.length) if pat.kleene[k]]
    return out
