"""The sharing optimizer (sql_rewrites.sharing) against exhaustive search and Sharon's examples.

The reference optimum here enumerates plans literally: for every query, every set of
pairwise non-overlapping (leftmost, sharable) occurrences of patterns that occur in at
least two queries; every combination of such sets over the queries is a conflict-free
plan, and the queries that picked pattern ``p`` share it. Two disjoint candidates of
the same pattern are never better than their union (one shared computation instead of
two, same gains), so scoring each combination with one candidate per pattern covers
every conflict-free set of (pattern, query subset) candidates.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from sql_rewrites.sharing import (
    Candidate,
    CostModel,
    Occurrence,
    Query,
    SharingError,
    Statistics,
    Vertex,
    Window,
    build_graph,
    conflict_queries,
    explain,
    find_candidates,
    optimize,
    query_from_plan,
    sharon_graph_dot,
)
from sql_rewrites.sharing.graph import bit_indices
from sql_rewrites.sharing.lagrange import CliqueBound
from sql_rewrites.sharing.mwis import exact_mwis, guaranteed_weight, gwmin, improve, mask_weight
from sql_rewrites.sharing.pruning import reduce_graph

W = Window(600, 60)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


# ---------------------------------------------------------------- references


def all_substring_patterns(queries: list[Query]) -> dict[tuple[str, ...], dict[str, int]]:
    """Every sharable contiguous run of length >= 2 in >= 2 queries, leftmost start per query."""
    occ: dict[tuple[str, ...], dict[str, int]] = {}
    for q in queries:
        for s in range(q.length):
            for e in range(s + 2, q.length + 1):
                if all(q.sharable[s:e]):
                    occ.setdefault(q.pattern[s:e], {}).setdefault(q.id, s)
    return {p: o for p, o in occ.items() if len(o) >= 2}


def raw_cost_terms(stats: Statistics, window: Window):  # type: ignore[no-untyped-def]
    """The cost formulas written out again from docs/sharing.md."""
    length = window.within if window.within is not None else stats.span
    scale = stats.partitions / (window.slide or length)

    def R(t: str) -> float:
        return stats.rate(t) * length

    def gain(q: tuple[str, ...], m: int, ln: int) -> float:
        own = R(q[0]) * sum(R(t) for t in q[m:m + ln])
        comb = 0.0 if m == 0 else R(q[0]) * R(q[m]) * (R(q[m + ln]) if m + ln < len(q) else 1.0)
        return scale * (own - comb)

    def shared(p: tuple[str, ...]) -> float:
        return scale * R(p[0]) * sum(R(t) for t in p)

    def element(q: tuple[str, ...], j: int) -> float:
        return scale * R(q[0]) * R(q[j])

    return gain, shared, element


def reference_optimum(queries: list[Query], stats: Statistics) -> float:
    """Best score over all conflict-free plans, by enumeration (see module docstring)."""
    gain, shared, _ = raw_cost_terms(stats, queries[0].window)
    pats = all_substring_patterns(queries)
    per_query = []
    for q in queries:
        intervals = [(p, o[q.id]) for p, o in pats.items() if q.id in o]
        sets = []
        for k in range(len(intervals) + 1):
            for combo in itertools.combinations(intervals, k):
                spans = sorted((s, s + len(p)) for p, s in combo)
                if all(a[1] <= b[0] for a, b in zip(spans, spans[1:])):
                    sets.append(combo)
        per_query.append(sets)
    patterns = {q.id: q.pattern for q in queries}
    best = 0.0
    for choice in itertools.product(*per_query):
        users: dict[tuple[str, ...], list[tuple[str, int]]] = {}
        for q, combo in zip(queries, choice):
            for p, s in combo:
                users.setdefault(p, []).append((q.id, s))
        score = 0.0
        for p, us in users.items():
            if len(us) >= 2:
                score += max(0.0, sum(gain(patterns[qid], s, len(p)) for qid, s in us) - shared(p))
        best = max(best, score)
    return best


def enumeration_size(queries: list[Query]) -> int:
    pats = all_substring_patterns(queries)
    size = 1
    for q in queries:
        size *= 2 ** sum(1 for o in pats.values() if q.id in o)
    return size


def brute_force_mwis(weights: list[float], adjacency: list[int]) -> float:
    best = 0.0
    n = len(weights)
    for mask in range(1 << n):
        if all(not (mask >> i & 1) or not (adjacency[i] & mask) for i in range(n)):
            best = max(best, sum(weights[i] for i in range(n) if mask >> i & 1))
    return best


def plan_cost_from_segments(plan, queries: list[Query], stats: Statistics) -> float:  # type: ignore[no-untyped-def]
    """The plan's cost recomputed from its decomposition (one class)."""
    gain, shared, element = raw_cost_terms(stats, queries[0].window)
    by_id = {q.id: q for q in queries}
    cost = sum(shared(s.pattern) for s in plan.shared)
    for qp in plan.queries:
        q = by_id[qp.query]
        for seg in qp.segments:
            if seg.shared is None:
                cost += sum(element(q.pattern, j) for j in range(seg.start, seg.end))
            else:
                ln = seg.end - seg.start
                own = sum(element(q.pattern, j) for j in range(seg.start, seg.end))
                cost += own - gain(q.pattern, seg.start, ln)  # = Comb(p, q)
    return cost - sum(n.saving for n in plan.pretree)


# ---------------------------------------------------------------- strategies


RATES = [0.0, 0.05, 0.1, 0.3, 1.0, 2.0, 5.0]
CHEAP_RATES = [0.01, 0.02, 0.05, 0.1]  # with WITHIN <= 10: sharing mostly pays


@st.composite
def small_workloads(draw, max_queries: int = 6, max_len: int = 5, rates=RATES):  # type: ignore[no-untyped-def]
    n_types = draw(st.sampled_from([2, 3, 3, 4]))
    types = "ABCD"[:n_types]
    n = draw(st.integers(2, max_queries) | st.just(max_queries))
    window = draw(st.sampled_from([Window(2, 1), Window(10), Window(5, 5), Window(1)]))
    queries = []
    for i in range(n):
        ln = draw(st.integers(2, max_len))
        pattern = tuple(draw(st.sampled_from(types)) for _ in range(ln))
        sharable = tuple(draw(st.sampled_from([True] * 9 + [False])) for _ in range(ln))
        queries.append(Query(f"q{i}", pattern, window, "g", sharable))
    rates = {t: draw(st.sampled_from(rates)) for t in types}
    partitions = draw(st.integers(1, 3))
    return queries, Statistics.of(rates, partitions)


# ---------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(small_workloads())
def test_plan_score_equals_exhaustive_search(case) -> None:  # type: ignore[no-untyped-def]
    queries, stats = case
    assume(enumeration_size(queries) <= 20000)
    plan = optimize(queries, stats, time_budget=30.0)
    assert plan.method in ("exact", "none")
    assert plan.exact
    assert close(plan.score, reference_optimum(queries, stats))
    assert close(plan.score_bound, plan.score)
    event(f"shared patterns: {min(len(plan.shared), 3)}")
    event(f"graph vertices: {min(len(plan.classes[0].graph.vertices) // 5 * 5, 20)}+")
    event(f"uses a query-subset option: {any(not v.full for v in plan.classes[0].graph.vertices)}")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(small_workloads(rates=CHEAP_RATES))
def test_plan_score_equals_exhaustive_search_when_sharing_pays(case) -> None:  # type: ignore[no-untyped-def]
    test_plan_score_equals_exhaustive_search.hypothesis.inner_test(case)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_workloads() | small_workloads(rates=CHEAP_RATES))
def test_plan_is_valid_consistent_and_never_worse(case) -> None:  # type: ignore[no-untyped-def]
    queries, stats = case
    plan = optimize(queries, stats, time_budget=30.0)
    gain, shared, _ = raw_cost_terms(stats, queries[0].window)
    patterns = {q.id: q.pattern for q in queries}
    assert plan.cost <= plan.cost_unshared + 1e-9
    assert close(plan.cost, plan.cost_unshared - plan.score - plan.pretree_saving)
    assert close(plan.cost, plan_cost_from_segments(plan, queries, stats))
    for s in plan.shared:
        assert len(s.occurrences) >= 2 and s.benefit > 0
        b = sum(gain(patterns[o.query], o.start, len(s.pattern)) for o in s.occurrences) - shared(s.pattern)
        assert close(s.benefit, b)
        for o in s.occurrences:
            assert patterns[o.query][o.start:o.start + len(s.pattern)] == s.pattern
    cands = [Candidate(s.pattern, s.occurrences) for s in plan.shared]
    for a, b in itertools.combinations(cands, 2):
        assert not conflict_queries(a, b)
    assert close(plan.score, sum(s.benefit for s in plan.shared))
    for q, qp in zip(queries, plan.queries):
        assert qp.query == q.id
        assert qp.segments[0].start == 0 and qp.segments[-1].end == q.length
        for a, b in zip(qp.segments, qp.segments[1:]):
            assert a.end == b.start
        for seg in qp.segments:
            assert seg.pattern == q.pattern[seg.start:seg.end]
            if seg.shared is not None:
                assert plan.shared[seg.shared].pattern == seg.pattern
                assert Occurrence(q.id, seg.start) in plan.shared[seg.shared].occurrences
    if not plan.shared:
        assert plan.score == 0 and not any(qp.is_shared for qp in plan.queries)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_workloads() | small_workloads(rates=CHEAP_RATES))
def test_pruning_keeps_every_optimal_candidate(case) -> None:  # type: ignore[no-untyped-def]
    """Conflict-ridden vertices are in no optimal plan; conflict-free ones are in the plan."""
    queries, stats = case
    plan = optimize(queries, stats, time_budget=30.0)
    (rep,) = plan.classes
    g = rep.graph
    w, adj = list(g.weights), list(g.adjacency)
    if len(w) <= 14:
        opt = brute_force_mwis(w, adj)
    else:
        opt = mask_weight(w, exact_mwis(w, adj, g.all_mask).chosen)
    assert close(opt, rep.score)
    for p in rep.reduction.conflict_ridden:
        rest = exact_mwis(w, adj, g.all_mask & ~adj[p.vertex] & ~(1 << p.vertex)).chosen
        with_v = w[p.vertex] + mask_weight(w, rest)
        assert with_v < opt - 1e-12
    free = set(bit for bit in range(len(w)) if rep.reduction.conflict_free >> bit & 1)
    assert free <= set(rep.chosen)
    assert guaranteed_weight(w, adj, g.all_mask) <= mask_weight(w, gwmin(w, adj, g.all_mask)) + 1e-9


@settings(max_examples=100, deadline=None)
@given(small_workloads(max_queries=8, max_len=7))
def test_apriori_candidates_equal_all_shared_substrings(case) -> None:  # type: ignore[no-untyped-def]
    queries, _ = case
    want = {p: tuple(Occurrence(q, s) for q, s in sorted(o.items(), key=lambda x: int(x[0][1:])))
            for p, o in all_substring_patterns(queries).items()}
    got = {c.pattern: c.occurrences for c in find_candidates(queries)}
    assert got == want


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**31), st.floats(0.05, 0.9))
def test_exact_mwis_matches_brute_force(n: int, seed: int, density: float) -> None:
    rng = random.Random(seed)
    weights = [rng.choice([1.0, 2.0, 3.0, rng.uniform(0.1, 10)]) for _ in range(n)]
    adj = [0] * n
    for i, j in itertools.combinations(range(n), 2):
        if rng.random() < density:
            adj[i] |= 1 << j
            adj[j] |= 1 << i
    full = (1 << n) - 1
    best = brute_force_mwis(weights, adj)
    edges = [(1 << i) | (1 << j) for i, j in itertools.combinations(range(n), 2) if adj[i] >> j & 1]
    for cliques in (None, edges):  # clique-cover bound, Lagrangian bound over the edges
        res = exact_mwis(weights, adj, full, cliques=cliques)
        found = res.chosen
        assert res.complete and close(res.upper, best)
        assert all(not (found >> i & 1) or not (adj[i] & found) for i in range(n))
        assert close(mask_weight(weights, found), best)
    if edges:
        cb = CliqueBound(weights, [bit_indices(e) for e in edges], 0.0)
        assert cb.root >= best - 1e-9
        alive = [rng.random() < 0.5 for _ in range(n)]
        sub = [i for i in range(n) if alive[i]]
        sub_best = brute_force_mwis([weights[i] for i in sub], [sum(1 << sub.index(j) for j in sub if adj[i] >> j & 1)
                                                                for i in sub])
        assert cb.bound(np.array(alive, dtype=bool)) >= sub_best - 1e-9
    greedy = gwmin(weights, adj, full)
    assert mask_weight(weights, greedy) >= guaranteed_weight(weights, adj, full) - 1e-9
    better = improve(weights, adj, full, greedy)
    assert all(not (better >> i & 1) or not (adj[i] & better) for i in range(n))
    assert mask_weight(weights, better) >= mask_weight(weights, greedy) - 1e-12


# ---------------------------------------------------------------- Sharon's worked examples

TRAFFIC = [
    Query("q1", ("OakSt", "MainSt", "StateSt"), W),
    Query("q2", ("OakSt", "MainSt", "WestSt"), W),
    Query("q3", ("LindenSt", "ParkAve", "OakSt", "MainSt"), W),
    Query("q4", ("ParkAve", "OakSt", "MainSt", "WestSt"), W),
    Query("q5", ("MainSt", "StateSt"), W),
    Query("q6", ("EastPark", "ElmSt", "ParkAve"), W),
    Query("q7", ("ElmSt", "ParkAve", "GreenHill"), W),
]
# Table I and the benefit values of Figure 4.
TABLE_I = {
    "p1": (("OakSt", "MainSt"), ("q1", "q2", "q3", "q4"), 25),
    "p2": (("ParkAve", "OakSt"), ("q3", "q4"), 9),
    "p3": (("ParkAve", "OakSt", "MainSt"), ("q3", "q4"), 12),
    "p4": (("MainSt", "WestSt"), ("q2", "q4"), 15),
    "p5": (("OakSt", "MainSt", "WestSt"), ("q2", "q4"), 20),
    "p6": (("MainSt", "StateSt"), ("q1", "q5"), 8),
    "p7": (("ElmSt", "ParkAve"), ("q6", "q7"), 18),
}


def figure4_graph():  # type: ignore[no-untyped-def]
    by_pattern = {c.pattern: c for c in find_candidates(TRAFFIC)}
    names = list(TABLE_I)
    verts = [Vertex(by_pattern[TABLE_I[k][0]], float(TABLE_I[k][2])) for k in names]
    return names, build_graph(verts)


def test_table_i_candidates() -> None:
    got = {c.pattern: c.queries for c in find_candidates(TRAFFIC)}
    assert got == {p: qs for p, qs, _ in TABLE_I.values()}


def test_figure4_conflicts() -> None:
    names, g = figure4_graph()
    edges = {frozenset((names[i], names[j])) for i, j in g.edges()}
    want = {frozenset(e) for e in [("p1", "p2"), ("p1", "p3"), ("p1", "p4"), ("p1", "p5"), ("p1", "p6"),
                                   ("p2", "p3"), ("p2", "p5"), ("p3", "p4"), ("p3", "p5"), ("p4", "p5")]}
    assert edges == want
    # Example 4: q3 and q4 cause the conflict between p1 and p2.
    assert conflict_queries(g.vertices[0].candidate, g.vertices[1].candidate) == ("q3", "q4")


def test_examples_5_to_10_guaranteed_weight_pruning_and_optimum() -> None:
    names, g = figure4_graph()
    w, adj = list(g.weights), list(g.adjacency)
    # Example 7: guaranteed weight 25/6 + 9/4 + 12/5 + 15/4 + 20/5 + 8/2 + 18/1 ~ 38.57.
    assert close(guaranteed_weight(w, adj, g.all_mask), 25 / 6 + 9 / 4 + 12 / 5 + 15 / 4 + 4 + 4 + 18)
    red = reduce_graph(g)
    assert [names[p.vertex] for p in red.conflict_ridden] == ["p3"]
    assert red.conflict_ridden[0].score_max == 38  # p3 + p6 + p7
    # Example 8: p7 is conflict-free; Example 9: five candidates left to search.
    assert [names[i] for i in range(7) if red.conflict_free >> i & 1] == ["p7"]
    assert red.remaining.bit_count() == 5
    # Example 10: the valid space of the reduced graph has 10 plans; the optimum is
    # {p2, p4, p6, p7} (score 50), above {p1} (25) and {p2, p4} (24) of Example 5.
    rem = [i for i in range(7) if red.remaining >> i & 1]
    valid = [s for k in range(1, 6) for s in itertools.combinations(rem, k)
             if all(not adj[i] >> j & 1 for i, j in itertools.combinations(s, 2))]
    assert len(valid) == 10
    res = exact_mwis(w, adj, red.remaining)
    chosen = res.chosen | red.conflict_free
    assert res.complete and sorted(names[i] for i in range(7) if chosen >> i & 1) == ["p2", "p4", "p6", "p7"]
    assert mask_weight(w, chosen) == 50


def test_example_12_query_subsets_resolve_conflicts() -> None:
    """(p1, {q1, q3}) conflicts with neither (p4, {q2, q4}) nor (p5, {q2, q4})."""
    by_pattern = {c.pattern: c for c in find_candidates(TRAFFIC)}
    p1 = by_pattern[("OakSt", "MainSt")].restricted({"q1", "q3"})
    assert not conflict_queries(p1, by_pattern[("MainSt", "WestSt")])
    assert not conflict_queries(p1, by_pattern[("OakSt", "MainSt", "WestSt")])
    assert conflict_queries(by_pattern[("OakSt", "MainSt")], by_pattern[("MainSt", "WestSt")]) == ("q2", "q4")


# ---------------------------------------------------------------- benefit model by hand


def test_benefit_by_hand() -> None:
    # WITHIN 10 SLIDE 5, 2 partitions: R = 10 * rate, scale = 2 / 5.
    stats = Statistics.of({"A": 0.1, "B": 0.2, "C": 0.3, "D": 0.05}, partitions=2)
    model = CostModel(stats, Window(10, 5))
    assert close(model.scale, 0.4)
    q1, q2 = ("A", "B", "C"), ("D", "B", "C", "A")
    assert close(model.query_cost(q1), 0.4 * 1 * (1 + 2 + 3))
    # p = (B, C): in q1 at 1 (suffix empty), in q2 at 1 (suffix A).
    g1 = 0.4 * (1 * (2 + 3) - 1 * 2 * 1)
    g2 = 0.4 * (0.5 * (2 + 3) - 0.5 * 2 * 1)
    assert close(model.gain(q1, 1, 2), g1) and close(model.gain(q2, 1, 2), g2)
    cand = Candidate(("B", "C"), (Occurrence("q1", 1), Occurrence("q2", 1)))
    assert close(model.benefit(cand, {"q1": q1, "q2": q2}), g1 + g2 - 0.4 * 2 * (2 + 3))
    # a shared prefix costs no combination (PreTree): gain = R(E1) * R(p)
    assert close(model.gain(("B", "C", "A"), 0, 2), 0.4 * 2 * 5)


def test_rare_connect_events_make_middle_sharing_pay() -> None:
    """Sharon eq. 5: the combination cost R(E_1) R(E_m) R(E_{m+l}) decides."""
    queries = [Query(f"q{i}", (s, "X", "Y", "Z", s.lower()), W) for i, s in enumerate("ABCD")]
    rates = {t: 1.0 for t in "ABCDabcdXYZ"}
    rare = optimize(queries, Statistics.of({**rates, "X": 1e-4}))
    frequent = optimize(queries, Statistics.of(rates))
    assert [s.pattern for s in rare.shared] == [("X", "Y", "Z")]
    assert rare.shared[0].queries == ("q0", "q1", "q2", "q3")
    assert not frequent.shared and frequent.method == "none"
    assert frequent.cost == frequent.cost_unshared


# ---------------------------------------------------------------- PreTree, windows, groups


def test_pretree_shares_common_prefixes_for_free() -> None:
    queries = [Query("a", ("A", "B", "C", "D"), W), Query("b", ("A", "B", "C", "E"), W),
               Query("c", ("A", "B", "F"), W), Query("d", ("G", "H"), W)]
    # every type frequent: prefix candidates still pay (no combination cost)
    plan = optimize(queries, Statistics.of({t: 0.01 for t in "ABCDEFGH"}))
    pre = {(n.prefix, n.queries) for n in plan.pretree}
    shared = {(s.pattern, s.queries) for s in plan.shared}
    # the plan shares (A, B, C) by a, b and PreTree shares (A, B) with c, or vice versa:
    # in any case A and B are computed once for a, b, c.
    covered = set()
    for s in plan.shared:
        covered |= {(q, j) for q in s.queries for j in range(len(s.pattern))}
    for n in plan.pretree:
        covered |= {(q, n.depth) for q in n.queries}
    assert {("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0), ("c", 1)} <= covered
    assert shared or pre
    assert plan.cost < plan.cost_unshared


def test_pretree_without_any_candidate() -> None:
    queries = [Query("a", ("A", "B"), W, sharable=(True, True)), Query("b", ("A", "C"), W)]
    plan = optimize(queries, Statistics.of({"A": 1, "B": 1, "C": 1}))
    assert not plan.shared
    assert [(n.prefix, n.queries) for n in plan.pretree] == [(("A",), ("a", "b"))]
    assert plan.pretree_saving > 0 and close(plan.cost, plan.cost_unshared - plan.pretree_saving)


def test_no_sharing_across_windows_or_groups() -> None:
    queries = [Query("a", ("A", "B", "C"), Window(10), "g"), Query("b", ("A", "B", "C"), Window(20), "g"),
               Query("c", ("A", "B", "C"), Window(10), "h")]
    plan = optimize(queries, {"g": Statistics.of({"A": 1, "B": 1, "C": 1}),
                              "h": Statistics.of({"A": 1, "B": 1, "C": 1})})
    assert not plan.shared and not plan.pretree and len(plan.classes) == 3
    with pytest.raises(SharingError, match="no statistics"):
        optimize(queries, {"g": Statistics.of({"A": 1})})


def test_not_sharable_elements_are_never_shared() -> None:
    queries = [Query("a", ("A", "B", "C"), W, sharable=(True, False, True)), Query("b", ("A", "B", "C"), W)]
    assert find_candidates(queries) == ()
    plan = optimize(queries, Statistics.of({"A": 1, "B": 1, "C": 1}))
    assert all(n.depth == 0 for n in plan.pretree)


def test_query_from_plan_marks_negation_and_kleene() -> None:
    from udafs.plan import Element, Plan

    # SEQ(A, B, !N, C, A+) WITHIN 600 SLIDE 60
    plan = Plan(symbols=("A", "B", "C", "N"), elements=(Element(0), Element(1), Element(2), Element(0, True)),
                negations=(0, 0, 8, 0, 0), within=600, slide=60)
    q = query_from_plan("x", plan, group="src")
    assert q.pattern == ("A", "B", "C", "A")
    assert q.sharable == (True, False, False, False)
    assert q.window == Window(600, 60) and q.group == "src"
    q2 = query_from_plan("y", plan, type_keys=("ka", "kb", "kc", "kn"))
    assert q2.pattern == ("ka", "kb", "kc", "ka")


def test_statistics_from_counts_and_errors() -> None:
    s = Statistics.from_counts({"A": 500, "B": 50}, span=100, partitions=5, sample_fraction=0.5)
    assert close(s.rate("A"), 2.0) and close(s.rate("B"), 0.2) and s.rate("Z") == 0.0
    with pytest.raises(SharingError):
        Statistics.of({"A": -1})
    with pytest.raises(SharingError, match="time span"):
        optimize([Query("a", ("A", "B"), Window()), Query("b", ("A", "B"), Window())], Statistics.of({"A": 1}))
    with pytest.raises(SharingError, match="duplicate"):
        optimize([Query("a", ("A", "B")), Query("a", ("A", "B"))], Statistics.of({"A": 1}, span=10))
    with pytest.raises(SharingError):
        Window(0)


# ---------------------------------------------------------------- determinism, budget, EXPLAIN


def random_routes(n: int, length: int, seed: int) -> list[Query]:
    rng = random.Random(seed)
    side = 6
    out = []
    for i in range(n):
        x, y = rng.randrange(side), rng.randrange(side)
        route = []
        for _ in range(length):
            route.append(f"S{x}{y}")
            dx, dy = rng.choice([(1, 0), (0, 1), (1, 0), (0, 1), (-1, 0)])
            x, y = min(max(x + dx, 0), side - 1), min(max(y + dy, 0), side - 1)
        out.append(Query(f"r{i}", tuple(route), W))
    return out


def route_stats(seed: int) -> Statistics:
    rng = random.Random(seed)
    return Statistics.of({f"S{x}{y}": rng.choice([1e-4, 1e-3, 5e-3, 2e-2]) for x in range(6) for y in range(6)})


def test_deterministic() -> None:
    queries = random_routes(30, 8, 1)
    stats = route_stats(2)
    a = optimize(queries, stats, time_budget=5)
    b = optimize(queries, Statistics.of(dict(reversed(stats.rates))), time_budget=5)
    assert a.method == "exact"  # a finished search: no dependence on timing
    assert a == b
    strip = lambda text: text.split("-- optimizer time --")[0]  # noqa: E731
    assert strip(explain(a)) == strip(explain(b))
    assert sharon_graph_dot(a) == sharon_graph_dot(b)


def test_time_budget_falls_back_to_greedy() -> None:
    queries = random_routes(20, 10, 3)
    stats = route_stats(4)
    plan = optimize(queries, stats, time_budget=0.0)
    (rep,) = plan.classes
    assert rep.reduction.remaining.bit_count() > 100
    assert plan.method == "greedy" and not plan.exact
    assert plan.score >= rep.reduction.guaranteed_weight - 1e-9
    assert plan.score_bound >= plan.score
    assert "found by: greedy (not proven optimal); best possible score <=" in explain(plan)
    assert plan.cost <= plan.cost_unshared
    cands = [Candidate(s.pattern, s.occurrences) for s in plan.shared]
    assert all(not conflict_queries(a, b) for a, b in itertools.combinations(cands, 2))
    full = optimize(queries, stats, time_budget=20.0)
    assert full.method == "exact" and close(full.score_bound, full.score)
    assert full.score > plan.score  # GWMIN is not optimal here
    assert plan.score_bound >= full.score - 1e-9


def test_explain_and_dot_show_the_decisions() -> None:
    stats = Statistics.of({t: 0.005 for q in TRAFFIC for t in q.pattern})
    plan = optimize(TRAFFIC, stats)
    text = explain(plan)
    for needle in ("BValue", "non-beneficial", "conflict-ridden", "conflict-free", "GWMIN guaranteed weight",
                   "chosen:", "without sharing", "found by: exact", "q4:"):
        assert needle in text
    for s in plan.shared:
        assert ", ".join(s.pattern) in text
    dot = sharon_graph_dot(plan)
    assert dot.startswith("graph sharon {") and dot.rstrip().endswith("}")
    g = plan.classes[0].graph
    assert dot.count(" -- ") == len(g.edges())
    assert dot.count("fillcolor") == len(plan.classes[0].chosen)


def test_vertex_cap_keeps_plans_valid_but_not_exact() -> None:
    queries = random_routes(20, 10, 3)
    stats = route_stats(4)
    capped = optimize(queries, stats, time_budget=20.0, max_vertices=60)
    (rep,) = capped.classes
    assert len(rep.graph.vertices) <= max(60, len(rep.candidates))
    assert not capped.exact and capped.method == "exact"
    full = optimize(queries, stats, time_budget=20.0)
    assert full.score >= capped.score - 1e-9
    assert capped.cost <= capped.cost_unshared


def test_node_budget_makes_unfinished_searches_reproducible() -> None:
    queries = random_routes(60, 10, 5)
    stats = route_stats(6)
    a = optimize(queries, stats, time_budget=float("inf"), node_budget=50)
    b = optimize(list(queries), stats, time_budget=float("inf"), node_budget=50)
    assert a.method in ("greedy", "greedy+search") and not a.exact
    assert a == b
    assert a.score <= a.score_bound


def test_query_from_plan_refuses_sharing_under_other_strategies() -> None:
    import udafs.plan as up

    if not hasattr(up, "Strategy"):
        pytest.skip("this udafs.plan has no selection strategies")
    plan = up.Plan(symbols=("A", "B", "C"), elements=(up.Element(0), up.Element(1), up.Element(2)),
                   negations=(0, 0, 0, 0), within=600, strategy=up.Strategy.SKIP_TILL_NEXT_MATCH)
    assert query_from_plan("x", plan).sharable == (False, False, False)
    plain = up.Plan(symbols=("A", "B", "C"), elements=(up.Element(0), up.Element(1), up.Element(2)),
                    negations=(0, 0, 0, 0), within=600)
    assert query_from_plan("y", plain).sharable == (True, True, True)
