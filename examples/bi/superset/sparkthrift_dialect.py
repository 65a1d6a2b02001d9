"""A SQLAlchemy dialect for Spark's Thrift server: PyHive's ``hive://`` dialect, with table lists that work.

PyHive's ``get_table_names()`` returns the first column of ``SHOW TABLES``: a table's
*database* on a Spark Thrift server, where ``SHOW TABLES`` answers ``(namespace, tableName,
isTemporary)`` and Hive answers ``(tab_name)`` (PyHive issues #146 and #150). This dialect
reads the column named ``tableName`` / ``viewName`` (the first column where there is no such
column, as from Hive) and leaves temporary views out: they cannot be reached as
``schema.name``, which is what SQLAlchemy's inspectors and Superset ask for.

Use ``hive+sparkthrift://user@host:10000/default`` URLs after registering it, e.g. in
``superset_config.py`` (this folder's, with this folder on ``PYTHONPATH``)::

    from sqlalchemy.dialects import registry
    registry.register("hive.sparkthrift", "sparkthrift_dialect", "SparkThriftDialect")

Tested by ``tests/integration/test_superset.py`` (PyHive 0.7.0, SQLAlchemy 1.4.54).
"""

from __future__ import annotations

from typing import Any

from pyhive.sqlalchemy_hive import HiveDialect
from sqlalchemy import text


class SparkThriftDialect(HiveDialect):
    """PyHive's dialect, reading Spark's ``SHOW TABLES`` / ``SHOW VIEWS`` by column name."""

    name = "sparkthrift"

    def _names(self, connection: Any, what: str, schema: str | None) -> list[str]:
        query = f"SHOW {what}" + (f" IN {self.identifier_preparer.quote_identifier(schema)}" if schema else "")
        result = connection.execute(text(query))
        columns = list(result.keys())
        name = next((column for column in columns if column in ("tableName", "viewName")), columns[0])
        temporary = "isTemporary" in columns
        return [row._mapping[name] for row in result if not (temporary and row._mapping["isTemporary"])]

    def get_table_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        return self._names(connection, "TABLES", schema)

    def get_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        return self._names(connection, "VIEWS", schema)
