"""EXPLAIN for a workload: the optimizer's decisions as text, the Sharon graph as DOT."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sql_rewrites.sharing.graph import bit_indices, conflict_queries
from sql_rewrites.sharing.plan import ClassReport, SharingPlan


def _num(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Units:
    """How EXPLAIN shows the optimizer's numbers. ``length`` formats a window length in
    event-time units (e.g. ``10 minutes``); ``per_second`` is how many event-time units
    make a second (10**6 for a timestamp event time, None for a numeric one): costs —
    estimated operations per event-time unit over all partitions — are then shown per
    second of event time."""

    length: Callable[[float], str] = _num
    per_second: float | None = None

    def cost(self, value: float) -> str:
        """A cost (or benefit) as text: ``11.7/s`` or, without a clock, the number."""
        return f"{_f(value * self.per_second)}/s" if self.per_second else _f(value)

    def legend(self) -> str:
        unit = "second of event time" if self.per_second else "unit of event time"
        return f"(costs: estimated engine operations per {unit}, all partitions)"


def explain(plan: SharingPlan, *, max_items: int = 50, units: Units | None = None) -> str:
    """The optimizer's reasoning and result as text.

    Parameters
    ----------
    plan : SharingPlan
        A plan from :func:`~sql_rewrites.sharing.optimize`.
    max_items : int
        At most this many lines per list (candidates, conflicts, pruned sets).
    units : Units, optional
        How to show window lengths and costs (default: the raw numbers).

    Returns
    -------
    str
        Per sharing class: candidates with benefits, conflicts, pruned sets and why,
        the chosen plan; then every query's decomposition, PreTree nodes, and the
        estimated cost against not sharing.
    """
    u = units or Units()
    out = ["== Sharing plan ==" + (f" {u.legend()}" if units is not None else "")]
    out.append(f"estimated cost: {u.cost(plan.cost)} vs {u.cost(plan.cost_unshared)} without sharing "
               f"({_pct(plan.cost, plan.cost_unshared)}); score {u.cost(plan.score)}, "
               f"PreTree saving {u.cost(plan.pretree_saving)}")
    out.append(f"found by: {plan.method}" + (" (optimal)" if plan.exact else " (not proven optimal)")
               + (f"; best possible score <= {u.cost(plan.score_bound)} ({_gap(plan.score, plan.score_bound)})"
                  if plan.score_bound > plan.score else ""))
    for k, rep in enumerate(plan.classes):
        out += _class_lines(k, rep, plan, max_items, u)
    out.append("-- queries --")
    for qp in plan.queries:
        parts = []
        for s in qp.segments:
            text = ", ".join(s.pattern)
            parts.append(f"[shared #{s.shared}: {text}]" if s.shared is not None else f"({text})")
        out.append(f"{qp.query}: " + " + ".join(parts))
    if plan.pretree:
        out.append("-- PreTree (prefix counts shared for free) --")
        for n in _limit(plan.pretree, max_items, out):
            root = "query start" if n.root is None else f"shared #{n.root}"
            out.append(f"({', '.join(n.prefix)}) element {n.depth} from {root}: {', '.join(n.queries)}; "
                       f"saves {u.cost(n.saving)}")
    if plan.timings:
        out.append("-- optimizer time --")
        out.append(", ".join(f"{name} {sec * 1000:.1f} ms" for name, sec in plan.timings))
    return "\n".join(out)


def _class_lines(k: int, rep: ClassReport, plan: SharingPlan, max_items: int, u: Units) -> list[str]:
    g = rep.graph
    red = rep.reduction
    out = [f"-- class {k}: group {rep.group!r}, {rep.window.describe(u.length)}, {len(rep.queries)} queries --"]
    out.append(f"candidates (p, Q_p) with BValue: {len(rep.candidates)}")
    order = sorted(range(len(rep.candidates)), key=lambda i: (-rep.full_benefits[i], rep.candidates[i].pattern))
    for i in _limit(order, max_items, out):
        c = rep.candidates[i]
        b = rep.full_benefits[i]
        out.append(f"  {c.describe()}  BValue {u.cost(b)}" + ("" if b > 0 else "  (non-beneficial)"))
    out.append(f"non-beneficial (no option with benefit > 0), pruned: {len(rep.non_beneficial)}")
    out.append(f"graph vertices (candidates and query-subset options with benefit > 0): {len(g.vertices)}, "
               f"conflicts: {sum(g.degree(i) for i in range(len(g.vertices))) // 2}; "
               f"subset options {'exhaustive' if rep.options_exhaustive else 'limited'} "
               f"({rep.subsets_considered} subsets evaluated)")
    for i in _limit(range(len(g.vertices)), max_items, out):
        v = g.vertices[i]
        kind = "" if v.full else " [subset]"
        out.append(f"  v{i} {v.label()}{kind} benefit {u.cost(v.benefit)}; conflicts: "
                   + (", ".join(f"v{j} via {'/'.join(conflict_queries(v.candidate, g.vertices[j].candidate))}"
                                for j in g.neighbors(i)[:8]) or "none")
                   + (" ..." if g.degree(i) > 8 else ""))
    out.append(f"GWMIN guaranteed weight {u.cost(red.guaranteed_weight)}; "
               f"lower bound used {u.cost(red.lower_bound)}")
    out.append(f"dominated (another option of the same pattern weighs as much with a subset of its "
               f"conflicts), pruned: {len(red.dominated)}")
    for p in _limit(red.dominated, max_items, out):
        out.append(f"  v{p.vertex} dominated by v{p.by}")
    out.append(f"conflict-ridden (Score_max < lower bound), pruned: {len(red.conflict_ridden)}")
    for p in _limit(red.conflict_ridden, max_items, out):
        out.append(f"  v{p.vertex} Score_max {u.cost(p.score_max)} < {u.cost(p.lower_bound)}")
    free = bit_indices(red.conflict_free)
    out.append(f"conflict-free, taken directly: {', '.join(f'v{i}' for i in free) or 'none'}")
    out.append(f"searched by the plan finder: {red.remaining.bit_count()} vertices; found by {rep.method}; "
               f"upper bound on the score {u.cost(rep.score_bound)}")
    out.append(f"chosen: {', '.join(f'v{i}' for i in rep.chosen) or 'nothing (no sharing)'}; "
               f"score {u.cost(rep.score)}; cost {u.cost(rep.cost)} vs {u.cost(rep.cost_unshared)} unshared")
    return out


def sharon_graph_dot(plan: SharingPlan) -> str:
    """The Sharon graph of every class as Graphviz DOT text.

    Vertices are labelled with pattern, queries and benefit; chosen ones are filled,
    conflict-ridden ones dashed, conflict-free ones double-circled.
    """
    lines = ["graph sharon {", "  node [shape=ellipse, fontsize=10];"]
    for k, rep in enumerate(plan.classes):
        g = rep.graph
        ridden = {p.vertex for p in rep.reduction.conflict_ridden + rep.reduction.dominated}
        free = set(bit_indices(rep.reduction.conflict_free))
        chosen = set(rep.chosen)
        lines.append(f"  subgraph cluster_{k} {{")
        lines.append(f"    label={_q(f'group {rep.group!r}, {rep.window.describe()}')};")
        for i, v in enumerate(g.vertices):
            attrs = [f"label={_q(v.label() + chr(10) + _f(v.benefit))}"]
            if i in chosen:
                attrs.append('style=filled, fillcolor="#b8e0b8"')
            elif i in ridden:
                attrs.append("style=dashed")
            if i in free:
                attrs.append("shape=doublecircle")
            lines.append(f"    c{k}v{i} [{', '.join(attrs)}];")
        for i, j in g.edges():
            lines.append(f"    c{k}v{i} -- c{k}v{j};")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


class _limit:  # noqa: N801  (used like a function in for loops)
    """Iterate over at most ``n`` items; afterwards note in ``out`` how many were left out."""

    def __init__(self, items, n, out):
        self.items, self.n, self.out = list(items), n, out

    def __iter__(self):
        yield from self.items[: self.n]
        if len(self.items) > self.n:
            self.out.append(f"  ({len(self.items) - self.n} more not shown)")


def _f(x: float) -> str:
    return f"{x:.6g}"


def _gap(score: float, bound: float) -> str:
    return f"plan within {100 * (bound - score) / bound:.1f}% of it" if bound > 0 else "no gap"


def _pct(cost: float, base: float) -> str:
    if base <= 0:
        return "no cost"
    return f"{100 * (base - cost) / base:.1f}% saved"


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
