"""Spark's string literals, exactly: what a quoted text in Spark SQL means, and how to
write any text so that Spark reads it back unchanged.

sqlglot's Spark tokenizer finds where each quoted literal begins and ends the way
Spark's lexer does (a backslash escapes the next character; a quote ends the text),
but decodes the text by other rules. Spark's rules (``SparkParserUtils.unescapeSQLString``
and the lexer, checked against Spark itself by ``tests/test_spark_literals.py``):

* ``'it''s'`` and ``"a""b"``: a doubled quote of the literal's own kind is one quote
  (sqlglot reads two literals, ``'it'`` and ``'s'``, and concatenates them);
* ``\\uXXXX`` (4 hex digits), ``\\UXXXXXXXX`` (8), ``\\ooo`` (3 octal digits, the first
  0 or 1); ``\\0 \\b \\n \\r \\t \\Z``; ``\\%`` and ``\\_`` keep their backslash (for
  LIKE); a backslash before any other character is dropped (``\\a`` is ``a``: sqlglot
  reads it as the bell character);
* ``r'...'`` / ``R"..."``: the text as written, no escapes, no doubled quotes;
* literals written one after another (``'a' 'b'``, whitespace or comments between)
  are one literal, ``'ab'``;
* a UTF-16 surrogate without its pair becomes ``?`` (as in Spark's UTF-8 strings).

Writing a text back (:func:`string_sql`) escapes only the backslash and the quote, so
no other character can be read as an escape. Spark's legacy setting
``spark.sql.parser.escapedStringLiterals=true`` (no escapes at all) is not supported.
"""

from __future__ import annotations

import re

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

SIMPLE_ESCAPES = {"0": "\x00", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}
_HEX = re.compile(r"[0-9a-fA-F]+\Z")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_QUOTED = (TokenType.STRING, TokenType.RAW_STRING)


def is_raw(literal: str) -> bool:
    """True for ``r'...'`` / ``R"..."``: the source text of a raw string literal."""
    return literal[:1] in ("r", "R")


def string_value(literal: str) -> str:
    """The value Spark gives the source text of one quoted literal (quotes included).

    >>> string_value("'it''s'"), string_value(r"'a\\tb'"), string_value(r"r'a\\tb'")
    ("it's", 'a\\tb', 'a\\\\tb')
    >>> string_value(r"'50\\%'"), string_value(r"'\\u00e9t\\U0001F600'")
    ('50\\\\%', 'ét😀')
    """
    if is_raw(literal):
        return _paired(literal[2:-1])
    quote, body = literal[0], literal[1:-1]
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        char = body[i]
        if char == quote:  # only doubled inside a well-formed literal
            out.append(quote)
            i += 2
        elif char != "\\" or i + 1 == n:
            out.append(char)
            i += 1
        else:
            decoded, i = _escape(body, i + 1)
            out.append(decoded)
    return _paired("".join(out))


def _escape(body: str, i: int) -> tuple[str, int]:
    """The escape starting at ``body[i]`` (just after a backslash) and the index after it."""
    char = body[i]
    if char == "u" and _is_hex(body[i + 1:i + 5], 4):
        return chr(int(body[i + 1:i + 5], 16)), i + 5
    if char == "U" and _is_hex(body[i + 1:i + 9], 8):
        return _code_point(int(body[i + 1:i + 9], 16)), i + 9
    octal = body[i:i + 3]
    if len(octal) == 3 and octal[0] in "01" and all(c in "01234567" for c in octal[1:]):
        return chr(int(octal, 8)), i + 3
    return SIMPLE_ESCAPES.get(char, char), i + 1


def _is_hex(text: str, length: int) -> bool:
    return len(text) == length and _HEX.match(text) is not None


def _code_point(value: int) -> str:
    if value > 0x10FFFF:
        raise ValueError(f"\\U{value:08X} is not a Unicode code point")
    return chr(value)


def _paired(text: str) -> str:
    """Join UTF-16 surrogate pairs written as two escapes; a lone surrogate becomes ``?``."""
    if not _LONE_SURROGATE.search(text):
        return text
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE_SURROGATE.sub("?", joined)


def string_sql(value: str) -> str:
    """A Spark SQL literal that Spark reads as ``value``.

    >>> print(string_sql("it's a \\\\ backslash"))
    'it\\'s a \\\\ backslash'
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def spark_string_tokens(tokens: list[Token], sql: str) -> list[Token]:
    """``tokens`` (sqlglot's, of ``sql``) with every quoted literal read by Spark's rules.

    Adjacent literals of one quote kind with nothing between (``'it''s'``) become one
    token; every string token's text becomes its value, and raw strings become plain
    string tokens (their value needs no marker once decoded). Literals separated by
    whitespace stay separate tokens: the parser joins them (as Spark does in
    expressions, but not in ``OPTIONS ('key' 'value')``).
    """
    out: list[Token] = []
    for token in tokens:
        # after a command keyword (EXPLAIN, ...) sqlglot gives the rest of the statement as
        # one STRING token of the raw text: not a quoted literal
        command_body = bool(out) and out[-1].token_type == TokenType.COMMAND
        if token.token_type not in _QUOTED or command_body:
            out.append(token)
            continue
        previous = out[-1] if out else None
        if previous is not None and previous.token_type == TokenType.STRING and _doubles(previous, token, sql):
            previous.end = token.end
            previous.text = string_value(sql[previous.start:previous.end + 1])
            continue
        text = sql[token.start:token.end + 1]
        out.append(Token(TokenType.STRING, _value_or_error(text, token), token.line, token.col,
                         token.start, token.end, token.comments))
    return out


def _doubles(previous: Token, token: Token, sql: str) -> bool:
    """True when ``token`` continues ``previous`` after a doubled quote: ``'a''b'``."""
    if token.start != previous.end + 1 or token.token_type != TokenType.STRING:
        return False
    first = sql[previous.start:previous.end + 1]
    return not is_raw(first) and sql[token.start] == first[0] == sql[previous.end]


def _value_or_error(text: str, token: Token) -> str:
    try:
        return string_value(text)
    except ValueError as exc:
        raise TokenError(f"cannot read the literal {text}: {exc}", token.start, token.end + 1) from None


__all__ = ["string_value", "string_sql", "spark_string_tokens", "is_raw"]
