"""Syntax-tree nodes of the MATCH_AGGREGATE table operator.

They follow sqlglot's own ``MatchRecognize``: each node declares its parts in
``arg_types``; :mod:`sql_rewrites.syntax.parser` builds them and
:mod:`sql_rewrites.syntax.generator` prints them back.

A statement such as ::

    FROM clicks AS c MATCH_AGGREGATE (PARTITION BY id ORDER BY ts
      PATTERN SEQ(A, !B, C+) DEFINE A AS x = 1, B AS x = 2, C AS x = 3
      MEASURES COUNT(*) AS n WITHIN INTERVAL 1 HOUR) AS m

becomes ``MatchAggregate(this=Table(clicks, alias=c), partition_by=[Column(id)],
order=Order(...), pattern=MatchPattern(expressions=[MatchPatternElement(A),
MatchPatternElement(B, negated=True), MatchPatternElement(C, kleene=True)]),
define=[Alias(this=<x = 1>, alias=A), ...], measures=[Alias(Count(Star), n)],
within=Interval(...), alias=TableAlias(m))``.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp

from sql_rewrites.errors import SourcePosition, position_of


class _SparkSeqNode(exp.Expression):
    """Prints with the SparkSeq dialect unless told otherwise (other dialects lack it)."""

    def sql(self, dialect: t.Any = None, **opts: t.Any) -> str:  # type: ignore[override]  # same call shapes
        from sql_rewrites.syntax.dialect import SparkSeq  # the dialect imports these nodes

        return super().sql(dialect=dialect or SparkSeq, **opts)


class MatchAggregate(_SparkSeqNode):
    """``<source> MATCH_AGGREGATE ( ... ) [AS alias]``: a table operator.

    ``this`` is the source relation (table, subquery, or another table operator).
    ``define`` and ``measures`` are lists of ``exp.Alias`` (condition / aggregate
    aliased by the symbol / output name). ``within`` and ``slide`` are interval or
    number expressions; ``count_type`` a ``Var`` (BIGINT, DECIMAL or DOUBLE);
    ``type_by`` a column; ``hierarchy`` an identifier; ``where`` the condition of
    ``WHERE`` (cross-event, Kleene iterator and local predicates, see
    :mod:`sql_rewrites.clauses.predicates`); ``strategy`` a ``Var`` holding one of
    :meth:`udafs.plan.Strategy.sql`; ``uncertain`` a :class:`MatchUncertain`
    (imprecise timestamps). An E-Cube query has either
    ``pattern`` and ``cube`` (a :class:`MatchCube`: the base pattern's roll-ups) or
    ``patterns`` (a :class:`MatchPatterns`: the cuboids listed); a plain one has
    ``pattern`` only.
    """

    arg_types = {
        "this": True,
        "partition_by": False,
        "order": True,
        "pattern": False,
        "patterns": False,
        "cube": False,
        "define": False,
        "type_by": False,
        "hierarchy": False,
        "measures": False,
        "within": False,
        "slide": False,
        "count_type": False,
        "where": False,
        "strategy": False,
        "uncertain": False,
        "alias": False,
        "joins": False,
        "laterals": False,
    }

    @property
    def alias(self) -> str:
        """The output alias name, or ``""``."""
        alias = self.args.get("alias")
        return alias.name if alias else ""


class MatchPattern(_SparkSeqNode):
    """``SEQ(e1, ..., em)``: ``expressions`` are :class:`MatchPatternElement`."""

    arg_types = {"expressions": True}


class MatchPatternElement(_SparkSeqNode):
    """One pattern element: a symbol (identifier or string literal), ``!``, ``+`` or a
    :class:`MatchQuantifier` (``?``, ``*``, ``{n}``, ``{n,}``, ``{n,m}``).

    ``this`` is an ``exp.Identifier`` for a symbol name or a string ``exp.Literal``
    for a quoted type value (``'View Kindle'``).
    """

    arg_types = {"this": True, "negated": False, "kleene": False, "quantifier": False}

    @property
    def negated(self) -> bool:
        """True for ``!X``."""
        return bool(self.args.get("negated"))

    @property
    def kleene(self) -> bool:
        """True for ``X+``."""
        return bool(self.args.get("kleene"))

    @property
    def is_quoted_value(self) -> bool:
        """True when the symbol is written as a string literal."""
        return isinstance(self.this, exp.Literal)

    @property
    def quantifier(self) -> MatchQuantifier | None:
        """The quantifier written after the symbol (not ``+``), or ``None``."""
        return self.args.get("quantifier")

    @property
    def row_bounds(self) -> tuple[int, int | None]:
        """The least and most rows the element binds, as written (``None``: no most):
        ``X`` (1, 1), ``X+`` (1, None), ``X?`` (0, 1), ``X{2,4}`` (2, 4), ..."""
        if self.quantifier is not None:
            return self.quantifier.bounds
        return 1, None if self.kleene else 1


class MatchQuantifier(_SparkSeqNode):
    """A quantifier after a pattern symbol: ``?``, ``*``, ``{n}``, ``{n,}`` or ``{n,m}``.

    ``this`` and ``expression`` are the number literals of ``{n,m}`` (``expression``
    absent for ``{n}`` and ``{n,}``); ``unbounded`` marks ``{n,}`` and ``*``, ``optional``
    marks ``?`` and ``*`` (written without numbers).
    """

    arg_types = {"this": False, "expression": False, "unbounded": False, "optional": False}

    @property
    def bounds(self) -> tuple[int, int | None]:
        """The least and most rows (``None``: unbounded): ``?`` (0, 1), ``*`` (0, None),
        ``{n}`` (n, n), ``{n,}`` (n, None), ``{n,m}`` (n, m)."""
        unbounded = bool(self.args.get("unbounded"))
        if self.args.get("optional"):
            return 0, None if unbounded else 1
        least = int(self.this.name)
        most = self.args.get("expression")
        if unbounded:
            return least, None
        return least, least if most is None else int(most.name)


class MatchPatterns(_SparkSeqNode):
    """``PATTERNS (SEQ(...), SEQ(...), ...)``: the cuboids of an E-Cube query, listed."""

    arg_types = {"expressions": True}


class MatchCube(_SparkSeqNode):
    """``CUBE (CONCEPT ROLLUP 1 TO Computer, PATTERN ROLLUP 3, ...)``: :class:`MatchRollup` items."""

    arg_types = {"expressions": True}


class MatchRollup(_SparkSeqNode):
    """One CUBE item. ``this`` names a base position: a 1-based number (``exp.Literal``)
    or a symbol (identifier or string); ``kind`` is ``CONCEPT`` or ``PATTERN``; ``to``
    (CONCEPT only) the ancestor to roll up to (identifier or string), or absent for
    "up to the root"."""

    arg_types = {"this": True, "kind": True, "to": False}

    @property
    def kind(self) -> str:
        """``CONCEPT`` or ``PATTERN``."""
        return self.args["kind"].name


class MatchUncertain(_SparkSeqNode):
    """``UNCERTAIN BETWEEN lo AND hi [STEP length]``: each event's possible times.

    ``this`` and ``expression`` are the columns holding the first and the last possible
    time; ``step`` (optional) the distance between possible times (an interval or a
    number, like WITHIN).
    """

    arg_types = {"this": True, "expression": True, "step": False}


class PatternArgument(_SparkSeqNode):
    """The pattern string of a ``seq_*`` function: ``SEQ(...) [STRATEGY words] [HIERARCHY name]``
    (the two suffixes in either order).

    ``this`` is the :class:`MatchPattern`; ``strategy`` and ``hierarchy`` are what the
    MATCH_AGGREGATE clauses of those names hold.
    """

    arg_types = {"this": True, "strategy": False, "hierarchy": False}


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
