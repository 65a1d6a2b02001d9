"""Positional parameter markers (``?``) keep the values they are bound to.

Spark binds ``spark.sql(text, args=[...])`` values to the ``?`` markers in the order
they appear in the text. A rewrite may move a marker (DEFINE conditions are emitted
in symbol order, not in the order written) or copy it, which would silently bind
other values. :func:`print_statement` prints a rewritten tree and checks that its
``?`` markers appear exactly once each, in the order written; otherwise it raises
:class:`ParameterMarkerError` pointing at the first marker out of place. Named
markers (``:name``) bind by name and need no check.

>>> from sql_rewrites.syntax.dialect import parse_statement
>>> print_statement(parse_statement("SELECT ? AS a FROM t WHERE k > ?"), "SELECT ? AS a FROM t WHERE k > ?")
'SELECT ? AS a FROM t WHERE k > ?'
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.tokens import TokenType

from sql_rewrites.errors import ParameterMarkerError, position_of
from sql_rewrites.syntax.dialect import SparkSeq, tokenize
from sql_rewrites.syntax.parser import MARKER_OFFSET

TAG = "__sparkseq_marker_"
TAGGED = re.compile(re.escape(TAG) + r"(\d+)")


def positional_markers(tree: exp.Expr) -> bool:
    """Whether ``tree`` holds ``?`` markers: a rewrite that prints a part of it twice (a
    source read twice) would bind other values (named markers, ``:name``, need no check)."""
    return any(not marker.this for marker in tree.find_all(exp.Placeholder))


def print_statement(tree: exp.Expr, sql: str, *, pretty: bool = False) -> str:
    """``tree`` as Spark SQL, its ``?`` markers bound as in ``sql`` (the text it was parsed from).

    Raises
    ------
    ParameterMarkerError
        When the printed statement would hold a ``?`` marker out of its written order,
        or more than once.
    """
    markers = [m for m in tree.find_all(exp.Placeholder) if not m.this and MARKER_OFFSET in m.meta]
    if not markers:
        return print_tree(tree, pretty)
    offsets = sorted({m.meta[MARKER_OFFSET] for m in markers})
    rank = {offset: k for k, offset in enumerate(offsets)}
    tagged = tree.copy()
    for marker in tagged.find_all(exp.Placeholder):
        if not marker.this and MARKER_OFFSET in marker.meta:
            marker.set("this", f"{TAG}{rank[marker.meta[MARKER_OFFSET]]}")
    printed = print_tree(tagged, pretty)
    spans, order = _tagged_spans(printed)
    if order != list(range(len(offsets))):
        moved = next((i for i, k in enumerate(order) if k != i), len(order))  # written i-th, not printed i-th
        offset = offsets[min(moved, len(offsets) - 1)]
        raise ParameterMarkerError(
            "positional parameter markers (?) cannot be used here: the rewritten statement evaluates them in "
            "another order or more than once, so args=[...] would bind other values; use named markers "
            "(:name) with args={...}", position_of(sql, offset, offset))
    for start, end in reversed(spans):
        printed = printed[:start] + "?" + printed[end:]
    return printed


def _tagged_spans(printed: str) -> tuple[list[tuple[int, int]], list[int]]:
    """Spans (``:tag``) and ranks of the tagged markers in ``printed``, in order."""
    tokens = tokenize(printed)
    spans, order = [], []
    for colon, name in zip(tokens, tokens[1:]):
        found = TAGGED.fullmatch(name.text)
        if colon.token_type == TokenType.COLON and found and name.start == colon.end + 1:
            spans.append((colon.start, name.end + 1))
            order.append(int(found.group(1)))
    return spans, order


def print_tree(tree: exp.Expr, pretty: bool = False) -> str:
    """``tree`` as Spark SQL."""
    # function names keep their case: the engine function is registered case-exactly
    return tree.sql(dialect=SparkSeq, pretty=pretty, normalize_functions=False)
