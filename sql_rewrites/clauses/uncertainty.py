"""``UNCERTAIN BETWEEN lo AND hi [STEP s]``: imprecise timestamps, resolved and checked.

Each event may occur at any of the times ``lo, lo + s, ..., <= hi`` with equal
probability, independently of the other events (SASE++'s temporal uncertainty model);
a row whose ``lo`` or ``hi`` is NULL uses its ORDER BY time there. Every measure is then
an expected value over the possible worlds (``docs/sql-reference.md`` section 15), so
only the linear measures exist (COUNT(*), COUNT(X), SUM(X.col)), all DOUBLE, under
skip-till-any-match. Everything else is an :class:`ImpreciseTimeError` with the line and
column of the offending clause, before any Spark job.
"""

from __future__ import annotations

from sqlglot import exp

from sql_rewrites.clauses.symbols import CompiledPattern
from sql_rewrites.clauses.windows import window_length
from sql_rewrites.errors import ImpreciseTimeError, QuantifierCombinationError, SourcePosition
from sql_rewrites.logical.query import OrderKey, Uncertainty
from sql_rewrites.logical.scope import ColumnScope
from sql_rewrites.logical.sql_types import order_kind
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.expressions import MatchAggregate, node_position
from udafs.plan import Strategy

#: Measures that are not expectations of a sum over matches (not linear).
NONLINEAR = {exp.Min: "MIN", exp.Max: "MAX", exp.Avg: "AVG"}
LINEAR_HELP = "COUNT(*), COUNT(X) and SUM(X.col)"


def resolve_uncertainty(node: MatchAggregate, scope: ColumnScope, order: OrderKey,
                        sql: str | None) -> Uncertainty | None:
    """The clause's columns and step (None without UNCERTAIN), with every check of the
    statement that expected aggregates need.

    Raises
    ------
    ImpreciseTimeError, UnknownColumnError, WindowSpecError
    """
    clause = node.args.get("uncertain")
    if clause is None:
        return None
    bounds = [_bound(clause.args[arg], scope, order, sql) for arg in ("this", "expression")]
    step_expr = clause.args.get("step")
    step = 1 if step_expr is None else window_length(step_expr, "STEP", order.name, order.kind, sql)
    _check_clauses(node, sql)
    return Uncertainty(clause.this, clause.expression, bounds[0], bounds[1], step)


def _bound(column: exp.Expr, scope: ColumnScope, order: OrderKey, sql: str | None):
    where = node_position(column, sql)
    if not isinstance(column, exp.Column):
        raise ImpreciseTimeError(f"UNCERTAIN BETWEEN takes columns, got {column.sql(dialect=SparkSeq)}; compute "
                                 "it in a subquery", where)
    schema = scope.find(column, "UNCERTAIN BETWEEN")
    if not schema.known or order_kind(schema.dtype) is not order.kind:
        raise ImpreciseTimeError(
            f"UNCERTAIN BETWEEN: column {schema.name} is {schema.type_text}, but the possible times must have the "
            f"ORDER BY column's type ({order.column.type_text}); cast it in a subquery", where)
    return schema


def _check_clauses(node: MatchAggregate, sql: str | None) -> None:
    """Measures, COUNT TYPE, STRATEGY and E-Cube forms that expected aggregates exclude."""
    for measure in node.args.get("measures") or []:
        call = measure.this if isinstance(measure, exp.Alias) else measure
        if type(call) in NONLINEAR:
            raise ImpreciseTimeError(
                f"measure {measure.sql(dialect=SparkSeq)}: with UNCERTAIN every measure is an expected value over "
                f"the possible worlds, which exists for {LINEAR_HELP} only ({NONLINEAR[type(call)]} of a random "
                "set is no sum over matches); for a ratio of expectations write SUM(X.col) and COUNT(X) and "
                "divide them", node_position(measure, sql))
    count_type = node.args.get("count_type")
    if count_type is not None and count_type.name.upper() != "DOUBLE":
        raise ImpreciseTimeError(
            f"COUNT TYPE {count_type.name.upper()}: with UNCERTAIN the counts are expected values (fractions) and "
            "DOUBLE; remove COUNT TYPE or write COUNT TYPE DOUBLE",
            node_position(count_type, sql) or node_position(node.args["uncertain"], sql))
    strategy = node.args.get("strategy")
    if strategy is not None and Strategy.from_sql(strategy.name) is not Strategy.SKIP_TILL_ANY_MATCH:
        raise ImpreciseTimeError(
            f"STRATEGY {Strategy.from_sql(strategy.name).sql}: imprecise timestamps are evaluated under "
            f"{Strategy.SKIP_TILL_ANY_MATCH.sql} only "
            "(as in SASE++: another strategy would pick different events in different possible worlds)",
            node_position(strategy, sql))
    for arg in ("cube", "patterns"):
        if node.args.get(arg) is not None:
            raise ImpreciseTimeError(f"UNCERTAIN is not supported with {arg.upper()} (E-Cube)",
                                     node_position(node.args["uncertain"], sql))


def check_precise_quantifiers(pattern: CompiledPattern, where: SourcePosition | None) -> None:
    """Quantified and optional elements need precise timestamps.

    Raises
    ------
    QuantifierCombinationError
        ``X{n,m}``, ``X?`` or ``X*`` with UNCERTAIN.
    """
    element = next((e for e in pattern.node.expressions if not e.negated and e.quantifier is not None), None)
    if element is not None and element.row_bounds != (1, 1) and element.row_bounds != (1, None):
        raise QuantifierCombinationError(
            f"UNCERTAIN with {element.sql()}: expected counts over imprecise timestamps are computed for plain and "
            "Kleene (X+) elements only, not for quantified or optional ones (X{n,m}, X?, X*)", where)


def check_where(node: MatchAggregate, predicates: list, iterators: list, sql: str | None) -> None:
    """Cross-event predicates are refused; one lag-1 iterator predicate per Kleene element."""
    where = node_position(node.args.get("where"), sql)
    if predicates:
        raise ImpreciseTimeError("cross-event predicates (comparisons of two symbols) are not supported with "
                                 "UNCERTAIN; Kleene iterator predicates and local conditions are", where)
    elements = [q.element for q in iterators]
    if len(set(elements)) < len(elements):
        raise ImpreciseTimeError("with UNCERTAIN a Kleene element takes one iterator predicate at most", where)
    if any(q.first for q in iterators):
        raise ImpreciseTimeError("with UNCERTAIN an iterator predicate compares B[i] with B[i-1] only; a comparison "
                                 "with B[1] (also MIN / MAX(B[1..i-1]) that reduce to one) is not supported", where)
