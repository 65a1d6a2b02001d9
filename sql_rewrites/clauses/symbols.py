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
* A quantified or optional element (``X{n}``, ``X{n,}``, ``X{n,m}``, ``X?``, ``X*``;
  SEMANTICS section 10) becomes the plan element of the contract in :class:`udafs.plan.
  Element` (:func:`plan_element`, normalising ``X{1}`` to ``X`` and ``X{1,}`` to ``X+``);
  at least one positive element must be required (not optional).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlglot import exp

from sql_rewrites.errors import (
    AllOptionalPatternError,
    AmbiguousSymbolError,
    EdgeNegationWithoutWindowError,
    OnlyNegationError,
    QuantifierError,
    TooManySymbolsError,
)
from sql_rewrites.syntax.expressions import (
    MatchPattern,
    MatchPatternElement,
    MatchQuantifier,
    node_position,
)
from udafs.plan import MAX_SYMBOLS, Element

SymbolKey = tuple[bool, str]  # (written as a string literal, identity text)
#: The largest bound of ``X{n}``, ``X{n,}``, ``X{n,m}``: the engine counts ``X{k}`` as k elements in a
#: row and ``X{n,m}`` as one plain pattern per size (docs/engine.md), so its work grows with the bound
#: and a typing slip such as ``X{1,1000000}`` would keep a worker busy for hours.
MAX_QUANTIFIER_ROWS = 100


def symbol_key(node: exp.Expr) -> SymbolKey:
    """Identity of a symbol written as ``node`` (identifier, column or string)."""
    if isinstance(node, exp.Literal):
        return True, node.name
    return False, node.name.casefold()


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


def compile_pattern(pattern: MatchPattern, sql: str | None = None, *, whole: bool = True) -> CompiledPattern:
    """Number the symbols of ``pattern`` and split it into elements and gaps (``whole``: a
    pattern the engine counts, not the union of an E-Cube's cuboids, whose size classes are
    checked per cuboid).

    Raises
    ------
    OnlyNegationError
        No positive element.
    AllOptionalPatternError
        Every positive element optional (``X?``, ``X*``).
    QuantifierError
        A quantifier out of range, or on a negated symbol.
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
            check_negated_unquantified(element, sql)
            negations[-1] |= 1 << index
        else:
            elements.append(plan_element(index, element, sql))
            negations.append(0)
    if not elements:
        raise OnlyNegationError(
            f"pattern {pattern.sql()} has only negated symbols; a pattern needs at least one positive symbol",
            node_position(pattern, sql),
        )
    if whole:
        check_size_classes(pattern, elements, sql)
    if all(e.row_bounds[0] == 0 for e in pattern.expressions if not e.negated):
        raise AllOptionalPatternError(
            f"pattern {pattern.sql()} has only optional elements (X?, X*), so a match could bind no row at all; "
            "make at least one element required (X, X+ or X{n,m} with n >= 1)",
            node_position(pattern, sql),
        )
    if len(order) > MAX_SYMBOLS:
        raise TooManySymbolsError(
            f"pattern uses {len(order)} distinct symbols; at most {MAX_SYMBOLS} are supported",
            node_position(pattern, sql),
        )
    symbols = tuple(_pattern_symbol(i, occ) for i, occ in enumerate(order.values()))
    return CompiledPattern(symbols, tuple(elements), tuple(negations), pattern)


def plan_element(index: int, element: MatchPatternElement, sql: str | None = None) -> Element:
    """The plan's :class:`~udafs.plan.Element` for positive ``element`` (symbol ``index``),
    its quantifier checked and normalised: ``X{1}`` and ``X{1,1}`` are ``X``, ``X{1,}`` is ``X+``.

    Raises
    ------
    QuantifierError
        ``X{0}``, ``X{0,m}``, ``X{3,2}`` or a bound over :data:`MAX_QUANTIFIER_ROWS`.
    """
    least, most = element.row_bounds
    if element.quantifier is not None and not element.quantifier.args.get("optional"):
        _check_bounds(element, least, most, sql)
    if most == 1:  # X or X?: one row (or none)
        return Element(index) if least == 1 else Element(index, False, 0)
    if (least, most) == (1, None):  # X+
        return Element(index, True)
    return Element(index, True, least, most)


def written_element(symbol: exp.Expr, element: Element, negated: bool = False) -> MatchPatternElement:
    """The pattern element that :func:`plan_element` reads as ``element`` (the inverse), over ``symbol``
    (an identifier or a string literal): ``X``, ``!X``, ``X+``, ``X?``, ``X*``, ``X{n}``, ``X{n,}``, ``X{n,m}``."""
    least, most = element.min_rows, element.max_rows
    quantifier = None
    if least == 0:
        quantifier = MatchQuantifier(optional=True, unbounded=element.kleene or None)
    elif element.kleene and (least, most) != (1, None):
        quantifier = MatchQuantifier(this=exp.Literal.number(least),
                                     expression=None if most is None or most == least else exp.Literal.number(most),
                                     unbounded=most is None or None)
    kleene = element.kleene and quantifier is None
    return MatchPatternElement(this=symbol, negated=negated or None, kleene=kleene or None, quantifier=quantifier)


def _check_bounds(element: MatchPatternElement, least: int, most: int | None, sql: str | None) -> None:
    """A written ``{n}``, ``{n,}`` or ``{n,m}``: 1 <= n <= m <= MAX_QUANTIFIER_ROWS."""
    written, symbol, where = element.sql(), element.this.sql(), node_position(element, sql)
    if most == 0:
        raise QuantifierError(f"{written} binds no row: remove it from the pattern ({symbol}? binds zero or one "
                              "row)", where)
    if least == 0:
        one, more = f"{symbol}? (zero or one row)", f"{symbol}* (zero or more rows)"
        instead = one if most == 1 else more if most is None else f"{one} or {more}"
        raise QuantifierError(
            f"{written}: the least number of rows must be at least 1; a symbol that may bind no row is written "
            f"{instead}", where)
    if most is not None and most < least:
        raise QuantifierError(
            f"{written}: the most number of rows ({most}) is less than the least ({least}); write "
            f"{symbol}{{{most},{least}}}", where)
    if max(least, most or 0) > MAX_QUANTIFIER_ROWS:
        raise QuantifierError(
            f"{written}: a quantifier's bounds may be at most {MAX_QUANTIFIER_ROWS}: the engine counts the sets "
            "of each size up to the bound apart, so its work grows with the bound", where)


def check_size_classes(pattern: MatchPattern, elements: list[Element], sql: str | None = None) -> None:
    """A pattern with quantified or optional elements stands for at most the engine's number of
    plain patterns (one per combination of the elements' sizes).

    Raises
    ------
    QuantifierError
    """
    if not any(e.quantified for e in elements):
        return
    from udafs.kernels.counting.quantifiers import MAX_CLASSES, choices  # the engine's own rule; numpy only when needed

    classes = math.prod(len(choices(e)) for e in elements)
    if classes > MAX_CLASSES:
        raise QuantifierError(
            f"pattern {pattern.sql()} stands for {classes} plain patterns (one per combination of the sizes its "
            f"quantified and optional elements may take: X{{n,m}} m - n + 1, X? 2, ...); the engine counts at most "
            f"{MAX_CLASSES}: narrow the ranges, or write X{{n,}} for 'n or more'", node_position(pattern, sql))


def check_negated_unquantified(element: MatchPatternElement, sql: str | None = None) -> None:
    """A negated symbol takes no quantifier (``!X+`` is refused by the parser).

    Raises
    ------
    QuantifierError
        ``!X?``, ``!X*``, ``!X{2}``, ...
    """
    if element.quantifier is None:
        return
    written = element.sql()
    plain = MatchPatternElement(this=element.this.copy(), negated=True).sql()
    raise QuantifierError(
        f"{written}: a negated symbol takes no quantifier; a negation forbids every instance of the symbol in "
        f"its gap, so write {plain}", node_position(element, sql))


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
