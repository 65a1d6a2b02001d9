"""Printing MATCH_AGGREGATE back to SQL (the round trip of :mod:`sql_rewrites.syntax.parser`).

Sub-clauses are printed in one canonical order, whatever order they were written
in. Plain Spark SQL without the operator prints exactly as Spark's generator does.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp
from sqlglot.generators.spark import SparkGenerator

from sql_rewrites.syntax.expressions import (
    MatchAggregate,
    MatchCube,
    MatchPattern,
    MatchPatternElement,
    MatchPatterns,
    MatchQuantifier,
    MatchRollup,
    MatchUncertain,
    PatternArgument,
)
from sql_rewrites.syntax.literals import string_sql


class SparkSeqGenerator(SparkGenerator):
    """Spark's generator plus the MATCH_AGGREGATE nodes."""

    TRANSFORMS: t.ClassVar = {
        **SparkGenerator.TRANSFORMS,
        MatchAggregate: lambda self, e: self.matchaggregate_sql(e),
        MatchPattern: lambda self, e: self.matchpattern_sql(e),
        MatchPatternElement: lambda self, e: self.matchpatternelement_sql(e),
        MatchQuantifier: lambda self, e: self.matchquantifier_sql(e),
        MatchPatterns: lambda self, e: f"({self.expressions(e, flat=True)})",
        MatchCube: lambda self, e: f"({self.expressions(e, flat=True)})",
        MatchRollup: lambda self, e: self.matchrollup_sql(e),
        MatchUncertain: lambda self, e: self.matchuncertain_sql(e),
        PatternArgument: lambda self, e: self.patternargument_sql(e),
    }
    #: Spark 3 and later take a WITH inside a subquery: printed where it stands, never moved to
    #: the top of the statement (sqlglot's Hive heritage), where the CTEs of two operators
    #: (sql_rewrites.planning.path_queries.by_key_size) would clash by name and one inside a CTE would
    #: need reordering.
    EXPRESSIONS_WITHOUT_NESTED_CTES: t.ClassVar = set()

    def literal_sql(self, expression: exp.Literal) -> str:
        # only backslash and quote escaped: sqlglot writes e.g. a bell character as \a,
        # which Spark reads as the letter a
        if not expression.is_string:
            return super().literal_sql(expression)
        return self._replace_line_breaks(string_sql(expression.this))  # pretty printing keeps them as written

    def rawstring_sql(self, expression: exp.RawString) -> str:
        return self._replace_line_breaks(string_sql(expression.name))

    def matchaggregate_sql(self, expression: MatchAggregate) -> str:
        body = "".join(
            (
                self._match_clause("PARTITION BY", self.expressions(expression, key="partition_by", flat=True)),
                self._match_clause("", self.sql(expression, "order")),
                self._match_clause("UNCERTAIN", self.sql(expression, "uncertain")),
                self._match_clause("PATTERN", self.sql(expression, "pattern")),
                self._match_clause("PATTERNS", self.sql(expression, "patterns")),
                self._match_clause("CUBE", self.sql(expression, "cube")),
                self._match_clause("DEFINE", self._match_definitions(expression)),
                self._match_clause("TYPE BY", self.sql(expression, "type_by")),
                self._match_clause("HIERARCHY", self.sql(expression, "hierarchy")),
                self._match_clause("WHERE", self.sql(expression, "where")),
                self._match_clause("MEASURES", self.expressions(expression, key="measures", flat=True)),
                self._match_clause("WITHIN", self.sql(expression, "within")),
                self._match_clause("SLIDE", self.sql(expression, "slide")),
                self._match_clause("COUNT TYPE", self.sql(expression, "count_type")),
                self._match_clause("STRATEGY", self.sql(expression, "strategy")),
            )
        ).strip()
        alias = self.sql(expression, "alias")
        alias = f" AS {alias}" if alias else ""
        joins = self.expressions(expression, key="joins", sep="", flat=True)
        laterals = self.expressions(expression, key="laterals", sep="")
        operator = f"{self.seg('MATCH_AGGREGATE')} {self.wrap(body)}"
        return f"{self.sql(expression, 'this')}{operator}{alias}{joins}{laterals}"

    def matchpattern_sql(self, expression: MatchPattern) -> str:
        return f"SEQ({self.expressions(expression, flat=True)})"

    def patternargument_sql(self, expression: PatternArgument) -> str:
        strategy, hierarchy = self.sql(expression, "strategy"), self.sql(expression, "hierarchy")
        return (self.sql(expression, "this") + (f" STRATEGY {strategy}" if strategy else "")
                + (f" HIERARCHY {hierarchy}" if hierarchy else ""))

    def matchpatternelement_sql(self, expression: MatchPatternElement) -> str:
        negated = "!" if expression.negated else ""
        kleene = "+" if expression.kleene else ""
        return f"{negated}{self.sql(expression, 'this')}{kleene}{self.sql(expression, 'quantifier')}"

    def matchquantifier_sql(self, expression: MatchQuantifier) -> str:
        unbounded = bool(expression.args.get("unbounded"))
        if expression.args.get("optional"):
            return "*" if unbounded else "?"
        least, most = self.sql(expression, "this"), self.sql(expression, "expression")
        return f"{{{least},{most}}}" if most else f"{{{least},}}" if unbounded else f"{{{least}}}"

    def matchrollup_sql(self, expression: MatchRollup) -> str:
        to = self.sql(expression, "to")
        return f"{expression.kind} ROLLUP {self.sql(expression, 'this')}" + (f" TO {to}" if to else "")

    def matchuncertain_sql(self, expression: MatchUncertain) -> str:
        step = self.sql(expression, "step")
        bounds = f"BETWEEN {self.sql(expression, 'this')} AND {self.sql(expression, 'expression')}"
        return bounds + (f" STEP {step}" if step else "")

    def _match_clause(self, keyword: str, body: str) -> str:
        if not body:
            return ""
        return self.seg(f"{keyword} {body.strip()}" if keyword else body.strip())

    def _match_definitions(self, expression: MatchAggregate) -> str:
        definitions = [
            f"{self.sql(d, 'alias')} AS {self.sql(d, 'this')}" for d in expression.args.get("define") or []
        ]
        return self.expressions(sqls=definitions, flat=True)
