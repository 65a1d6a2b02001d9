"""Row masks on local Spark: the one-CASE masks (a branch per symbol, or per set of bits for
overlapping memberships) and the search trees over many literals equal the OR of one CASE
per symbol bit for bit wherever the compiler takes them (``sql_rewrites.clauses.exclusive_symbols``,
``sql_rewrites.generation.generate.search_tree``); collated and CHAR
columns reach the compiler with their comparison rules, keep the OR, and a workload over
a ``COLLATE UTF8_LCASE`` column counts what the oracle counts."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

import sparkseq
from sparkseq.spark.catalog import CHAR_VARCHAR_KEY, SessionSchemas, field_type_text, type_text
from sql_rewrites.clauses.exclusive_symbols import exclusive, mask_expression
from sql_rewrites.generation.generate import SEARCH_FROM, symbol_mask
from sql_rewrites.logical.schema import RelationSchema
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.literals import string_sql
from tests import oracle
from udafs.plan import Element, Plan

VALUES = ["a", "A", "a ", "b", "B", "é", "e", None]
COLLATIONS = ["UTF8_BINARY", "UTF8_LCASE", "UNICODE_CI", "UTF8_BINARY_RTRIM", "UNICODE_CI_AI"]


@pytest.fixture(scope="module")
def texts(spark):  # noqa: ANN001, ANN201
    """``masks_<collation>``: every value of :data:`VALUES`, as a string of that collation."""
    spark.createDataFrame([(v,) for v in VALUES], "v string").createOrReplaceTempView("masks_base")
    for collation in COLLATIONS:
        spark.sql(f"CREATE OR REPLACE TEMP VIEW masks_{collation} AS SELECT v COLLATE {collation} AS v FROM masks_base")
    return spark


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(collation=st.sampled_from(COLLATIONS),
       sets=st.lists(st.lists(st.sampled_from([v for v in VALUES if v is not None]), min_size=1, max_size=2),
                     min_size=2, max_size=4))
def test_one_case_equals_the_or_wherever_it_is_taken(texts, collation: str, sets: list[list[str]]) -> None:  # noqa: ANN001
    from sqlglot import parse_one

    view = f"masks_{collation}"
    conditions = [parse_one(f"v IN ({', '.join(string_sql(v) for v in values)})", dialect=SparkSeq) for values in sets]
    source = RelationSchema.build(view, SessionSchemas(texts)(view) or {})
    taken = exclusive(conditions, source)
    masks = [mask_expression(list(enumerate(conditions)), exclusive=one).sql(dialect=SparkSeq) for one in (False, True)]
    chosen = symbol_mask(list(enumerate(conditions)), source).sql(dialect=SparkSeq)  # what the compiler emits
    rows = texts.sql(f"SELECT v, {masks[0]} AS by_or, {masks[1]} AS by_case, {chosen} AS chosen FROM {view}").collect()
    differ = [r for r in rows if r["by_or"] != r["by_case"]]
    if taken:
        assert not differ, (collation, sets, differ)
    assert all(r["chosen"] == r["by_or"] for r in rows), (collation, sets, chosen, rows)
    disjoint = len({v for values in sets for v in values}) == sum(len(set(values)) for values in sets)
    assert taken == (collation == "UTF8_BINARY" and disjoint)
    # plain memberships of one binary string column: one CASE, a branch per set of bits when they overlap
    assert chosen.startswith("CAST(CASE") == (collation == "UTF8_BINARY")


#: Strings whose UTF-8 bytes sort unlike a naive reading would: multibyte letters, an emoji,
#: a space, a digit, and the empty string.
WORDS = st.text(alphabet=st.sampled_from(["a", "b", "A", "é", "€", "😀", " ", "0"]), max_size=3)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(sets=st.lists(st.lists(WORDS, min_size=1, max_size=3), min_size=4, max_size=14),
       rows=st.lists(st.one_of(st.none(), WORDS), min_size=1, max_size=30))
def test_a_search_tree_over_strings_equals_the_or(spark, sets: list[list[str]], rows: list[str | None]) -> None:  # noqa: ANN001
    values = [v for members in sets for v in members]
    mask_rows(spark, "tree_strings", "v string", rows + values,
              [f"v IN ({', '.join(string_sql(v) for v in members)})" for members in sets], len(set(values)))


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(sets=st.lists(st.lists(st.integers(-40, 40) | st.sampled_from([2**40, -2**40]), min_size=1, max_size=3),
                     min_size=4, max_size=14),
       rows=st.lists(st.none() | st.integers(-45, 45), min_size=1, max_size=30))
def test_a_search_tree_over_integers_equals_the_or(spark, sets: list[list[int]], rows: list[int | None]) -> None:  # noqa: ANN001
    values = [v for members in sets for v in members]
    mask_rows(spark, "tree_integers", "v bigint", rows + values,
              [f"v IN ({', '.join(map(str, members))})" for members in sets], len(set(values)))


def mask_rows(spark, view: str, schema: str, rows: list, conditions: list[str], distinct: int) -> None:  # noqa: ANN001
    """The compiler's mask of the memberships ``conditions`` over ``view``'s one column ``v``
    (a search tree from :data:`SEARCH_FROM` distinct literals) against the OR of one CASE
    per condition, on every row."""
    from sqlglot import parse_one

    spark.createDataFrame([(v,) for v in rows], schema).createOrReplaceTempView(view)
    parsed = [(k, parse_one(c, dialect=SparkSeq)) for k, c in enumerate(conditions)]
    source = RelationSchema.build(view, SessionSchemas(spark)(view) or {})
    chosen = symbol_mask(parsed, source).sql(dialect=SparkSeq)
    assert ("v < " in chosen) == (distinct >= SEARCH_FROM), chosen
    by_or = mask_expression(parsed).sql(dialect=SparkSeq)
    got = spark.sql(f"SELECT v, {by_or} AS by_or, {chosen} AS chosen FROM {view}").collect()
    assert [r["chosen"] for r in got] == [r["by_or"] for r in got], (conditions, chosen, got)


def test_collations_and_char_reach_the_compiler(texts) -> None:  # noqa: ANN001
    assert type_text(T.StringType("UTF8_LCASE")) == "string collate UTF8_LCASE"
    assert type_text(T.StringType()) == "string"
    char = T.StructField("c", T.StringType(), metadata={CHAR_VARCHAR_KEY: "char(3)"})
    varchar = T.StructField("c", T.StringType(), metadata={CHAR_VARCHAR_KEY: "varchar(3)"})
    assert (field_type_text(char), field_type_text(varchar)) == ("char(3)", "string")
    types = SessionSchemas(texts)("masks_UTF8_LCASE")
    assert types is not None and types["v"].sql(dialect=SparkSeq) == "STRING COLLATE UTF8_LCASE"


def test_char_columns_keep_the_or(spark) -> None:  # noqa: ANN001
    """'a' and 'a ' are both 'a  ' to a CHAR(3): a row is both symbols."""
    spark.sql("DROP TABLE IF EXISTS masks_chars")
    spark.sql("CREATE TABLE masks_chars (k INT, ts TIMESTAMP, c CHAR(3)) USING parquet")
    try:
        spark.sql("INSERT INTO masks_chars VALUES (1, TIMESTAMP '2024-01-01 00:00:01', 'a'), "
                  "(1, TIMESTAMP '2024-01-01 00:00:02', 'a ')")
        types = SessionSchemas(spark)("masks_chars")
        assert types is not None and types["c"].sql(dialect=SparkSeq) == "CHAR(3)"
        [row] = sparkseq.sql(spark, "SELECT n FROM masks_chars MATCH_AGGREGATE (PARTITION BY k ORDER BY ts "
                                    "PATTERN SEQ(A, B) DEFINE A AS c = 'a', B AS c = 'a ' "
                                    "MEASURES COUNT(*) AS n) m").collect()
        assert row["n"] == 1
    finally:
        spark.sql("DROP TABLE IF EXISTS masks_chars")


STATEMENTS = ["SELECT k, n FROM lcase_events MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B) "
              "TYPE BY type MEASURES COUNT(*) AS n) AS m",
              "SELECT k, n FROM lcase_events MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(b, `a`) "
              "TYPE BY type MEASURES COUNT(*) AS n) AS m"]


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["a", "A", "b", "B", "c"])), min_size=1,
                     max_size=40))
def test_a_collated_type_column_counts_as_the_oracle(spark, rows: list[tuple[int, str]]) -> None:  # noqa: ANN001
    """Symbols 'A' and 'a' are different bits of the group's mask, but the same rows under
    UTF8_LCASE: one CASE would give an 'a' row only A's bit, and the second statement would
    miss its matches."""
    events = [(k, ts, value) for ts, (k, value) in enumerate(rows)]
    spark.createDataFrame(events, "k int, t int, type string").createOrReplaceTempView("lcase_base")
    spark.sql("CREATE OR REPLACE TEMP VIEW lcase_events AS SELECT k, timestamp_seconds(t) AS ts, "
              "type COLLATE UTF8_LCASE AS type FROM lcase_base")
    script = ";\n".join(STATEMENTS)
    assert len(sparkseq.plan_workload(spark, script).groups) == 1
    results = sparkseq.collect_workload(spark, script)
    plan = Plan(("X", "Y"), (Element(0), Element(1)), (0, 0, 0))  # COUNT(*) of SEQ(X, Y)
    for result, (first, second) in zip(results, [("a", "b"), ("b", "a")]):
        want = {}
        for key in {k for k, _ in rows}:
            own = [(ts, value.lower()) for ts, (k, value) in enumerate(rows) if k == key]
            mask = [(value == first) | (value == second) << 1 for _, value in own]
            if any(mask):
                [(_, _, [count])] = oracle.evaluate(oracle.Events([ts for ts, _ in own], mask), plan)
                want[key] = count
        assert result.arrow is not None
        assert dict(zip(result.arrow.column("k").to_pylist(), result.arrow.column("n").to_pylist())) == want
    sparkseq.release_workload(spark, script)
