"""Generation: an analysed MATCH_AGGREGATE -> a plain Spark SQL subquery.

The operator becomes three nested SELECTs, built as sqlglot trees (never by pasting
user text) with every identifier quoted::

    SELECT k, <window bounds>, CAST(r.m0 AS <type>) AS funnels, ...     -- typed output
    FROM (
      SELECT k, <engine fn>('<plan json>', __ts, __mask, __v0, ...) AS __result
      FROM (
        SELECT k, unix_micros(ts) AS __ts,                                -- engine time
               CAST((CASE WHEN <define 0> THEN 1 ELSE 0 END)
                  | (CASE WHEN <define 1> THEN 2 ELSE 0 END) ... AS BIGINT) AS __mask,
               <value columns> AS __v0, ...
        FROM <source>) AS __events
      WHERE __mask <> 0 AND __ts IS NOT NULL     -- rows of no symbol never reach Python
      GROUP BY k) AS __groups
    LATERAL VIEW INLINE(__result) __r AS __ws, __we, __m0, ..., __error
    WHERE CASE WHEN __error IS NULL THEN TRUE
               ELSE raise_error(replace(__error, '{partition}', to_json(named_struct('k', k)))) END

Without PARTITION BY the events are grouped by a constant, so empty input gives no
row. Internal names (``__sparkseq_*``) are chosen not to collide with the partition
keys.
The engine function's contract is in :mod:`sql_rewrites.engine_contract`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlglot import exp

from sql_rewrites import engine_contract
from sql_rewrites.logical import MatchAggregateQuery
from sql_rewrites.sql_types import DType, time_from_engine, time_to_engine

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
    names = InternalNames(k.name for k in query.partition_keys)
    roles = _Roles(names, len(query.value_columns), len(query.measures))
    events = _events_select(query, (source or query.node.this).copy(), roles)
    groups = _groups_select(query, events, check_function_name(function_name), roles)
    output = _output_select(query, groups, roles)
    alias = query.node.args.get("alias")
    subquery = exp.Subquery(this=output, alias=alias.copy() if alias else None)
    return _sanitize(subquery)


class _Roles:
    """The internal names of one generated query."""

    def __init__(self, names: InternalNames, n_values: int, n_measures: int) -> None:
        self.ts, self.mask, self.result = names("ts"), names("mask"), names("result")
        self.values = [names(f"v{i}") for i in range(n_values)]
        self.events, self.groups, self.row = names("events"), names("groups"), names("r")
        self.window_start, self.window_end = names("window_start"), names("window_end")
        self.measures = [names(f"m{i}") for i in range(n_measures)]
        self.error = names("error")
        self.all_rows = names("all_rows")


def _events_select(query: MatchAggregateQuery, source: exp.Expr, roles: _Roles) -> exp.Select:
    keys = [exp.alias_(k.expression.copy(), k.name) for k in query.partition_keys]
    if not keys:  # one group over all rows, and none over no rows (unlike a global aggregate)
        keys = [exp.alias_(exp.Literal.number(0), roles.all_rows)]
    time = exp.alias_(time_to_engine(query.order.expression.copy(), query.order.kind), roles.ts)
    mask = exp.alias_(_mask(query), roles.mask)
    values = [
        exp.alias_(column.to_engine(column.expression.copy()), name)
        for column, name in zip(query.value_columns, roles.values)
    ]
    return exp.select(*keys, time, mask, *values).from_(source)


def _mask(query: MatchAggregateQuery) -> exp.Expr:
    return mask_expression([(symbol.index, symbol.condition) for symbol in query.symbols])


def mask_expression(conditions: Iterable[tuple[int, exp.Expr]]) -> exp.Expr:
    """``CAST((CASE WHEN c_k THEN 2^k ELSE 0 END) | ... AS BIGINT)`` for ``(k, c_k)`` pairs.

    A condition that is NULL counts as FALSE (SEMANTICS section 2).
    """
    bits = [
        exp.paren(exp.case().when(condition.copy(), exp.Literal.number(1 << k)).else_(exp.Literal.number(0)))
        for k, condition in conditions
    ]
    combined = bits[0]
    for bit in bits[1:]:
        combined = exp.BitwiseOr(this=combined, expression=bit)
    return exp.cast(combined, DType.BIGINT)


def _groups_select(
    query: MatchAggregateQuery, events: exp.Select, function_name: str, roles: _Roles
) -> exp.Select:
    keys = [exp.column(k.name) for k in query.partition_keys] or [exp.column(roles.all_rows)]
    arguments = [exp.Literal.string(query.plan.to_json()), exp.column(roles.ts), exp.column(roles.mask)]
    arguments += [exp.column(name) for name in roles.values]
    call = exp.Anonymous(this=function_name, expressions=arguments)
    select = (
        exp.select(*keys, exp.alias_(call, roles.result))
        .from_(events.subquery(roles.events))
        .where(
            exp.and_(
                exp.NEQ(this=exp.column(roles.mask), expression=exp.Literal.number(0)),
                exp.column(roles.ts).is_(exp.null()).not_(),
            )
        )
    )
    return select.group_by(*keys)


def _output_select(query: MatchAggregateQuery, groups: exp.Select, roles: _Roles) -> exp.Select:
    row = roles.row
    projections: list[exp.Expr] = [exp.column(k.name, table=roles.groups) for k in query.partition_keys]
    if query.has_windows:
        order = query.order
        for field, name in ((roles.window_start, "window_start"), (roles.window_end, "window_end")):
            bound = time_from_engine(exp.column(field, table=row), order.kind, order.column.dtype)
            projections.append(exp.alias_(bound, name))
    for measure, field in zip(query.measures, roles.measures):
        projections.append(exp.alias_(measure.from_engine(exp.column(field, table=row)), measure.name))
    fields = [roles.window_start, roles.window_end, *roles.measures, roles.error]
    lateral = exp.Lateral(
        this=exp.Inline(this=exp.column(roles.result)),
        view=True,
        alias=exp.TableAlias(this=exp.to_identifier(row), columns=[exp.to_identifier(f) for f in fields]),
    )
    select = exp.select(*projections).from_(groups.subquery(roles.groups))
    select.append("laterals", lateral)
    return select.where(_raise_on_error(query, roles))


def _raise_on_error(query: MatchAggregateQuery, roles: _Roles) -> exp.Expr:
    """Raise the engine's ``error``, with the partition key spliced in as JSON."""
    error = exp.column(roles.error, table=roles.row)
    if query.partition_keys:
        pairs: list[exp.Expr] = []
        for key in query.partition_keys:
            pairs += [exp.Literal.string(key.name), exp.column(key.name, table=roles.groups)]
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


def _sanitize(tree: exp.Expr) -> exp.Expr:
    """Quote every identifier and drop comments: user text can only be names and values."""
    for node in tree.walk():
        if isinstance(node, exp.Identifier):
            node.set("quoted", True)
        node.comments = None
    return tree


__all__ = ["generate", "check_function_name", "mask_expression"]
