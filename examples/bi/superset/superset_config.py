"""Superset configuration for sparkseq's Thrift server (docs/bi.md, "Superset").

Superset reads it from ``SUPERSET_CONFIG_PATH``; put this folder on ``PYTHONPATH`` too, for
``sparkthrift_dialect``. Everything else is Superset's default: ``SUPERSET_SECRET_KEY`` from
the environment, its metadata database in ``$SUPERSET_HOME/superset.db`` (SQLite).
Used as it is by ``tests/integration/test_superset.py``.
"""

from sqlalchemy.dialects import registry

# hive+sparkthrift://user@127.0.0.1:10000/default: PyHive's dialect with table lists that
# name tables, not their database (sparkthrift_dialect.py).
registry.register("hive.sparkthrift", "sparkthrift_dialect", "SparkThriftDialect")
