"""sparkseq on a real multi-process cluster: ``local-cluster[2,1,1024]``.

Two executor JVMs, each with its own Python workers, run by one driver process
(:mod:`tests.spark.local_cluster_driver`, started once for the module: a process holds one
SparkContext and the tests' local one is running). The workers' Python is a virtual
environment that sees the driver's site-packages *directory* — numpy, pyarrow, pandas,
pyspark, sqlglot — but not sparkseq's editable install (a ``.pth`` hook the directory
holds, which Python runs only for its own site directories), and neither the driver's
``PYTHONPATH`` nor its working directory holds the checkout: sparkseq can only come
from the zip :func:`sparkseq.session` ships. Every answer must equal the local
session's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from sparkseq.spark import worker_probe
from sql_rewrites.generation.jvm_path import JVM_FUNCTION
from tests.conftest import SUBPROCESS_JVM_OPTIONS
from tests.spark import cluster_cases

ROOT = Path(__file__).resolve().parents[2]
DRIVER_TIMEOUT_S = 900  # starts in ~1 min on a busy shared machine; the cases take another


def _venv(path: Path, site_packages: str | None) -> str:
    """A virtual environment at ``path`` (no pip); with ``site_packages``, that directory on its path."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    if site_packages:
        target = next(path.glob("lib/python*/site-packages"))
        (target / "driver-site-packages.pth").write_text(site_packages + "\n")
    return str(path / "bin" / "python")


@pytest.fixture(scope="module")
def cluster_and_local(tmp_path_factory: pytest.TempPathFactory, spark) -> tuple[dict, dict]:  # noqa: ANN001
    """(what :mod:`tests.spark.local_cluster_driver` reports (see the module docstring), the local
    session's answers to the same cases): the local answers are worked out while the cluster
    starts and runs."""
    base = tmp_path_factory.mktemp("local_cluster")
    workers = _venv(base / "workers", sysconfig.get_paths()["purelib"])
    bare = _venv(base / "bare", None)
    env = {**os.environ, "PYSPARK_PYTHON": workers}  # without the checkout the tests' session put on PYTHONPATH
    env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                        if p and Path(p).resolve() != ROOT)
    probe = subprocess.run([workers, "-c", "import sparkseq"], cwd=base, env=env, capture_output=True, text=True)
    assert "No module named 'sparkseq'" in probe.stderr  # the workers' Python cannot import it by itself
    out = base / "report.json"
    with (base / "driver.log").open("w+") as log:
        driver = subprocess.Popen([sys.executable, "-m", "tests.spark.local_cluster_driver", str(out),
                                   str(base / "kill"), bare, SUBPROCESS_JVM_OPTIONS],
                                  cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            local = cluster_cases.run_all(spark)
            returncode = driver.wait(timeout=DRIVER_TIMEOUT_S)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
        log.seek(0)
        assert returncode == 0, log.read()[-4000:]
    report = json.loads(out.read_text())
    report["workers_python"] = workers
    return report, local


@pytest.fixture(scope="module")
def cluster_run(cluster_and_local: tuple[dict, dict]) -> dict:
    return cluster_and_local[0]


@pytest.fixture(scope="module")
def local_answers(cluster_and_local: tuple[dict, dict]) -> dict[str, list[list[str]]]:
    return cluster_and_local[1]


def test_workers_import_sparkseq_from_the_shipped_zip(cluster_run: dict) -> None:
    paths = cluster_run["worker_paths"]
    assert cluster_run["executors"] == 2
    assert paths["executable"] == cluster_run["workers_python"]
    assert ".zip/udafs/__init__.py" in paths["udafs"] and str(ROOT) not in paths["udafs"]
    assert all(Path(p).resolve() != ROOT for p in paths["pythonpath"].split(os.pathsep) if p)
    assert Path(paths["cwd"]).resolve() != ROOT and not (Path(paths["cwd"]) / "sparkseq").exists()


@pytest.mark.parametrize("case", sorted(cluster_cases.CASES))
def test_local_cluster_answers_equal_local_mode(cluster_run: dict, local_answers: dict, case: str) -> None:
    assert cluster_run["cases"][case] == local_answers[case]
    assert local_answers[case], "a case with no rows proves little"


def test_the_jvm_path_runs_on_the_cluster(cluster_run: dict) -> None:
    """The executors were given the JVM path's jar (:func:`sparkseq.session`): a covered shape
    is counted there, by a Catalyst aggregate (same rows as locally: the case above). Spark's
    size estimate of the cluster's DataFrame leaves room for a big key, so the plan also holds
    the branch such keys would take, counted as the statement runs (none here)."""
    assert cluster_run["jvm_path_missing"] is None
    plan = cluster_run["jvm_shaped_plan"]
    assert f"{JVM_FUNCTION}(" in plan and "ObjectHashAggregate" in plan, plan


def test_a_killed_worker_is_retried_with_the_identical_answer(cluster_run: dict) -> None:
    assert cluster_run["kill_consumed"], "no worker was killed"
    assert cluster_run["after_kill"] == cluster_run["cases"]["match_aggregate"]


def test_workers_without_numpy_get_a_message_naming_what_is_missing(cluster_run: dict) -> None:
    message = cluster_run["bare_workers"]
    for name in worker_probe.WORKER_PACKAGES:
        assert f"{name} is not installed" in message, message
    assert "PYSPARK_PYTHON" in message and "spark.archives" in message


def test_local_master_retries_a_killed_worker(spark) -> None:  # noqa: ANN001
    """``local[2]`` runs as ``local[2,2]``: one task attempt more, so one killed worker is survived.
    (The tests' session arms :mod:`udafs.workers.faults` with a file under the scratch directory.)"""
    from udafs.workers.faults import KILL_WORKER_ONCE

    assert spark.sparkContext.master == "local[2,2]"
    armed = Path(spark.sparkContext.environment[KILL_WORKER_ONCE])
    cluster_cases.setup(spark)
    before = cluster_cases.CASES["match_aggregate"](spark)
    armed.touch()
    try:
        after = cluster_cases.on_python_workers(spark, "match_aggregate")
        assert not armed.exists(), "no worker was killed"
    finally:
        armed.unlink(missing_ok=True)
    assert after == before
