"""Shared fixtures: one local SparkSession per pytest process (it takes ~15 s to start);
the hypothesis profiles; how pytest-xdist (``--dist loadfile``, .ci/test) splits the suite;
the class-data archive of the tests' JVMs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Hypothesis profiles, chosen by ``HYPOTHESIS_PROFILE`` (or ``--hypothesis-profile``); none
#: has a deadline (the machine is shared: a slow example is not a failure).
#: ``ci`` (the default, what .ci/run runs): each property test without Spark runs half the
#: examples its ``@settings`` asks for (Hypothesis' 100 where none), one that queries Spark
#: (it uses the ``spark`` fixture, or :func:`run_property`) a third of them, each at least
#: one — every Spark example is a few Spark jobs, and the kernel tests check the same
#: properties against the oracle with many more. Every CI run draws new examples.
#: ``full``: every property test runs what its ``@settings`` asks for.
#: ``deep``, to run before merging a change to a kernel, the compiler or a path: every
#: property test runs DEEP_EXAMPLES_FACTOR times what its ``@settings`` asks for.
#: (:func:`scale_examples`.)
for _profile in ("ci", "full", "deep"):
    settings.register_profile(_profile, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
DEEP_EXAMPLES_FACTOR = 10
CI_EXAMPLES_DIVISOR = 2
CI_SPARK_EXAMPLES_DIVISOR = 3

#: JVM options of every Spark driver the tests start: the suite's own session (``spark``
#: below) and those in subprocesses (``python -m sparkseq`` commands and servers, Connect and
#: local-cluster drivers, progress children, the installed wheel's run), through
#: ``SPARK_SUBMIT_OPTS``, which spark-submit passes to the driver's JVM, and the local-cluster's
#: executors (tests/spark/local_cluster_driver.py passes them on): C1 only. The tests' queries
#: are many, different and tiny; C2 compiling Spark's planning code cost more than its faster
#: code saved — a subprocess JVM's session and first query 20 -> 13 CPU-s; the suite's session
#: over five Spark test files (72 tests, one process) 221 -> 179 CPU-s, and test_spark_udaf.py
#: alone 56 -> 30 CPU-s (docs/measurements.md). The product's own sessions keep C2: a
#: long-running workload's code is hot (docs/sharing.md).
#: With C1 only the JVM reserves 48 MB of code cache instead of tiered compilation's 240 MB;
#: a server of the tests filled it (the Connect server of test_connect_server.py, after the
#: API cases: 53 MB used with 240 MB) and then flushed and recompiled code all along: with
#: 240 MB that server took 48 CPU-s instead of 62 (medians of 2, alternated); the suite's
#: session, C1 only too, runs longer still.
#: The serial collector, not G1 (the JVM's choice on 2 cores): the tests' heaps are small and
#: their garbage short-lived, and G1's concurrent marking and write barriers cost more than
#: the pauses they avoid — the suite's session over four Spark files spent 16 CPU-s in G1's
#: threads, 5.5 in the serial collector's; six files, three of them starting subprocess JVMs,
#: 303.9 -> 265.7 CPU-s (0.87x, medians of 2, alternated); the whole suite, whose JVMs are
#: many and short, 0.96x (one round each; docs/measurements.md). The class-data archive maps
#: under either collector. Options separated by spaces.
SUBPROCESS_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseSerialGC"
#: The user's own ``SPARK_SUBMIT_OPTS``, kept for the pytest-xdist workers: they inherit the
#: environment the first pytest process has already given the test JVMs' options.
_USER_OPTS_ENV = "SPARKSEQ_TESTS_USER_SUBMIT_OPTS"
os.environ.setdefault(_USER_OPTS_ENV, os.environ.get("SPARK_SUBMIT_OPTS", ""))
_USER_SUBMIT_OPTS = os.environ[_USER_OPTS_ENV] or None

#: Where the class-data archive of a sparkseq driver's JVM is (:func:`class_archive`), set by
#: the first pytest process for its pytest-xdist workers; set it empty to run without one.
CLASS_ARCHIVE_ENV = "SPARKSEQ_TESTS_CLASS_ARCHIVE"


def class_archive_options() -> list[str]:
    """The JVM options that map the class-data archive, if there is one. A JVM whose class
    path differs from the archive's (a server with one more jar, another ``SPARK_CONF_DIR``,
    the installed wheel's jars) loads its classes as without it, silently (``-Xlog:cds*=off``:
    the JVM would print a warning into the output some tests read)."""
    archive = os.environ.get(CLASS_ARCHIVE_ENV)
    return [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off"] if archive else []


def _submit_options() -> None:
    """``SPARK_SUBMIT_OPTS`` of every driver JVM of the tests: the user's, C1 only, the class-data archive."""
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(
        filter(None, [_USER_SUBMIT_OPTS, SUBPROCESS_JVM_OPTIONS, *class_archive_options()]))


_submit_options()


def class_archive() -> tuple[Path | None, str]:
    """A class-data archive (JDK CDS, ``-XX:SharedArchiveFile``) of the classes a sparkseq
    driver loads to start and run a ``seq_*`` query, in sparkseq's scratch directory; written
    once, by one ``python -m sparkseq sql`` run with ``-XX:ArchiveClassesAtExit``, and again
    when the JDK, pyspark's jars or sparkseq's jars change (its name holds a digest of them).
    Every Spark driver JVM of the tests maps it instead of reading, parsing and verifying
    those classes again: the JVM of one ``python -m sparkseq sql`` run took 5 CPU-s with it,
    10.5 without (docs/measurements.md). .ci/run writes it while ruff and mypy run
    (``python -m tests.conftest``). Returns the archive, or None and why there is none: no
    ``java`` (Spark's tests fail then; nothing to say), or writing it failed (the tests then
    run without one)."""
    import hashlib
    import shutil
    import subprocess
    import sys

    import pyspark

    from sparkseq.spark.session import scratch_dir

    java = shutil.which("java", path=os.pathsep.join(
        filter(None, [os.path.join(os.environ.get("JAVA_HOME", ""), "bin"), os.environ.get("PATH")])))
    if java is None:
        return None, ""
    # what the archive must match: the JDK, every jar on a driver's class path (the archive
    # records each one's size and time), pyspark's folder
    jars = [Path(java).resolve(), *sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar")),
            *sorted((Path(__file__).resolve().parents[1] / "sparkseq" / "jvm").glob("*.jar"))]
    digest = hashlib.sha256()
    for path in jars:
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    folder = scratch_dir() / "jvm-class-archive"
    folder.mkdir(exist_ok=True)
    archive = folder / f"sparkseq-driver-{digest.hexdigest()[:16]}.jsa"
    if archive.is_file():
        return archive, ""
    for old in folder.glob("*.jsa"):
        old.unlink(missing_ok=True)
    # written under a name of this process, then renamed: a JVM mapping a half-written
    # archive dies (SIGBUS)
    partial = folder / f"{archive.stem}.{os.getpid()}.partial"
    env = {**os.environ, "SPARK_SUBMIT_OPTS": " ".join(filter(None, [
        _USER_SUBMIT_OPTS, SUBPROCESS_JVM_OPTIONS, f"-XX:ArchiveClassesAtExit={partial}", "-Xlog:cds*=off"]))}
    query = ("SELECT k, seq_count(ts, tp, 'SEQ(a, b)') AS n FROM VALUES (1, 1, 'a'), (1, 2, 'b') AS t(k, ts, tp) "
             "GROUP BY k")
    done = subprocess.run([sys.executable, "-m", "sparkseq", "sql", query], env=env, capture_output=True, text=True,
                          timeout=900)
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        return None, f"no JVM class-data archive (the tests' JVMs start slower): {done.stderr[-2000:]}"
    partial.replace(archive)
    return archive, ""


def pytest_configure(config: pytest.Config) -> None:
    """The first pytest process writes or finds the class-data archive (:func:`class_archive`);
    its pytest-xdist workers, started afterwards, inherit where it is."""
    if CLASS_ARCHIVE_ENV in os.environ or hasattr(config, "workerinput"):
        return
    archive, failed = class_archive()
    if failed:
        config.issue_config_time_warning(pytest.PytestWarning(failed), stacklevel=2)
    os.environ[CLASS_ARCHIVE_ENV] = str(archive or "")
    _submit_options()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A local[2] session with sparkseq's functions registered; two shuffle partitions
    (batch queries too, before adaptive coalescing) keep each small test query at a few tasks."""
    import sparkseq
    from sparkseq.spark.session import INITIAL_PARTITIONS, scratch_dir
    from udafs.workers.faults import KILL_WORKER_ONCE

    # Armed only by creating the file (tests/spark/test_spark_local_cluster.py): a worker kills itself once.
    kill_file = scratch_dir() / f"kill-worker-once-{os.getpid()}"
    # the JVM starts with SPARK_SUBMIT_OPTS as every driver of the tests (_submit_options)
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
    """The hypothesis profiles' example counts: ``deep``, more for every property test;
    ``ci``, fewer (fewest for those that query Spark)."""
    profile = settings.get_current_profile_name()
    if profile.startswith("deep"):
        scale_examples(items, DEEP_EXAMPLES_FACTOR)
    elif profile == "ci":
        with_spark = [item for item in items if "spark" in getattr(item, "fixturenames", ())]
        without = [item for item in items if "spark" not in getattr(item, "fixturenames", ())]
        scale_examples(with_spark, 1, CI_SPARK_EXAMPLES_DIVISOR)
        scale_examples(without, 1, CI_EXAMPLES_DIVISOR)


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


def run_property(test: Callable[[], None]) -> None:
    """Run ``test``, a property test (``@given``) defined inside a Spark test function, with
    the examples the hypothesis profile gives a Spark property test (a third in ``ci``,
    DEEP_EXAMPLES_FACTOR times in ``deep``: :func:`pytest_collection_modifyitems` cannot
    reach a test made while its test function runs)."""
    profile = settings.get_current_profile_name()
    if profile.startswith("deep"):
        _scale(test, DEEP_EXAMPLES_FACTOR, 1)
    elif profile == "ci":
        _scale(test, 1, CI_SPARK_EXAMPLES_DIVISOR)
    test()


def _scale(test: object, factor: int, divisor: int) -> None:
    chosen = test._hypothesis_internal_use_settings  # type: ignore[attr-defined]
    test._hypothesis_internal_use_settings = settings(  # type: ignore[attr-defined]
        chosen, max_examples=-(-chosen.max_examples * factor // divisor))


def scale_examples(items: list[pytest.Item], factor: int, divisor: int = 1) -> None:
    """Multiply the ``max_examples`` of every hypothesis test among ``items`` by ``factor``
    and divide it by ``divisor``, rounding up (once per test function: parametrized tests
    share it)."""
    done: set[int] = set()
    for item in items:
        test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        if not getattr(test, "is_hypothesis_test", False) or id(test) in done:
            continue
        done.add(id(test))
        _scale(test, factor, divisor)


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
    chunks of about 40 rows (on the JVM path too), over 100 rows streamed; ``sparkseq.path``
    reset afterwards."""
    from sparkseq.running.execution_paths import (
        CHUNK_ROWS_CONF,
        JVM_ROWS_CONF,
        PATH_CONF,
        SPLIT_ROWS_CONF,
        STREAM_ROWS_CONF,
    )

    spark.conf.set(SPLIT_ROWS_CONF, "50")
    spark.conf.set(CHUNK_ROWS_CONF, "40")
    spark.conf.set(STREAM_ROWS_CONF, "100")
    spark.conf.set(JVM_ROWS_CONF, "50")
    yield
    for key in (SPLIT_ROWS_CONF, CHUNK_ROWS_CONF, STREAM_ROWS_CONF, JVM_ROWS_CONF, PATH_CONF):
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


if __name__ == "__main__" and CLASS_ARCHIVE_ENV not in os.environ:
    # .ci/run: the class-data archive, written while ruff and mypy run; pytest finds it
    _, _failed = class_archive()
    if _failed:
        raise SystemExit(_failed)
