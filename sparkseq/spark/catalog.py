"""The compiler's schema provider over a live SparkSession.

``sql_rewrites`` never reads a catalog itself (see :mod:`sql_rewrites.logical.schema`); the
Spark layer hands it :class:`SessionSchemas`, which asks the session for the schema
of each relation a MATCH_AGGREGATE reads — tables, views, temporary and global
temporary views alike — and translates Spark's data types into the compiler's.
Asking costs an analysis of the relation, never a Spark job.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from sql_rewrites.errors import SchemaProviderError
from sql_rewrites.logical.schema import ResolvedColumns
from sql_rewrites.logical.sql_types import column_type

#: Where Spark keeps a CHAR / VARCHAR column's declared type in a schema that shows it as a string.
CHAR_VARCHAR_KEY = "__CHAR_VARCHAR_TYPE_STRING"
#: The names sparkseq gives its own temporary views (live results, shared passes, relations).
GENERATED_PREFIX = "__sparkseq_"
NOT_FOUND = ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND", "PARSE_SYNTAX_ERROR", "INVALID_IDENTIFIER")


def type_text(data_type: T.DataType) -> str | None:
    """A Spark data type as the type text the compiler reads, None where it would misread it.

    sqlglot reads Spark's ``TIME`` as a timestamp, so TIME (like user-defined and NULL
    types) has no text: the compiler sees it as UNKNOWN. A string keeps its collation
    (``string collate UTF8_LCASE``): it decides which strings are equal.
    """
    if isinstance(data_type, (T.TimeType, T.UserDefinedType, T.NullType)):
        return None
    return data_type.simpleString()


def field_type_text(field: T.StructField) -> str | None:
    """:func:`type_text` of a column, ``char(n)`` for a CHAR column (which Spark's schemas
    show as a string, the declared type in the field's metadata): Spark pads what it
    compares with one, so ``'a'`` and ``'a '`` match the same rows."""
    declared = str((field.metadata or {}).get(CHAR_VARCHAR_KEY, ""))
    if isinstance(field.dataType, T.StringType) and declared.lower().startswith("char("):
        return declared
    return type_text(field.dataType)


def schema_types(schema: T.StructType) -> ResolvedColumns:
    """``{column: type}`` of a Spark schema, in column order, as the compiler's types."""
    return {field.name: column_type(field_type_text(field)) for field in schema.fields}


def quote_name(name: str) -> str:
    """A dotted relation name as written in SQL, each part backtick-quoted."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in name.split("."))


class SessionSchemas:
    """A schema provider (``provider(name) -> {column: type} | None``) over ``spark``.

    Parameters
    ----------
    spark : SparkSession
        Whose catalog to read.
    pending : set of str, optional
        Relation names (case-folded) that statements of the same script will create
        before the one being analysed: looking one of them up raises
        :class:`PendingRelation` instead of reading a schema that will change.
    cache : dict, optional
        Schemas already read (name -> schema or None), shared by the providers of
        several statements of one script while the relations they read do not change
        (each lookup is a round trip to the JVM and an analysis there). The caller
        clears it when a statement may have changed a relation
        (:func:`sparkseq.statements.scripts.evict_changed`).

    ``missing`` lists the names looked up in vain, for error messages.
    """

    def __init__(self, spark: SparkSession, pending: set[str] | None = None,
                 cache: dict[str, ResolvedColumns | None] | None = None) -> None:
        self.spark = spark
        self.pending = pending or set()
        self.missing: list[str] = []
        self._cache: dict[str, ResolvedColumns | None] = {} if cache is None else cache

    def __call__(self, name: str) -> ResolvedColumns | None:
        if name.casefold() in self.pending:
            raise PendingRelation(name)
        if name not in self._cache:
            self._cache[name] = self._lookup(name)
        if self._cache[name] is None:
            self.missing.append(name)
        return self._cache[name]

    def _lookup(self, name: str) -> ResolvedColumns | None:
        for written in dict.fromkeys((quote_name(name), "`" + name.replace("`", "``") + "`")):
            try:
                return schema_types(self.spark.table(written).schema)
            except AnalysisException as exc:
                if (exc.getCondition() or "").split(".")[0] not in NOT_FOUND:
                    first = str(exc).strip().splitlines()[0]
                    raise SchemaProviderError(f"cannot read the schema of relation '{name}': {first}") from None
        return None

    def known_relations(self) -> list[str]:
        """Tables and views of the current database and the temporary views, by name
        (sparkseq's own temporary views, ``__sparkseq_*``, are not the user's: left out)."""
        try:  # SHOW TABLES starts no Spark job (spark.catalog.listTables() does)
            return sorted({row["tableName"] for row in self.spark.sql("SHOW TABLES").collect()
                           if not row["tableName"].startswith(GENERATED_PREFIX)})
        except AnalysisException:
            return []


class PendingRelation(Exception):
    """A relation is created by an earlier statement of the script that has not run yet."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


__all__ = ["SessionSchemas", "PendingRelation", "schema_types", "quote_name", "type_text"]
