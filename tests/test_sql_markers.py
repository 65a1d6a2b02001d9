"""Parameter markers through the rewrite: ``?`` keeps its place or is refused; ``:name`` anywhere.

Spark binds ``args=[...]`` to the ``?`` markers in the order they are written, so the
generated SQL must hold each ``?`` once, in that order (``sql_rewrites.syntax.markers``).
"""

from __future__ import annotations

import pytest

from sql_rewrites import rewrite
from sql_rewrites.errors import ParameterMarkerError
from sql_rewrites.syntax.markers import TAG

SCHEMA = {"ev": {"k": "int", "ts": "timestamp", "action": "string", "price": "double"}}
OPERATOR = ("FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B) DEFINE {define} "
            "MEASURES COUNT(*) AS n) AS m")

SOURCE = ("SELECT ?, n FROM (SELECT * FROM ev WHERE k <> ?) MATCH_AGGREGATE (PARTITION BY k ORDER BY ts "
          "PATTERN SEQ(A, B) DEFINE {define} MEASURES COUNT(*) AS n) AS m WHERE n > ?")


def generated(sql: str) -> str:
    return rewrite(sql, SCHEMA, lambda plan: "engine")


def statement(define: str, select: str = "k, n", where: str = "") -> str:
    return f"SELECT {select} {OPERATOR.format(define=define)} {where}".strip()


def markers(sql: str) -> list[str]:
    """The markers of ``sql`` in order (named ones by name), ignoring string literals."""
    from sqlglot.tokens import TokenType

    from sql_rewrites.syntax.dialect import tokenize

    tokens = tokenize(sql)
    found = []
    for i, token in enumerate(tokens):
        if token.token_type == TokenType.PLACEHOLDER:
            found.append("?")
        elif token.token_type == TokenType.COLON and i + 1 < len(tokens) and tokens[i + 1].start == token.end + 1:
            found.append(":" + tokens[i + 1].text)
    return found


@pytest.mark.parametrize("sql", [
    statement("A AS action = ?, B AS action = ? AND price > ?", select="?, k, n", where="WHERE k > ?"),
    statement("A AS action = 'a', B AS action = 'b'", select="? AS tag, n", where="WHERE k IN (?, ?)"),
    SOURCE.format(define="A AS action = 'a', B AS action = 'b'"),
], ids=["define-in-pattern-order", "outside-the-operator", "source-subquery"])
def test_positional_markers_keep_their_order(sql: str) -> None:
    out = generated(sql)
    assert markers(out) == markers(sql)
    assert TAG not in out


@pytest.mark.parametrize(("sql", "column"), [
    (statement("B AS action = ?, A AS action = ?"), 104),  # the mask is built in pattern order: A's bit first
    (SOURCE.format(define="A AS action = ?, B AS action = ?"), 47),  # the row mask is computed over the source
], ids=["define-out-of-pattern-order", "define-and-source-subquery"])
def test_positional_markers_the_rewrite_moves_are_refused(sql: str, column: int) -> None:
    with pytest.raises(ParameterMarkerError, match=rf"use named markers \(:name\) with args=\{{\.\.\.\}} "
                                                   rf"at line 1, column {column}\b"):
        generated(sql)
    assert sql[column - 1] == "?"


def test_named_markers_may_stand_anywhere_and_literals_are_untouched() -> None:
    sql = statement("B AS action = :b, A AS action = :a AND price > :p",
                    select=f"'?', ':{TAG}0', k, n", where="WHERE k > :k")
    out = generated(sql)
    assert sorted(markers(out)) == sorted(markers(sql)) == [":a", ":b", ":k", ":p"]
    assert f"':{TAG}0'" in out and "'?'" in out
