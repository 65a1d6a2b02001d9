"""The statement a cube's roll-up or drill-down runs for a pattern the cube does not hold.

:mod:`sparkseq.statements.cubes` answers a pattern outside a cube by running the cube's own
statement with its cuboids replaced by that one pattern (``PATTERNS (SEQ(...))``): same
source, partitioning, windows and measures, minus the measures of symbols the pattern
lacks (the cube's view gives those NULL columns back).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from sql_rewrites.clauses.symbols import written_element
from sql_rewrites.logical.cube import CubeElement
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement
from sql_rewrites.syntax.expressions import MatchAggregate, MatchPattern, MatchPatterns
from udafs.plan import Element


def single_pattern_statement(text: str, elements: Sequence[CubeElement]) -> str:
    """The E-Cube statement ``text`` with its cuboids replaced by the one pattern of
    ``elements``, keeping only the measures of ``COUNT(*)`` and of symbols it binds."""
    tree = parse_statement(text)
    node = next(tree.find_all(MatchAggregate))
    pattern = MatchPattern(expressions=[written_element(
        exp.Literal.string(e.name) if e.quoted else exp.to_identifier(e.name), Element(0, *e.rows), e.negated)
        for e in elements
    ])
    node.set("pattern", None)
    node.set("cube", None)
    node.set("patterns", MatchPatterns(expressions=[pattern]))
    names = {e.name.casefold() for e in elements if not e.negated}
    measures = [m for m in node.args.get("measures") or [] if _measured_symbol(m) in names | {None}]
    node.set("measures", measures or None)
    return tree.sql(dialect=SparkSeq)


def _measured_symbol(measure: exp.Expr) -> str | None:
    """The symbol a MEASURES entry reads (``SUM(X.a)``, ``COUNT(X)``), casefolded; None for COUNT(*)."""
    call = measure.this if isinstance(measure, exp.Alias) else measure
    argument = call.this if isinstance(call, exp.Func) else None
    if isinstance(argument, exp.Column):
        return (argument.table or argument.name).casefold()
    return None


__all__ = ["single_pattern_statement"]
