"""``seq_*`` functions with ``'SEQ(...) HIERARCHY name'`` patterns, end to end on local Spark.

The session's hierarchies are bound into the functions (Python workers cannot see the
driver's registry) and re-bound whenever they change; the counts must equal the oracle
with the hierarchy expanded by hand.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import sparkseq
from sql_rewrites.errors import HierarchyError, UnknownHierarchyError
from sql_rewrites.logical.hierarchy import ConceptHierarchy
from tests import oracle
from tests.cube_cases import INNER, LEAVES, hierarchies


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(pairs=hierarchies(), data=st.data())
def test_seq_count_with_hierarchy_equals_oracle(spark, pairs, data) -> None:  # noqa: ANN001
    h = ConceptHierarchy.build("h", pairs)
    nodes = sorted(h.nodes)
    pattern = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=3))
    negated = data.draw(st.sampled_from(nodes)) if len(pattern) > 1 and data.draw(st.booleans()) else None
    text = "SEQ(" + ", ".join([pattern[0], *([f"!{negated}"] if negated else []), *pattern[1:]]) + ")"
    rows = data.draw(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 6), st.sampled_from(LEAVES + INNER)),
                              max_size=10))
    spark.createDataFrame(rows or [(0, 0, "zz")], "k int, ts bigint, tp string").createOrReplaceTempView("fh")
    sparkseq.register_hierarchy(spark, "h", list(pairs))
    got = {r.k: r.n for r in spark.sql(
        f"SELECT k, seq_count(ts, tp, '{text} HIERARCHY h', 4) AS n FROM fh GROUP BY k").collect()}
    from udafs.plan import Element, Plan

    symbols = tuple(dict.fromkeys(pattern + ([negated] if negated else [])))
    negations = [0] * (len(pattern) + 1)
    if negated:
        negations[1] = 1 << symbols.index(negated)
    plan = Plan(symbols=symbols, elements=tuple(Element(symbols.index(s)) for s in pattern),
                negations=tuple(negations), within=4)
    for k in {k for k, _, _ in rows}:
        mine = [(t, tp) for kk, t, tp in rows if kk == k]
        masks = [sum(1 << i for i, s in enumerate(symbols) if tp in h.descendants_or_self(s)) for _, tp in mine]
        ev = oracle.Events([t for t, _ in mine], masks)
        assert got[k] == oracle.evaluate(ev, plan)[0][2][0]


def test_unknown_hierarchy_and_node_fail_before_any_job(spark) -> None:  # noqa: ANN001
    spark.createDataFrame([(1, 1, "a")], "k int, ts bigint, tp string").createOrReplaceTempView("fh")
    sparkseq.register_hierarchy(spark, "h", [("a", "X")])
    with pytest.raises(UnknownHierarchyError, match="unknown hierarchy nope"):
        sparkseq.sql(spark, "SELECT seq_count(ts, tp, 'SEQ(a) HIERARCHY nope') FROM fh")
    with pytest.raises(HierarchyError, match="'b' is not a node of hierarchy h"):
        sparkseq.sql(spark, "SELECT seq_count(ts, tp, 'SEQ(a, b) HIERARCHY h') FROM fh")


def test_functions_follow_hierarchy_changes(spark) -> None:  # noqa: ANN001
    spark.createDataFrame([(1, 1, "a"), (1, 2, "b")], "k int, ts bigint, tp string").createOrReplaceTempView("fh")
    query = "SELECT seq_count(ts, tp, 'SEQ(X, X) HIERARCHY h') AS n FROM fh"
    sparkseq.register_hierarchy(spark, "h", [("a", "X"), ("b", "X")])
    assert spark.sql(query).first().n == 1
    sparkseq.register_hierarchy(spark, "h", [("a", "X"), ("b", "Y")])
    assert spark.sql(query).first().n == 0
    sparkseq.drop_hierarchy(spark, "h")
    with pytest.raises(Exception,
                       match=r"\[USER_RAISED_EXCEPTION\] UnknownHierarchyError: (unknown hierarchy h;|HIERARCHY h:)"):
        spark.sql(query)  # the rewriter behind spark.sql checks the literal pattern before any job
    call = "seq_count(ts, tp, 'SEQ(X, X) HIERARCHY h')"  # an expression: no rewriter; the function itself
    with pytest.raises(Exception, match="unknown concept hierarchy h"):
        spark.table("fh").groupBy().agg(F.expr(call)).collect()
