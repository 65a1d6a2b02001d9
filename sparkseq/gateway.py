"""The JVM behind a classic SparkSession, reached through py4j.

Spark's Python classes type the gateway as optional (it is None once the context is
stopped, and there is none on a Spark Connect client); every JVM call of sparkseq goes
through :func:`jvm`, which says so instead of failing on ``None``.
"""

from __future__ import annotations

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


__all__ = ["jvm"]
