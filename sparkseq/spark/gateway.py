"""The JVM behind a classic SparkSession, reached through py4j (a Spark Connect client has none).

Spark's Python classes type the gateway as optional (it is None once the context is
stopped, and there is none on a Spark Connect client); every JVM call of sparkseq goes
through :func:`jvm`, which says so instead of failing on ``None``.
"""

from __future__ import annotations

import sys
from typing import Any

from pyspark.sql import SparkSession

from udafs.errors import SparkSeqError


def jvm(spark: SparkSession) -> Any:  # a py4j JVMView
    """The py4j view of ``spark``'s JVM.

    Raises
    ------
    SparkSeqError
        The session has no JVM here: its context was stopped, or it is a Spark Connect client.
    """
    view = spark.sparkContext._jvm
    if view is None:
        raise SparkSeqError("this needs a running classic SparkSession (its JVM is gone: was it stopped?)")
    return view


def is_connect_session(value: object) -> bool:
    """True for a Spark Connect SparkSession (a client: no JVM in this process)."""
    connect = sys.modules.get("pyspark.sql.connect.session")  # imported once a Connect session exists
    return connect is not None and isinstance(value, connect.SparkSession)


__all__ = ["is_connect_session", "jvm"]
