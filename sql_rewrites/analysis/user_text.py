"""Pieces of a user's statement text, found from the parsed operator.

The parser records where each part of a MATCH_AGGREGATE lies in the text (node
``meta``: ``start``/``end`` of tokens, ``source_start``/``clause_end`` of the operator,
``condition_start``/``condition_end`` of each DEFINE condition). The Spark layer uses
these to place an analysis error in what the user wrote (:mod:`sparkseq.statements.probes`), and
to give the expressions Spark parses from a rewritten statement the place of the DEFINE
condition they came from (:func:`condition_origins`); everything here is pure text and
tree work.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp
from sqlglot.tokens import TokenType

from sql_rewrites.errors import SqlRewriteError
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.syntax.dialect import SparkSeq, sanitize, tokenize
from sql_rewrites.syntax.expressions import MatchAggregate
from sql_rewrites.syntax.markers import print_tree

#: A span of a rewritten statement and the span of the user's text it came from
#: (start and end offsets, inclusive, in each).
Origin = tuple[int, int, int, int]

#: The operator's parts searched for a name an error is about, in this order.
NAMED_PARTS = ("define", "where", "measures")


def operator_span(node: MatchAggregate) -> tuple[int, int] | None:
    """Offsets of an operator's text from its source's first character to its closing parenthesis."""
    start, end = node.meta.get("source_start"), node.meta.get("clause_end")
    return (start, end) if start is not None and end is not None else None


def keyword_span(node: MatchAggregate) -> tuple[int, int] | None:
    """Offsets of the operator's MATCH_AGGREGATE keyword, if the parser recorded them."""
    return (node.meta["start"], node.meta["end"]) if "start" in node.meta else None


def named_reference(node: MatchAggregate, names: set[str]) -> tuple[int, int, str] | None:
    """The first function or column of the operator's DEFINE, WHERE or MEASURES whose name
    (case-folded) is in ``names``: its offsets and the part it is in (``DEFINE``...)."""
    for part in NAMED_PARTS:
        for expression in _as_list(node.args.get(part)):
            for candidate in expression.walk():
                if isinstance(candidate, (exp.Func, exp.Column)) and _name(candidate).casefold() in names:
                    meta = candidate.meta if "start" in candidate.meta else _first_positioned(candidate)
                    if meta:
                        return meta["start"], meta["end"], part.upper()
    return None


def define_conditions(node: MatchAggregate, text: str) -> list[tuple[str, int, str]]:
    """Each DEFINE condition of the operator as written in ``text``: the defined symbol, the
    condition's offset, and its text with the symbol's own qualifier blanked (``VK.action``
    reads ``   action``, offsets kept) unless the source is named like the symbol."""
    sources = _source_names(node)
    found = []
    for definition in node.args.get("define") or []:
        start, end = definition.meta.get("condition_start"), definition.meta.get("condition_end")
        if start is None or end is None:
            continue
        symbol = definition.alias
        condition = text[start:end + 1]
        found.append((symbol, start, condition if symbol.casefold() in sources else _unqualified(condition, symbol)))
    return found


def condition_origins(rewritten: str, queries: Iterable[MatchAggregateQuery]) -> list[Origin]:
    """Where each DEFINE condition of ``queries`` stands in ``rewritten`` (the SQL their
    statement became), with the span of the condition as the user wrote it.

    The generated SQL evaluates a condition as ``CASE WHEN <condition> THEN``, printed as
    the generator prints it; every such place counts (a condition may be evaluated more
    than once). Conditions the generator folded into another form (a search over the
    literals of several symbols) have no place. A span inside another is dropped: the
    text of one condition may recur inside another's.

    >>> from sql_rewrites.rewriter import explain_statement
    >>> from sql_rewrites.syntax.statements import split_statements
    >>> text = "SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A AS x = 1) m"
    >>> explained = explain_statement(split_statements(text)[0], text, {"t": {"ts": "int", "x": "int"}},
    ...                               lambda plan: "f")
    >>> [(explained.rewritten[g:h + 1], text[u:v + 1]) for g, h, u, v in
    ...  condition_origins(explained.rewritten, [op.query for op in explained.operators])]
    [('`x` = 1', 'x = 1')]
    """
    spans = []
    for query in queries:
        conditions = {s.name.casefold(): s.condition for s in query.symbols}
        for definition in query.node.args.get("define") or []:
            start, end = definition.meta.get("condition_start"), definition.meta.get("condition_end")
            condition = conditions.get(definition.alias.casefold())
            if start is None or end is None or condition is None:
                continue
            printed = print_tree(sanitize(condition.copy()))
            spans += [(at, at + len(printed) - 1, start, end) for at in _evaluated_at(rewritten, printed)]
    return [s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in spans)]


def _evaluated_at(rewritten: str, condition: str) -> list[int]:
    """Offsets of ``condition`` where ``rewritten`` evaluates it: ``WHEN <condition> THEN``."""
    found, needle = [], f"WHEN {condition} THEN"
    at = rewritten.find(needle)
    while at >= 0:
        found.append(at + len("WHEN "))
        at = rewritten.find(needle, at + 1)
    return found


def quoted_identifier(name: str) -> str:
    """A relation name as one quoted SQL identifier."""
    return exp.to_identifier(name, quoted=True).sql(dialect=SparkSeq)


def _name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this)
    if isinstance(node, exp.Column):
        return node.name
    return node.sql_name() if isinstance(node, exp.Func) else ""


def _first_positioned(node: exp.Expr) -> dict | None:
    for candidate in node.walk():
        if "start" in candidate.meta and "end" in candidate.meta:
            return candidate.meta
    return None


def _as_list(value: object) -> list[exp.Expr]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]  # type: ignore[list-item]


def _unqualified(condition: str, symbol: str) -> str:
    try:
        tokens = tokenize(condition)
    except SqlRewriteError:
        return condition
    chars = list(condition)
    for before, token, after in zip([None, *tokens], tokens, [*tokens[1:], None]):
        if (token.token_type in (TokenType.VAR, TokenType.IDENTIFIER) and token.text.casefold() == symbol.casefold()
                and after is not None and after.token_type == TokenType.DOT
                and (before is None or before.token_type != TokenType.DOT)):
            for i in range(token.start, after.end + 1):
                chars[i] = " "
    return "".join(chars)


def _source_names(node: MatchAggregate) -> set[str]:
    this = node.this
    name = this.alias_or_name if isinstance(this, (exp.Table, exp.Subquery)) else this.alias
    return {name.casefold()} if name else set()
