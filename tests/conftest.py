"""Shared fixtures: one local SparkSession per pytest process (it takes ~15 s to start);
the hypothesis profiles; how pytest-xdist (``--dist loadgroup``, .ci/test) splits the suite."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Hypothesis profiles, chosen by ``HYPOTHESIS_PROFILE`` (or ``--hypothesis-profile``).
#: ``ci`` (the default): each property test runs the examples its ``@settings`` asks for
#: (Hypothesis' 100 where none), no deadline (the machine is shared; a slow example is not a
#: failure). ``deep``, to run before merging: every property test runs DEEP_EXAMPLES_FACTOR
#: times as many examples (:func:`scale_examples`).
settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("deep", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
DEEP_EXAMPLES_FACTOR = 10

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
    from sparkseq.spark.session import INITIAL_PARTITIONS, scratch_dir
    from udafs.workers.faults import KILL_WORKER_ONCE

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


#: Seconds each test file took (setup and teardown included) in a run of the whole suite,
#: refreshed by ``bash .ci/test --store-file-seconds``. Under pytest-xdist the longest file
#: left is handed out first (:class:`LongestFileFirst`), so that no long file starts last and
#: leaves the other workers idle; a file not in it counts as a median one.
FILE_SECONDS = Path(__file__).with_name("file_seconds.json")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-file-seconds", action="store_true",
                     help=f"after the run, write each test file's seconds into tests/{FILE_SECONDS.name} "
                          "(pytest-xdist hands out the longest files first)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``deep`` hypothesis profile: more examples for every property test."""
    if settings.get_current_profile_name().startswith("deep"):
        scale_examples(items, DEEP_EXAMPLES_FACTOR)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadfile`` (.ci/test): each test file runs in one worker — its module fixtures
    (servers, subprocess JVMs, a built wheel) start once; each worker starts its own
    SparkSession when its first Spark test needs one — and the longest file left goes to
    the next worker that asks."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    seconds = known_file_seconds()
    known = sorted(seconds.values())
    typical = known[len(known) // 2] if known else 0.0

    class LongestFileFirst(LoadFileScheduling):
        def _assign_work_unit(self, node: Any) -> None:
            longest = max(self.workqueue, key=lambda file: seconds.get(file, typical))
            self.workqueue.move_to_end(longest, last=False)  # the next unit handed out
            super()._assign_work_unit(node)

    return LongestFileFirst(config, log)


def known_file_seconds() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(FILE_SECONDS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def scale_examples(items: list[pytest.Item], factor: int) -> None:
    """Multiply the ``max_examples`` of every hypothesis test among ``items`` by ``factor``
    (once per test function: parametrized tests share it)."""
    done: set[int] = set()
    for item in items:
        test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        if not getattr(test, "is_hypothesis_test", False) or id(test) in done:
            continue
        done.add(id(test))
        chosen = test._hypothesis_internal_use_settings  # type: ignore[union-attr]
        test._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
            chosen, max_examples=chosen.max_examples * factor)


_file_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when in ("setup", "call", "teardown"):
        path = report.nodeid.split("::")[0]
        _file_seconds[path] = _file_seconds.get(path, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """``--store-file-seconds``: the files of this run get their seconds, the others keep theirs."""
    if not session.config.getoption("store_file_seconds") or hasattr(session.config, "workerinput"):
        return
    merged = {**known_file_seconds(), **{path: round(s, 1) for path, s in _file_seconds.items()}}
    FILE_SECONDS.write_text(json.dumps(dict(sorted(merged.items(), key=lambda kv: -kv[1])), indent=1) + "\n")


@pytest.fixture()
def isolated_hierarchies(spark: SparkSession) -> Iterator[None]:
    """The session with no concept hierarchy registered during the test; those that other
    tests left (the Thrift init file's, the E-Cube tests') come back afterwards."""
    from sparkseq.spark import hierarchies

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
    from sparkseq.running.execution_paths import CHUNK_ROWS_CONF, PATH_CONF, SPLIT_ROWS_CONF, STREAM_ROWS_CONF

    spark.conf.set(SPLIT_ROWS_CONF, "50")
    spark.conf.set(CHUNK_ROWS_CONF, "40")
    spark.conf.set(STREAM_ROWS_CONF, "100")
    yield
    for key in (SPLIT_ROWS_CONF, CHUNK_ROWS_CONF, STREAM_ROWS_CONF, PATH_CONF):
        spark.conf.unset(key)


def drop_unservable_views(spark: SparkSession) -> None:
    """Drop the temporary views Spark's Thrift server cannot serve (names needing backticks,
    which other tests leave, such as `odd view`: every client disconnect would fail)."""
    from sparkseq.servers import thrift

    for name in thrift.temporary_view_names(spark):
        if not thrift.PLAIN_NAME.fullmatch(name):
            spark.catalog.dropTempView(name)


@pytest.fixture(scope="session")
def thrift_server(spark: SparkSession) -> Iterator[object]:
    """The in-process Thrift server over the shared session, started once: HiveServer2 keeps
    the address of its first start in the JVM, so a second server cannot be started."""
    import socket

    from sparkseq.servers import thrift

    drop_unservable_views(spark)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with thrift.start(spark, port=port) as running:
        yield running
