"""Shared execution of a workload: many MATCH_AGGREGATE operators, one engine pass.

Operators of a workload (the statements of a script) that read the same relation
with the same PARTITION BY and ORDER BY form a *sharing group*. A group runs as one
query — one scan, one shuffle, one engine call per partition — whose engine function
evaluates every member's plan (a :class:`~udafs.multiplan.MultiPlan`):

* the members' symbols become one symbol table: conditions written identically share
  a bit, so each row's mask is computed once for all members;
* value columns are shared the same way;
* each member keeps its own pattern, windows, count type and measures; result rows
  carry the member's index, and members share the result fields (the j-th measure of
  every member of the same kind and type lands in one field), so the shared result is
  as wide as the widest member, however many members there are.

The group's pass reads :meth:`SharedGroup.events` (the engine's input rows) and returns,
per partition and member, the engine's raw values tagged with the member's index
(columns :attr:`SharedGroup.output_names`); it is cached once (``sparkseq.statements.workloads``),
without the window ends (:attr:`SharedGroup.cached_names`).
Each member's operator is then replaced by :meth:`SharedGroup.replacement`: a select of
its rows from the cached result, converted to the member's own output types exactly
as its stand-alone rewrite would.

Pure: analysed queries in, sqlglot trees out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp

from sql_rewrites.generation.generate import EngineInput, engine_events, engine_input, sanitize, symbol_mask
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.logical.sql_types import time_from_engine, time_to_engine
from sql_rewrites.syntax.dialect import SparkSeq
from udafs.multiplan import MultiPlan
from udafs.plan import MAX_SYMBOLS, Measure, Plan, funnel_measures

PLAN_COLUMN = "__sparkseq_plan"
WINDOW_START, WINDOW_END = "__sparkseq_ws", "__sparkseq_we"


def field_column(field: int) -> str:
    """The shared result's column of field ``field``."""
    return f"__sparkseq_f{field}"


def sharing_key(query: MatchAggregateQuery) -> tuple | None:
    """What operators must have in common to share one pass, or None for one that cannot
    share (an E-Cube, cross-event predicates or a selection strategy, imprecise
    timestamps, the funnel measures STEPS(*) / MAX_STEP(), a source that is not a plain table
    or view, a join on the operator)."""
    source = query.node.this
    if query.cube is not None or not isinstance(source, exp.Table) or query.single_plan.extended:
        return None
    if query.uncertainty is not None or funnel_measures(query.single_plan):  # STEPS(*): grouped path only
        return None
    if query.node.args.get("joins") or query.node.args.get("laterals") or source.args.get("joins"):
        return None
    keys = tuple((k.name.casefold(), k.expression.sql(dialect=SparkSeq)) for k in query.partition_keys)
    order = (query.order.expression.sql(dialect=SparkSeq), query.order.kind)
    return source.sql(dialect=SparkSeq), keys, order


@dataclass(frozen=True)
class Member:
    """One operator of a group: its statement, its place among the statement's operators."""

    statement: int
    ordinal: int
    query: MatchAggregateQuery


@dataclass(frozen=True)
class SharedGroup:
    """Members, their MultiPlan and how to read each member's rows (module docstring)."""

    members: tuple[Member, ...]
    plan: MultiPlan
    symbols: tuple[tuple[str, exp.Expr], ...]  # union: (name, condition)
    values: tuple[exp.Expr, ...]  # union value expressions, engine-typed

    def events(self) -> tuple[exp.Select, tuple[str, ...]]:
        """The engine's input rows of the group — keys, time, the union mask, the union
        values (:func:`sql_rewrites.generation.generate.engine_events`) — and those columns' names."""
        first = self.members[0].query
        conditions = [condition for _, condition in self.symbols]
        spec = EngineInput(
            plan=self.plan,
            keys=tuple((k.name, k.expression) for k in first.partition_keys),
            time=time_to_engine(first.order.expression.copy(), first.order.kind),
            mask=symbol_mask(list(enumerate(conditions)), first.source_schema),
            values=self.values,
            measures=(),
        )
        return engine_events(spec, first.node.this.copy())

    @property
    def output_names(self) -> tuple[str, ...]:
        """Columns of the group's pass after the keys: member index, window bounds, fields."""
        return (PLAN_COLUMN, WINDOW_START, WINDOW_END, *(field_column(f) for f in range(len(self.plan.fields))))

    @property
    def cached_names(self) -> tuple[str, ...]:
        """The columns of the pass kept in the cached result: all but the window end, which
        is the window start plus the member's WITHIN (:meth:`replacement` adds it back)."""
        return tuple(name for name in self.output_names if name != WINDOW_END)

    def output_columns(self, index: int) -> tuple[tuple[str, exp.Expr], ...]:
        """Member ``index``'s output columns over the group's result: (name, value from the
        result's columns), typed as its own rewrite would be, in the operator's order."""
        query = self.members[index].query
        columns: list[tuple[str, exp.Expr]] = [(k.name, exp.column(k.name)) for k in query.partition_keys]
        if query.plan.slide is not None:
            end = exp.Add(this=exp.column(WINDOW_START), expression=exp.Literal.number(query.plan.within))
            for bound, name in ((exp.column(WINDOW_START), "window_start"), (end, "window_end")):
                columns.append((name, time_from_engine(bound, query.order.kind, query.order.column.dtype)))
        for measure, field in zip(query.measures, self.plan.slots[index]):
            columns.append((measure.name, measure.from_engine(exp.column(field_column(field)))))
        return tuple(columns)

    def replacement(self, index: int, table: str) -> exp.Subquery:
        """Member ``index``'s operator as a select of its rows from the cached ``table``,
        typed and named as its own rewrite would be."""
        query = self.members[index].query
        projections = [exp.alias_(value, name) for name, value in self.output_columns(index)]
        select = exp.select(*projections).from_(exp.to_table(table)).where(
            exp.EQ(this=exp.column(PLAN_COLUMN), expression=exp.Literal.number(index)))
        alias = query.node.args.get("alias")
        sanitize(select)
        return exp.Subquery(this=select, alias=alias.copy() if alias else None)


def group_members(members: Sequence[Member]) -> list[SharedGroup]:
    """Sharing groups of two or more members (in order of first appearance); members that
    share with nobody are left out. A group whose symbols would exceed the 63-bit mask
    is split."""
    by_key: dict[tuple, list[Member]] = {}
    for member in members:
        key = sharing_key(member.query)
        if key is not None:
            by_key.setdefault(key, []).append(member)
    groups = []
    for same in by_key.values():
        for chunk in _chunks(same):
            if len(chunk) > 1:
                groups.append(build_group(chunk))
    return groups


def _chunks(members: list[Member]) -> list[list[Member]]:
    """Consecutive chunks whose union of symbol conditions fits the mask."""
    chunks: list[list[Member]] = [[]]
    seen: set[str] = set()
    for member in members:
        conditions = {s.condition.sql(dialect=SparkSeq) for s in member.query.symbols}
        if len(seen | conditions) > MAX_SYMBOLS and chunks[-1]:
            chunks.append([])
            seen = set()
        chunks[-1].append(member)
        seen |= conditions
    return chunks


def build_group(members: Sequence[Member]) -> SharedGroup:
    """The MultiPlan of ``members`` over their union of symbols and value columns."""
    symbol_index: dict[str, int] = {}
    symbols: list[tuple[str, exp.Expr]] = []
    value_index: dict[tuple[str, str], int] = {}
    values: list[exp.Expr] = []
    value_types: list = []
    plans, slots = [], []
    fields: list[Measure] = []
    field_index: dict[tuple, int] = {}
    for member in members:
        query = member.query
        bits = []
        for spec in query.symbols:
            text = spec.condition.sql(dialect=SparkSeq)
            if text not in symbol_index:
                symbol_index[text] = len(symbols)
                symbols.append((spec.name, spec.condition))
            bits.append(symbol_index[text])
        columns = []
        for column in query.value_columns:
            engine = column.to_engine(column.expression.copy())
            key = (engine.sql(dialect=SparkSeq), column.value_type.value)
            if key not in value_index:
                value_index[key] = len(values)
                values.append(engine)
                value_types.append(column.value_type)
            columns.append(value_index[key])
        plan = query.single_plan  # sharing_key: no E-Cube is shared
        plans.append((plan, bits, columns))
        slot = []
        for j, m in enumerate(plan.measures):
            shared_column = None if m.column is None else columns[m.column]
            # members share fields (rows carry the member index): the result is as wide as
            # the widest member, not the sum of all members' measures
            field_key = (j, m.kind, None if shared_column is None else value_types[shared_column], plan.count_type,
                         m.places, m.digits)
            if field_key not in field_index:
                field_index[field_key] = len(fields)
                fields.append(Measure(m.kind, None, shared_column, f"f{len(fields)}", m.places, m.digits))
            slot.append(field_index[field_key])
        slots.append(tuple(slot))
    names = tuple(name for name, _ in symbols)
    remapped = tuple(_remap(plan, bits, columns, names, tuple(value_types)) for plan, bits, columns in plans)
    mp = MultiPlan(remapped, tuple(fields), tuple(slots), (None,) * len(remapped), (False,) * len(remapped))
    return SharedGroup(tuple(members), mp, tuple(symbols), tuple(values))


def symbol_keys(group: SharedGroup) -> tuple[str, ...]:
    """The key of each symbol of the group, by which statistics name it: its condition as SQL."""
    return tuple(condition.sql(dialect=SparkSeq) for _, condition in group.symbols)


def statistics_sql(group: SharedGroup, *, sample_every: int = 1, big_key_rows: int | None = None) -> str:
    """One aggregate over the group's source: its partitions (``partitions``) and per
    symbol ``k`` the rows of its condition (``c<k>``). With ``sample_every`` above 1 the
    counts are of the rows whose hash of partition keys and time is 0 modulo
    ``sample_every`` (about one in ``sample_every``, the same rows for the same data), and
    ``partitions`` the keys that sample holds.

    With ``big_key_rows``, the same scan also measures the keys with more rows than that
    (every source row counted, as the time-split query counts them): ``big``, an array of
    ``(n, t0, t1, h)`` — rows, first and last engine time, ``xxhash64`` of the key values
    as the time-split query computes it (NULL without PARTITION BY) — one entry per such
    key, so that a sharing group's paths and its timelines come from one job."""
    first = group.members[0].query
    keys = [k.expression.copy() for k in first.partition_keys]
    sampled: exp.Expr | None = None
    if sample_every > 1:
        hashed = exp.Anonymous(this="hash", expressions=[*(k.copy() for k in keys), first.order.expression.copy()])
        sampled = exp.EQ(this=exp.Anonymous(this="pmod", expressions=[hashed, exp.Literal.number(sample_every)]),
                         expression=exp.Literal.number(0))
    whole = big_key_rows is not None  # every row is read: the sample is a condition of each count

    def rows_where(condition: exp.Expr) -> exp.Expr:
        if whole and sampled is not None:
            condition = exp.and_(sampled.copy(), condition.copy())
        return exp.Sum(this=exp.case().when(condition.copy(), exp.Literal.number(1)).else_(exp.Literal.number(0)))

    columns = [exp.alias_(rows_where(condition), f"c{k}") for k, (_, condition) in enumerate(group.symbols)]
    if whole:
        spec = engine_input(first)
        key_hash = (exp.Max(this=exp.Anonymous(this="xxhash64", expressions=[e.copy() for _, e in spec.keys]))
                    if spec.keys else exp.cast(exp.null(), "BIGINT"))
        columns += [exp.alias_(exp.Count(this=exp.Star()), "n"), exp.alias_(exp.Min(this=spec.time.copy()), "t0"),
                    exp.alias_(exp.Max(this=spec.time.copy()), "t1"), exp.alias_(key_hash, "h")]
        if sampled is not None:
            columns.append(exp.alias_(rows_where(exp.true()), "s"))
    inner = exp.select(*columns).from_(first.node.this.copy())
    if sampled is not None and not whole:
        inner = inner.where(sampled)
    if keys:
        inner = inner.group_by(*keys)
    counts = [exp.alias_(exp.Sum(this=exp.column(f"c{k}")), f"c{k}") for k in range(len(group.symbols))]
    partitions: exp.Expr = exp.Count(this=exp.Star()) if keys else exp.Literal.number(1)
    if keys and whole and sampled is not None:  # the keys the sample holds, as without big keys
        partitions = exp.Sum(this=exp.case().when(exp.GT(this=exp.column("s"), expression=exp.Literal.number(0)),
                                                  exp.Literal.number(1)).else_(exp.Literal.number(0)))
    select = exp.select(exp.alias_(partitions, "partitions"), *counts).from_(inner.subquery("per_key"))
    if whole:
        entry = exp.Anonymous(this="named_struct", expressions=[
            part for name in ("n", "t0", "t1", "h") for part in (exp.Literal.string(name), exp.column(name))])
        big = exp.Anonymous(this="collect_list", expressions=[exp.case().when(
            exp.GT(this=exp.column("n"), expression=exp.Literal.number(big_key_rows)), entry)])
        select = select.select(exp.alias_(big, "big"))
    sanitize(select)
    return select.sql(dialect=SparkSeq)


def _remap(plan: Plan, bits: list[int], columns: list[int], names: tuple[str, ...], value_types: tuple) -> Plan:
    """``plan`` over the group's symbol table and value columns."""
    def mask(m: int) -> int:
        return sum(1 << bits[k] for k in range(len(bits)) if m >> k & 1)

    return Plan(
        symbols=names,
        elements=tuple(dataclasses.replace(e, symbol=bits[e.symbol]) for e in plan.elements),
        negations=tuple(mask(g) for g in plan.negations),
        within=plan.within,
        slide=plan.slide,
        measures=tuple(Measure(m.kind, None if m.symbol is None else bits[m.symbol],
                               None if m.column is None else columns[m.column], m.name, m.places, m.digits)
                       for m in plan.measures),
        columns=value_types,
        count_type=plan.count_type,
    )


__all__ = ["SharedGroup", "Member", "group_members", "build_group", "sharing_key", "field_column", "PLAN_COLUMN"]
