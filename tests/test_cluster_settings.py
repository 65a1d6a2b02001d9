"""How sparkseq classifies masters and what follows from it, without starting Spark:
the workers' Python, shuffle partitions, task attempts, the shipped zip, the worker check's words."""

from __future__ import annotations

import doctest
import importlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sparkseq.spark import cluster, worker_probe
from sparkseq.spark.cluster import MasterKind, classify
from sparkseq.spark.session import (
    ARROW_BATCH_ROWS,
    ARROW_BATCH_ROWS_DEFAULT,
    CACHED_PLAN_COALESCING,
    INITIAL_PARTITIONS,
    INITIAL_PARTITIONS_PER_CORE,
    LOCAL_DRIVER_MEMORY,
    default_conf,
)


@pytest.mark.parametrize("name", ["sparkseq.spark.cluster", "sparkseq.spark.worker_probe"])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize(("url", "kind", "started", "cores"), [
    ("local", MasterKind.LOCAL, "local[1,2]", 1),
    ("local[2]", MasterKind.LOCAL, "local[2,2]", 2),
    ("local[3, 5]", MasterKind.LOCAL, "local[3,5]", 3),
    ("local[*]", MasterKind.LOCAL, "local[*,2]", os.cpu_count()),
    ("local-cluster[2,1,1024]", MasterKind.LOCAL_CLUSTER, "local-cluster[2,1,1024]", 2),
    ("local-cluster[3, 2, 512]", MasterKind.LOCAL_CLUSTER, "local-cluster[3, 2, 512]", 6),
    ("spark://10.0.0.1:7077", MasterKind.CLUSTER, "spark://10.0.0.1:7077", None),
    ("yarn", MasterKind.CLUSTER, "yarn", None),
    ("k8s://https://api:6443", MasterKind.CLUSTER, "k8s://https://api:6443", None),
], ids=lambda v: v if isinstance(v, str) else None)
def test_one_rule_classifies_every_master(url: str, kind: MasterKind, started: str, cores: int | None) -> None:
    master = classify(url)
    assert (master.kind, master.url, master.cores) == (kind, started, cores)
    assert master.ships == (kind is not MasterKind.LOCAL)
    conf = default_conf(url)
    assert conf.get("spark.sql.shuffle.partitions") == (None if cores is None else str(2 * cores))
    assert conf.get(INITIAL_PARTITIONS) == (None if cores is None else str(INITIAL_PARTITIONS_PER_CORE * cores))
    assert conf[CACHED_PLAN_COALESCING] == "true"
    assert conf[ARROW_BATCH_ROWS] == str(ARROW_BATCH_ROWS_DEFAULT)
    chosen = "SPARK_DRIVER_MEMORY" in os.environ  # the user's: left to spark-submit
    assert conf.get("spark.driver.memory") == (None if cores is None or chosen else LOCAL_DRIVER_MEMORY)


def test_a_driver_heap_chosen_in_the_environment_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "6g")
    assert "spark.driver.memory" not in default_conf("local[2]")
    monkeypatch.delenv("SPARK_DRIVER_MEMORY")
    assert default_conf("local[2]")["spark.driver.memory"] == LOCAL_DRIVER_MEMORY


@pytest.fixture()
def environ(monkeypatch: pytest.MonkeyPatch) -> dict:
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH"):
        monkeypatch.delenv(key, raising=False)
    return os.environ


def test_local_workers_run_the_driver_python_with_the_checkout(environ: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "/elsewhere/python3")
    cluster.python_environment(classify("local[2]"), Path("/checkout"))
    assert environ["PYSPARK_PYTHON"] == sys.executable
    assert environ["PYTHONPATH"].split(os.pathsep)[0] == "/checkout"


def test_local_cluster_workers_keep_a_chosen_python_and_get_no_checkout(environ: dict,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cluster.python_environment(classify("local-cluster[2,1,1024]"), Path("/checkout"))
    assert environ["PYSPARK_PYTHON"] == sys.executable and "PYTHONPATH" not in environ
    monkeypatch.setenv("PYSPARK_PYTHON", "/workers/python")
    cluster.python_environment(classify("local-cluster[2,1,1024]"), Path("/checkout"))
    assert environ["PYSPARK_PYTHON"] == "/workers/python"


def test_cluster_workers_are_not_told_the_driver_path(environ: dict) -> None:
    cluster.python_environment(classify("spark://10.0.0.1:7077"), Path("/checkout"))
    assert "PYSPARK_PYTHON" not in environ and "PYTHONPATH" not in environ
    cluster.worker_python_conf({"spark.pyspark.python": "/opt/py311/bin/python"})
    assert environ["PYSPARK_PYTHON"] == "/opt/py311/bin/python"


def test_the_zip_is_built_once_and_imports_without_the_checkout(tmp_path: Path) -> None:
    first = cluster.package_zip(tmp_path)
    assert cluster.package_zip(tmp_path) == first and len(list(tmp_path.iterdir())) == 1
    names = zipfile.ZipFile(first).namelist()
    assert {f"{p}/__init__.py" for p in cluster.SHIPPED_PACKAGES} <= set(names)
    assert not any("__pycache__" in n or not n.endswith(".py") for n in names)
    # -S: no site packages, hence no editable install of sparkseq; the zip and the
    # driver's packages' directory (not its .pth hooks) on the path only.
    site = next(p for p in sys.path if p.endswith("site-packages"))
    code = "import sys; import udafs.workers.grouped, sparkseq.spark.functions; print(udafs.__file__)"
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(first), site])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(str(first))


def test_the_probe_names_every_problem() -> None:
    report = worker_probe.Report("node7", "/usr/bin/python3", (3, 10), {"numpy": "1.26.4", "pyarrow": None,
                                                                         "pandas": "3.0.1"}, None)
    found = worker_probe.problems(report, {"numpy": ">=1.26", "pyarrow": ">=15", "pandas": ">=2.2,<3"})
    assert found == [f"Python 3.10 (the driver runs {sys.version_info[0]}.{sys.version_info[1]})",
                     "pyarrow is not installed", "pandas 3.0.1 is installed, sparkseq needs pandas>=2.2,<3"]
    assert cluster.requirements()["pandas"].replace(" ", "") in (">=2.2,<3", "<3,>=2.2")


OUT_OF_MEMORY = """
import resource, numpy as np, pyarrow as pa
from udafs.plan import Element, Plan
from udafs.workers.grouped import aggregate_group
plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0))
n = 3_000_000
ts, mask = pa.array(np.arange(n, dtype=np.int64)), pa.array(np.arange(n, dtype=np.int64) % 2 + 1)
assert aggregate_group(plan, ts[:100], mask[:100], ()).as_py()[0]["m0"] == 1275  # warm: imports done
size = int(next(line for line in open("/proc/self/status") if line.startswith("VmSize")).split()[1]) << 10
resource.setrlimit(resource.RLIMIT_AS, (size + (40 << 20), resource.RLIM_INFINITY))  # 40 MB more, at most
print(aggregate_group(plan, ts, mask, ()).as_py()[0]["error"])
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the process size from /proc")
def test_a_group_too_large_for_the_worker_names_its_partition_and_the_remedies() -> None:
    """A real failed allocation (an address-space limit, as spark.executor.pyspark.memory sets
    on workers) becomes the group's error, which the generated SQL raises naming the key."""
    done = subprocess.run([sys.executable, "-c", OUT_OF_MEMORY], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "a Python worker ran out of memory evaluating partition {partition} (3,000,000 rows); give the executors' "
        "Python workers more memory (spark.executor.memoryOverhead, spark.executor.pyspark.memory) or evaluate "
        "this partition on the bounded-memory streaming path (sparkseq.stream_query)")
