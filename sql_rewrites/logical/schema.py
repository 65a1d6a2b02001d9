"""Schemas handed to the compiler: the provider protocol and relation schemas.

The compiler never reads a catalog on its own. The caller passes a *schema provider*,
either

* a mapping ``{relation name: {column name: Spark type}}``, e.g.
  ``{"clicks": {"customer_id": "bigint", "ts": "timestamp", "price": "decimal(10,2)"}}``,
  or
* a callable ``provider(name) -> {column name: Spark type} | None``.

Relation names are the dotted names as written in the SQL (``clicks``,
``sales.clicks``), matched case-insensitively (Spark's default). Column order matters
only for ``SELECT *`` in derived sources; types are Spark type strings
(``'bigint'``, ``'decimal(10,2)'``, ``'array<int>'`` ...) or sqlglot ``DataType`` s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Union

from sqlglot import exp

from sql_rewrites.errors import SchemaProviderError
from sql_rewrites.logical.sql_types import parse_type, type_text

ColumnTypes = Mapping[str, Union[str, exp.DataType]]
SchemaProvider = Union[Mapping[str, ColumnTypes], Callable[[str], Union[ColumnTypes, None]]]
#: A relation's columns as the compiler's types (what a session's catalog lookup returns).
ResolvedColumns = dict[str, exp.DataType]


@dataclass(frozen=True)
class ColumnSchema:
    """One column: its name, sqlglot type and Spark type text."""

    name: str
    dtype: exp.DataType
    type_text: str

    @property
    def known(self) -> bool:
        """False when the type could not be derived (``UNKNOWN``)."""
        return self.dtype.this != exp.DType.UNKNOWN


@dataclass(frozen=True)
class RelationSchema:
    """The ordered columns of a relation; ``name`` is used in messages. ``derived``: the
    types were derived by the compiler (a subquery, CTE or operator's output), not given by
    the schema provider — right for analysis, but blind to what sqlglot does not model
    (a string's collation)."""

    name: str
    columns: tuple[ColumnSchema, ...]
    derived: bool = False

    def find(self, name: str) -> ColumnSchema | None:
        """The column called ``name`` (case-insensitive), or ``None``."""
        folded = name.casefold()
        return next((c for c in self.columns if c.name.casefold() == folded), None)

    @property
    def names(self) -> tuple[str, ...]:
        """Column names in order."""
        return tuple(c.name for c in self.columns)

    @staticmethod
    def build(name: str, columns: ColumnTypes) -> RelationSchema:
        """A schema from ``{column: type}``, types as Spark strings or DataTypes.

        Raises
        ------
        SchemaProviderError
            When a type is not a Spark SQL type.
        """
        built = []
        for column, value in columns.items():
            try:
                dtype = parse_type(value)
            except ValueError as exc:
                raise SchemaProviderError(f"schema of {name!r}, column {column!r}: {exc}") from None
            built.append(ColumnSchema(str(column), dtype, type_text(dtype)))
        return RelationSchema(name, tuple(built))


class Catalog:
    """Case-insensitive relation lookup over a :data:`SchemaProvider`."""

    def __init__(self, provider: SchemaProvider) -> None:
        self._provider = provider
        self._by_folded: dict[str, str] | None = None
        if isinstance(provider, Mapping):
            self._by_folded = {str(k).casefold(): str(k) for k in provider}
        elif not callable(provider):
            raise SchemaProviderError(
                f"a schema provider is a mapping of relation -> {{column: type}} or a callable; "
                f"got {type(provider).__name__}"
            )

    def lookup(self, name: str) -> RelationSchema | None:
        """The schema of relation ``name`` (dotted, as written), or ``None``."""
        if self._by_folded is not None:
            key = self._by_folded.get(name.casefold())
            columns = None if key is None else self._provider[key]  # type: ignore[index]
        else:
            columns = self._provider(name)  # type: ignore[operator]
        if columns is None:
            return None
        if not isinstance(columns, Mapping):
            raise SchemaProviderError(
                f"the schema provider returned {type(columns).__name__} for {name!r}; "
                "expected a mapping of column -> type"
            )
        return RelationSchema.build(name, columns)

    def known_relations(self) -> tuple[str, ...] | None:
        """Names the provider knows, when it is a mapping (for error messages)."""
        return None if self._by_folded is None else tuple(sorted(self._by_folded.values()))


#: One column of a Spark DDL schema: a name (plain or `quoted`), an optional ``:``, the
#: type, then optionally ``NOT NULL`` and ``COMMENT '...'``.
_DDL_COLUMN = re.compile(r"\s*(`(?:[^`]|``)+`|[^\s:`]+)\s*:?\s*(.+?)(?:\s+NOT\s+NULL)?"
                         r"(?:\s+COMMENT\s+'(?:[^'\\]|\\.)*')?\s*", re.IGNORECASE | re.DOTALL)


def ddl_columns(ddl: str) -> dict[str, exp.DataType]:
    """The columns of a Spark DDL schema, as ``DataFrameReader.schema`` takes it, read
    without Spark.

    Raises
    ------
    SchemaProviderError
        A column without a name and a type, or a type that is not a Spark SQL type.

    Examples
    --------
    >>> {name: type_text(t) for name, t in ddl_columns("k INT, `the ts` TIMESTAMP NOT NULL, "
    ...                                                "price DECIMAL(10,2) COMMENT 'a, b'").items()}
    {'k': 'INT', 'the ts': 'TIMESTAMP', 'price': 'DECIMAL(10, 2)'}
    """
    columns: dict[str, exp.DataType] = {}
    for part in _top_level_parts(ddl):
        found = _DDL_COLUMN.fullmatch(part)
        if found is None:
            raise SchemaProviderError(f"expected 'name TYPE' in the schema {ddl!r}, got {part.strip()!r}")
        name = found.group(1)
        name = name[1:-1].replace("``", "`") if name.startswith("`") else name
        try:
            columns[name] = parse_type(found.group(2))
        except ValueError as exc:
            raise SchemaProviderError(f"column {name}: {exc}") from None
    return columns


def _top_level_parts(text: str) -> list[str]:
    """``text`` cut at the commas outside quotes, backquotes, ``<...>`` and ``(...)``."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\" and quote != "`":
                i += 1  # the escaped character
            elif char == quote:
                quote = ""
        elif char in "`'\"":
            quote = char
        elif char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    return [*parts, text[start:]]


def table_name(table: exp.Table) -> str:
    """The dotted name of a table reference as written: ``db.t``."""
    return ".".join(part.name for part in table.parts)
