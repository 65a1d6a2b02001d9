"""Sharon graph reduction (Sharon section V, plus one classical MWIS reduction).

* *Dominated* options: when two options of the same pattern conflict and one, ``u``,
  weighs at least as much as the other, ``v``, while every conflict of ``u`` is also a
  conflict of ``v`` (closed neighbourhoods ``N[u]`` within ``N[v]``), any plan using
  ``v`` can use ``u`` instead at no loss; ``v`` is removed. (Typical: a query subset
  that gives up a query with no gain but with conflicts.) The optimal *score* is
  unchanged; some optimal plan avoids ``v``.
* *Conflict-ridden* candidates: ``Score_max(v)`` (eq. 11: the weight of every vertex
  not in conflict with ``v``, ``v`` included) bounds every valid plan that contains
  ``v`` (Lemma 2). When it is below a lower bound on the optimum, ``v`` is in no
  optimal plan and is pruned. Sharon's lower bound is GWMIN's guaranteed weight
  (eq. 10, 12); we use the larger of that and the weight GWMIN actually reaches (a
  valid plan too, so also at most the optimum). Pruning repeats until nothing changes:
  the reduced graph has the same optimum, so its bounds are bounds of the original.
* *Conflict-free* candidates (no edge left) belong to every optimal plan (their weight
  is positive) and are taken out of the search (Definition 14).

Non-beneficial candidates (weight <= 0) never reach the graph (see options.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sql_rewrites.sharing.dense import degrees, gwmin_dense, neighbour_weights, to_mask, to_matrix
from sql_rewrites.sharing.graph import SharonGraph

_REL = 1e-12


@dataclass(frozen=True)
class Pruned:
    """A pruned vertex and why: ``reason`` is ``"conflict-ridden"`` (``score_max`` below
    ``lower_bound``) or ``"dominated"`` (by vertex ``by``)."""

    vertex: int
    reason: str
    score_max: float = 0.0
    lower_bound: float = 0.0
    by: int = -1


@dataclass(frozen=True)
class Reduction:
    """Result of reducing a Sharon graph.

    Attributes
    ----------
    remaining : int
        Bitset of the vertices left for the plan finder.
    conflict_free : int
        Bitset of vertices with no conflict left (taken directly).
    dominated, conflict_ridden : tuple of Pruned
        Pruned vertices, in pruning order.
    guaranteed_weight : float
        GWMIN's guaranteed weight on the whole graph (Sharon eq. 10).
    lower_bound : float
        The final lower bound on the optimal score.
    greedy : int
        Bitset of GWMIN's plan on the reduced graph (remaining and conflict-free).
    """

    remaining: int
    conflict_free: int
    dominated: tuple[Pruned, ...]
    conflict_ridden: tuple[Pruned, ...]
    guaranteed_weight: float
    lower_bound: float
    greedy: int


def reduce_graph(graph: SharonGraph) -> Reduction:
    """Remove dominated and conflict-ridden candidates; take out conflict-free ones.

    Parameters
    ----------
    graph : SharonGraph
        Vertices with positive weights.

    Returns
    -------
    Reduction
    """
    n = len(graph.vertices)
    adj = graph.adjacency
    w = np.array(graph.weights, dtype=np.float64)
    matrix = to_matrix(adj, n)
    alive = np.ones(n, dtype=bool)
    gw0 = float((w / (degrees(matrix, alive) + 1)).sum()) if n else 0.0
    dominated = _dominated(graph, w)
    for p in dominated:
        alive[p.vertex] = False
    ridden_all: list[Pruned] = []
    lower = gw0
    greedy = np.zeros(n, dtype=bool)
    while True:
        greedy = gwmin_dense(matrix, w, alive)
        deg = degrees(matrix, alive)
        lower = max(lower, float((w[alive] / (deg[alive] + 1)).sum()) if alive.any() else 0.0,
                    float(w[greedy].sum()))
        total = float(w[alive].sum())
        score_max = total - neighbour_weights(matrix, w, alive)
        ridden = alive & (deg > 0) & (score_max < lower - _REL * abs(lower))
        if not ridden.any():
            break
        for v in np.flatnonzero(ridden):
            ridden_all.append(Pruned(int(v), "conflict-ridden", float(score_max[v]), lower))
        alive &= ~ridden
    free = alive & (degrees(matrix, alive) == 0)
    return Reduction(to_mask(alive & ~free), to_mask(free), dominated, tuple(ridden_all), gw0, lower,
                     to_mask(greedy))


def _dominated(graph: SharonGraph, w: np.ndarray) -> tuple[Pruned, ...]:
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, vertex in enumerate(graph.vertices):
        groups.setdefault(vertex.candidate.pattern, []).append(i)
    adj = graph.adjacency
    alive = graph.all_mask
    out: list[Pruned] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        # strongest first, so that a vertex is only ever removed in favour of a kept one
        order = sorted(members, key=lambda i: (-w[i], i))
        for a, u in enumerate(order):
            if not alive >> u & 1:
                continue
            closed_u = adj[u] | (1 << u)
            for v in order[a + 1:]:
                if alive >> v & 1 and adj[u] >> v & 1:
                    if not (closed_u & ~(adj[v] | (1 << v)) & alive):
                        alive &= ~(1 << v)
                        out.append(Pruned(v, "dominated", by=u))
    return tuple(out)
