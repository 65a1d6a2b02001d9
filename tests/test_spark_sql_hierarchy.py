"""Concept hierarchies end to end on local Spark: registration (Python and SQL), errors
before any job, and HIERARCHY queries against the oracle.

The oracle test draws a random forest over a few type values, a random plan whose
symbols are nodes of it (at any level, negated or not, with WITHIN), and random events
with a type value each. The oracle sees, per event, the bit of every symbol whose node
is the event's type value or one of its ancestors — the hierarchy expanded by hand.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sparkseq
from sparkseq.spark.hierarchies import registered_hierarchies
from sparkseq.statements.sql_api import sql
from sql_rewrites import errors as E
from tests import oracle
from tests.spark_cases import assert_same, expected, got
from tests.sql_cases import jobs_started, measure_sql
from tests.test_kernel_oracle import events, plans
from udafs.plan import Plan

pytestmark = pytest.mark.usefixtures("isolated_hierarchies")  # tests see only their own hierarchies

LEAVES = ("dell", "ibm", "gs", "jpm", "anat")
GROUPS = ("computer", "finance", "services")  # a group's parent is a later group
SETTINGS = settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
Case = tuple[list[tuple[str, str]], Plan, list[oracle.Events], list[list[str]], bool]


def ancestors_or_self(value: str, pairs: list[tuple[str, str]]) -> set[str]:
    parent_of = dict(pairs)
    found = {value}
    while value in parent_of:
        value = parent_of[value]
        found.add(value)
    return found


@st.composite
def cases(draw: st.DrawFn, window: str) -> Case:
    """A forest, a plan over its nodes, events with type values, and how to register it."""
    pairs = [(leaf, draw(st.sampled_from(GROUPS))) for leaf in LEAVES]
    for i, group in enumerate(GROUPS[:-1]):
        parent = draw(st.sampled_from([None, *GROUPS[i + 1:]]))
        if parent is not None:
            pairs.append((group, parent))
    nodes = sorted({n for pair in pairs for n in pair})
    plan = draw(plans(window=window, middle_negation=True, sql=True))
    names = draw(st.permutations(nodes))[: len(plan.symbols)]
    plan = Plan(symbols=tuple(names), elements=plan.elements, negations=plan.negations, within=plan.within,
                slide=plan.slide, measures=plan.measures, columns=plan.columns, count_type=plan.count_type)
    groups, types = [], []
    for ev in draw(st.lists(events(plan), min_size=1, max_size=10)):
        typed = [draw(st.sampled_from(nodes)) for _ in ev.ts]
        mask = [sum(1 << k for k, name in enumerate(names) if name in ancestors_or_self(t, pairs)) for t in typed]
        case = oracle.Events(ev.ts, mask, ev.values)
        if oracle.cheap(plan, case):
            groups.append(case)
            types.append(typed)
    return pairs, plan, groups, types, draw(st.booleans())


def run(spark, case: Case) -> None:
    pairs, plan, groups, types, in_sql = case
    rows = [(g, t, ty, i, f) for g, (ev, typed) in enumerate(zip(groups, types))
            for t, ty, i, f in zip(ev.ts, typed, *ev.values)]
    spark.createDataFrame(rows, "g bigint, ts bigint, company string, i bigint, f double") \
        .createOrReplaceTempView("h_events")
    clauses = ["PARTITION BY g", "ORDER BY ts", f"PATTERN {plan.describe()}", "TYPE BY company",
               "HIERARCHY sectors", f"MEASURES {', '.join(measure_sql(plan, m) for m in plan.measures)}"]
    if plan.within is not None:
        clauses.append(f"WITHIN {plan.within}")
    if plan.count_type.value != "bigint":
        clauses.append(f"COUNT TYPE {plan.count_type.value.upper()}")
    query = (f"SELECT g, {', '.join(f'`{m.name}`' for m in plan.measures)} "
             f"FROM h_events MATCH_AGGREGATE ({' '.join(clauses)}) AS m")
    if in_sql:  # the pairs view is created by the same text: the hierarchy is read when it runs
        values = ", ".join(f"('{c}', '{p}')" for c, p in pairs)
        text = (f"CREATE OR REPLACE TEMP VIEW h_pairs AS SELECT * FROM VALUES {values} AS t(child, parent); "
                f"CREATE OR REPLACE CONCEPT HIERARCHY sectors FROM h_pairs; {query}")
    else:
        sparkseq.register_hierarchy(spark, "sectors", pairs)
        text = query
    assert_same(plan, got(plan, sql(spark, text).collect()), expected(plan, groups))


@pytest.mark.parametrize("window", ["none", "within"])
def test_hierarchy_queries_match_oracle(spark, window: str) -> None:
    @SETTINGS
    @given(cases(window))
    def check(case: Case) -> None:
        run(spark, case)

    try:
        check()
    finally:
        sparkseq.drop_hierarchy(spark, "sectors", if_exists=True)


@pytest.fixture()
def trades(spark):
    """The E-Cube paper's Figure 11 companies, one trade each, in order."""
    spark.createDataFrame([("DELL", "Computer"), ("IBM", "Computer"), ("GS", "Finance"), ("JPM", "Finance"),
                           ("Harvard", "Education"), ("ANAT", "Insurance")],
                          "child string, parent string").createOrReplaceTempView("company_sector")
    spark.createDataFrame([("x", "Computer", "DELL"), ("y", "Finance", "GS")],
                          "c1 string, c2 string, c3 string").createOrReplaceTempView("first_two")
    spark.createDataFrame([("u", 1, "DELL"), ("u", 2, "GS"), ("u", 3, "IBM"), ("u", 4, "JPM"), ("u", 5, "ANAT"),
                           ("u", 6, "Harvard"), ("u", 7, "DELL"), ("u", 8, "ANAT")],
                          "k string, ts int, company string").createOrReplaceTempView("trades")
    yield
    sparkseq.drop_hierarchy(spark, "sectors", if_exists=True)


def count(pattern: str, extra: str = "") -> str:
    return (f"SELECT n FROM trades MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN {pattern} TYPE BY company "
            f"HIERARCHY sectors MEASURES COUNT(*) AS n {extra}) AS m")


def test_create_and_drop_in_sql(spark, trades) -> None:
    text = f"CREATE CONCEPT HIERARCHY Sectors FROM company_sector; {count('SEQ(Computer, Finance)')}"
    assert sql(spark, text).first().n == 3  # DELL1 GS2, DELL1 JPM4, IBM3 JPM4
    assert sql(spark, count("SEQ(DELL, Finance, !Education, ANAT)")).first().n == 2  # DELL1 GS2|JPM4 ANAT5
    assert sql(spark, count("SEQ(Computer, !Finance, Insurance)")).first().n == 1  # DELL7 ANAT8
    assert set(registered_hierarchies(spark)) == {"Sectors"}
    frame = sql(spark, "DROP CONCEPT HIERARCHY sectors")
    assert frame.columns == [] and registered_hierarchies(spark) == {}
    sql(spark, "DROP CONCEPT HIERARCHY IF EXISTS sectors")


def test_first_two_columns_and_python_registration(spark, trades) -> None:
    sql(spark, "CREATE CONCEPT HIERARCHY sectors FROM first_two")  # no child/parent columns: c1, c2
    with pytest.raises(E.HierarchyError, match="'DELL' is not a node of hierarchy sectors"):
        sql(spark, count("SEQ(DELL)"))
    sparkseq.register_hierarchy(spark, "sectors", "company_sector")  # replaces
    assert sql(spark, count("SEQ(Finance, Insurance)")).first().n == 4  # GS2|JPM4 then ANAT5|ANAT8


@pytest.mark.parametrize(
    ("text", "error", "phrase"),
    [
        ("CREATE CONCEPT HIERARCHY sectors FROM company_sector; CREATE CONCEPT HIERARCHY sectors FROM first_two",
         E.HierarchyError, "concept hierarchy sectors already exists; use CREATE OR REPLACE"),
        ("DROP CONCEPT HIERARCHY sectors", E.UnknownHierarchyError, "concept hierarchy sectors does not exist"),
        ("CREATE CONCEPT HIERARCHY sectors FROM nowhere", E.UnknownTableError,
         "relation 'nowhere' is not a table or view of this Spark session"),
        ("CREATE CONCEPT HIERARCHY s FROM trades_one", E.HierarchyError, "has 1 column; it needs (child, parent)"),
        ("CREATE CONCEPT HIERARCHY s FROM cyclic", E.HierarchyError, "has a cycle: a -> b -> a"),
        ("CREATE CONCEPT HIERARCHY s FROM two_parents", E.HierarchyError, "'a' has two parents"),
        ("CREATE CONCEPT HIERARCHY s FROM with_null", E.HierarchyError, "has a NULL parent"),
        ("CREATE CONCEPT HIERARCHY s FROM empty_pairs", E.HierarchyError, "hierarchy s is empty"),
        ("CREATE CONCEPT HIERARCHY sectors FROM company_sector; " + count("SEQ(Retail)"), E.HierarchyError,
         "'Retail' is not a node of hierarchy sectors"),
        ("CREATE CONCEPT HIERARCHY s FROM company_sector; " + count("SEQ(DELL)"), E.UnknownHierarchyError,
         "unknown hierarchy sectors; known hierarchies: s"),
        ("CREATE CONCEPT HIERARCHY sectors FROM company_sector; DROP CONCEPT HIERARCHY sectors; "
         + count("SEQ(DELL)"), E.UnknownHierarchyError, "no concept hierarchies are registered"),
    ],
)
def test_errors_before_any_statement_runs(spark, trades, text: str, error: type[Exception], phrase: str) -> None:
    spark.sql("CREATE OR REPLACE TEMP VIEW trades_one AS SELECT 'a' AS child")
    spark.sql("CREATE OR REPLACE TEMP VIEW cyclic AS SELECT * FROM VALUES ('a', 'b'), ('b', 'a') AS t(child, parent)")
    spark.sql("CREATE OR REPLACE TEMP VIEW two_parents AS SELECT * FROM VALUES ('a', 'b'), ('a', 'c') AS t(x, y)")
    spark.sql("CREATE OR REPLACE TEMP VIEW with_null AS SELECT * FROM VALUES ('a', 'b'), ('c', NULL) AS t(x, y)")
    spark.sql("CREATE OR REPLACE TEMP VIEW empty_pairs AS SELECT 'a' AS child, 'b' AS parent WHERE false")
    with pytest.raises(error, match=None) as info:
        sql(spark, text)
    assert phrase in str(info.value), str(info.value)
    assert info.value.position is not None  # type: ignore[attr-defined]
    assert registered_hierarchies(spark) == {}  # nothing ran


def test_no_query_job_before_a_hierarchy_error(spark, trades) -> None:
    sparkseq.register_hierarchy(spark, "sectors", "company_sector")
    before = jobs_started(spark)
    with pytest.raises(E.HierarchyError):
        sql(spark, f"CACHE TABLE t2 AS SELECT * FROM trades; {count('SEQ(Retail)')}")
    assert jobs_started(spark) == before


def test_explain_and_rewrite_use_session_hierarchies(spark, trades) -> None:
    sparkseq.register_hierarchy(spark, "sectors", "company_sector")
    assert "company IN ('Finance', 'GS', 'JPM')" in sparkseq.explain(spark, count("SEQ(Finance)"))
    (rewritten,) = sparkseq.statements.sql_api.rewrite(spark, count("SEQ(Finance)"))
    assert spark.sql(rewritten).first().n == 2
    text = sparkseq.explain(spark, "DROP CONCEPT HIERARCHY sectors; CREATE CONCEPT HIERARCHY sectors FROM first_two; "
                            + count("SEQ(DELL)"))
    assert "(drops concept hierarchy sectors; run by sparkseq.sql)" in text
    assert "(reads sectors, which an earlier statement creates" in text
