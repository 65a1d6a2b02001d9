"""Sharing candidates ``(p, Q_p)`` found Apriori-style (A-Seq thesis 4.3.1, Sharon III-A).

A *sharable pattern* is a contiguous run of >= 2 sharable elements that occurs in >= 2
queries of one sharing class (Sharon Definition 3). Candidates are grown level by level:
length-2 runs shared by >= 2 queries first; a length ``l + 1`` pattern is only formed by
extending an occurrence of a frequent length-``l`` pattern by one element, so an
infrequent pattern is never extended (its extensions cannot be frequent). No query's
substrings are enumerated beyond one element past a frequent pattern.

The occurrence of ``p`` in a query is its *leftmost* occurrence made of sharable
elements: a candidate is identified by (pattern, queries), as in Sharon, so its
position in each query must be a function of the two. (A type repeated in a query can
hold a pattern twice; the second occurrence is not shared. See docs/sharing.md.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sql_rewrites.sharing.workload import Query


@dataclass(frozen=True)
class Occurrence:
    """Pattern ``p`` occupies elements ``[start, start + len(p))`` of query ``query``."""

    query: str
    start: int


@dataclass(frozen=True)
class Candidate:
    """A sharing candidate: a pattern and its occurrences (one per query, in workload order)."""

    pattern: tuple[str, ...]
    occurrences: tuple[Occurrence, ...]

    @property
    def length(self) -> int:
        """Number of elements of the shared pattern."""
        return len(self.pattern)

    @property
    def queries(self) -> tuple[str, ...]:
        """Ids of the queries using the candidate, in workload order."""
        return tuple(o.query for o in self.occurrences)

    def restricted(self, queries: Sequence[str] | frozenset[str]) -> Candidate:
        """The same pattern shared by a subset of its queries (Sharon VII, "options")."""
        keep = frozenset(queries)
        return Candidate(self.pattern, tuple(o for o in self.occurrences if o.query in keep))

    def describe(self) -> str:
        """E.g. ``(OakSt, MainSt) in {q1@0, q3@2}``."""
        occ = ", ".join(f"{o.query}@{o.start}" for o in self.occurrences)
        return f"({', '.join(self.pattern)}) in {{{occ}}}"


def find_candidates(queries: Sequence[Query]) -> tuple[Candidate, ...]:
    """All sharing candidates ``(p, Q_p)`` of one sharing class, Apriori-style.

    Parameters
    ----------
    queries : sequence of Query
        The queries of one sharing class, in workload order.

    Returns
    -------
    tuple of Candidate
        One per sharable pattern, with *every* query containing it (Sharon's
        ``Q_p``), sorted by pattern. Deterministic.
    """
    order = {q.id: i for i, q in enumerate(queries)}
    by_id = {q.id: q for q in queries}
    level: dict[tuple[str, ...], dict[str, list[int]]] = {}
    for q in queries:
        for m in range(q.length - 1):
            if q.sharable[m] and q.sharable[m + 1]:
                level.setdefault(q.pattern[m:m + 2], {}).setdefault(q.id, []).append(m)
    found: list[tuple[tuple[str, ...], dict[str, list[int]]]] = []
    length = 2
    while True:
        level = {p: occ for p, occ in level.items() if len(occ) >= 2}
        if not level:
            break
        found.extend(level.items())
        grown: dict[tuple[str, ...], dict[str, list[int]]] = {}
        for p, occ in level.items():
            for qid, starts in occ.items():
                q = by_id[qid]
                for m in starts:
                    end = m + length
                    if end < q.length and q.sharable[end]:
                        grown.setdefault(p + (q.pattern[end],), {}).setdefault(qid, []).append(m)
        level = grown
        length += 1
    out = [Candidate(p, tuple(Occurrence(qid, min(occ[qid])) for qid in sorted(occ, key=order.__getitem__)))
           for p, occ in found]
    out.sort(key=lambda c: c.pattern)
    return tuple(out)
