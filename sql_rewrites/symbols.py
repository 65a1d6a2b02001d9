"""Pattern symbols: identity, bit numbering, and the plan's elements and gaps.

Rules (shared by MATCH_AGGREGATE and the pattern-string entry point):

* A symbol written as a name is matched case-insensitively, like any Spark
  identifier (``vk`` = ``VK``); a symbol written as a string literal
  (``'View Kindle'``) is a type value and matched exactly.
* Symbols are numbered in order of first appearance in the pattern; symbol ``k`` is
  bit ``k`` of the per-row mask (at most 63 symbols).
* ``SEQ`` needs at least one positive element; adjacent negations constrain the same
  gap; negations before the first / after the last positive element are the leading
  / trailing gaps (they need WITHIN, checked by :func:`check_edge_negation`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sql_rewrites.errors import (
    AmbiguousSymbolError,
    EdgeNegationWithoutWindowError,
    OnlyNegationError,
    SourcePosition,
    TooManySymbolsError,
    position_of,
)
from sql_rewrites.expressions import MatchAggregate, MatchPattern, MatchPatternElement
from udafs.plan import MAX_SYMBOLS, Element

SymbolKey = tuple[bool, str]  # (written as a string literal, identity text)


def symbol_key(node: exp.Expr) -> SymbolKey:
    """Identity of a symbol written as ``node`` (identifier, column or string)."""
    if isinstance(node, exp.Literal):
        return True, node.name
    return False, node.name.casefold()


def node_position(node: exp.Expr | None, sql: str | None) -> SourcePosition | None:
    """The source position of ``node``: from the first to the last character of it and its
    positioned descendants (``customer_id % 10`` whole, not its last token); an operator's
    is its keyword (``MATCH_AGGREGATE``)."""
    if node is None:
        return None
    if isinstance(node, MatchAggregate) and "start" in node.meta and "end" in node.meta:
        return position_of(sql, node.meta["start"], node.meta["end"])
    spans = [(c.meta["start"], c.meta["end"]) for c in node.walk() if "start" in c.meta and "end" in c.meta]
    if not spans:
        return None
    start, end = min(first for first, _ in spans), max(last for _, last in spans)
    return position_of(sql, start, _closed(sql, start, end))


def _closed(sql: str | None, start: int, end: int) -> int:
    """``end`` moved past the closing parentheses ``sql[start:end + 1]`` still needs (tokens
    record no position for them: ``SUM(B.price`` becomes ``SUM(B.price)``)."""
    if sql is None:
        return end
    depth = sql.count("(", start, end + 1) - sql.count(")", start, end + 1)
    at = end + 1
    while depth > 0 and at < len(sql):
        if sql[at] == ")":
            depth, end = depth - 1, at
        elif not sql[at].isspace():
            break
        at += 1
    return end


@dataclass(frozen=True)
class PatternSymbol:
    """One distinct symbol: its bit, the spellings used, where it first appears."""

    index: int
    name: str
    quoted: bool
    spellings: tuple[str, ...]
    first: MatchPatternElement
    positive: bool


@dataclass(frozen=True)
class CompiledPattern:
    """A pattern as the plan stores it, plus its symbols."""

    symbols: tuple[PatternSymbol, ...]
    elements: tuple[Element, ...]
    negations: tuple[int, ...]
    node: MatchPattern

    def find(self, key: SymbolKey) -> PatternSymbol | None:
        """The symbol with identity ``key``, or ``None``."""
        return next((s for s in self.symbols if symbol_key(s.first.this) == key), None)

    @property
    def has_leading_negation(self) -> bool:
        """True when the pattern starts with ``!X``."""
        return bool(self.negations[0])

    @property
    def has_trailing_negation(self) -> bool:
        """True when the pattern ends with ``!X``."""
        return bool(self.negations[-1])


def compile_pattern(pattern: MatchPattern, sql: str | None = None) -> CompiledPattern:
    """Number the symbols of ``pattern`` and split it into elements and gaps.

    Raises
    ------
    OnlyNegationError
        No positive element.
    TooManySymbolsError
        More than 63 distinct symbols.
    """
    order: dict[SymbolKey, list[MatchPatternElement]] = {}
    elements: list[Element] = []
    negations = [0]
    for element in pattern.expressions:
        occurrences = order.setdefault(symbol_key(element.this), [])
        occurrences.append(element)
        index = list(order).index(symbol_key(element.this))
        if element.negated:
            negations[-1] |= 1 << index
        else:
            elements.append(Element(index, element.kleene))
            negations.append(0)
    if not elements:
        raise OnlyNegationError(
            f"pattern {pattern.sql()} has only negated symbols; a pattern needs at least one positive symbol",
            node_position(pattern, sql),
        )
    if len(order) > MAX_SYMBOLS:
        raise TooManySymbolsError(
            f"pattern uses {len(order)} distinct symbols; at most {MAX_SYMBOLS} are supported",
            node_position(pattern, sql),
        )
    symbols = tuple(_pattern_symbol(i, occ) for i, occ in enumerate(order.values()))
    return CompiledPattern(symbols, tuple(elements), tuple(negations), pattern)


def _pattern_symbol(index: int, occurrences: list[MatchPatternElement]) -> PatternSymbol:
    first = occurrences[0]
    spellings = tuple(dict.fromkeys(o.this.name for o in occurrences))
    positive = any(not o.negated for o in occurrences)
    return PatternSymbol(index, first.this.name, first.is_quoted_value, spellings, first, positive)


def check_spelling(symbol: PatternSymbol, sql: str | None = None) -> None:
    """A type-value symbol must be spelled one way (its spelling is the value).

    Raises
    ------
    AmbiguousSymbolError
        ``SEQ(view, View)`` under TYPE BY: which type value is meant?
    """
    if len(symbol.spellings) > 1:
        spelled = " and ".join(repr(s) for s in symbol.spellings)
        raise AmbiguousSymbolError(
            f"symbol {symbol.name} is written as {spelled}; names are case-insensitive but a TYPE BY "
            f"symbol compares its spelling with the type column, so write it one way or quote the type "
            f"value as a string ('{symbol.spellings[0]}')",
            node_position(symbol.first, sql),
        )


def check_edge_negation(compiled: CompiledPattern, has_within: bool, sql: str | None = None) -> None:
    """Leading and trailing negations need WITHIN (SEMANTICS section 3, rule 5).

    Raises
    ------
    EdgeNegationWithoutWindowError
    """
    if has_within:
        return
    edges = (("leading", compiled.has_leading_negation), ("trailing", compiled.has_trailing_negation))
    for edge, present in edges:
        if present:
            raise EdgeNegationWithoutWindowError(
                f"pattern {compiled.node.sql()} has a {edge} negation, which is only defined within a time "
                "window; add WITHIN (e.g. WITHIN INTERVAL 10 MINUTES) or move the negation between "
                "two positive symbols",
                node_position(compiled.node, sql),
            )
