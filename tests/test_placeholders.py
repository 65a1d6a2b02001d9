"""``{name}`` placeholders (sparkseq.statements.placeholders): PySpark's formatting, and positions back
in the text as written. Values that need no Spark (strings, numbers), so no session."""

from __future__ import annotations

import pytest

from sparkseq.statements.placeholders import format_text
from sql_rewrites.errors import UnknownColumnError, position_of


class NoSession:
    """Formatting strings and numbers never touches the session."""


def test_formats_like_spark_sql() -> None:
    text = "SELECT {name}, {n:>4}, '{{x}}', {n!r} FROM t WHERE a = {quote}"
    formatted = format_text(NoSession(), text, {"name": "it's", "n": 7, "quote": "a\\b"})  # type: ignore[arg-type]
    assert formatted.text == "SELECT 'it\\'s',    7, '{x}', 7 FROM t WHERE a = 'a\\\\b'"
    assert format_text(NoSession(), "SELECT '{x}'", {}).text == "SELECT '{x}'"  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["SELECT {", "SELECT }", "SELECT {missing}", "SELECT {}"])
def test_bad_placeholders_fail_as_str_format_does(bad: str) -> None:
    with pytest.raises((ValueError, KeyError, IndexError)):
        format_text(NoSession(), bad, {"x": 1})  # type: ignore[arg-type]


def test_errors_point_into_the_text_as_written() -> None:
    text = "SELECT '{{a}}', {value},\n  nope FROM t"
    formatted = format_text(NoSession(), text, {"value": "a much longer value"})  # type: ignore[arg-type]
    start = formatted.text.index("nope")
    error = UnknownColumnError("unknown column 'nope'", position_of(formatted.text, start, start + 3))
    moved = formatted.relocate(error)
    assert (moved.position.line, moved.position.column) == (2, 3)
    assert moved.position.excerpt.splitlines() == ["   2 |   nope FROM t", "     |   ^^^^"]
    inside = formatted.text.index("much")  # an error inside a replaced value points at the placeholder
    moved = formatted.relocate(UnknownColumnError("x", position_of(formatted.text, inside, inside + 3)))
    assert moved.position.excerpt.splitlines()[1] == "     |                 ^^^^^^^"
    assert isinstance(moved, UnknownColumnError) and str(moved).startswith("x at line 1, column 17")
