"""Concept hierarchies in the compiler (no Spark): the CONCEPT HIERARCHY statements,
hierarchy validation, and HIERARCHY symbols at mixed levels, negated or not."""

from __future__ import annotations

import pytest

from sql_rewrites import errors as E
from sql_rewrites import rewrite
from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.hierarchy_statements import CreateHierarchy, DropHierarchy, parse_hierarchy_statement
from sql_rewrites.logical.hierarchy import ConceptHierarchy, resolve_hierarchy
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.syntax.statements import split_statements

SCHEMA = {"trades": {"k": "string", "ts": "bigint", "company": "string", "price": "double"}}
SECTORS = [("DELL", "Computer"), ("IBM", "Computer"), ("GS", "Finance"), ("JPM", "Finance"),
           ("Harvard", "Education"), ("MIT", "Education"), ("ANAT", "Insurance"),
           ("Computer", "Technology"), ("Finance", "Services"), ("Insurance", "Services"),
           ("Education", "Services")]


def parse(text: str) -> CreateHierarchy | DropHierarchy | None:
    (statement,) = split_statements(text)
    return parse_hierarchy_statement(statement, text)


def query(pattern: str, **kwargs: object) -> MatchAggregateQuery:
    text = (f"SELECT * FROM trades MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN {pattern} "
            "TYPE BY company HIERARCHY sectors WITHIN 10) AS m")
    (found,) = analyze_sql(text, SCHEMA, **({"hierarchies": {"Sectors": SECTORS}} | kwargs))  # type: ignore[arg-type]
    return found


# --- statements ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("CREATE CONCEPT HIERARCHY sectors FROM company_sector", CreateHierarchy("sectors", "company_sector")),
        ("create or replace concept hierarchy S from db.t", CreateHierarchy("S", "db.t", replace=True)),
        ("CREATE CONCEPT HIERARCHY `my h` FROM global_temp.`pairs x`",
         CreateHierarchy("my h", "global_temp.`pairs x`")),
        ("DROP CONCEPT HIERARCHY sectors", DropHierarchy("sectors")),
        ("drop concept hierarchy if exists sectors", DropHierarchy("sectors", if_exists=True)),
        ("CREATE VIEW concept AS SELECT 1", None),
        ("DROP VIEW concept", None),
        ("SELECT * FROM hierarchy", None),
    ],
)
def test_statements_parse(text: str, want: object) -> None:
    assert parse(text) == want


def test_source_key_is_unquoted_and_folded() -> None:
    found = parse("CREATE CONCEPT HIERARCHY h FROM Global_Temp.`Pairs`")
    assert isinstance(found, CreateHierarchy) and found.source_key == "global_temp.pairs"


@pytest.mark.parametrize(
    ("text", "phrase", "column", "underline"),
    [
        ("CREATE CONCEPT sectors FROM t", "expecting HIERARCHY after CREATE [OR REPLACE] CONCEPT, found 'sectors'",
         16, "^^^^^^^"),
        ("CREATE CONCEPT HIERARCHY sectors t", "expecting FROM <table or view", 34, "^"),
        ("CREATE CONCEPT HIERARCHY sectors FROM", "expecting a table or view name, found the end", 38, "^"),
        ("CREATE CONCEPT HIERARCHY sectors FROM t u", "expecting the end of the statement, found 'u'", 41, "^"),
        ("CREATE CONCEPT HIERARCHY FROM t", "expecting FROM <table", 31, "^"),
        ("CREATE CONCEPT HIERARCHY 'x' FROM t", "expecting a hierarchy name after CONCEPT HIERARCHY, found 'x'",
         26, "^^^"),
        ("DROP CONCEPT HIERARCHY", "expecting a hierarchy name after DROP CONCEPT HIERARCHY", 23, "^"),
        ("DROP CONCEPT HIERARCHY IF EXISTS a b", "expecting the end of the statement, found 'b'", 36, "^"),
        ("DROP CONCEPT sectors", "expecting HIERARCHY after DROP CONCEPT", 14, "^^^^^^^"),
    ],
)
def test_statement_errors_point_at_the_token(text: str, phrase: str, column: int, underline: str) -> None:
    with pytest.raises(E.SqlParseError) as info:
        parse(text)
    assert phrase in str(info.value), str(info.value)
    assert info.value.position is not None and (info.value.position.line, info.value.position.column) == (1, column)
    assert info.value.position.excerpt.splitlines()[1].endswith(underline)


def test_statement_position_in_a_script() -> None:
    text = "SELECT 1;\nDROP CONCEPT HIERARCHY IF EXISTS\n  a b"
    statement = split_statements(text)[1]
    with pytest.raises(E.SqlParseError) as info:
        parse_hierarchy_statement(statement, text)
    assert info.value.position is not None and (info.value.position.line, info.value.position.column) == (3, 5)


def test_compiler_alone_refuses_hierarchy_statements() -> None:
    with pytest.raises(E.SqlParseError, match="run by sparkseq.sql"):
        rewrite("CREATE CONCEPT HIERARCHY h FROM t", SCHEMA, lambda plan: "f")


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pairs", "phrase"),
    [
        ([], "hierarchy h is empty"),
        ([("a", None)], "the pair ('a', None) has a NULL parent"),
        ([(None, "a")], "the pair (None, 'a') has a NULL child"),
        ([("a", "b"), ("a", "c")], "'a' has two parents, 'b' and 'c'"),
        ([("a", "b"), ("b", "c"), ("c", "a")], "has a cycle: a -> b -> c -> a"),
        ([("a", "a")], "has a cycle: a -> a"),
        (["ab"], "'ab' is not a (child, parent) pair"),
    ],
)
def test_malformed_hierarchies(pairs: list[tuple[str, str]], phrase: str) -> None:
    with pytest.raises(E.HierarchyError) as info:
        ConceptHierarchy.build("h", pairs)
    assert phrase in str(info.value)
    with pytest.raises(E.HierarchyError, match=r"\bh\b"):  # also when a query resolves it
        resolve_hierarchy({"h": pairs}, "h")


def test_duplicate_pairs_are_fine() -> None:
    assert ConceptHierarchy.build("h", [("a", "b"), ("a", "b")]).parent_of == {"a": "b"}


def test_unknown_node_points_at_the_symbol() -> None:
    with pytest.raises(E.HierarchyError, match="'Retail' is not a node of hierarchy sectors") as info:
        query("SEQ(DELL, Retail)")
    assert info.value.position is not None and info.value.position.column > 0


def test_unknown_hierarchy_name_lists_known_ones() -> None:
    with pytest.raises(E.UnknownHierarchyError, match="unknown hierarchy sectors; known hierarchies: other"):
        query("SEQ(DELL)", hierarchies={"other": SECTORS})


def test_hierarchy_errors_come_from_the_query_too() -> None:
    with pytest.raises(E.HierarchyError, match="'GS' has two parents"):
        query("SEQ(DELL)", hierarchies={"sectors": [*SECTORS, ("GS", "Computer")]})


# --- HIERARCHY symbols --------------------------------------------------------------------


def test_mixed_levels_and_negated_coarse_symbol() -> None:
    found = query("SEQ(DELL, Finance, !Education, ANAT)")
    conditions = {s.name: s.condition.sql(dialect="spark") for s in found.symbols}
    assert conditions == {
        "DELL": "company IN ('DELL')",
        "Finance": "company IN ('Finance', 'GS', 'JPM')",
        "Education": "company IN ('Education', 'Harvard', 'MIT')",
        "ANAT": "company IN ('ANAT')",
    }
    assert found.plan.describe() == "SEQ(DELL, Finance, !Education, ANAT)"


def test_deep_coarse_symbol_covers_every_level_below() -> None:
    found = query("SEQ(Services, !Technology)")
    conditions = [s.condition.sql(dialect="spark") for s in found.symbols]
    assert conditions == [
        "company IN ('Services', 'ANAT', 'Education', 'Finance', 'GS', 'Harvard', 'Insurance', 'JPM', 'MIT')",
        "company IN ('Technology', 'Computer', 'DELL', 'IBM')",
    ]


def test_callable_resolver() -> None:
    asked: list[str] = []

    def resolver(name: str) -> list[tuple[str, str]] | None:
        asked.append(name)
        return SECTORS if name == "sectors" else None

    assert query("SEQ(Computer)", hierarchies=resolver).plan.length == 1 and asked == ["sectors"]
