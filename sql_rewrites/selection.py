"""STRATEGY and the local part of WHERE: from syntax to plan and symbol conditions.

``STRATEGY <words>`` (:meth:`udafs.plan.Strategy.sql`) names the event
selection strategy of ``docs/predicates-and-strategies.md``; the default is
``SKIP TILL ANY MATCH``. Local WHERE predicates (one symbol) are ANDed into that
symbol's row condition here.
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from sql_rewrites.errors import StrategyError
from sql_rewrites.expressions import MatchAggregate
from sql_rewrites.logical import SymbolSpec
from sql_rewrites.symbols import node_position
from udafs.plan import Strategy


def strategy_of(node: MatchAggregate) -> Strategy:
    """The :class:`~udafs.plan.Strategy` of ``STRATEGY`` (default skip-till-any-match).

    >>> from sql_rewrites.dialect import parse_statement
    >>> tree = parse_statement("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) "
    ...                        "DEFINE A AS x = 1 STRATEGY STRICT CONTIGUITY)")
    >>> strategy_of(tree.find(MatchAggregate)).name
    'STRICT_CONTIGUITY'
    """
    words = node.args.get("strategy")
    if words is None:
        return Strategy.SKIP_TILL_ANY_MATCH
    return Strategy.from_sql(words.name)


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
