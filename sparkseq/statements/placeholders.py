"""``{name}`` placeholders in SQL text, formatted by PySpark's rules, with the way back.

``sparkseq.sql(spark, "SELECT * FROM {clicks} MATCH_AGGREGATE (...)", clicks=df)`` formats
like ``spark.sql(text, **kwargs)``: only when keyword arguments are given, the text is a
Python format string read by PySpark's own ``SQLStringFormatter`` — a DataFrame becomes a
temporary view named ``_pyspark_<hex>``, a plain column reference its SQL name, a ``str``
a SQL string literal, anything else ``format(value, spec)``; ``{{`` and ``}}`` are
literal braces. PySpark's class does every conversion, so the rules are PySpark's.

The formatted text is what gets compiled and run, so errors are found at offsets in it;
:meth:`Formatted.relocate` moves such an error back to the user's text (an error inside
a replaced value points at the whole ``{placeholder}``) and names each DataFrame by its
placeholder instead of its view name.

The views live while the statements run. Afterwards they are dropped, as ``spark.sql``
drops them — unless a statement of the text created a view or table, which may read
them (a temporary view reads them by name when it is used): then they stay. On a Spark
Connect session they always stay: a Connect DataFrame is analysed by the server when it
is used, after :func:`sparkseq.sql` returned, and would no longer find them.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from sparkseq.spark.gateway import is_connect_session
from sql_rewrites.errors import SqlRewriteError, name_shown, position_of


@dataclass(frozen=True)
class Piece:
    """A stretch of the formatted text and the stretch of the user's text it came from;
    ``verbatim`` when they are the same characters (else an escaped brace or a replacement)."""

    start: int
    end: int  # exclusive
    source_start: int
    source_end: int  # exclusive
    verbatim: bool


@dataclass
class Formatted:
    """A text after placeholder formatting (identity when there were no values)."""

    original: str
    text: str
    pieces: tuple[Piece, ...] = ()
    views: dict[str, str] = field(default_factory=dict)  # temporary view -> placeholder as written
    session: SparkSession | None = None
    formatter: Any = None

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """Inclusive offsets in the user's text of inclusive offsets ``start``..``end`` here."""
        if not self.pieces:
            return start, end
        return self._at(start, first=True), self._at(end, first=False)

    def _at(self, offset: int, first: bool) -> int:
        for piece in self.pieces:
            if piece.start <= offset < piece.end or (piece is self.pieces[-1] and offset >= piece.end):
                if piece.verbatim:
                    return piece.source_start + min(offset - piece.start, piece.source_end - piece.source_start - 1)
                return piece.source_start if first else piece.source_end - 1
        return offset

    def relocate(self, exc: SqlRewriteError) -> SqlRewriteError:
        """``exc`` (positioned in :attr:`text`) positioned in the user's text, DataFrames named by placeholder."""
        if not self.pieces:
            return exc
        message = exc.message
        for view, placeholder in self.views.items():
            message = name_shown(message, view, placeholder)
        position = exc.position
        if position is not None and position.start is not None and position.end is not None:
            start, end = self.source_span(position.start, position.end)
            position = position_of(self.original, start, end, position.origin)
        return exc.relocated(position, message)

    def clear(self, keep: bool = False) -> None:
        """Drop the DataFrames' temporary views (unless ``keep``, or on Spark Connect, whose
        DataFrames resolve the views when they are used: module docstring)."""
        if self.session is None or keep or is_connect_session(self.session):
            return
        for view in self.views:
            self.session.catalog.dropTempView(view)


def format_text(spark: SparkSession, text: str, values: Mapping[str, Any]) -> Formatted:
    """``text`` with its ``{name}`` placeholders replaced from ``values`` (module docstring).

    Raises
    ------
    ValueError, KeyError, IndexError
        As ``str.format`` does: a single ``}``, an unknown name, a positional ``{}``.
    """
    if not values:
        return Formatted(text, text)
    formatter = _formatter(spark)
    out: list[str] = []
    pieces: list[Piece] = []
    length, cursor = 0, 0  # offsets in the formatted and in the user's text
    placeholders: dict[str, str] = {}
    for literal, name, spec, conversion in formatter.parse(text):
        for run, escaped in _runs(literal):
            width = 2 if escaped else len(run)
            pieces.append(Piece(length, length + len(run), cursor, cursor + width, not escaped))
            out.append(run)
            length, cursor = length + len(run), cursor + width
        if name is None:
            continue
        close = _field_end(text, cursor)
        value = _value(formatter, name, spec, conversion, values)
        pieces.append(Piece(length, length + len(value), cursor, close + 1, False))
        placeholders.setdefault(value, text[cursor:close + 1])
        out.append(value)
        length, cursor = length + len(value), close + 1
    views = {view: placeholders.get(view, view) for _, view in formatter._temp_views}
    if is_connect_session(spark):  # Connect's formatter leaves the views to the SQL command; sparkseq runs several
        for frame, view in formatter._temp_views:
            frame.createOrReplaceTempView(view)
    return Formatted(text, "".join(out), tuple(pieces), views, spark, formatter)


def _runs(literal: str) -> list[tuple[str, bool]]:
    """A literal part split into verbatim runs and single braces (written doubled)."""
    runs: list[tuple[str, bool]] = []
    start = 0
    for i, char in enumerate(literal):
        if char in "{}":
            if i > start:
                runs.append((literal[start:i], False))
            runs.append((char, True))
            start = i + 1
    if start < len(literal):
        runs.append((literal[start:], False))
    return runs


def _field_end(text: str, start: int) -> int:
    """The offset of the ``}`` closing the replacement field that opens at ``start``."""
    depth = 0
    for i in range(start + 1, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            if depth == 0:
                return i
            depth -= 1
    raise ValueError("expected '}' before end of string")


def _value(formatter: string.Formatter, name: str, spec: str | None, conversion: str | None,
           values: Mapping[str, Any]) -> str:
    """One replacement field, as ``string.Formatter.vformat`` computes it (the formatter's
    ``get_field`` is PySpark's, which converts DataFrames, columns and strings)."""
    first = name.split(".")[0].split("[")[0]
    if first == "" or first.isdigit():
        raise IndexError(f"Replacement index {first or 0} out of range for positional args tuple")
    value, _ = formatter.get_field(name, (), values)
    value = formatter.convert_field(value, conversion)
    spec = formatter.vformat(spec, (), values) if spec else ""
    return formatter.format_field(value, spec)


def _formatter(spark: SparkSession) -> Any:
    if is_connect_session(spark):
        from pyspark.sql.connect.sql_formatter import SQLStringFormatter as ConnectFormatter

        return ConnectFormatter(spark)  # type: ignore[arg-type]
    from pyspark.sql.sql_formatter import SQLStringFormatter

    return SQLStringFormatter(spark)


__all__ = ["Formatted", "Piece", "format_text"]
