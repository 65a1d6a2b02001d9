"""The JVM path in a SparkSession: whether its aggregate loads, registering it, the one warning.

The aggregate (``sparkseq/jvm/SparkSeqAggregates.java``, shipped compiled in
``sparkseq/jvm/sparkseq-aggregates.jar`` and checked against its source as the parser
extension's jar is: ``python -m sparkseq.spark.jars --build`` / ``--check``) counts the
plans :func:`sql_rewrites.generation.jvm_path.jvm_shape` covers without moving rows into Python
workers. :func:`sparkseq.session` puts the jar on the driver's and executors' class
path (:func:`sparkseq.spark.jars.aggregates_conf`). A Spark Connect client has no JVM in
its process: it takes the JVM path when its session on the server has the function, which
sparkseq's Connect server registers in every client's session where it runs
(:func:`share_jvm_function`). Where it cannot run — a session started without the jar, a
stale jar, a class built for another Spark version, a Connect server without it, a
cluster whose executors were not given the jar — :func:`jvm_function` warns once
(:class:`JvmPathUnavailable`) and returns None: the statement then runs on the Python
path, with the same result.
"""

from __future__ import annotations

import warnings
import weakref

from pyspark.sql import SparkSession

from sparkseq.spark.jars import AGGREGATES_JAR, AGGREGATES_SOURCES, JvmParserUnavailable, check_jar
from sql_rewrites.generation.jvm_path import JVM_FUNCTION

CLASS_NAME = "sparkseq.jvm.SparkSeqAggregates"


class JvmPathUnavailable(UserWarning):
    """sparkseq's JVM path cannot run in this session (the message says why); statements it
    would have counted run on the Python path, with the same results. Issued once per process."""


_registered: weakref.WeakKeyDictionary[SparkSession, str | None] = weakref.WeakKeyDictionary()
_warned = False


def jvm_path_missing(spark: SparkSession) -> str | None:
    """Why the JVM path cannot run in ``spark`` (None: it can, and its function is registered)."""
    if spark in _registered:
        return _registered[spark]
    why = _register(spark)
    _registered[spark] = why
    return why


def _register(spark: SparkSession) -> str | None:
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return _missing_on_server(spark)
    try:
        check_jar(AGGREGATES_JAR, AGGREGATES_SOURCES)
    except JvmParserUnavailable as exc:
        return str(exc)
    gateway = spark.sparkContext._jvm
    if gateway is None:
        return "this SparkContext has no JVM gateway"
    try:
        gateway.java.lang.Class.forName(CLASS_NAME)
    except Exception:  # noqa: BLE001 - py4j reports ClassNotFoundException as a generic error
        return (f"the class {CLASS_NAME} is not on this JVM's class path (a session started without "
                "sparkseq.session(), which puts sparkseq-aggregates.jar there)")
    master = spark.sparkContext.master or ""
    if not master.startswith("local[") and master != "local":
        executors = spark.sparkContext.getConf().get("spark.executor.extraClassPath", "") or ""
        jars = spark.sparkContext.getConf().get("spark.jars", "") or ""
        if AGGREGATES_JAR.name not in executors + jars:
            return f"the executors of {master} were not given {AGGREGATES_JAR.name}"
    try:
        gateway.sparkseq.jvm.SparkSeqAggregates.register(jsession)
    except Exception as exc:  # noqa: BLE001 - a class built for another Spark version fails here
        return f"{CLASS_NAME} does not load in Spark {spark.version}: {type(exc).__name__}: {exc}"
    return None


def _missing_on_server(spark: SparkSession) -> str | None:
    """Why a Spark Connect client's session on its server has no JVM path (None: it has)."""
    try:
        if spark.catalog.functionExists(JVM_FUNCTION):
            return None
    except Exception as exc:  # noqa: BLE001 - any failure of the question means: not known to be there
        return f"the Spark Connect server did not say whether it has {JVM_FUNCTION}: {type(exc).__name__}: {exc}"
    return (f"the Spark Connect server has no {JVM_FUNCTION} in this session (python -m sparkseq connect-server "
            "registers it in every client's session where its driver can run it)")


def share_jvm_function(home: SparkSession, spark: SparkSession) -> None:
    """Register the JVM path's function in ``spark``, another session of ``home``'s JVM (a
    Spark Connect client's, on sparkseq's server), when it runs in ``home``: the client's
    own rewriting (``sparkseq.sql`` on the client) then finds it there and takes the JVM path."""
    if jvm_path_missing(home) is None:
        jvm_path_missing(spark)


def jvm_function(spark: SparkSession) -> str | None:
    """The name of the JVM path's function, registered in ``spark``; None (after one
    :class:`JvmPathUnavailable` warning per process) when it cannot run there."""
    why = jvm_path_missing(spark)
    if why is None:
        return JVM_FUNCTION
    warn_jvm_unavailable(why)
    return None


def warn_jvm_unavailable(why: str) -> None:
    """The one :class:`JvmPathUnavailable` warning of the process: the JVM path would take
    a statement but cannot run (``why``), so it runs on the Python path."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"sparkseq's JVM path is unavailable ({why}); the statements it would count run on the "
                      "Python path, with the same results", JvmPathUnavailable, stacklevel=3)


__all__ = ["CLASS_NAME", "JvmPathUnavailable", "jvm_function", "jvm_path_missing", "share_jvm_function",
           "warn_jvm_unavailable"]
