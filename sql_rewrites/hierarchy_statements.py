"""``CREATE [OR REPLACE] CONCEPT HIERARCHY`` and ``DROP CONCEPT HIERARCHY`` statements.

They are SparkSeq statements, not Spark SQL: the Spark layer (:func:`sparkseq.sql`)
runs them by reading the ``(child, parent)`` pairs of a table or view and registering
them in the session (:mod:`sparkseq.spark.hierarchies`). The compiler only recognises and
parses them, with the precise line/column errors of the rest of the dialect::

    CREATE [OR REPLACE] CONCEPT HIERARCHY name FROM relation
    DROP CONCEPT HIERARCHY [IF EXISTS] name

>>> from sql_rewrites.syntax.statements import split_statements
>>> text = "CREATE OR REPLACE CONCEPT HIERARCHY sectors FROM db.company_sector"
>>> parse_hierarchy_statement(split_statements(text)[0], text)
CreateHierarchy(name='sectors', source='db.company_sector', replace=True)
>>> text = "DROP CONCEPT HIERARCHY IF EXISTS sectors"
>>> parse_hierarchy_statement(split_statements(text)[0], text)
DropHierarchy(name='sectors', if_exists=True)
>>> parse_hierarchy_statement(split_statements("SELECT 1")[0], "SELECT 1") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

from sqlglot.tokens import Token, TokenType

from sql_rewrites.errors import SourcePosition, SqlParseError, position_of
from sql_rewrites.syntax.statements import Statement

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class CreateHierarchy:
    """``CREATE [OR REPLACE] CONCEPT HIERARCHY name FROM source``.

    ``source`` is the relation as Spark reads it (quoted parts keep their backticks);
    ``source_key`` its case-folded, unquoted dotted name.
    """

    name: str
    source: str
    replace: bool = False
    name_position: SourcePosition | None = field(default=None, compare=False, repr=False)
    source_position: SourcePosition | None = field(default=None, compare=False, repr=False)
    source_key: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True)
class DropHierarchy:
    """``DROP CONCEPT HIERARCHY [IF EXISTS] name``."""

    name: str
    if_exists: bool = False
    name_position: SourcePosition | None = field(default=None, compare=False, repr=False)


HierarchyStatement = Union[CreateHierarchy, DropHierarchy]


def parse_hierarchy_statement(statement: Statement, sql: str) -> HierarchyStatement | None:
    """The hierarchy statement ``statement`` is, or ``None`` for any other statement.

    Raises
    ------
    SqlParseError
        A statement starting ``CREATE [OR REPLACE] CONCEPT`` or ``DROP CONCEPT`` that is
        malformed, pointing at the offending token.
    """
    tokens = statement.tokens
    words = [t.text.upper() if t.token_type != TokenType.IDENTIFIER else "" for t in tokens[:4]]
    if words[:2] == ["DROP", "CONCEPT"]:
        return _Reader(tokens, sql, 2).drop()
    if words[:2] == ["CREATE", "CONCEPT"]:
        return _Reader(tokens, sql, 2).create(replace=False)
    if words[:4] == ["CREATE", "OR", "REPLACE", "CONCEPT"]:
        return _Reader(tokens, sql, 4).create(replace=True)
    return None


class _Reader:
    def __init__(self, tokens: list[Token], sql: str, at: int) -> None:
        self.tokens, self.sql, self.at = tokens, sql, at

    def _peek(self) -> Token | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _fail(self, message: str) -> SqlParseError:
        token = self._peek()
        if token is None:
            end = self.tokens[-1].end + 1
            return SqlParseError(f"{message}, found the end of the statement", position_of(self.sql, end, end))
        return SqlParseError(f"{message}, found {token.text!r}", position_of(self.sql, token.start, token.end))

    def _keyword(self, word: str, what: str) -> None:
        token = self._peek()
        if token is None or token.token_type == TokenType.IDENTIFIER or token.text.upper() != word:
            raise self._fail(f"expecting {what}")
        self.at += 1

    def _name(self, what: str) -> tuple[str, Token]:
        token = self._peek()
        if token is None or not (token.token_type == TokenType.IDENTIFIER
                                 or (token.token_type != TokenType.STRING and WORD.match(token.text))):
            raise self._fail(f"expecting {what}")
        self.at += 1
        return token.text, token

    def _end(self) -> None:
        if self._peek() is not None:
            raise self._fail("expecting the end of the statement")

    def create(self, *, replace: bool) -> CreateHierarchy:
        self._keyword("HIERARCHY", "HIERARCHY after CREATE [OR REPLACE] CONCEPT")
        name, name_token = self._name("a hierarchy name after CONCEPT HIERARCHY")
        self._keyword("FROM", "FROM <table or view of (child, parent) pairs> after the hierarchy name")
        parts, first = [], self._peek()
        while True:
            part, token = self._name("a table or view name")
            parts.append((part, token))
            dot = self._peek()
            if dot is None or dot.token_type != TokenType.DOT:
                break
            self.at += 1
        self._end()
        source = ".".join(
            "`" + p.replace("`", "``") + "`" if t.token_type == TokenType.IDENTIFIER else p for p, t in parts
        )
        assert first is not None
        return CreateHierarchy(
            name, source, replace,
            name_position=position_of(self.sql, name_token.start, name_token.end),
            source_position=position_of(self.sql, first.start, parts[-1][1].end),
            source_key=".".join(p for p, _ in parts).casefold(),
        )

    def drop(self) -> DropHierarchy:
        self._keyword("HIERARCHY", "HIERARCHY after DROP CONCEPT")
        if_exists = False
        token = self._peek()
        following = self.tokens[self.at + 1] if self.at + 1 < len(self.tokens) else None
        if (token is not None and token.text.upper() == "IF" and token.token_type != TokenType.IDENTIFIER
                and following is not None and following.text.upper() == "EXISTS"):
            self.at += 2
            if_exists = True
        name, name_token = self._name("a hierarchy name after DROP CONCEPT HIERARCHY [IF EXISTS]")
        self._end()
        return DropHierarchy(name, if_exists, position_of(self.sql, name_token.start, name_token.end))


__all__ = ["CreateHierarchy", "DropHierarchy", "HierarchyStatement", "parse_hierarchy_statement"]
