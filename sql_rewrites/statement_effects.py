"""What a statement of a script does to the catalog, read from its text alone.

The script runner (:mod:`sparkseq.scripts`) checks a script against a catalog that the
script itself changes; these pure functions say which relations a statement creates,
drops or alters, which names it spells, and whether it holds parameter markers, so
that the runner never parses SQL itself.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from sql_rewrites.dialect import parse_statement
from sql_rewrites.errors import SqlRewriteError
from sql_rewrites.rewriter import Statement
from sql_rewrites.schema import table_name

#: First keywords of statements that create an object (named by :func:`created_relations`).
CREATING = frozenset({"CREATE", "CACHE", "REPLACE"})


def spelled_names(statement: Statement) -> set[str]:
    """The case-folded names (identifiers) a statement's tokens spell."""
    return {t.text.casefold() for t in statement.tokens if t.token_type in (TokenType.VAR, TokenType.IDENTIFIER)}


def has_parameter_markers(statement: Statement) -> bool:
    """``:name`` or ``?`` markers, which only Spark's own binding of ``args`` fills in."""
    return any(t.token_type in (TokenType.PLACEHOLDER, TokenType.COLON) for t in statement.tokens)


def created_relations(statement: Statement) -> set[str]:
    """Case-folded names (as written) of the relations a statement creates — views, tables,
    cached tables — and of the databases and functions it creates.

    >>> from sql_rewrites.rewriter import split_statements
    >>> [created_relations(s) for s in split_statements(
    ...     "CREATE GLOBAL TEMP VIEW v AS SELECT 1; CACHE TABLE Db.T; SELECT 1")]
    [{'global_temp.v'}, {'db.t'}, set()]
    """
    if statement.keyword not in CREATING:
        return set()
    tree = _parsed(statement)
    target = tree.this if isinstance(tree, (exp.Create, exp.Cache)) else None
    if isinstance(target, exp.Schema):
        target = target.this
    if isinstance(target, exp.UserDefinedFunction):
        return {target.name.casefold()} if target.name else set()
    if not isinstance(target, exp.Table):
        return set()
    name = table_name(target)
    if isinstance(tree, exp.Create) and _is_global_temp(tree):
        name = f"global_temp.{name}"
    return {name.casefold()}


def changed_relations(statement: Statement) -> set[str] | None:
    """Case-folded names of the relations a ``DROP`` or ``ALTER`` statement drops, renames or
    changes the columns of (empty for other statements; None when it cannot be parsed)."""
    if statement.keyword not in ("DROP", "ALTER"):
        return set()
    tree = _parsed(statement)
    if tree is None:
        return None
    return {table_name(t).casefold() for t in tree.find_all(exp.Table) if t.name}


def effects_unknown(statement: Statement) -> bool:
    """True for a statement that creates, drops or alters something but cannot be parsed:
    what it changes is unknown."""
    return statement.keyword in CREATING | {"DROP", "ALTER"} and _parsed(statement) is None


def _parsed(statement: Statement) -> exp.Expr | None:
    try:
        return parse_statement(statement.text)  # SparkSeq: a view may hold a MATCH_AGGREGATE
    except (SqlglotError, SqlRewriteError):
        return None


def _is_global_temp(create: exp.Create) -> bool:
    props = create.args.get("properties")
    return props is not None and any(isinstance(p, exp.GlobalProperty) for p in props.expressions)


__all__ = ["CREATING", "changed_relations", "created_relations", "effects_unknown", "has_parameter_markers",
           "spelled_names"]
