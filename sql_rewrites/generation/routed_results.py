"""A sharing group's result rows routed to the statements that only select a member's columns.

Delivering a workload's results (``sparkseq.collect_workload``, ``workload(output=...)``)
as a union of each statement's own select from the group's result scans that result once
per statement (20 statements: 20 scans of millions of rows), and needs the result cached
to compute the pass only once. Most statements of a workload do nothing with their
operator but return some of its columns::

    SELECT k, window_start, n FROM clicks MATCH_AGGREGATE (...) AS m

Such a statement's rows are its member's rows of the group's result, converted as its
own rewrite converts them (:meth:`sql_rewrites.generation.shared.SharedGroup.output_columns`). So
every such statement of a group is read by ONE select over the pass
(:func:`routed_select`): each row goes to the statement of its member — the member
index gives the statement number (looked up in an array) and, by a ``CASE`` on it,
fills that statement's columns of the result table (a column every routed member fills
with the same value, as statements of one layout over members of one kind do, is read
as it is) — and rows of members no such statement reads are left out. The pass is then
read once, by the job that delivers the results, and needs no cache.

:func:`selected_columns` recognises the statements (only column selections: ``*``,
``m.*``, column names, renamed or not; no ``WHERE``, joins, grouping, ordering, limits,
``DISTINCT``, CTEs or expressions). Pure: analysed queries in, Spark SQL text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp

from sql_rewrites.generation.shared import PLAN_COLUMN, SharedGroup
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.logical.sql_types import DType
from sql_rewrites.syntax.dialect import SparkSeq, sanitize

#: The only clauses a statement that selects its operator's columns may have.
_SELECTING = frozenset({"expressions", "from_"})


def selected_columns(query: MatchAggregateQuery, place: exp.Expr | None = None) -> tuple[str, ...] | None:
    """The operator's output columns, in order, that the statement holding it returns when
    it only selects them (module docstring); None for any other statement. ``place`` is the
    node in the operator's place in the statement's tree: the operator itself (the
    default), or, once the statement is rewritten, its replacement
    (:attr:`sql_rewrites.rewriter.OperatorExplanation.replacement`)."""
    place = query.node if place is None else place
    select = place.parent.parent if isinstance(place.parent, exp.From) else None
    if not isinstance(select, exp.Select) or select.parent is not None:
        return None  # not the FROM of the statement's top-level SELECT
    if {name for name, value in select.args.items() if value} - _SELECTING:
        return None
    outputs = {o.name.casefold(): o.name for o in query.outputs}
    alias = query.alias.casefold()
    columns: list[str] = []
    for projection in select.expressions:
        value = projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(value, exp.Star):
            columns += [o.name for o in query.outputs]
            continue
        if not isinstance(value, exp.Column) or value.args.get("db") or value.args.get("catalog"):
            return None
        if value.table and value.table.casefold() != alias:
            return None
        if isinstance(value.this, exp.Star):
            if isinstance(projection, exp.Alias):
                return None
            columns += [o.name for o in query.outputs]
            continue
        name = outputs.get(value.name.casefold())
        if name is None:
            return None
        columns.append(name)
    return tuple(columns)


@dataclass(frozen=True)
class Route:
    """Member ``member``'s rows go to statement ``statement``: its output ``columns`` (names
    of :meth:`SharedGroup.output_columns`) into the result table's columns ``targets``."""

    member: int
    statement: int
    columns: tuple[str, ...]
    targets: tuple[str, ...]


def routed_select(group: SharedGroup, table: str, routes: Sequence[Route], statement_column: str) -> str:
    """One select over the group's result ``table`` giving every routed statement its rows:
    ``statement_column`` (the statement number) and each route's target columns (NULL in
    rows of other statements). ``routes`` is not empty; members are routed at most once.

    Raises
    ------
    ValueError
        A member routed twice, or a route whose columns and targets differ in number.
    """
    members = [route.member for route in routes]
    if len(set(members)) != len(members):
        raise ValueError("a member's rows can go to one statement only")
    member = exp.column(PLAN_COLUMN)
    filled: dict[str, list[tuple[int, exp.Expr]]] = {}
    for route in routes:
        if len(route.columns) != len(route.targets):
            raise ValueError(f"statement {route.statement}: {len(route.columns)} columns for "
                             f"{len(route.targets)} targets")
        values = dict(group.output_columns(route.member))
        for column, target in zip(route.columns, route.targets):
            filled.setdefault(target, []).append((route.member, values[column]))
    projections = [exp.alias_(_statement_numbers(member, routes), statement_column)] + [
        exp.alias_(_filled(member, by_member, len(routes)), target) for target, by_member in filled.items()]
    where = exp.In(this=member.copy(), expressions=[exp.Literal.number(m) for m in members])
    select = exp.select(*projections).from_(exp.to_table(table)).where(where)
    return sanitize(select).sql(dialect=SparkSeq)


def _statement_numbers(member: exp.Column, routes: Sequence[Route]) -> exp.Expr:
    """The statement number of a row of a routed member: looked up by member index in an
    array of the statement numbers (NULL at members not routed; the select's WHERE keeps
    only routed members' rows, so the index is always in it). One lookup a row, where a
    ``CASE`` on the member compares up to one branch per routed statement: with 120
    statements the delivering job of 20 M rows took about 0.3 s longer (ad hoc)."""
    statements = {route.member: route.statement for route in routes}
    numbers = exp.Array(expressions=[exp.Literal.number(statements[m]) if m in statements else exp.null()
                                     for m in range(max(statements) + 1)])
    index = exp.Add(this=exp.cast(member.copy(), DType.INT), expression=exp.Literal.number(1))
    return exp.Anonymous(this="element_at", expressions=[numbers, index])


def _filled(member: exp.Column, values: list[tuple[int, exp.Expr]], routed: int) -> exp.Expr:
    """A target column's value in rows of the members in ``values`` (member index, value),
    NULL in rows of the other routed members (``routed`` in all): the value itself when
    every routed member gives the same one (statements with one layout over members of one
    kind: no CASE to evaluate per row), else a CASE on the member."""
    first = values[0][1]
    if len(values) == routed and all(value == first for _, value in values):
        return first.copy()
    case = exp.Case(this=member.copy())
    for index, value in values:
        case = case.when(exp.Literal.number(index), value.copy(), copy=False)  # built here: no copy of the CASE so far
    return case


__all__ = ["Route", "routed_select", "selected_columns"]
