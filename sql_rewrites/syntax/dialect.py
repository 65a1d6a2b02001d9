"""The ``SparkSeq`` dialect: Spark SQL plus the MATCH_AGGREGATE table operator.

>>> import sqlglot
>>> from sql_rewrites.syntax.dialect import SparkSeq
>>> sql = "SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B)) AS m"
>>> sqlglot.parse_one(sql, read=SparkSeq).sql(SparkSeq)
'SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B)) AS m'

Parse errors surface as :class:`sql_rewrites.errors.SqlParseError` through
:func:`parse_statement` / :func:`parse_sql`, with line, column and the offending
text underlined.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from sql_rewrites.errors import SqlParseError, position_of
from sql_rewrites.syntax.generator import SparkSeqGenerator
from sql_rewrites.syntax.literals import spark_string_tokens
from sql_rewrites.syntax.parser import SparkSeqParser


class SparkSeqTokenizer(Spark.Tokenizer):
    """Spark's tokenizer, with quoted literals read by Spark's own rules
    (:mod:`sql_rewrites.syntax.literals`: doubled quotes, escapes, raw strings)."""

    def tokenize(self, sql: str) -> list[Token]:
        return spark_string_tokens(super().tokenize(sql), sql)


class SparkSeq(Spark):
    """Spark's dialect with MATCH_AGGREGATE (see :mod:`sql_rewrites.syntax.parser`) and Spark's
    exact string literals (:mod:`sql_rewrites.syntax.literals`).

    Every SQL text sparkseq parses or prints goes through this dialect, so a literal
    means in sparkseq what it means in Spark.
    """

    Tokenizer = SparkSeqTokenizer
    Parser = SparkSeqParser
    Generator = SparkSeqGenerator


def tokenize(sql: str) -> list[Token]:
    """Tokenize ``sql`` with SparkSeq's (Spark's) tokenizer, as :class:`SqlParseError`."""
    try:
        return SparkSeq().tokenize(sql)
    except TokenError as exc:
        raise _token_error(exc, sql) from None


def parse_tokens(tokens: list[Token], sql: str) -> exp.Expr:
    """Parse one statement's tokens (positions relative to ``sql``) into a tree."""
    parser = SparkSeq().parser(error_level=ErrorLevel.IMMEDIATE)
    try:
        trees = parser.parse(tokens, sql)
    except ParseError as exc:
        raise to_sql_parse_error(exc, sql, tokens) from None
    if len(trees) != 1 or trees[0] is None:
        raise SqlParseError("expected exactly one statement", position_of(sql, 0, 0))
    return trees[0]


def parse_statement(sql: str) -> exp.Expr:
    """Parse one SparkSeq statement.

    Raises
    ------
    SqlParseError
        With line, column and the underlined offending text.
    """
    return parse_tokens(tokenize(sql), sql)


def parse_into(into: type[exp.Expr], sql: str) -> exp.Expr:
    """Parse ``sql`` as one ``into`` node (e.g. a :class:`MatchPattern`)."""
    return _tokens_into(into, tokenize(sql), sql, f"a {into.__name__}", 0)


def _tokens_into(into: type[exp.Expr], tokens: list[Token], sql: str, what: str, start: int) -> exp.Expr:
    parser = SparkSeq().parser(error_level=ErrorLevel.IMMEDIATE)
    try:
        tree = parser.parse_into(into, tokens, sql)[0]
    except ParseError as exc:
        raise to_sql_parse_error(exc, sql, tokens) from None
    if tree is None:
        raise SqlParseError(f"expected {what}", position_of(sql, start, start))
    return tree


def parse_fragment(into: type[exp.Expr], document: str, start: int, end: int, what: str,
                   lead: TokenType | None = None) -> exp.Expr:
    """Parse ``document[start:end]`` as exactly one ``into`` node (``what`` names it in errors).

    Token positions, and so every later error position, are offsets in ``document``:
    a caller may assemble a statement's tree from fragments written apart (the
    DataFrame API's arguments, laid out one after another in one document). ``lead``:
    a keyword the fragment may leave out (``INTERVAL`` before ``10 minutes``), read as if
    written at its start.

    Raises
    ------
    SqlParseError
        The fragment is empty, holds a ``;``, or is not one ``into``.
    """
    hidden = "".join(c if c == "\n" else " " for c in document[:start])  # keeps positions absolute
    tokens = tokenize(hidden + document[start:end])
    if not tokens:
        raise SqlParseError(f"expected {what}, got nothing", position_of(document, start, start))
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            raise SqlParseError(f"expected {what}, not several statements", position_of(document, token.start,
                                                                                          token.end))
    first = tokens[0]
    if lead is not None and first.token_type != lead:
        tokens = [Token(lead, lead.name, first.line, first.col, first.start, first.start), *tokens]
    return _tokens_into(into, tokens, document, what, start)


def to_sql_parse_error(exc: ParseError, sql: str, tokens: list[Token]) -> SqlParseError:
    """Turn sqlglot's ``ParseError`` into a :class:`SqlParseError`.

    The position is that of the token sqlglot blamed (``line``/``col`` of its last
    character), widened to the whole token.
    """
    info = (exc.errors or [{}])[0]
    description = str(info.get("description") or _first_line(str(exc)))
    line, col = info.get("line"), info.get("col")
    token = _token_at(tokens, line, col)
    if token is not None:
        return SqlParseError(description, position_of(sql, token.start, token.end))
    return SqlParseError(description, position_of(sql, len(sql.rstrip()), len(sql.rstrip())))


def _token_error(exc: TokenError, sql: str) -> SqlParseError:
    # sqlglot wraps the real cause ("Missing ' from <line>:<offset>") in a generic error
    cause = str(exc.__cause__ or exc)
    missing = re.search(r"Missing (.+) from \d+:(\d+)", cause)
    if missing:
        start = int(missing.group(2))
        message = f"unterminated text: missing closing {missing.group(1)}"
        return SqlParseError(message, position_of(sql, start, start))
    if "/*" in sql and "*/" not in sql[sql.rfind("/*"):]:
        start = sql.rfind("/*")
        return SqlParseError("unterminated comment: missing closing */", position_of(sql, start, start + 1))
    unterminated = unterminated_quote(sql)  # sqlglot may fail without saying where (r"a\"b")
    if unterminated is not None:
        return SqlParseError(f"unterminated text: missing closing {sql[unterminated]}",
                             position_of(sql, unterminated, unterminated))
    start = exc.start if exc.start is not None else 0
    return SqlParseError(f"cannot tokenize: {_first_line(cause)}", position_of(sql, start, start))


def unterminated_quote(sql: str) -> int | None:
    """The offset of the first quote (``'``, ``"`` or a backtick) that ``sql`` never closes,
    by Spark's lexer: ``--`` and ``/* */`` comments, ``\\`` escaping the next character,
    raw ``r'...'`` literals without escapes; None when every quote closes.

    >>> unterminated_quote(r'v = r"a\\"b"')  # the raw literal ends at \\", the last " opens another
    10
    >>> unterminated_quote("x = 'a' -- it's")
    """
    i = 0
    while i < len(sql):
        char, pair = sql[i], sql[i:i + 2]
        if pair == "--":
            i = _after(sql, "\n", i + 2)
        elif pair == "/*":
            i = _after(sql, "*/", i + 2)
        elif char in "'\"`":
            raw = char != "`" and i > 0 and sql[i - 1] in "rR" and (i < 2 or not (sql[i - 2].isalnum()
                                                                             or sql[i - 2] == "_"))
            end = _closing(sql, i, escapes=char != "`" and not raw)
            if end is None:
                return i
            i = end + 1
        else:
            i += 1
    return None


def _after(sql: str, closing: str, start: int) -> int:
    at = sql.find(closing, start)
    return len(sql) if at < 0 else at + len(closing)


def _closing(sql: str, start: int, *, escapes: bool) -> int | None:
    """The offset of the quote closing the one at ``start``, or None."""
    i = start + 1
    while i < len(sql):
        if escapes and sql[i] == "\\":
            i += 2
        elif sql[i] == sql[start]:
            return i
        else:
            i += 1
    return None


def _token_at(tokens: list[Token], line: object, col: object) -> Token | None:
    for token in tokens:
        if token.line == line and token.col == col:
            return token
    return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "invalid SQL"


def sanitize(tree: exp.Expr) -> exp.Expr:
    """Quote every identifier and drop comments: user text can only be names and values."""
    for node in tree.walk():
        if isinstance(node, exp.Identifier):
            node.set("quoted", True)
        node.comments = None
    return tree
