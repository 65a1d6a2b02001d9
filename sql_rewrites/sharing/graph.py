"""Sharing conflicts and the Sharon graph (Sharon section IV).

Two candidates are in *conflict* when they overlap in a query both use (Sharon
Definition 6): the executor computes a shared pattern as a whole, so a query cannot
read two shared patterns that claim the same element. The Sharon graph has one
weighted vertex per candidate (weight = benefit) and one edge per conflict. Adjacency
is kept as Python-int bitsets, built per (query, element) cell rather than by testing
all pairs of candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sql_rewrites.sharing.candidates import Candidate


@dataclass(frozen=True)
class Vertex:
    """A candidate in the Sharon graph.

    ``full`` is True when the candidate uses every query containing its pattern
    (Sharon's ``(p, Q_p)``), False for a query-subset option (Sharon VII).
    """

    candidate: Candidate
    benefit: float
    full: bool = True

    def label(self) -> str:
        """Short text: pattern and query ids."""
        return f"({', '.join(self.candidate.pattern)}) {{{', '.join(self.candidate.queries)}}}"


def conflict_queries(a: Candidate, b: Candidate) -> tuple[str, ...]:
    """Queries that cause a conflict between ``a`` and ``b`` (empty: no conflict)."""
    starts = {o.query: o.start for o in b.occurrences}
    out = []
    for o in a.occurrences:
        s = starts.get(o.query)
        if s is not None and o.start < s + b.length and s < o.start + a.length:
            out.append(o.query)
    return tuple(out)


@dataclass(frozen=True)
class SharonGraph:
    """Weighted vertices (candidates) and conflict edges, as adjacency bitsets.

    ``cliques`` (bitsets) are the vertex sets of the (query, element) cells covered by
    at least two candidates: cliques that cover every edge (used by the plan finder's
    bound).
    """

    vertices: tuple[Vertex, ...]
    adjacency: tuple[int, ...]
    cliques: tuple[int, ...] = ()

    @property
    def weights(self) -> tuple[float, ...]:
        """Vertex weights (benefits), by vertex index."""
        return tuple(v.benefit for v in self.vertices)

    @property
    def all_mask(self) -> int:
        """Bitset of all vertices."""
        return (1 << len(self.vertices)) - 1

    def neighbors(self, i: int) -> tuple[int, ...]:
        """Indices of the vertices in conflict with vertex ``i``."""
        return bit_indices(self.adjacency[i])

    def degree(self, i: int) -> int:
        """Number of conflicts of vertex ``i``."""
        return self.adjacency[i].bit_count()

    def edges(self) -> tuple[tuple[int, int], ...]:
        """All conflicts as index pairs ``(i, j)`` with ``i < j``."""
        return tuple((i, j) for i in range(len(self.vertices)) for j in self.neighbors(i) if j > i)


def build_graph(vertices: Sequence[Vertex]) -> SharonGraph:
    """The Sharon graph of ``vertices`` (Sharon Algorithm 1, without its benefit filter).

    Parameters
    ----------
    vertices : sequence of Vertex
        Candidates with their benefits.

    Returns
    -------
    SharonGraph
        Edge ``(i, j)`` iff the candidates overlap in some query they both use.
    """
    cells: dict[tuple[str, int], int] = {}
    for i, v in enumerate(vertices):
        bit = 1 << i
        for o in v.candidate.occurrences:
            for pos in range(o.start, o.start + v.candidate.length):
                key = (o.query, pos)
                cells[key] = cells.get(key, 0) | bit
    adjacency = []
    for i, v in enumerate(vertices):
        adj = 0
        for o in v.candidate.occurrences:
            for pos in range(o.start, o.start + v.candidate.length):
                adj |= cells[(o.query, pos)]
        adjacency.append(adj & ~(1 << i))
    cliques = sorted({c for c in cells.values() if c & (c - 1)})
    return SharonGraph(tuple(vertices), tuple(adjacency), tuple(cliques))


def bit_indices(mask: int) -> tuple[int, ...]:
    """Indices of the set bits of ``mask``, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return tuple(out)
