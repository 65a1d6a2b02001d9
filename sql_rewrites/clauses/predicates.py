"""MATCH_AGGREGATE ``WHERE``: cross-event, Kleene iterator and local predicates.

``WHERE`` holds a conjunction (``AND``) of conditions. Each conjunct is classified by
the pattern symbols it names:

* **one symbol** (``A.price > 3``, ``B.load >= B.cap``): a *local* predicate. It is
  ANDed into that symbol's row condition (its DEFINE, TYPE BY or HIERARCHY
  condition) and stays in Spark, exactly as if written in DEFINE;
* **two symbols**: a *cross-event* comparison ``X.c1 [+|- k] OP Y.c2 [+|- k]`` with OP
  one of ``= <> != < <= > >=``, normalised to the engine's
  ``E[left].c1 OP E[right].c2 + k`` (:class:`udafs.plan.Predicate`). Each symbol must
  stand at exactly one positive, non-Kleene position of the pattern;
* **``B[i]`` / ``B[i-1]``**: a Kleene *iterator* predicate
  ``B[i].c OP B[i-1].c [+|- k]`` (either side may come first) on a Kleene element
  ``B+`` (:class:`udafs.plan.IteratorPredicate`).

Types travel exactly (:func:`compare_columns`): integral and exact DECIMAL columns as
int64 (a DECIMAL of scale s as its value times 10^s; the constant is scaled alike),
FLOAT / DOUBLE as doubles. Columns of other comparable types (STRING, DATE,
TIMESTAMP, BOOLEAN, ...) are compared through their dense rank within the partition,
which is exact for every operator because it preserves order and equality.

Everything here raises :class:`~sql_rewrites.errors.PredicateError` with the position
of the offending text, before any Spark job.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import NoReturn

from sqlglot import exp

from sql_rewrites.clauses.measures import MeasureContext, value_column_index
from sql_rewrites.clauses.symbols import PatternSymbol
from sql_rewrites.errors import PredicateError, QuantifierCombinationError
from sql_rewrites.logical.query import PartitionKey, ValueColumn
from sql_rewrites.logical.schema import ColumnSchema
from sql_rewrites.logical.sql_types import DType, value_codec
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.expressions import node_position
from udafs.plan import CmpOp, IteratorPredicate, Predicate, ValueType

COMPARISONS: dict[type[exp.Expr], CmpOp] = {
    exp.EQ: CmpOp.EQ, exp.NEQ: CmpOp.NE, exp.LT: CmpOp.LT, exp.LTE: CmpOp.LE, exp.GT: CmpOp.GT, exp.GTE: CmpOp.GE,
}
FORMS_HELP = ("X.col OP Y.col [+|- constant] with OP one of =, <>, <, <=, >, >=, or B[i].col OP B[i-1].col "
              "[+|- constant] for a Kleene symbol B+ (also B[1].col, and MAX / MIN(B[1..i-1].col) where "
              "equivalent)")
COMPLEX_TYPES = (DType.ARRAY, DType.MAP, DType.STRUCT)


@dataclass
class WhereClause:
    """The analysed WHERE: local conditions per symbol index, engine predicates."""

    local: dict[int, list[exp.Expr]] = field(default_factory=dict)
    predicates: list[Predicate] = field(default_factory=list)
    iterators: list[IteratorPredicate] = field(default_factory=list)


@dataclass(frozen=True)
class _Operand:
    """One side of a comparison: ``symbol.column`` (``lag`` 0 for ``B[i]``, 1 for
    ``B[i-1]``, None for a plain reference) plus a constant."""

    symbol: PatternSymbol
    column: exp.Column
    constant: Decimal
    lag: int | None
    node: exp.Expr
    terms: int = 0  # constants written on this side (Spark adds them one by one)


class PredicateResolver:
    """Analyses one WHERE condition (see module docstring).

    Parameters
    ----------
    ctx : MeasureContext
        The pattern, column lookup and value columns (predicate columns are appended).
    keys : tuple of PartitionKey
        PARTITION BY keys: non-numeric columns are ranked within the partition.
    local_condition : callable
        ``(condition, symbol name, other symbol names) -> resolved condition``
        (:meth:`sql_rewrites.logical.scope.ColumnScope.local_condition`).
    """

    def __init__(self, ctx: MeasureContext, keys: tuple[PartitionKey, ...],
                 local_condition: Callable[[exp.Expr, str, set[str]], exp.Expr]) -> None:
        self.ctx = ctx
        self.keys = keys
        self.local_condition = local_condition
        self.pattern = ctx.pattern

    def resolve(self, where: exp.Expr | None) -> WhereClause:
        """Classify and check every conjunct of ``where`` (None: an empty clause)."""
        out = WhereClause()
        for conjunct in conjuncts(where) if where is not None else []:
            self._conjunct(conjunct, out)
        return out

    # --- classification ---------------------------------------------------------------

    def _conjunct(self, node: exp.Expr, out: WhereClause) -> None:
        if any(isinstance(n, SET_AGGREGATES) and self._over_set(n.this) for n in node.walk()):
            out.iterators.append(self._running_aggregate(node))
            return
        if any(self._lagged(b) is not None for b in node.find_all(exp.Bracket)):
            out.iterators.append(self._iterator(node))
            return
        symbols = self._symbols_in(node)
        if not symbols:
            self._fail(f"WHERE condition {node.sql(dialect=SparkSeq)} names no pattern symbol; qualify each column "
                       "by the symbol whose row it reads (A.price), or filter the source in a subquery", node)
        for symbol in symbols.values():
            if not symbol.positive:
                self._fail(f"WHERE condition {node.sql(dialect=SparkSeq)} reads the negated symbol {symbol.name}; a "
                           "negated symbol binds no row, so only DEFINE can restrict it", node)
        if len(symbols) == 1:
            [symbol] = symbols.values()
            others = {s.name.casefold() for s in self.pattern.symbols} - {symbol.name.casefold()}
            condition = self.local_condition(node, symbol.name, others)
            out.local.setdefault(symbol.index, []).append(condition)
            return
        out.predicates.append(self._cross_event(node, len(symbols)))

    def _symbols_in(self, node: exp.Expr) -> dict[int, PatternSymbol]:
        found: dict[int, PatternSymbol] = {}
        for column in node.find_all(exp.Column):
            symbol = self._symbol(column)
            if symbol is not None:
                found[symbol.index] = symbol
        return found

    def _symbol(self, column: exp.Column) -> PatternSymbol | None:
        qualifier = column.args.get("table")
        if qualifier is None:
            return None
        return self.pattern.find((False, qualifier.name.casefold()))

    # --- cross-event comparisons ------------------------------------------------------

    def _cross_event(self, node: exp.Expr, n_symbols: int) -> Predicate:
        text = node.sql(dialect=SparkSeq)
        op = COMPARISONS.get(type(node))
        if op is None or n_symbols != 2:
            self._fail(f"WHERE condition {text} is not supported; a condition naming several symbols must be a "
                       f"comparison of two of them: {FORMS_HELP}", node)
        left, right = self._operand(node.this, text), self._operand(node.expression, text)
        if left.lag is not None or right.lag is not None:
            self._fail(f"WHERE condition {text} mixes B[i] with another symbol; {FORMS_HELP}", node)
        positions = [self._position(o, text) for o in (left, right)]
        lc, rc, offset, left_offset = self._columns(left, right, op, text, node)
        return Predicate(positions[0], lc, op, positions[1], rc, offset, left_offset)

    def _position(self, operand: _Operand, text: str) -> int:
        symbol = operand.symbol
        positions = [i for i, e in enumerate(self.pattern.elements) if e.symbol == symbol.index]
        if len(positions) > 1:
            self._fail(f"WHERE condition {text}: symbol {symbol.name} stands at {len(positions)} positions of the "
                       f"pattern, so {symbol.name}.{operand.column.name} is ambiguous; use a distinct symbol for "
                       f"each position (e.g. SEQ({symbol.name}1, ..., {symbol.name}2) with the same DEFINE)",
                       operand.node)
        element = self.pattern.elements[positions[0]]
        written = element.describe(symbol.name)
        if element.optional:
            raise QuantifierCombinationError(
                f"WHERE condition {text}: {written} is optional and may bind no row, so the comparison has nothing "
                f"to compare in those matches; compare only symbols that bind exactly one row (or make "
                f"{symbol.name} required)", node_position(operand.node, self.ctx.sql))
        if element.kleene:
            self._fail(f"WHERE condition {text}: {written} is a Kleene symbol; it takes part only in iterator "
                       f"predicates {symbol.name}[i].col OP {symbol.name}[i-1].col [+ k] (or local conditions on "
                       f"{symbol.name} alone)", operand.node)
        return positions[0]

    # --- Kleene iterator predicates ---------------------------------------------------

    def _iterator(self, node: exp.Expr) -> IteratorPredicate:
        text = node.sql(dialect=SparkSeq)
        op = COMPARISONS.get(type(node))
        if op is None:
            self._fail(f"WHERE condition {text} is not supported; B[i] may only appear in {FORMS_HELP}", node)
        left, right = self._operand(node.this, text), self._operand(node.expression, text)
        lags = {left.lag, right.lag}
        if lags not in ({0, 1}, {0, FIRST}) or left.symbol.index != right.symbol.index:
            self._fail(f"WHERE condition {text} is not supported: an iterator predicate compares B[i] with B[i-1] "
                       f"or B[1] of one Kleene symbol ({FORMS_HELP}); other indexes are not supported", node)
        return self._iterator_of(node, text, op, left, right)

    def _iterator_of(self, node: exp.Expr, text: str, op: CmpOp, left: _Operand, right: _Operand
                     ) -> IteratorPredicate:
        """``B[i].c OP B[j].c`` (either side first, j = i-1 or 1) as the engine's predicate."""
        if left.column.name.casefold() != right.column.name.casefold():
            self._fail(f"WHERE condition {text}: an iterator predicate compares one column of B[i] and B[i-1] "
                       f"(B[i].c OP B[i-1].c), got {left.column.name} and {right.column.name}", node)
        current, previous = left, right
        if left.lag != 0:  # B[j].c + kl OP B[i].c + kr  <=>  B[i].c + kr OP' B[j].c + kl
            current, previous, op = right, left, op.mirrored()
        symbol = current.symbol
        positions = [i for i, e in enumerate(self.pattern.elements) if e.symbol == symbol.index]
        if not symbol.positive or len(positions) != 1 or not self.pattern.elements[positions[0]].kleene:
            self._fail(f"WHERE condition {text}: {symbol.name}[i] needs {symbol.name} to be a Kleene symbol "
                       f"({symbol.name}+) at exactly one position of the pattern", node)
        element = self.pattern.elements[positions[0]]
        if element.quantified:
            raise QuantifierCombinationError(
                f"WHERE condition {text}: iterator predicates are counted for {symbol.name}+ only, not for "
                f"{element.describe(symbol.name)}: the engine does not yet count sets that are both limited in "
                "size and linked row to row", node_position(node, self.ctx.sql))
        column, _, offset, left_offset = self._columns(current, previous, op, text, node)
        return IteratorPredicate(positions[0], column, op, offset, left_offset, first=previous.lag == FIRST)

    def _running_aggregate(self, node: exp.Expr) -> IteratorPredicate:
        """``B[i].c OP MAX|MIN(B[1..i-1].c) [± k]``, reduced to a lag-1 or a first-element
        predicate where that is equivalent (docs/predicates-and-strategies.md section 7);
        every other aggregate over a Kleene set is refused with the reason."""
        text = node.sql(dialect=SparkSeq)
        aggregate = next(n for n in node.walk() if isinstance(n, SET_AGGREGATES) and self._over_set(n.this))
        name = SET_AGGREGATES_NAMES[type(aggregate)]
        if name in ("AVG", "SUM", "COUNT"):
            self._fail(f"WHERE condition {text} compares with {name} over a Kleene set: which subsets of the "
                       f"candidate rows satisfy it depends on the sum of their values (a subset-sum condition), and "
                       "counting such subsets is #P-hard, so no exact polynomial-time count is known (SASE++ "
                       f"enumerates the sets); iterator predicates can compare B[i] with B[i-1], B[1], or "
                       f"MAX / MIN(B[1..i-1]) where that is equivalent", node)
        op = COMPARISONS.get(type(node))
        sides = [self._aggregate_operand(node.this, text), self._aggregate_operand(node.expression, text)]
        if op is None or sorted(side is None for side in sides) != [False, True]:
            self._fail(f"WHERE condition {text} is not supported: a running aggregate must be compared with the "
                       f"current row, B[i].c OP {name}(B[1..i-1].c) [+|- constant]", node)
        current = self._operand(node.this if sides[0] is None else node.expression, text)
        aggregate_side = sides[0] or sides[1]
        assert aggregate_side is not None  # exactly one side is the aggregate (checked above)
        previous, agg = aggregate_side
        if sides[0] is not None:  # MAX(...) OP B[i].c  <=>  B[i].c OP' MAX(...)
            op = op.mirrored()
        if current.lag != 0 or previous.symbol.index != current.symbol.index:
            self._fail(f"WHERE condition {text}: {name}(B[1..i-1].c) compares with B[i].c of the same Kleene "
                       "symbol", node)
        constant = previous.constant - current.constant  # B[i].c OP agg + k
        lag = _reduction(agg, op, constant)
        if lag is None:
            self._fail(f"WHERE condition {text} is not supported: B[i].c {op.value} {agg}(B[1..i-1].c) "
                       f"{'+' if constant >= 0 else '-'} {abs(constant)} is equivalent neither to a comparison "
                       "with B[i-1] nor with B[1] (docs/predicates-and-strategies.md section 7 lists the forms "
                       "that are)", node)
        predicate = self._iterator_of(node, text, op, current, dataclasses.replace(previous, lag=lag))
        if predicate.offset and predicate.left_offset:  # DOUBLE: each side keeps its constant
            self._fail(f"WHERE condition {text}: with DOUBLE columns write the constant of a comparison with "
                       f"{agg}(B[1..i-1].c) on one side only; Spark rounds each side's sum separately, and the "
                       "reduction to B[i-1] or B[1] holds for one rounded sum, not for two", node)
        return predicate

    def _over_set(self, argument: exp.Expr) -> bool:
        """An aggregate's argument reads several rows of a Kleene set: ``B.c``, ``B[].c`` or
        ``B[1..i-1].c`` with B+ in the pattern."""
        if isinstance(argument, exp.Column):
            symbol = self._symbol(argument)
        elif isinstance(argument, exp.Dot) and isinstance(argument.this, exp.Bracket):
            found = self._lagged(argument.this)
            symbol = found[0] if found is not None and found[1] not in (0, 1, FIRST) else None
        else:
            return False
        return symbol is not None and any(e.kleene for e in self.pattern.elements if e.symbol == symbol.index)

    def _aggregate_operand(self, node: exp.Expr, text: str) -> tuple[_Operand, str] | None:
        """``MAX|MIN(B[1..i-1].c) [± k]`` as (operand of B's column with constant k, name), or None."""
        base, constant, terms = _split_constant(node)
        if not isinstance(base, (exp.Max, exp.Min)):
            return None
        inner = base.this
        bracket = inner.this if isinstance(inner, exp.Dot) else None
        lagged = self._lagged(bracket) if isinstance(bracket, exp.Bracket) else None
        if (lagged is None or not isinstance(inner.expression, exp.Identifier) or lagged[1] != PREFIX
                or constant is None):
            self._fail(f"WHERE condition {text}: {SET_AGGREGATES_NAMES[type(base)]} must range over the rows before "
                       f"the current one, written {SET_AGGREGATES_NAMES[type(base)]}(B[1..i-1].c) (or B[1:i-1]); "
                       f"got {base.sql(dialect=SparkSeq)}", node)
        symbol = lagged[0]
        operand = _Operand(symbol, exp.column(inner.expression.copy()), constant, PREFIX, node, terms)
        return operand, SET_AGGREGATES_NAMES[type(base)]

    def _lagged(self, bracket: exp.Bracket) -> tuple[PatternSymbol, int] | None:
        """``(symbol, lag)`` for ``S[i]`` (0) / ``S[i-1]`` (1) / ``S[1]`` (:data:`FIRST`) /
        ``S[1..i-1]`` or ``S[1:i-1]`` (:data:`PREFIX`) / any other index (-1)."""
        target = bracket.this
        if not isinstance(target, exp.Column) or target.args.get("table") is not None:
            return None
        symbol = self.pattern.find((False, target.name.casefold()))
        if symbol is None or len(bracket.expressions) != 1:
            return None
        index = bracket.expressions[0]
        if _is_i(index):
            return symbol, 0
        if isinstance(index, exp.Sub) and _is_i(index.this) and _integer(index.expression) == 1:
            return symbol, 1
        if _integer(index) == 1:
            return symbol, FIRST
        if _is_prefix(index):
            return symbol, PREFIX
        return symbol, -1

    # --- operands and types -----------------------------------------------------------

    def _operand(self, node: exp.Expr, text: str) -> _Operand:
        base, constant, terms = _split_constant(node)
        lag = None
        column = None
        symbol = None
        if isinstance(base, exp.Dot) and isinstance(base.this, exp.Bracket) and isinstance(base.expression,
                                                                                           exp.Identifier):
            found = self._lagged(base.this)
            if found is not None:
                symbol, lag = found
                column = exp.column(base.expression.copy())
                if lag not in (0, 1, FIRST):
                    self._fail(f"WHERE condition {text}: only B[i], B[i-1] and B[1] are supported as Kleene "
                               f"indexes (and B[1..i-1] inside MAX / MIN), got {base.this.sql(dialect=SparkSeq)}",
                               base)
        elif isinstance(base, exp.Column):
            symbol = self._symbol(base)
            column = exp.column(base.this.copy())
        if symbol is None or column is None or constant is None:
            self._fail(f"WHERE condition {text}: each side must be a symbol's column plus or minus a numeric "
                       f"constant ({FORMS_HELP}), got {node.sql(dialect=SparkSeq)}", node)
        return _Operand(symbol, column, constant, lag, node, terms)

    def _columns(self, left: _Operand, right: _Operand, op: CmpOp, text: str,
                 node: exp.Expr) -> tuple[int, int, int | float, int | float]:
        """Value-column indices of both operands and the engine offsets (right, left), exact
        (module docstring): integers move the constants to the right, ``l + kl OP r + kr``
        being ``l OP r + (kr - kl)``; doubles keep each constant on its side, as Spark adds it."""
        constant = right.constant - left.constant
        where = f"WHERE condition {text}"
        lcol = self.ctx.find_column(left.column, where)
        rcol = self.ctx.find_column(right.column, where)
        lcodec, rcodec = value_codec(lcol.dtype, compared=True), value_codec(rcol.dtype, compared=True)
        lnum, rnum = bool(lcodec and lcodec.numeric), bool(rcodec and rcodec.numeric)
        if not lnum or not rnum:
            if lnum or rnum or lcol.name.casefold() != rcol.name.casefold():
                self._fail(f"{where}: {lcol.name} ({lcol.type_text}) and {rcol.name} ({rcol.type_text}) cannot be "
                           "compared exactly; non-numeric columns (STRING, DATE, TIMESTAMP, ...) are compared only "
                           "with the same column of the other row (A.name = C.name); cast in a subquery otherwise",
                           node)
            if constant:
                self._fail(f"{where}: a constant offset needs numeric columns; {lcol.name} is {lcol.type_text}",
                           node)
            index = self._rank_column(lcol, node)
            return index, index, 0, 0
        assert lcodec is not None and rcodec is not None  # both numeric from here on
        for codec, col in ((lcodec, lcol), (rcodec, rcol)):
            if codec.value_type is ValueType.FLOAT and col.dtype.this not in (DType.FLOAT, DType.DOUBLE):
                self._fail(f"{where}: {col.name} is {col.type_text}, which the engine could carry only as an "
                           "inexact DOUBLE; predicates compare exactly: cast it to DECIMAL(18, s) with s <= 6, "
                           "BIGINT or DOUBLE in a subquery", node)
        scales = {c.scale for c in (lcodec, rcodec) if c.value_type is ValueType.INT}
        floats = any(c.value_type is ValueType.FLOAT for c in (lcodec, rcodec))
        if len(scales) > 1 or (floats and scales - {0}):
            self._fail(f"{where}: {lcol.name} ({lcol.type_text}) and {rcol.name} ({rcol.type_text}) have different "
                       "decimal scales; cast both to the same DECIMAL(p, s) (or both to DOUBLE) in a subquery", node)
        li = value_column_index(lcol, lcodec, self.ctx)
        ri = value_column_index(rcol, rcodec, self.ctx)
        if floats:
            for operand in (left, right):
                if operand.terms > 1:
                    self._fail(f"{where}: write at most one constant per side with DOUBLE columns; Spark adds "
                               f"{operand.node.sql(dialect=SparkSeq)} one constant at a time, rounding each time, "
                               "so the constants cannot be summed first", operand.node)
            return li, ri, float(right.constant), float(left.constant)
        scale = next(iter(scales))
        return li, ri, _integer_offset(constant * (10 ** scale), op, lambda: self._fail(
            f"{where}: {lcol.name} and {rcol.name} hold integers at {scale} decimal places, and the constant "
            f"{constant} has more; {op.value} can never hold (=) or always holds (<>): remove or fix it", node)), 0

    def _rank_column(self, column: ColumnSchema, node: exp.Expr) -> int:
        """A value column holding the dense rank of ``column`` within the partition (NULL stays NULL)."""
        if column.dtype.this in COMPLEX_TYPES:
            self._fail(f"WHERE: {column.name} is {column.type_text}; only atomic types can be compared", node)
        name = f"{column.name}\x00rank"  # never a real column name; one rank column per source column
        for i, existing in enumerate(self.ctx.value_columns):
            if existing.name == name:
                return i
        reference = exp.column(exp.to_identifier(column.name))
        window = exp.Window(
            this=exp.Anonymous(this="dense_rank", expressions=[]),
            partition_by=[k.expression.copy() for k in self.keys] or None,
            order=exp.Order(expressions=[exp.Ordered(this=reference.copy())]),
        )
        rank = exp.case().when(reference.copy().is_(exp.null()), exp.null()).else_(window)
        self.ctx.value_columns.append(
            ValueColumn(name, rank, column, ValueType.INT, lambda x: exp.cast(x, DType.BIGINT)))
        return len(self.ctx.value_columns) - 1

    def _fail(self, message: str, node: exp.Expr) -> NoReturn:
        raise PredicateError(message, node_position(node, self.ctx.sql))


def conjuncts(node: exp.Expr) -> list[exp.Expr]:
    """The operands of a tree of ``AND`` (parentheses removed)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


#: ``B[1]``: the Kleene set's first row; ``B[1..i-1]``: the rows before the current one
FIRST, PREFIX = -2, -3
SET_AGGREGATES_NAMES = {exp.Max: "MAX", exp.Min: "MIN", exp.Avg: "AVG", exp.Sum: "SUM", exp.Count: "COUNT"}
SET_AGGREGATES = tuple(SET_AGGREGATES_NAMES)


def _reduction(aggregate: str, op: CmpOp, k: Decimal) -> int | None:
    """The lag equivalent to ``b[i] OP aggregate(b[1..i-1]) + k`` over every set, or None.

    For the sets in time order b_1 .. b_m (m >= 2; docs/predicates-and-strategies.md
    section 7 proves each line):

    * MAX with ``>=`` / ``>`` / ``=`` and k >= 0, MIN with ``<=`` / ``<`` / ``=`` and
      k <= 0: the running extreme is the previous row (the sequence is monotone), so
      it is ``b[i] OP b[i-1] + k`` (lag 1);
    * MIN with ``>=`` / ``>`` and k >= 0, MAX with ``<=`` / ``<`` and k <= 0: the
      running extreme stays the first row, so it is ``b[i] OP b[1] + k``.
    """
    if op is CmpOp.EQ and k == 0 or (aggregate == "MAX" and op in (CmpOp.GE, CmpOp.GT, CmpOp.EQ) and k >= 0) or (
            aggregate == "MIN" and op in (CmpOp.LE, CmpOp.LT, CmpOp.EQ) and k <= 0):
        return 1
    if (aggregate == "MIN" and op in (CmpOp.GE, CmpOp.GT) and k >= 0) or (
            aggregate == "MAX" and op in (CmpOp.LE, CmpOp.LT) and k <= 0):
        return FIRST
    return None


def _is_prefix(index: exp.Expr) -> bool:
    """``1..i-1`` (read by the tokenizer as ``1. .i - 1``) or ``1:i-1``."""
    if isinstance(index, exp.Slice):
        end = index.expression
        return _integer(index.this) == 1 and isinstance(end, exp.Sub) and _is_i(end.this) and _integer(
            end.expression) == 1
    if isinstance(index, exp.Sub) and _integer(index.expression) == 1 and isinstance(index.this, exp.Dot):
        dot = index.this
        return (isinstance(dot.this, exp.Literal) and dot.this.name in ("1.", "1") and isinstance(dot.expression,
                exp.Identifier) and dot.expression.name.casefold() == "i")
    return False


def _is_i(node: exp.Expr) -> bool:
    return isinstance(node, exp.Column) and node.args.get("table") is None and node.name.casefold() == "i"


def _integer(node: exp.Expr) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string and node.name.isdigit():
        return int(node.name)
    return None


def _number(node: exp.Expr) -> Decimal | None:
    """A numeric literal (optionally negated or parenthesised) as an exact Decimal."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        inner = _number(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            value = Decimal(node.name)
        except ArithmeticError:
            return None
        return value if value.is_finite() else None
    return None


def _split_constant(node: exp.Expr) -> tuple[exp.Expr, Decimal | None, int]:
    """``col + 2`` / ``col - 2`` / ``2 + col`` / ``col`` -> (col, constant, number of constants
    written); constant None if malformed."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, (exp.Add, exp.Sub)):
        right = _number(node.expression)
        if right is not None:
            base, inner, terms = _split_constant(node.this)
            if inner is None:
                return base, None, terms
            return base, inner + right if isinstance(node, exp.Add) else inner - right, terms + 1
        left = _number(node.this)
        if left is not None and isinstance(node, exp.Add):
            base, inner, terms = _split_constant(node.expression)
            return base, None if inner is None else inner + left, terms + 1
        return node, None, 0
    return node, Decimal(0), 0


def _integer_offset(value: Decimal, op: CmpOp, impossible: Callable[[], None]) -> int:
    """An exact integer offset for integer operands: ``x OP y + value`` with a fractional
    value is ``x OP y + ceil/floor(value)`` for inequalities; for = / <> it is refused."""
    if value == value.to_integral_value():
        return int(value)
    if op in (CmpOp.LT, CmpOp.GE):
        return math.ceil(value)
    if op in (CmpOp.LE, CmpOp.GT):
        return math.floor(value)
    impossible()
    raise AssertionError("unreachable")
