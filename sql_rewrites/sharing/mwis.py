"""Maximum-weight independent sets on bitset graphs: GWMIN and branch and bound.

Vertices are ``0 .. n-1`` with ``weights[i] > 0`` and ``adjacency[i]`` a Python-int
bitset of neighbours; a *mask* is a bitset of the vertices a call may use.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sql_rewrites.sharing.dense import from_mask
from sql_rewrites.sharing.graph import bit_indices
from sql_rewrites.sharing.lagrange import CliqueBound

_EPS = 1e-9
_GREEDY_SEED_LIMIT = 300


@dataclass(frozen=True)
class MwisResult:
    """An independent set (bitset), whether it is proven optimal, and an upper bound
    on the optimum (equal to the set's weight when proven)."""

    chosen: int
    complete: bool
    upper: float


def mask_weight(weights: Sequence[float], mask: int) -> float:
    """Sum of the weights of the vertices in ``mask`` (in index order)."""
    return sum(weights[i] for i in bit_indices(mask))


def guaranteed_weight(weights: Sequence[float], adjacency: Sequence[int], mask: int) -> float:
    """GWMIN's guaranteed weight on the subgraph ``mask`` (Sharon eq. 10, Sakai et al.).

    ``sum over v of w(v) / (deg(v) + 1)``, degrees counted inside ``mask``.
    """
    return sum(weights[i] / ((adjacency[i] & mask).bit_count() + 1) for i in bit_indices(mask))


def gwmin(weights: Sequence[float], adjacency: Sequence[int], mask: int) -> int:
    """GWMIN (Sakai, Togasaki, Yamazaki 2003) on the subgraph ``mask``.

    Repeatedly takes the vertex maximising ``w(v) / (deg(v) + 1)`` in the remaining
    graph (ties: lowest index) and removes it with its neighbours. Its result weighs at
    least :func:`guaranteed_weight`.

    Returns
    -------
    int
        Bitset of the chosen independent set.
    """
    chosen = 0
    remaining = mask
    while remaining:
        best, best_ratio = -1, -1.0
        for i in bit_indices(remaining):
            ratio = weights[i] / ((adjacency[i] & remaining).bit_count() + 1)
            if ratio > best_ratio:
                best, best_ratio = i, ratio
        chosen |= 1 << best
        remaining &= ~(adjacency[best] | (1 << best))
    return chosen


def components(adjacency: Sequence[int], mask: int) -> tuple[int, ...]:
    """Connected components of the subgraph ``mask``, as bitsets, by lowest vertex."""
    out = []
    remaining = mask
    while remaining:
        comp = frontier = remaining & -remaining
        while frontier:
            grow = 0
            for i in bit_indices(frontier):
                grow |= adjacency[i]
            frontier = grow & remaining & ~comp
            comp |= frontier
        out.append(comp)
        remaining &= ~comp
    return tuple(out)


def exact_mwis(weights: Sequence[float], adjacency: Sequence[int], mask: int, *,
               deadline: float | None = None, incumbent: int = 0,
               cliques: Sequence[int] | None = None, node_limit: int | None = None) -> MwisResult:
    """A maximum-weight independent set of the subgraph ``mask``, by branch and bound.

    Each connected component is solved on its own, smallest first. The search takes
    isolated vertices and vertices at least as heavy as all their remaining neighbours
    at once, branches on one vertex (take it and drop its neighbours, first; or drop
    it), and cuts a branch when its weight plus a bound of the rest cannot beat the
    best set found. With ``cliques`` (bitsets covering every edge) the bound is the
    Lagrangian bound of lagrange.py, the branching vertex the one of largest reduced
    weight, and a greedy plan by reduced weight (improved by swaps) joins the
    incumbents; without, a greedy weighted clique cover and the heaviest vertex. The
    search starts from the best of ``incumbent`` (restricted to the component) and, on
    small components, GWMIN.

    Parameters
    ----------
    weights, adjacency : sequences
        The graph.
    mask : int
        Vertices to use.
    deadline : float, optional
        ``time.perf_counter()`` value after which the search stops.
    node_limit : int, optional
        Search nodes (over all components) after which the search stops; unlike the
        deadline, this makes an unfinished search reproducible.
    incumbent : int
        A known independent set (bitset) to start from.

    Returns
    -------
    MwisResult
        When the search stops inside a component, that component keeps the best set
        found so far (at least ``incumbent``) and ``complete`` is False; ``upper`` then
        uses the component's root bound (the unfitted clique bound, or its total weight
        without cliques, if it was not started). Small components go first.
    """
    chosen = 0
    complete = True
    upper = 0.0
    budget = _Budget(deadline, node_limit)
    for comp in sorted(components(adjacency, mask), key=lambda c: (c.bit_count(), c)):
        if budget.spent() and comp.bit_count() > 1:
            chosen |= incumbent & comp
            complete = False
            upper += _quick_bound(weights, comp, cliques)
            continue
        part, done, up = _solve_component(weights, adjacency, comp, budget, incumbent & comp, cliques)
        chosen |= part
        complete = complete and done
        upper += up
    return MwisResult(chosen, complete, upper)


def _solve_component(weights: Sequence[float], adjacency: Sequence[int], comp: int,
                     budget: _Budget, incumbent: int,
                     cliques: Sequence[int] | None = None) -> tuple[int, bool, float]:
    ids = sorted(bit_indices(comp), key=lambda i: (-weights[i], i))
    if len(ids) == 1:
        return comp, True, weights[ids[0]]
    n = len(ids)
    w = [weights[g] for g in ids]
    adj = _relabel(adjacency, ids, comp)
    local_incumbent = 0
    for k, g in enumerate(ids):
        if incumbent >> g & 1:
            local_incumbent |= 1 << k
    full = (1 << n) - 1
    seeds = [local_incumbent]
    if n <= _GREEDY_SEED_LIMIT:
        seeds.append(gwmin(w, adj, full))
    best_set = max(seeds, key=lambda s: (mask_weight(w, s), -s))
    best_w = mask_weight(w, best_set)
    nb_total = [mask_weight(w, a) for a in adj]
    eps = _EPS * max(1.0, sum(w))
    lagrange = None
    if cliques is not None:
        local = {g: k for k, g in enumerate(ids)}
        cover = [[local[g] for g in bit_indices(c & comp)] for c in cliques if (c & comp) & ((c & comp) - 1)]
        lagrange = CliqueBound(w, cover, best_w)
        # primal heuristic: greedy by reduced weight, then local swaps
        guided = 0
        free = full
        for k in sorted(range(n), key=lambda k: (-lagrange.reduced[k], -w[k], k)):
            if free >> k & 1:
                guided |= 1 << k
                free &= ~(adj[k] | (1 << k))
        guided = improve(w, adj, full, guided)
        if mask_weight(w, guided) > best_w + eps:
            best_set, best_w = guided, mask_weight(w, guided)
        if lagrange.root <= best_w + eps:
            return _globalize(best_set, ids), True, best_w

    def bound(mask: int) -> float:
        if lagrange is not None:
            return lagrange.bound(from_mask(mask, n))
        return clique_cover(mask)

    def pick(mask: int) -> int:
        if lagrange is not None:
            alive = from_mask(mask, n)
            return int(np.argmax(np.where(alive, lagrange.reduced, -1.0)))
        return (mask & -mask).bit_length() - 1

    def clique_cover(mask: int) -> float:
        # Weighted clique cover: each greedy clique contributes its heaviest vertex.
        total = 0.0
        while mask:
            low = mask & -mask
            v = low.bit_length() - 1
            total += w[v]
            clique = low
            cand = mask & adj[v]
            while cand:
                lo = cand & -cand
                clique |= lo
                cand &= adj[lo.bit_length() - 1]
            mask &= ~clique
        return total

    def search() -> bool:
        # Depth-first, iterative (depth can reach the number of vertices).
        nonlocal best_w, best_set
        stack = [(full, 0.0, 0)]
        while stack:
            mask, cur_w, cur_set = stack.pop()
            if budget.step():
                return False
            # Forced choices: isolated vertices and vertices outweighing their neighbours.
            changed = True
            while changed and mask:
                changed = False
                m = mask
                while m:
                    lo = m & -m
                    m ^= lo
                    v = lo.bit_length() - 1
                    nb = adj[v] & mask
                    if nb == 0 or w[v] >= nb_total[v] or (nb.bit_count() <= 2 and w[v] >= mask_weight(w, nb)):
                        cur_w += w[v]
                        cur_set |= lo
                        mask &= ~(nb | lo)
                        m &= mask
                        changed = True
            if not mask:
                if cur_w > best_w + eps:
                    best_w, best_set = cur_w, cur_set
                continue
            if cur_w + bound(mask) <= best_w + eps:
                continue
            v = pick(mask)
            lo = 1 << v
            stack.append((mask & ~lo, cur_w, cur_set))  # without v: explored second
            stack.append((mask & ~(adj[v] | lo), cur_w + w[v], cur_set | lo))  # with v: first
        return True

    complete = search()
    if complete:
        upper = best_w
    else:
        upper = lagrange.root if lagrange is not None else clique_cover(full)
    return _globalize(best_set, ids), complete, max(upper, best_w)


class _Budget:
    """Stop condition of the search: a wall-clock deadline and/or a node count."""

    def __init__(self, deadline: float | None, node_limit: int | None) -> None:
        self.deadline, self.left = deadline, node_limit

    def spent(self) -> bool:
        return (self.left is not None and self.left <= 0) or (
            self.deadline is not None and time.perf_counter() > self.deadline)

    def step(self) -> bool:
        if self.left is not None:
            self.left -= 1
        return self.spent()


def _quick_bound(weights: Sequence[float], comp: int, cliques: Sequence[int] | None) -> float:
    if cliques is None:
        return mask_weight(weights, comp)
    ids = bit_indices(comp)
    local = {g: k for k, g in enumerate(ids)}
    cover = [[local[g] for g in bit_indices(c & comp)] for c in cliques if (c & comp) & ((c & comp) - 1)]
    return CliqueBound([weights[g] for g in ids], cover, 0.0, iterations=0).root


def _globalize(local_set: int, ids: Sequence[int]) -> int:
    out = 0
    for k in bit_indices(local_set):
        out |= 1 << ids[k]
    return out


def _relabel(adjacency: Sequence[int], ids: Sequence[int], comp: int) -> list[int]:
    """Adjacency bitsets of the subgraph on ``ids`` (= bitset ``comp``), ``ids[k]`` renamed ``k``."""
    import numpy as np

    from sql_rewrites.sharing.dense import to_mask

    top = max(ids) + 1
    nbytes = (top + 7) // 8
    rows = np.frombuffer(b"".join((adjacency[g] & comp).to_bytes(nbytes, "little") for g in ids),
                         dtype=np.uint8).reshape(len(ids), nbytes)
    bits = np.unpackbits(rows, axis=1, bitorder="little")[:, list(ids)]
    return [to_mask(row) for row in bits]


def improve(weights: Sequence[float], adjacency: Sequence[int], mask: int, chosen: int,
            deadline: float | None = None) -> int:
    """Local search on an independent set: swap in a vertex when it outweighs its chosen neighbours.

    Repeats passes over the vertices of ``mask`` (in index order) until no swap gains or
    the deadline passes. The result is independent and never lighter than ``chosen``.
    """
    improved = True
    while improved:
        improved = False
        for v in bit_indices(mask & ~chosen):
            if deadline is not None and time.perf_counter() > deadline:
                return chosen
            out = adjacency[v] & chosen
            if weights[v] > mask_weight(weights, out) + _EPS:
                chosen = (chosen & ~out) | (1 << v)
                improved = True
    return chosen
