"""Generation: an analysed MATCH_AGGREGATE -> a plain Spark SQL subquery.

The operator becomes three nested SELECTs, built as sqlglot trees (never by pasting
user text) with every identifier quoted::

    SELECT k, <window bounds>, CAST(r.m0 AS <type>) AS funnels, ...     -- typed output
    FROM (
      SELECT k, <engine fn of the plan>(__ts, __mask[, __seq], __v0, ...) AS __result
      FROM (
        SELECT k, unix_micros(ts) AS __ts,                                -- engine time
               CAST((CASE WHEN <define 0> THEN 1 ELSE 0 END)
                  | (CASE WHEN <define 1> THEN 2 ELSE 0 END) ... AS BIGINT) AS __mask,
               [DENSE_RANK() OVER ([PARTITION BY k] ORDER BY ts) AS __seq,]  -- contiguity only
               <value columns> AS __v0, ...
        FROM <source>) AS __events
      WHERE __mask <> 0 AND __ts IS NOT NULL     -- rows of no symbol never reach Python
      GROUP BY k) AS __groups
    LATERAL VIEW INLINE(__result) __r AS __ws, __we, __m0, ..., __error
    WHERE CASE WHEN __error IS NULL THEN TRUE
               ELSE raise_error(replace(__error, '{partition}', to_json(named_struct('k', k)))) END

Without PARTITION BY the events are grouped by a constant, so empty input gives no
row. Internal names (``__sparkseq_*``) are chosen not to collide with the partition
keys. The engine function's contract is in :mod:`udafs.contract`.

:func:`engine_query` builds the same shape from an :class:`EngineInput` (keys, time,
mask and value expressions, measure conversions), for callers that start from a
``Plan`` rather than from MATCH_AGGREGATE text (``sparkseq.running.queries``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlglot import exp

from sql_rewrites import engine_contract
from sql_rewrites.clauses.exclusive_symbols import (
    ValueBits,
    exclusive,
    mask_expression,
    one_case,
    value_bits,
    value_branches,
)
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.logical.schema import RelationSchema
from sql_rewrites.logical.sql_types import DType, time_from_engine, time_to_engine
from sql_rewrites.syntax.dialect import sanitize
from udafs.multiplan import MultiPlan
from udafs.plan import Plan, Strategy

FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class InternalNames:
    """Fresh ``__sparkseq_<role>`` names that no partition key already uses."""

    def __init__(self, taken: Iterable[str]) -> None:
        self._taken = {name.casefold() for name in taken}

    def __call__(self, role: str) -> str:
        name = f"__sparkseq_{role}"
        while name.casefold() in self._taken:
            name = f"_{name}"
        self._taken.add(name.casefold())
        return name


def check_function_name(name: str) -> str:
    """The engine function name, checked to be a plain (optionally dotted) identifier.

    Raises
    ------
    ValueError
        For anything else: the name is printed unquoted into the SQL.
    """
    if not isinstance(name, str) or not FUNCTION_NAME.match(name):
        raise ValueError(f"engine function name must be an identifier like sparkseq_match_0, got {name!r}")
    return name


@dataclass(frozen=True)
class EngineInput:
    """One engine call, independent of how it was specified (MATCH_AGGREGATE or a Plan).

    ``keys`` are (output name, expression over the source) pairs; ``time``, ``mask``
    and ``values`` the engine's int64 time, int64 symbol mask and value columns (typed
    as :mod:`sql_rewrites.engine_contract` says); ``bound`` turns an engine window
    bound into the output column, ``measures`` pair each output name with the
    conversion of the engine's value. ``instances``, when set, is the bitmask of the
    symbols whose rows take part (for masks that carry other bits too); otherwise
    every row with a non-zero mask does. With a :class:`~udafs.multiplan.MultiPlan`
    each result row also carries the index of its plan; ``per_plan`` are the output
    columns computed from it (an E-Cube's ``pattern`` and ``levels``), placed after the
    window bounds. ``windows`` names the window bound columns and keeps them even when
    the first plan has no SLIDE (a workload's plans may differ); by default they are
    ``window_start``/``window_end``, present with SLIDE. ``seq`` is the contiguity rank
    (:func:`contiguity_rank`), required exactly when the plan has a contiguity strategy;
    it is computed over the source before any row is filtered out. ``bounds`` are the
    engine times of each row's first and last possible time, exactly when the plan has
    imprecise timestamps (``plan.uncertain``).
    """

    plan: Plan | MultiPlan
    keys: tuple[tuple[str, exp.Expr], ...]
    time: exp.Expr
    mask: exp.Expr
    values: tuple[exp.Expr, ...]
    measures: tuple[tuple[str, Callable[[exp.Expr], exp.Expr]], ...]
    bound: Callable[[exp.Expr], exp.Expr] = lambda value: value
    instances: int | None = None
    per_plan: tuple[tuple[str, Callable[[exp.Expr], exp.Expr]], ...] = ()
    seq: exp.Expr | None = None
    bounds: tuple[exp.Expr, exp.Expr] | None = None


def generate(query: MatchAggregateQuery, function_name: str, source: exp.Expr | None = None) -> exp.Subquery:
    """The plain Spark SQL subquery that replaces ``query.node``.

    Parameters
    ----------
    query : MatchAggregateQuery
        The analysed operator.
    function_name : str
        Name of the registered engine function for ``query.plan``.
    source : sqlglot expression, optional
        The operator's input as it stands now (default ``query.node.this``); differs
        when an inner operator has already been replaced.
    """
    return aliased(query, engine_query(engine_input(query), function_name, (source or query.node.this).copy()))


def engine_input(query: MatchAggregateQuery) -> EngineInput:
    """The engine call of an analysed operator: keys, time, mask, values, measures."""
    order = query.order
    return EngineInput(
        plan=query.plan,
        keys=tuple((k.name, k.expression) for k in query.partition_keys),
        time=time_to_engine(order.expression.copy(), order.kind),
        mask=_mask(query),
        values=tuple(column.to_engine(column.expression.copy()) for column in query.value_columns),
        measures=tuple((m.name, m.from_engine) for m in query.measures),
        bound=lambda value: time_from_engine(value, order.kind, order.column.dtype),
        per_plan=_cube_columns(query),
        seq=contiguity_rank(query.plan, [k.expression for k in query.partition_keys], order.expression),
        bounds=None if query.uncertainty is None else (time_to_engine(query.uncertainty.lo.copy(), order.kind),
                                                       time_to_engine(query.uncertainty.hi.copy(), order.kind)),
    )


def aliased(query: MatchAggregateQuery, output: exp.Select) -> exp.Subquery:
    """``output`` as the operator's replacement: a subquery with the operator's alias."""
    alias = query.node.args.get("alias")
    return sanitize(exp.Subquery(this=output, alias=alias.copy() if alias else None))  # type: ignore[return-value]


def contiguity_rank(plan: Plan | MultiPlan, keys: list[exp.Expr], time: exp.Expr) -> exp.Expr | None:
    """The engine's ``seq`` argument for a contiguity strategy, None for other plans.

    STRICT CONTIGUITY: ``DENSE_RANK() OVER (ORDER BY time)`` over the whole input;
    PARTITION CONTIGUITY: ``DENSE_RANK() OVER (PARTITION BY keys ORDER BY time)``. Both
    rank every row of the source (also rows that are no instance of any symbol), as
    docs/predicates-and-strategies.md section 4 requires.
    """
    if isinstance(plan, MultiPlan) or not plan.strategy.contiguous:
        return None
    strict = plan.strategy is Strategy.STRICT_CONTIGUITY
    window = exp.Window(
        this=exp.Anonymous(this="dense_rank", expressions=[]),
        partition_by=None if strict or not keys else [k.copy() for k in keys],
        order=exp.Order(expressions=[exp.Ordered(this=time.copy())]),
    )
    return exp.cast(window, DType.BIGINT)


def _cube_columns(query: MatchAggregateQuery) -> tuple[tuple[str, Callable[[exp.Expr], exp.Expr]], ...]:
    """An E-Cube's ``pattern`` and ``levels`` looked up by plan index (literal arrays)."""
    cube = query.cube
    if cube is None:
        return ()
    texts = exp.Array(expressions=[exp.Literal.string(t) for t in cube.texts])
    levels = exp.Array(expressions=[levels_literal(row) for row in cube.levels])

    def pick(values: exp.Expr) -> Callable[[exp.Expr], exp.Expr]:
        return lambda index: exp.Anonymous(
            this="element_at",
            expressions=[values.copy(), exp.cast(exp.Add(this=index, expression=exp.Literal.number(1)), "INT")])

    return (("pattern", pick(texts)), ("levels", pick(levels)))


def levels_literal(levels: Iterable[int | None]) -> exp.Expr:
    """A cuboid's ``levels`` value (its elements' hierarchy depths, NULL for other symbols)
    as a literal ``ARRAY<INT>``."""
    return exp.cast(exp.Array(expressions=[exp.null() if v is None else exp.Literal.number(v) for v in levels]),
                    exp.DataType.build("ARRAY<INT>"))


def engine_query(spec: EngineInput, function_name: str, source: exp.Expr) -> exp.Select:
    """The three nested SELECTs (module docstring) computing ``spec`` over ``source``.

    Every identifier is quoted and every comment dropped.

    Raises
    ------
    ValueError
        When ``function_name`` is not a plain identifier, or the values do not match
        ``spec.plan.columns``.
    """
    if len(spec.values) != len(spec.plan.columns):
        raise ValueError(f"the plan declares {len(spec.plan.columns)} value columns, got {len(spec.values)}")
    contiguous = not isinstance(spec.plan, MultiPlan) and spec.plan.strategy.contiguous
    if contiguous != (spec.seq is not None):
        raise ValueError("a contiguity strategy needs the seq rank (and other plans take none)")
    if (not isinstance(spec.plan, MultiPlan) and spec.plan.uncertain is not None) != (spec.bounds is not None):
        raise ValueError("imprecise timestamps need the possible-time bounds (and other plans take none)")
    roles = engine_roles(spec)
    events = events_select(spec, source, roles)
    groups = _groups_select(spec, events, check_function_name(function_name), roles)
    return sanitize(output_select(spec, groups, roles))  # type: ignore[return-value]


def engine_events(spec: EngineInput, source: exp.Expr, *, extra: tuple[tuple[str, exp.Expr], ...] = (),
                  all_rows: bool = False) -> tuple[exp.Select, tuple[str, ...]]:
    """The engine's input rows as a query: the partition keys, then the int64 time, the
    int64 mask and the value columns (names returned, in that order), only rows that are
    an instance of some symbol (every row with ``all_rows``) and have a time — what the
    engine function is fed, for callers that group the rows themselves (a workload's
    shared pass, a live stream). ``extra`` columns ``(name, expression)`` come last."""
    roles = engine_roles(spec)
    events = events_select(spec, source, roles)
    for name, expression in extra:
        events = events.select(exp.alias_(expression, name), copy=False)
    mask: exp.Expr = exp.column(roles.mask)
    if spec.instances is not None:
        mask = exp.paren(exp.BitwiseAnd(this=mask, expression=exp.Literal.number(spec.instances)))
    condition: exp.Expr = exp.column(roles.ts).is_(exp.null()).not_()
    if not all_rows:
        condition = exp.and_(exp.NEQ(this=mask, expression=exp.Literal.number(0)), condition)
    select = exp.select("*").from_(events.subquery(roles.events, copy=False), copy=False).where(condition, copy=False)
    return sanitize(select), (roles.ts, roles.mask, *roles.values)  # type: ignore[return-value]


def engine_roles(spec: EngineInput) -> Roles:
    """The internal column names of ``spec``'s generated queries (fresh against its keys)."""
    return Roles(InternalNames(name for name, _ in spec.keys), len(spec.values), len(spec.measures))


def result_columns(spec: EngineInput) -> tuple[str, ...]:
    """Names of the engine's result fields in the generated queries, in the contract's
    order: window start, window end, one per measure, the error."""
    roles = engine_roles(spec)
    return (roles.window_start, roles.window_end, *roles.measures, roles.error)


def flat_output(spec: EngineInput, relation: str) -> exp.Select:
    """The typed output (what the batch rewrite's outer select computes) over a relation
    holding one row per result: the partition keys by name and :func:`result_columns`."""
    roles = engine_roles(spec)
    select = exp.select(*output_projections(spec, roles, roles.groups, roles.groups)).from_(
        exp.to_table(relation).as_(roles.groups))
    return sanitize(select.where(_raise_on_error(spec, roles, roles.groups)))  # type: ignore[return-value]


class Roles:
    """The internal names of one generated query."""

    def __init__(self, names: InternalNames, n_values: int, n_measures: int) -> None:
        self.fresh = names  # more internal names for callers that build on these queries
        self.ts, self.mask, self.result = names("ts"), names("mask"), names("result")
        self.values = [names(f"v{i}") for i in range(n_values)]
        self.events, self.groups, self.row = names("events"), names("groups"), names("r")
        self.window_start, self.window_end = names("window_start"), names("window_end")
        self.measures = [names(f"m{i}") for i in range(n_measures)]
        self.error = names("error")
        self.plan_index = names("plan")
        self.all_rows = names("all_rows")
        self.seq = names("seq")
        self.event_time = names("event_time")
        self.lo, self.hi = names("lo"), names("hi")


def events_select(spec: EngineInput, source: exp.Expr, roles: Roles) -> exp.Select:
    keys = [exp.alias_(expression, name) for name, expression in spec.keys]
    if not keys:  # one group over all rows, and none over no rows (unlike a global aggregate)
        keys = [exp.alias_(exp.Literal.number(0), roles.all_rows)]
    time = exp.alias_(spec.time, roles.ts)  # alias_ copies what it is given
    mask = exp.alias_(spec.mask, roles.mask)
    values = [exp.alias_(value, name) for value, name in zip(spec.values, roles.values)]
    if spec.bounds is not None:  # imprecise timestamps: first and last possible time
        values[0:0] = [exp.alias_(b, name) for b, name in zip(spec.bounds, (roles.lo, roles.hi))]
    if spec.seq is not None:  # window functions run before the groups select drops rows
        values.insert(0, exp.alias_(spec.seq, roles.seq))
    # built fresh here, so the builders need not copy (each copy is of the whole tree so far)
    return exp.select(*keys, time, mask, *values, copy=False).from_(source.copy(), copy=False)


def _mask(query: MatchAggregateQuery) -> exp.Expr:
    return symbol_mask([(symbol.index, symbol.condition) for symbol in query.symbols], query.source_schema)


def symbol_mask(conditions: list[tuple[int, exp.Expr]], source: RelationSchema) -> exp.Expr:
    """The row mask of the symbol conditions ``(k, c_k)`` over ``source``: a search tree over
    the literals where every condition is a plain membership of one column and there are
    many literals (:func:`search_tree`); one CASE with a branch per symbol where the
    conditions exclude each other (:func:`sql_rewrites.clauses.exclusive_symbols.exclusive`), one
    CASE with a branch per set of bits where each is a plain membership of one column
    (:func:`sql_rewrites.clauses.exclusive_symbols.value_branches`), else the OR of one CASE per
    symbol; every form gives every row the same bits."""
    found = value_bits(conditions, source)
    if found is not None and len(found[1]) >= SEARCH_FROM:
        return search_tree(*found)
    if exclusive([c for _, c in conditions], source):
        return mask_expression(conditions, exclusive=True)
    branches = value_branches(conditions, source)
    return mask_expression(conditions) if branches is None else one_case(branches)


#: Literals from which a membership mask is a search tree rather than one CASE, and the
#: most a leaf of the tree compares one by one.
SEARCH_FROM = 8
SEARCH_LEAF = 4


def search_tree(column: exp.Column, values: list[ValueBits]) -> exp.Expr:
    """The mask of plain memberships of ``column`` (:func:`sql_rewrites.clauses.exclusive_symbols.value_bits`)
    as a binary search over its literals in the column's order: ``CASE WHEN col < pivot THEN
    <lower half> ELSE <upper half> END`` down to leaves of at most :data:`SEARCH_LEAF`
    literals, each ``CASE WHEN col = v THEN bits ... ELSE 0 END``. A row's value takes
    about log2(n) comparisons instead of up to n, and the same bits: the order is the one
    Spark compares the column by (whole numbers, or strings of the binary collation byte
    by byte), so the value equals no literal outside its half. A NULL value fails every
    ``<`` and ``=``, and gets 0."""
    ordered = sorted(values, key=lambda v: v.order)

    def tree(part: list[ValueBits]) -> exp.Expr:
        if len(part) <= SEARCH_LEAF:
            case = exp.case()
            for v in part:  # built fresh: no copies (a builder's copy is of the whole CASE so far)
                case = case.when(exp.EQ(this=column.copy(), expression=v.literal.copy()), exp.Literal.number(v.bits),
                                 copy=False)
            return case.else_(exp.Literal.number(0), copy=False)
        half = len(part) // 2
        below = exp.LT(this=column.copy(), expression=part[half].literal.copy())
        return exp.case().when(below, tree(part[:half]), copy=False).else_(tree(part[half:]), copy=False)

    return exp.cast(tree(ordered), DType.BIGINT)


def _groups_select(spec: EngineInput, events: exp.Select, function_name: str, roles: Roles) -> exp.Select:
    keys = [exp.column(name) for name, _ in spec.keys] or [exp.column(roles.all_rows)]
    arguments = [exp.column(roles.ts), exp.column(roles.mask)]  # the plan is bound into the function
    if spec.seq is not None:
        arguments.append(exp.column(roles.seq))
    if spec.bounds is not None:
        arguments += [exp.column(roles.lo), exp.column(roles.hi)]
    arguments += [exp.column(name) for name in roles.values]
    call = exp.Anonymous(this=function_name, expressions=arguments)
    mask: exp.Expr = exp.column(roles.mask)
    if spec.instances is not None:
        mask = exp.paren(exp.BitwiseAnd(this=mask, expression=exp.Literal.number(spec.instances)))
    select = (
        exp.select(*keys, exp.alias_(call, roles.result), copy=False)
        .from_(events.subquery(roles.events, copy=False), copy=False)
        .where(
            exp.and_(
                exp.NEQ(this=mask, expression=exp.Literal.number(0)),
                exp.column(roles.ts).is_(exp.null()).not_(),
            ),
            copy=False,
        )
    )
    return select.group_by(*(k.copy() for k in keys), copy=False)


def output_select(spec: EngineInput, groups: exp.Select, roles: Roles) -> exp.Select:
    row = roles.row
    fields = [roles.window_start, roles.window_end, *roles.measures, roles.error]
    if isinstance(spec.plan, MultiPlan):
        fields.insert(0, roles.plan_index)
    lateral = exp.Lateral(
        this=exp.Inline(this=exp.column(roles.result)),
        view=True,
        alias=exp.TableAlias(this=exp.to_identifier(row), columns=[exp.to_identifier(f) for f in fields]),
    )
    select = exp.select(*output_projections(spec, roles, roles.groups, row)).from_(
        groups.subquery(roles.groups, copy=False), copy=False)
    select.append("laterals", lateral)
    return select.where(_raise_on_error(spec, roles, row), copy=False)


def output_projections(spec: EngineInput, roles: Roles, keys: str, row: str) -> list[exp.Expr]:
    """The output columns: the keys (of table ``keys``), then the window bounds, per-plan
    columns and measures converted to their SQL types (from the fields of table ``row``)."""
    projections: list[exp.Expr] = [exp.column(name, table=keys) for name, _ in spec.keys]
    if spec.plan.slide is not None:
        for field, name in ((roles.window_start, "window_start"), (roles.window_end, "window_end")):
            projections.append(exp.alias_(spec.bound(exp.column(field, table=row)), name))
    for name, from_index in spec.per_plan:
        projections.append(exp.alias_(from_index(exp.column(roles.plan_index, table=row)), name))
    for (name, from_engine), field in zip(spec.measures, roles.measures):
        projections.append(exp.alias_(from_engine(exp.column(field, table=row)), name))
    return projections


def _raise_on_error(spec: EngineInput, roles: Roles, row: str) -> exp.Expr:
    """Raise the engine's ``error`` (a field of table ``row``), with the partition key
    spliced in as JSON."""
    error = exp.column(roles.error, table=row)
    if spec.keys:
        pairs: list[exp.Expr] = []
        for name, _ in spec.keys:
            pairs += [exp.Literal.string(name), exp.column(name, table=roles.groups)]
        key_json: exp.Expr = exp.Anonymous(
            this="to_json", expressions=[exp.Anonymous(this="named_struct", expressions=pairs)]
        )
    else:
        key_json = exp.Literal.string(engine_contract.ALL_ROWS)
    message = exp.Anonymous(
        this="replace", expressions=[error.copy(), exp.Literal.string(engine_contract.PARTITION_SLOT), key_json]
    )
    raise_error = exp.Anonymous(this="raise_error", expressions=[message])
    return exp.case().when(error.is_(exp.null()), exp.true()).else_(raise_error)


__all__ = ["generate", "engine_query", "engine_events", "engine_input", "engine_roles", "result_columns", "flat_output",
           "aliased", "EngineInput", "check_function_name", "levels_literal", "symbol_mask"]
