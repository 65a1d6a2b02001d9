"""A driver on ``local-cluster[2,1,1024]`` for :mod:`tests.spark.test_spark_local_cluster`.

``python -m tests.spark.local_cluster_driver OUT.json KILL_FILE BARE_PYTHON EXECUTOR_JVM_OPTIONS``
starts a sparkseq session on a local cluster (two executor JVMs, started with
``EXECUTOR_JVM_OPTIONS`` besides sparkseq's own, each with its own Python workers), runs
:mod:`tests.spark.cluster_cases`, runs the MATCH_AGGREGATE case again with a worker killed
mid-query (:mod:`udafs.workers.faults`, armed by creating ``KILL_FILE``), and runs the
worker check with ``BARE_PYTHON`` (a Python without numpy, pyarrow, pandas) as the
workers' interpreter; it writes every answer, message and timing to ``OUT.json``. Its
own process: a process has one SparkContext, and
the tests' local one is already running.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

import sparkseq
from sparkseq.spark import cluster
from sparkseq.spark.gateway import jvm
from sparkseq.spark.jvm_path import jvm_path_missing
from sparkseq.spark.session import JIT_HUGE_METHODS
from tests.spark import cluster_cases
from udafs.workers.faults import KILL_WORKER_ONCE

MASTER = "local-cluster[2,1,1024]"


def main(out: Path, kill_file: Path, bare_python: str, executor_jvm_options: str) -> None:
    started = time.perf_counter()
    conf = {f"spark.executorEnv.{KILL_WORKER_ONCE}": str(kill_file),
            "spark.executor.extraJavaOptions": f"{JIT_HUGE_METHODS} {executor_jvm_options}"}
    spark = sparkseq.session(MASTER, app_name="sparkseq-local-cluster-tests", conf=conf)
    report: dict[str, object] = {"session_s": time.perf_counter() - started,
                                 "executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1}
    started = time.perf_counter()
    report["cases"] = cluster_cases.run_all(spark)
    report["cases_s"] = time.perf_counter() - started
    report["jvm_path_missing"] = jvm_path_missing(spark)
    report["jvm_shaped_plan"] = sparkseq.sql(spark, cluster_cases.JVM_SHAPED)._jdf.queryExecution() \
        .executedPlan().toString()
    kill_file.touch()
    report["after_kill"] = cluster_cases.on_python_workers(spark, "match_aggregate")
    report["kill_consumed"] = not kill_file.exists()
    report["worker_paths"] = spark.sparkContext.parallelize([0], 1).map(_worker_path).collect()[0]
    report["bare_workers"] = _check_with(spark, bare_python)
    # the executors' files (their stderr), which local-cluster's workers put under the JVM's SPARK_HOME
    executor_files = Path(jvm(spark).java.lang.System.getenv("SPARK_HOME") or ".", "work",
                          spark.sparkContext.applicationId)
    spark.stop()
    shutil.rmtree(executor_files, ignore_errors=True)
    out.write_text(json.dumps(report))


def _check_with(spark: SparkSession, python: str) -> str:
    """The worker check's error with ``python`` as the workers' interpreter. A function
    carries the interpreter the context names when it is built (``pythonExec``), so the
    check's job alone runs there."""
    sc = spark.sparkContext
    saved, sc.pythonExec = sc.pythonExec, python
    try:
        cluster.check_workers(spark, again=True)
    except cluster.WorkerEnvironmentError as exc:
        return str(exc)
    finally:
        sc.pythonExec = saved
    return "(no error)"


def _worker_path(_: object) -> dict[str, object]:
    """Where a worker found sparkseq, and its interpreter (runs on an executor)."""
    import os
    import sys as worker_sys

    import udafs

    return {"udafs": udafs.__file__, "executable": worker_sys.executable, "cwd": os.getcwd(),
            "pythonpath": os.environ.get("PYTHONPATH", "")}


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4])
