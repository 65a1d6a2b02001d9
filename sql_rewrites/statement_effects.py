"""What a statement of a script does to the catalog, read from its text alone.

The script runner (:mod:`sparkseq.statements.scripts`) checks a script against a catalog that the
script itself changes; these pure functions say which relations a statement creates,
drops or alters, which names it spells, and whether it holds parameter markers, so
that the runner never parses SQL itself.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from sql_rewrites.errors import SqlRewriteError
from sql_rewrites.logical.schema import table_name
from sql_rewrites.syntax.dialect import parse_statement
from sql_rewrites.syntax.statements import Statement

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

    >>> from sql_rewrites.syntax.statements import split_statements
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


def view_query_span(statement: Statement) -> tuple[int, int] | None:
    """Where the query of a persistent view statement lies in the whole text (start and stop
    offsets, inclusive): ``CREATE [OR REPLACE] VIEW name ... AS query`` or ``ALTER VIEW name
    AS query``; None for any other statement, a temporary view's too.

    The query starts after the first ``AS`` outside parentheses (a column list, TBLPROPERTIES)
    and ends with the statement's last token, as the text Spark stores for a view does.

    >>> from sql_rewrites.syntax.statements import split_statements
    >>> text = "CREATE OR REPLACE VIEW v (a COMMENT 'as') AS SELECT 1 AS a -- note"
    >>> start, stop = view_query_span(split_statements(text)[0])
    >>> text[start:stop + 1]
    'SELECT 1 AS a'
    >>> view_query_span(split_statements("CREATE TEMP VIEW v AS SELECT 1")[0]) is None
    True
    """
    tokens = statement.tokens
    words = [t.text.upper() if t.token_type != TokenType.STRING else "" for t in tokens]
    if statement.prefix or not words:
        return None
    if words[0] == "CREATE":
        head = 1
        while head < len(words) and words[head] in ("OR", "REPLACE"):
            head += 1
    elif words[0] == "ALTER":
        head = 1
    else:
        return None
    if head >= len(words) or words[head] != "VIEW":
        return None  # a temporary view (TEMP, TEMPORARY, GLOBAL), a table, ...
    depth = 0
    for i in range(head + 1, len(tokens) - 1):
        kind = tokens[i].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and kind == TokenType.ALIAS:
            return tokens[i + 1].start, tokens[-1].end
    return None


def creates_permanent_function(statement: Statement) -> bool:
    """Whether ``statement`` is ``CREATE [OR REPLACE] FUNCTION`` (not TEMPORARY): a function
    Spark keeps in the catalog, a SQL function's body as text.

    >>> from sql_rewrites.syntax.statements import split_statements
    >>> [creates_permanent_function(s) for s in split_statements(
    ...     "CREATE FUNCTION f() RETURNS INT RETURN 1; CREATE TEMPORARY FUNCTION g() RETURNS INT RETURN 1")]
    [True, False]
    """
    words = [t.text.upper() for t in statement.tokens[:4] if t.token_type != TokenType.STRING]
    if statement.prefix or not words or words[0] != "CREATE":
        return False
    rest = words[3:] if words[1:3] == ["OR", "REPLACE"] else words[1:]
    return bool(rest) and rest[0] == "FUNCTION"


def _parsed(statement: Statement) -> exp.Expr | None:
    try:
        return parse_statement(statement.text)  # SparkSeq: a view may hold a MATCH_AGGREGATE
    except (SqlglotError, SqlRewriteError):
        return None


def _is_global_temp(create: exp.Create) -> bool:
    props = create.args.get("properties")
    return props is not None and any(isinstance(p, exp.GlobalProperty) for p in props.expressions)


__all__ = ["CREATING", "changed_relations", "created_relations", "effects_unknown", "has_parameter_markers",
           "spelled_names", "creates_permanent_function", "view_query_span"]
