"""Whether the symbols' row conditions exclude each other: at most one true for any row.

A row mask is the OR of one ``CASE WHEN c_k THEN 2^k ELSE 0 END`` per symbol
(:func:`sql_rewrites.generate.mask_expression`). When no row can satisfy two of the
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

Anything else — a type unknown, a condition of another form, a column of a struct, two
symbols with an equal literal — keeps the OR. Literal values are compared as Spark reads
them (:mod:`sql_rewrites.literals`: the parser decodes escapes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import exp

from sql_rewrites.schema import RelationSchema
from sql_rewrites.sql_types import INTEGRAL

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


def _membership(term: exp.Expr, source: RelationSchema) -> tuple[str, frozenset] | None:
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
    return column.name.casefold(), frozenset(values)


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


__all__ = ["exclusive", "BINARY_COLLATION"]
