"""Statements of an input text: where each one starts and ends, its tokens, and what kind of
statement it is (a query, an EXPLAIN, one with a MATCH_AGGREGATE operator or a call of one
of the given functions), read from the tokens alone, before anything is parsed.

>>> [s.text for s in split_statements("SELECT 1; /* a; comment */ EXPLAIN select  2;")]
['SELECT 1', '/* a; comment */ EXPLAIN select  2']
>>> statement = split_statements("EXPLAIN EXTENDED SELECT x FROM t")[0]
>>> statement.keyword, statement.prefix, statement.tokens[0].text
('EXPLAIN', 'EXPLAIN EXTENDED ', 'SELECT')
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from sqlglot.tokens import Token, TokenType

from sql_rewrites.syntax.dialect import tokenize
from sql_rewrites.syntax.parser import SparkSeqParser

EXPLAIN_MODES = ("EXTENDED", "CODEGEN", "COST", "FORMATTED")
#: First tokens of statements that are queries (``WITH ... INSERT`` and ``FROM ... INSERT``
#: write rows, but change no relation's columns either).
QUERY_KEYWORDS = frozenset({"SELECT", "WITH", "FROM", "VALUES", "TABLE", "("})


@dataclass(frozen=True)
class Statement:
    """One statement of the input: its text and tokens (positions in the whole input).

    For ``EXPLAIN [mode] <query>`` the tokens are those of ``<query>`` and ``prefix``
    is ``"EXPLAIN [mode] "`` (sqlglot reads EXPLAIN as an opaque command). ``start`` is
    the offset of ``text`` in the whole input.
    """

    text: str
    tokens: list[Token]
    prefix: str = ""
    start: int = 0

    @property
    def keyword(self) -> str:
        """The statement's first token, upper-cased (``SELECT``, ``CREATE``, ``EXPLAIN``, ``(`` ...):
        what kind of statement it is. Comments before it are not tokens, so they never count."""
        if self.prefix:
            return "EXPLAIN"
        return self.tokens[0].text.upper() if self.tokens else ""

    @property
    def is_query(self) -> bool:
        """True for a statement that only reads (``SELECT``, ``WITH``, ``FROM``, ``VALUES``,
        ``TABLE``, a parenthesized query): running it changes no relation."""
        return self.keyword in QUERY_KEYWORDS

    @property
    def has_match_aggregate(self) -> bool:
        """True when a MATCH_AGGREGATE operator keyword appears (not in strings)."""
        for token, following in zip(self.tokens, self.tokens[1:]):
            if (
                token.token_type == TokenType.VAR
                and token.text.upper() in SparkSeqParser.TABLE_OPERATOR_PARSERS
                and following.token_type == TokenType.L_PAREN
            ):
                return True
        return False

    def calls(self, functions: Container[str] | None) -> bool:
        """True when one of ``functions`` is called (a name followed by ``(``, not in strings)."""
        return bool(functions) and any(
            token.text.casefold() in functions and following.token_type == TokenType.L_PAREN  # type: ignore[operator]
            for token, following in zip(self.tokens, self.tokens[1:]))


def split_statements(sql: str) -> list[Statement]:
    """Split at top-level semicolons, keeping each statement's original text.

    Raises
    ------
    SqlParseError
        When the text cannot be tokenized (e.g. an unterminated string).
    """
    tokens = tokenize(sql)
    statements: list[Statement] = []
    start = 0
    chunk: list[Token] = []
    for token in [*tokens, None]:
        if token is None or token.token_type == TokenType.SEMICOLON:
            end = len(sql) if token is None else token.start
            if chunk:
                piece = sql[start:end]
                offset = start + len(piece) - len(piece.lstrip())
                statements.append(_explained(Statement(piece.strip(), chunk, start=offset), sql, end))
            start, chunk = (token.end + 1 if token else end), []
        else:
            chunk.append(token)
    return statements


def _explained(statement: Statement, sql: str, end: int) -> Statement:
    """Look inside ``EXPLAIN [EXTENDED | CODEGEN | COST | FORMATTED] <query>``."""
    first = statement.tokens[0]
    if first.token_type != TokenType.COMMAND or first.text.upper() != "EXPLAIN":
        return statement
    offset = first.end + 1
    hidden = "".join(c if c == "\n" else " " for c in sql[:offset])  # keeps positions absolute
    tokens = tokenize(hidden + sql[offset:end])
    skip = 1 if tokens and tokens[0].text.upper() in EXPLAIN_MODES else 0
    prefix = " ".join(["EXPLAIN", *(t.text.upper() for t in tokens[:skip])]) + " "
    return Statement(statement.text, tokens[skip:], prefix, statement.start) if tokens[skip:] else statement


__all__ = ["EXPLAIN_MODES", "QUERY_KEYWORDS", "Statement", "split_statements"]
