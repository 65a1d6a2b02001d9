"""STRATEGY and the local part of WHERE: from syntax to plan and symbol conditions.

``STRATEGY <words>`` (:meth:`udafs.plan.Strategy.sql`) names the event
selection strategy of ``docs/predicates-and-strategies.md``; the default is
``SKIP TILL ANY MATCH``. Local WHERE predicates (one symbol) are ANDed into that
symbol's row condition here.
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from sql_rewrites.errors import QuantifierCombinationError, SourcePosition, StrategyError
from sql_rewrites.logical.query import SymbolSpec
from sql_rewrites.syntax.expressions import MatchAggregate, node_position
from udafs.plan import Plan, Strategy


def strategy_of(node: MatchAggregate) -> Strategy:
    """The :class:`~udafs.plan.Strategy` of ``STRATEGY`` (default skip-till-any-match).

    >>> from sql_rewrites.syntax.dialect import parse_statement
    >>> tree = parse_statement("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) "
    ...                        "DEFINE A AS x = 1 STRATEGY STRICT CONTIGUITY)")
    >>> strategy_of(tree.find(MatchAggregate)).name
    'STRICT_CONTIGUITY'
    """
    words = node.args.get("strategy")
    if words is None:
        return Strategy.SKIP_TILL_ANY_MATCH
    return Strategy.from_sql(words.name)


def check_quantified_strategy(plan: Plan, where: SourcePosition | None) -> None:
    """Quantified and optional elements are counted under SKIP TILL ANY MATCH only.

    Raises
    ------
    QuantifierCombinationError
        ``STRATEGY`` other than SKIP TILL ANY MATCH with ``X{n,m}``, ``X?``, ``X*``, ...
    """
    if plan.strategy is Strategy.SKIP_TILL_ANY_MATCH or not plan.quantified:
        return
    raise QuantifierCombinationError(
        f"STRATEGY {plan.strategy.sql} with {_first_quantified(plan)}: quantified and optional elements "
        "(X{n,m}, X?, X*) are counted under SKIP TILL ANY MATCH only; the other strategies decide row by row which "
        "row a match may take next, and their counting does not yet follow a set's size or an element that takes "
        "no row. Drop STRATEGY, or write the element as X or X+", where)


def check_quantified_predicates(plan: Plan, where: SourcePosition | None) -> None:
    """Cross-event and iterator predicates are not counted in a pattern with a quantified or
    optional element, even between its plain elements.

    Raises
    ------
    QuantifierCombinationError
    """
    if not plan.quantified or not (plan.predicates or plan.iterator_predicates):
        return
    what = "cross-event comparisons" if plan.predicates else "iterator predicates"
    raise QuantifierCombinationError(
        f"WHERE with {what} in a pattern with {_first_quantified(plan)}: the engine counts a quantified or optional "
        "element as the union of plain patterns, one per number of rows it binds, in which the compared elements "
        "stand at other positions, and does not yet carry such comparisons into them; keep only conditions on one "
        "symbol at a time, or write the element as X or X+", where)


def _first_quantified(plan: Plan) -> str:
    element = next(e for e in plan.elements if e.quantified)
    return element.describe(plan.symbols[element.symbol])


def with_local_conditions(symbols: tuple[SymbolSpec, ...], local: dict[int, list[exp.Expr]]) -> tuple[SymbolSpec, ...]:
    """``symbols`` with each local WHERE condition ANDed into its symbol's condition."""
    out = []
    for symbol in symbols:
        extra = local.get(symbol.index, [])
        if extra:
            condition = exp.and_(exp.paren(symbol.condition.copy()), *(exp.paren(c.copy()) for c in extra))
            symbol = dataclasses.replace(symbol, condition=condition)
        out.append(symbol)
    return tuple(out)


def refuse_in_cube(node: MatchAggregate, sql: str | None) -> None:
    """E-Cube queries (CUBE / PATTERNS) take neither WHERE nor STRATEGY.

    Raises
    ------
    StrategyError
    """
    for arg, what in (("where", "WHERE"), ("strategy", "STRATEGY")):
        if node.args.get(arg) is not None:
            raise StrategyError(
                f"{what} is not supported with CUBE or PATTERNS (E-Cube queries); write one MATCH_AGGREGATE per "
                "pattern instead", node_position(node.args[arg], sql))
