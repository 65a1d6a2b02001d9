"""Shared fixtures: one local SparkSession for the whole run (it takes ~15 s to start)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A local[2] session with sparkseq's functions registered; two shuffle partitions
    keep each small test query at a few tasks."""
    import os

    import sparkseq
    from sparkseq.session import scratch_dir
    from udafs.worker_faults import KILL_WORKER_ONCE

    # Armed only by creating the file (tests/test_spark_local_cluster.py): a worker kills itself once.
    kill_file = scratch_dir() / f"kill-worker-once-{os.getpid()}"
    session = sparkseq.session("local[2]", app_name="sparkseq-tests", conf={
        "spark.sql.shuffle.partitions": "2", f"spark.executorEnv.{KILL_WORKER_ONCE}": str(kill_file)})
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
