"""Shared fixtures: one local SparkSession for the whole run (it takes ~15 s to start)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: JVM options of the Spark drivers the tests start in subprocesses (``python -m sparkseq``
#: commands and servers, Connect and local-cluster drivers, progress children, the installed
#: wheel's run), through ``SPARK_SUBMIT_OPTS``, which spark-submit passes to the driver's JVM:
#: C1 only. Each of those JVMs lives for seconds to a few minutes, mostly starting up, and
#: C2 compiling Spark's start-up code was a third of its CPU time (20 -> 13 CPU-s for a session
#: and its first query). The suite's own session (``spark`` below) starts with the user's
#: ``SPARK_SUBMIT_OPTS`` only: it runs for the whole suite, where C2's code pays (docs/sharing.md).
SUBPROCESS_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
_USER_SUBMIT_OPTS = os.environ.get("SPARK_SUBMIT_OPTS")
os.environ["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, [_USER_SUBMIT_OPTS, SUBPROCESS_JVM_OPTIONS]))


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A local[2] session with sparkseq's functions registered; two shuffle partitions
    (batch queries too, before adaptive coalescing) keep each small test query at a few tasks."""
    import sparkseq
    from sparkseq.session import INITIAL_PARTITIONS, scratch_dir
    from udafs.worker_faults import KILL_WORKER_ONCE

    # Armed only by creating the file (tests/test_spark_local_cluster.py): a worker kills itself once.
    kill_file = scratch_dir() / f"kill-worker-once-{os.getpid()}"
    with pytest.MonkeyPatch.context() as patch:  # the JVM starts with the user's options only
        if _USER_SUBMIT_OPTS is None:
            patch.delenv("SPARK_SUBMIT_OPTS")
        else:
            patch.setenv("SPARK_SUBMIT_OPTS", _USER_SUBMIT_OPTS)
        session = sparkseq.session("local[2]", app_name="sparkseq-tests", conf={
            "spark.sql.shuffle.partitions": "2", INITIAL_PARTITIONS: "2",
            f"spark.executorEnv.{KILL_WORKER_ONCE}": str(kill_file)})
    yield session
    session.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``) run every Spark test in one worker,
    so the session starts once."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture()
def isolated_hierarchies(spark: SparkSession) -> Iterator[None]:
    """The session with no concept hierarchy registered during the test; those that other
    tests left (the Thrift init file's, the E-Cube tests') come back afterwards."""
    from sparkseq import hierarchies

    saved = hierarchies.registered_hierarchies(spark)
    for name in saved:
        hierarchies.drop_hierarchy(spark, name)
    yield
    for name in hierarchies.registered_hierarchies(spark):
        hierarchies.drop_hierarchy(spark, name)
    for name, hierarchy in saved.items():
        hierarchies.register_hierarchy(spark, name, hierarchy.parent_of.items())


@pytest.fixture()
def small_thresholds(spark: SparkSession) -> Iterator[None]:
    """Path thresholds small enough for test data: keys over 50 rows are split by time in
    chunks of about 40 rows, over 100 rows streamed; ``sparkseq.path`` reset afterwards."""
    from sparkseq.execution_paths import CHUNK_ROWS_CONF, PATH_CONF, SPLIT_ROWS_CONF, STREAM_ROWS_CONF

    spark.conf.set(SPLIT_ROWS_CONF, "50")
    spark.conf.set(CHUNK_ROWS_CONF, "40")
    spark.conf.set(STREAM_ROWS_CONF, "100")
    yield
    for key in (SPLIT_ROWS_CONF, CHUNK_ROWS_CONF, STREAM_ROWS_CONF, PATH_CONF):
        spark.conf.unset(key)


def drop_unservable_views(spark: SparkSession) -> None:
    """Drop the temporary views Spark's Thrift server cannot serve (names needing backticks,
    which other tests leave, such as `odd view`: every client disconnect would fail)."""
    from sparkseq import thrift

    for name in thrift.temporary_view_names(spark):
        if not thrift.PLAIN_NAME.fullmatch(name):
            spark.catalog.dropTempView(name)


@pytest.fixture(scope="session")
def thrift_server(spark: SparkSession) -> Iterator[object]:
    """The in-process Thrift server over the shared session, started once: HiveServer2 keeps
    the address of its first start in the JVM, so a second server cannot be started."""
    import socket

    from sparkseq import thrift

    drop_unservable_views(spark)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with thrift.start(spark, port=port) as running:
        yield running
