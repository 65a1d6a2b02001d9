"""PreTree prefix sharing (A-Seq thesis 4.1), applied wherever it is free.

Queries of one sharing class with the same leading elements can maintain the counts
of that prefix once: one prefix-counter tree per START instead of one counter per
query. Given a sharing plan, a query's *free prefix* is every leading element not read
from a shared pattern, up to its first shared pattern that does not start the query
and up to its first non-sharable element. A query that starts with a shared pattern
grows its free prefix from that pattern's counts, and only queries growing from the same
shared pattern (or all from their own start) can share a node. Every tree node used by
``c >= 2`` queries saves ``(c - 1) * R(E_1) * R(E_d)`` (the per-element cost of
benefit.py). It never conflicts with the plan, so it is always applied.
"""

from __future__ import annotations

from collections.abc import Sequence

from sql_rewrites.sharing.benefit import CostModel
from sql_rewrites.sharing.candidates import Candidate
from sql_rewrites.sharing.plan import PreTreeNode
from sql_rewrites.sharing.workload import Query


def build_pretree(queries: Sequence[Query], shared: Sequence[Candidate], model: CostModel,
                  shared_index: Sequence[int] | None = None) -> tuple[PreTreeNode, ...]:
    """PreTree nodes shared by >= 2 queries, given the shared patterns of a plan.

    Parameters
    ----------
    queries : sequence of Query
        The queries of one sharing class.
    shared : sequence of Candidate
        The chosen shared patterns (pairwise conflict-free).
    model : CostModel
        Cost model of the class.
    shared_index : sequence of int, optional
        Plan-wide index of each entry of ``shared`` (for ``PreTreeNode.root``).

    Returns
    -------
    tuple of PreTreeNode
        By (root, depth, prefix), deterministic.
    """
    index = list(shared_index) if shared_index is not None else list(range(len(shared)))
    nodes: dict[tuple[int | None, tuple[str, ...]], list[Query]] = {}
    for q in queries:
        root: int | None = None
        begin = 0
        stop = q.length
        for k, c in enumerate(shared):
            for o in c.occurrences:
                if o.query != q.id:
                    continue
                if o.start == 0:
                    root, begin = index[k], c.length
                else:
                    stop = min(stop, o.start)
        for d in range(begin, stop):
            if not q.sharable[d]:
                break
            nodes.setdefault((root, q.pattern[:d + 1]), []).append(q)
    out = []
    for (root, prefix), qs in nodes.items():
        if len(qs) >= 2:
            d = len(prefix) - 1
            saving = (len(qs) - 1) * model.element_cost(qs[0].pattern, d)
            out.append(PreTreeNode(prefix, d, root, tuple(q.id for q in qs), saving))
    out.sort(key=lambda n: (-1 if n.root is None else n.root, n.depth, n.prefix))
    return tuple(out)
