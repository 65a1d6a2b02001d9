"""The sharing optimizer: workload + statistics -> :class:`SharingPlan`.

Per sharing class (same group, same window): Apriori candidates (candidates.py),
benefits (benefit.py), query-subset options and non-beneficial pruning (options.py),
the Sharon graph (graph.py), conflict-ridden / conflict-free pruning (pruning.py), an
exact maximum-weight independent set by branch and bound under the time budget with
GWMIN as fallback (mwis.py), then PreTree prefix sharing (pretree.py).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace

from sql_rewrites.sharing.benefit import CostModel
from sql_rewrites.sharing.candidates import find_candidates
from sql_rewrites.sharing.graph import Vertex, bit_indices, build_graph
from sql_rewrites.sharing.mwis import exact_mwis, improve, mask_weight
from sql_rewrites.sharing.options import expand_options
from sql_rewrites.sharing.plan import ClassReport, PreTreeNode, QueryPlan, Segment, SharedPattern, SharingPlan
from sql_rewrites.sharing.pretree import build_pretree
from sql_rewrites.sharing.pruning import reduce_graph
from sql_rewrites.sharing.statistics import Statistics
from sql_rewrites.sharing.workload import Query, Workload

DEFAULT_TIME_BUDGET = 0.3


def optimize(workload: Workload | Sequence[Query],
             statistics: Statistics | Mapping[Hashable, Statistics], *,
             time_budget: float = DEFAULT_TIME_BUDGET, max_subsets: int = 64,
             max_options: int = 16, max_vertices: int = 4000,
             node_budget: int | None = None) -> SharingPlan:
    """Choose which queries share which patterns.

    Parameters
    ----------
    workload : Workload or sequence of Query
        The statements to evaluate together.
    statistics : Statistics, or mapping of group key to Statistics
        Event-type rates etc.; one per sharing group when sources differ.
    time_budget : float
        Seconds the plan finder may use over all classes together (Sharon VI's
        ``l``); past it, components not finished keep the best plan found, at least
        GWMIN's. The polynomial phases before it (candidates, benefits, graph,
        pruning) are not budgeted.
    node_budget : int, optional
        Also stop the search after this many branch-and-bound nodes (per sharing
        class). A search cut by
        the time budget depends on the machine's speed; one cut by nodes does not (pass
        ``time_budget=float('inf')`` with it for reproducible plans).
    max_subsets, max_options, max_vertices : int
        Limits of the query-subset expansion (see options.py); when one bites, the
        plan is optimal over the options kept, and ``SharingPlan.exact`` is False.

    Returns
    -------
    SharingPlan
        Deterministic for equal inputs (timings aside); never estimated costlier than
        evaluating every query alone.
    """
    wl = workload if isinstance(workload, Workload) else Workload(tuple(workload))
    started = time.perf_counter()
    clock = _Budget(time_budget, node_budget)
    phases = dict.fromkeys(("candidates", "benefits", "graph", "pruning", "plan finder", "pretree"), 0.0)
    shared: list[SharedPattern] = []
    chosen_by_query: dict[str, list[tuple[int, int, int]]] = {}
    pretree_nodes: list[PreTreeNode] = []
    reports: list[ClassReport] = []
    for (group, window), queries in wl.classes():
        model = CostModel(_statistics_for(statistics, group), window)
        rep = _plan_class(group, model, queries, clock, (max_subsets, max_options, max_vertices), phases)
        t = time.perf_counter()
        base = len(shared)
        chosen = sorted((rep.graph.vertices[i] for i in rep.chosen), key=_vertex_key)
        for k, v in enumerate(chosen):
            c = v.candidate
            shared.append(SharedPattern(c.pattern, c.occurrences, v.benefit))
            for o in c.occurrences:
                chosen_by_query.setdefault(o.query, []).append((o.start, o.start + c.length, base + k))
        nodes = build_pretree(queries, [v.candidate for v in chosen], model, range(base, base + len(chosen)))
        pretree_nodes.extend(nodes)
        saving = sum(n.saving for n in nodes)
        reports.append(replace(rep, cost=rep.cost_unshared - rep.score - saving, pretree_saving=saving))
        phases["pretree"] += time.perf_counter() - t
    methods = {r.method for r in reports}
    method = next((m for m in ("greedy", "greedy+search", "exact") if m in methods), "none")
    exact = all(r.method in ("exact", "none") and r.options_exhaustive for r in reports)
    timings = tuple(phases.items()) + (("total", time.perf_counter() - started),)
    return SharingPlan(
        tuple(shared), tuple(_decompose(q, chosen_by_query.get(q.id, [])) for q in wl.queries),
        tuple(pretree_nodes), sum(r.cost_unshared for r in reports), sum(r.cost for r in reports),
        sum(r.score for r in reports), sum(r.score_bound for r in reports),
        sum(r.pretree_saving for r in reports), method, exact,
        tuple(reports), timings)


def _plan_class(group: Hashable, model: CostModel, queries: Sequence[Query], clock: _Budget,
                limits: tuple[int, int, int], phases: dict[str, float]) -> ClassReport:
    """Candidates, options, graph, reduction and plan finder for one sharing class."""
    patterns = {q.id: q.pattern for q in queries}
    t = time.perf_counter()
    cands = find_candidates(queries)
    t = _lap(phases, "candidates", t)
    max_subsets, max_options, max_vertices = limits
    exp = expand_options(cands, patterns, model, max_subsets=max_subsets, max_options=max_options,
                         max_vertices=max_vertices)
    t = _lap(phases, "benefits", t)
    graph = build_graph(exp.vertices)
    t = _lap(phases, "graph", t)
    red = reduce_graph(graph)
    t = _lap(phases, "pruning", t)
    w, adj = graph.weights, graph.adjacency
    if not graph.vertices:
        chosen_mask, method, upper = 0, "none", 0.0
    else:
        deadline = clock.deadline()
        incumbent = improve(w, adj, red.remaining, red.greedy & red.remaining)
        res = exact_mwis(w, adj, red.remaining, deadline=deadline, incumbent=incumbent, cliques=graph.cliques,
                         node_limit=clock.nodes)
        chosen_mask = red.conflict_free | res.chosen
        base = mask_weight(w, incumbent)
        if res.complete:
            method = "exact"
        else:
            method = "greedy+search" if mask_weight(w, res.chosen) > base + 1e-9 * abs(base) else "greedy"
        upper = mask_weight(w, red.conflict_free) + res.upper
    _lap(phases, "plan finder", t)
    unshared = sum(model.query_cost(q.pattern) for q in queries)
    score = mask_weight(w, chosen_mask)
    return ClassReport(
        group, model.window, tuple(q.id for q in queries), cands, exp.full_benefits,
        tuple(v.candidate for v in exp.non_beneficial), exp.exhaustive, exp.subsets_considered,
        graph, red, bit_indices(chosen_mask), method, max(upper, score), unshared, unshared - score, score, 0.0)


class _Budget:
    """The plan finder's time budget, shared by all classes; it starts at the first use."""

    def __init__(self, seconds: float, nodes: int | None) -> None:
        self.seconds, self.nodes = seconds, nodes
        self.end: float | None = None

    def deadline(self) -> float | None:
        if self.end is None and self.seconds != float("inf"):
            self.end = time.perf_counter() + self.seconds
        return self.end


def _lap(phases: dict[str, float], name: str, since: float) -> float:
    now = time.perf_counter()
    phases[name] += now - since
    return now


def _statistics_for(statistics: Statistics | Mapping[Hashable, Statistics], group: Hashable) -> Statistics:
    if isinstance(statistics, Statistics):
        return statistics
    try:
        return statistics[group]
    except KeyError:
        from sql_rewrites.sharing.errors import SharingError
        raise SharingError(f"no statistics for sharing group {group!r}") from None


def _vertex_key(v: Vertex) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (v.candidate.pattern, v.candidate.queries)


def _decompose(q: Query, parts: list[tuple[int, int, int]]) -> QueryPlan:
    segs: list[Segment] = []
    pos = 0
    for start, end, idx in sorted(parts):
        if start > pos:
            segs.append(Segment(pos, start, q.pattern[pos:start]))
        segs.append(Segment(start, end, q.pattern[start:end], idx))
        pos = end
    if pos < q.length:
        segs.append(Segment(pos, q.length, q.pattern[pos:]))
    return QueryPlan(q.id, q.pattern, tuple(segs))
