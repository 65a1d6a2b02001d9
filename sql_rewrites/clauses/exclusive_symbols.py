"""Whether the symbols' row conditions exclude each other: at most one true for any row.

A row mask is the OR of one ``CASE WHEN c_k THEN 2^k ELSE 0 END`` per symbol
(:func:`mask_expression`). When no row can satisfy two of the
conditions, one ``CASE WHEN c_0 THEN 1 WHEN c_1 THEN 2 ... ELSE 0 END`` gives every row
the same mask, bit for bit, and Spark evaluates it faster (it stops at the first true
condition). This module proves that, from what analysis knows, or says it cannot:

* every condition requires one and the same source column to be in a set of literals
  — ``col = 'v'``, ``col IN ('v', 'w')`` (``TYPE BY`` and ``HIERARCHY`` symbols), alone or
  as a conjunct of an ``AND`` —, and those sets are pairwise disjoint;
* the column's type makes distinct literals unequal: a ``STRING`` with the default binary
  collation, compared to string literals (a collation such as ``UTF8_LCASE`` makes
  ``'a'`` and ``'A'`` equal, a ``CHAR(n)`` pads ``'a'`` and ``'a '`` to the same value), or
  an integral column compared to integer literals (``1`` and ``1.0`` are equal after
  coercion: a decimal literal is refused);
* the column's type was read from the schema provider (Spark's catalog in a session),
  not derived by sqlglot from a subquery or CTE (derived types lose collations).

Conditions that overlap but are each exactly such a membership of one column (concepts
of a hierarchy: ``ticker IN ('DELL', 'IBM')`` and ``ticker IN ('DELL')``) still take one
CASE, with a branch per set of bits rather than per symbol (:func:`value_branches`): a
row's value picks the one branch of all the symbols whose sets hold it.

Anything else — a type unknown, a condition of another form, a column of a struct, two
symbols with an equal literal in conditions that are not plain memberships — keeps the
OR. Literal values are compared as Spark reads them (:mod:`sql_rewrites.syntax.literals`: the
parser decodes escapes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlglot import exp

from sql_rewrites.logical.schema import RelationSchema
from sql_rewrites.logical.sql_types import INTEGRAL, DType

#: Literals of a membership, each with the value it compares as.
Literals = list[tuple[str | int, exp.Expr]]
#: The collation under which equal strings are equal bytes (Spark's default).
BINARY_COLLATION = "utf8_binary"
DIGITS = re.compile(r"[0-9]+")


def exclusive(conditions: Sequence[exp.Expr], source: RelationSchema) -> bool:
    """Whether at most one of ``conditions`` (row conditions over ``source``) holds for any
    row (module docstring); False when that cannot be proven."""
    if len(conditions) < 2:
        return True
    if source.derived:
        return False
    allowed = [_memberships(condition, source) for condition in conditions]
    shared = set.intersection(*(set(found) for found in allowed))
    for column in sorted(shared):
        sets = [found[column] for found in allowed]
        if _pairwise_disjoint(sets):
            return True
    return False


def _pairwise_disjoint(sets: list[frozenset]) -> bool:
    seen: set = set()
    for values in sets:
        if seen & values:
            return False
        seen |= values
    return True


def _memberships(condition: exp.Expr, source: RelationSchema) -> dict[str, frozenset]:
    """For each column the condition requires to be in a set of literals (a conjunct
    ``col = v`` or ``col IN (...)`` with literals ``col``'s type keeps distinct): the
    case-folded column name -> the set (the first such conjunct per column)."""
    found: dict[str, frozenset] = {}
    for term in _conjuncts(condition):
        membership = _membership(term, source)
        if membership is not None and membership[0] not in found:
            found[membership[0]] = membership[1]
    return found


def _conjuncts(condition: exp.Expr) -> list[exp.Expr]:
    condition = condition.unnest()
    if isinstance(condition, exp.And):
        return _conjuncts(condition.this) + _conjuncts(condition.expression)
    return [condition]


def value_branches(conditions: Sequence[tuple[int, exp.Expr]],
                   source: RelationSchema) -> list[tuple[int, exp.Expr]] | None:
    """Branches ``(bits, condition)`` that exclude each other and give every row the OR of
    ``2^k`` over the conditions ``(k, c_k)`` it satisfies, for conditions that overlap but
    each require exactly one column to be in a set of literals (``col = v`` or ``col IN
    (...)`` and nothing else), the same column for all, whose type keeps distinct literals
    unequal (as for :func:`exclusive`): one ``col IN (...)`` per distinct set of bits,
    holding the values whose conditions are exactly that set. A row's value equals at most
    one literal, so at most one branch holds, and it holds exactly when the row satisfies
    those conditions and no other. Concepts of a hierarchy, which overlap by design, have
    this form. None when a condition has another form or the type proves nothing.
    """
    found = value_bits(conditions, source)
    if found is None:
        return None
    column, values = found
    by_bits: dict[int, list[exp.Expr]] = {}
    for value in values:
        by_bits.setdefault(value.bits, []).append(value.literal.copy())
    return [(b, exp.EQ(this=column.copy(), expression=literals[0]) if len(literals) == 1
             else exp.In(this=column.copy(), expressions=literals)) for b, literals in by_bits.items()]


@dataclass(frozen=True)
class ValueBits:
    """A literal of plain memberships (:func:`value_bits`): the value it compares as, its
    spelling, and the OR of ``2^k`` over the conditions holding it."""

    value: str | int
    literal: exp.Expr
    bits: int

    @property
    def order(self) -> tuple[int, bytes] | tuple[int, int]:
        """Where the value sorts under the column's comparison: integers by value, strings
        of the binary collation by their UTF-8 bytes (Spark compares them byte by byte)."""
        if isinstance(self.value, str):
            return 1, self.value.encode("utf-8")
        return 0, self.value


def value_bits(conditions: Sequence[tuple[int, exp.Expr]],
               source: RelationSchema) -> tuple[exp.Column, list[ValueBits]] | None:
    """For conditions ``(k, c_k)`` that are each exactly a membership of one and the same
    column in a set of literals its type keeps distinct (:func:`value_branches`): the column,
    and every literal with the bits of the conditions holding it; None otherwise."""
    if source.derived or not conditions:
        return None
    column: exp.Column | None = None
    bits: dict[str | int, int] = {}
    spelled: dict[str | int, exp.Expr] = {}
    for k, condition in conditions:
        terms = _conjuncts(condition)
        found = _membership_terms(terms[0], source) if len(terms) == 1 else None
        if found is None:
            return None
        here, literals = found
        if column is None:
            column = here
        elif here.name.casefold() != column.name.casefold():
            return None
        for value, literal in literals:
            bits[value] = bits.get(value, 0) | 1 << k
            spelled.setdefault(value, literal)
    assert column is not None
    return column, [ValueBits(value, spelled[value], b) for value, b in bits.items()]


def _membership(term: exp.Expr, source: RelationSchema) -> tuple[str, frozenset] | None:
    found = _membership_terms(term, source)
    if found is None:
        return None
    column, literals = found
    return column.name.casefold(), frozenset(value for value, _ in literals)


def _membership_terms(term: exp.Expr, source: RelationSchema) -> tuple[exp.Column, Literals] | None:
    """``col = v`` or ``col IN (...)`` with literals ``col``'s type keeps distinct: the
    column and each literal with the value it compares as; None for any other term."""
    if isinstance(term, exp.EQ):
        column, literals = term.this.unnest(), [term.expression.unnest()]
        if not isinstance(column, exp.Column):
            column, literals = literals[0], [column]
    elif isinstance(term, exp.In) and not term.args.get("query") and not term.args.get("unnest"):
        column, literals = term.this.unnest(), [e.unnest() for e in term.expressions]
    else:
        return None
    if not isinstance(column, exp.Column) or not literals:
        return None
    dtype = _column_type(column, source)
    if dtype is None:
        return None
    values = [_value(literal, dtype) for literal in literals]
    if any(v is None for v in values):
        return None
    return column, [(v, literal) for v, literal in zip(values, literals) if v is not None]


def _column_type(column: exp.Column, source: RelationSchema) -> exp.DataType | None:
    """The type of the source column ``column`` names, or None when it may name something
    else: a qualifier naming a source column is a struct field access."""
    if not isinstance(column.this, exp.Identifier) or column.args.get("db") or column.args.get("catalog"):
        return None
    if column.table and source.find(column.table) is not None:
        return None
    found = source.find(column.name)
    return None if found is None else found.dtype


def _value(literal: exp.Expr, dtype: exp.DataType) -> str | int | None:
    """The value ``literal`` compares as against a column of ``dtype``, when distinct values
    are never equal under that type's comparison; None otherwise."""
    if dtype.this == exp.DType.TEXT:
        collation = dtype.args.get("collate")
        if collation is not None and collation.name.casefold() != BINARY_COLLATION:
            return None
        return literal.this if isinstance(literal, exp.Literal) and literal.is_string else None
    if dtype.this in INTEGRAL:
        negative = isinstance(literal, exp.Neg)
        number = literal.this.unnest() if negative else literal
        if not isinstance(number, exp.Literal) or number.is_string or not DIGITS.fullmatch(str(number.this)):
            return None
        return -int(number.this) if negative else int(number.this)
    return None


def one_case(branches: Iterable[tuple[int, exp.Expr]]) -> exp.Expr:
    """``CAST(CASE WHEN c_0 THEN b_0 WHEN c_1 THEN b_1 ... ELSE 0 END AS BIGINT)`` for
    ``(b_i, c_i)`` branches of which at most one holds for any row."""
    case = exp.case()
    for bits, condition in branches:  # built fresh: no copies (a builder's copy is of the whole CASE so far)
        case = case.when(condition.copy(), exp.Literal.number(bits), copy=False)
    return exp.cast(case.else_(exp.Literal.number(0), copy=False), DType.BIGINT)

def mask_expression(conditions: Iterable[tuple[int, exp.Expr]], *, exclusive: bool = False) -> exp.Expr:
    """``CAST((CASE WHEN c_k THEN 2^k ELSE 0 END) | ... AS BIGINT)`` for ``(k, c_k)`` pairs.

    With ``exclusive`` — at most one condition true for any row, as
    :func:`sql_rewrites.clauses.exclusive_symbols.exclusive` proves — one ``CASE WHEN c_0 THEN 2^0
    WHEN c_1 THEN 2^1 ... ELSE 0 END`` instead: the same mask for every row, cheaper to
    evaluate. A condition that is NULL counts as FALSE (SEMANTICS section 2).
    """
    pairs = list(conditions)
    if exclusive:
        return one_case((1 << k, condition) for k, condition in pairs)
    bits = [
        exp.paren(exp.case().when(condition.copy(), exp.Literal.number(1 << k), copy=False)
                  .else_(exp.Literal.number(0), copy=False))
        for k, condition in pairs
    ]
    combined: exp.Expr = bits[0]
    for bit in bits[1:]:
        combined = exp.BitwiseOr(this=combined, expression=bit)
    return exp.cast(combined, DType.BIGINT)


__all__ = ["mask_expression", "one_case", "exclusive", "value_branches", "value_bits", "ValueBits", "BINARY_COLLATION"]
