"""Conflict resolution by query subsets (Sharon section VII) and non-beneficial pruning.

Sharon expands a candidate ``(p, Q_p)`` into *options* ``(p, Q')``, ``Q'`` a subset of
``Q_p`` with ``|Q'| >= 2``, each resolving a different subset of its conflicts. With
additive benefits (benefit.py) the useful options are few: given the queries ``B`` in
which the rest of a plan blocks ``p``, the best way to share ``p`` is
``best(Q_p - B)``: every query with a positive gain, topped up with the best others
when fewer than two have one. Only queries where ``p`` overlaps another sharable
pattern (its *conflict queries* ``C_p``) can ever be blocked, so the options
``{best(Q_p - B) : B subset of C_p}`` contain an optimal choice for ``p`` whatever the
rest of the plan is: the maximum-weight independent set over all options then equals
the best plan over *all* (pattern, query subset) candidates. That is exact while
``2^|C_p|`` is at most ``max_subsets``; beyond, ``B`` ranges over: nothing, all of
``C_p`` (a conflict-free option), and the overlap queries of each single conflicting
pattern — then the plan is optimal over that smaller option space, and the result
says so (``exhaustive = False``).

Options with benefit <= 0 are *non-beneficial* and dropped (Sharon III-D).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from sql_rewrites.sharing.benefit import CostModel
from sql_rewrites.sharing.candidates import Candidate
from sql_rewrites.sharing.graph import Vertex


@dataclass(frozen=True)
class Expansion:
    """Options of all candidates of one sharing class.

    Attributes
    ----------
    vertices : tuple of Vertex
        Beneficial options (full candidates and query subsets), deduplicated.
    full_benefits : tuple of float
        Sharon's ``BValue(p, Q_p)`` of each input candidate, in input order.
    non_beneficial : tuple of Vertex
        Full candidates with ``BValue <= 0`` and no beneficial option at all.
    subsets_considered : int
        Number of query subsets evaluated.
    exhaustive : bool
        True when every candidate's options were enumerated over all subsets of its
        conflict queries.
    """

    vertices: tuple[Vertex, ...]
    full_benefits: tuple[float, ...]
    non_beneficial: tuple[Vertex, ...]
    subsets_considered: int
    exhaustive: bool


def best_subset(queries: Sequence[str], gains: Mapping[str, float]) -> tuple[str, ...]:
    """The best query set of size >= 2 drawn from ``queries`` (order kept).

    All queries with positive gain; if fewer than two, the best remaining ones are
    added until there are two (ties: earlier query). Empty if fewer than two queries.
    """
    if len(queries) < 2:
        return ()
    keep = [q for q in queries if gains[q] > 0]
    if len(keep) < 2:
        rest = sorted((q for q in queries if q not in keep), key=lambda q: -gains[q])
        keep += rest[: 2 - len(keep)]
        order = {q: i for i, q in enumerate(queries)}
        keep.sort(key=order.__getitem__)
    return tuple(keep)


def expand_options(candidates: Sequence[Candidate], patterns: Mapping[str, tuple[str, ...]],
                   model: CostModel, *, max_subsets: int = 64, max_options: int = 16,
                   max_vertices: int = 4000) -> Expansion:
    """Beneficial options of every candidate (conflict resolution by query subsets).

    Parameters
    ----------
    candidates : sequence of Candidate
        Full candidates ``(p, Q_p)`` of one sharing class.
    patterns : mapping of query id to pattern
        The class's query patterns.
    model : CostModel
        Benefit model of the class.
    max_subsets : int
        Enumerate all subsets of a candidate's conflict queries when there are at
        most this many (exact); otherwise use the per-conflict options.
    max_options : int
        Cap on options kept per candidate in the non-exhaustive case.
    max_vertices : int
        Cap on all options of the class: beyond it every candidate keeps only its
        first ``k`` options, ``k`` as large as the cap allows (at least 1).

    Returns
    -------
    Expansion
        Options are ranked per candidate: the best use of all its queries, then the
        conflict-free one, then by benefit; caps keep the first ones.
    """
    cover: dict[tuple[str, int], list[int]] = {}
    for ci, c in enumerate(candidates):
        for o in c.occurrences:
            for pos in range(o.start, o.start + c.length):
                cover.setdefault((o.query, pos), []).append(ci)
    full_benefits: list[float] = []
    ranked_all: list[list[tuple[tuple[str, ...], float]]] = []
    considered = 0
    exhaustive = True
    for ci, c in enumerate(candidates):
        gains = {o.query: model.gain(patterns[o.query], o.start, c.length) for o in c.occurrences}
        shared = model.shared_cost(c.pattern)
        full_benefits.append(sum(gains[q] for q in c.queries) - shared)
        overlaps: dict[int, set[str]] = {}
        for o in c.occurrences:
            for pos in range(o.start, o.start + c.length):
                for other in cover[(o.query, pos)]:
                    if other != ci:
                        overlaps.setdefault(other, set()).add(o.query)
        conflict_q = [q for q in c.queries if any(q in s for s in overlaps.values())]
        first = [frozenset(), frozenset(conflict_q)]
        if 2 ** len(conflict_q) <= max_subsets:
            blocks = first + [frozenset(b) for k in range(1, len(conflict_q)) for b in combinations(conflict_q, k)]
            limit = None
        else:
            exhaustive = False
            blocks = first + [frozenset(overlaps[o]) for o in sorted(overlaps)]
            limit = max_options
        options: dict[tuple[str, ...], float] = {}
        for b in blocks:
            considered += 1
            qs = best_subset([q for q in c.queries if q not in b], gains)
            if qs and qs not in options:
                options[qs] = sum(gains[q] for q in qs) - shared
        good = [(qs, v) for qs, v in options.items() if v > 0]
        head = [x for x in good[:2] if x[0] in (best_subset(list(c.queries), gains),
                                                best_subset([q for q in c.queries if q not in conflict_q], gains))]
        tail = sorted((x for x in good if x not in head), key=lambda x: (-x[1], x[0]))
        ranked = head + tail
        if limit is not None:
            ranked = ranked[:limit]
        ranked_all.append(ranked)
    total = sum(len(r) for r in ranked_all)
    if total > max_vertices:
        exhaustive = False
        k = 1
        while sum(min(len(r), k + 1) for r in ranked_all) <= max_vertices:
            k += 1
        ranked_all = [r[:k] for r in ranked_all]
    vertices: list[Vertex] = []
    non_beneficial: list[Vertex] = []
    for c, full_b, ranked in zip(candidates, full_benefits, ranked_all):
        if not ranked:
            non_beneficial.append(Vertex(c, full_b, True))
        for qs, v in sorted(ranked, key=lambda x: (-len(x[0]), x[0])):
            vertices.append(Vertex(c.restricted(qs), v, len(qs) == len(c.occurrences)))
    return Expansion(tuple(vertices), tuple(full_benefits), tuple(non_beneficial), considered, exhaustive)
