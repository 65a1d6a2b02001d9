"""Where Spark runs sparkseq's Python code, and getting sparkseq there.

One rule classifies a master URL (:func:`classify`) and everything that depends on it
follows from the class:

=================  ==============================  =============================  =====================
master             executors and Python workers    Python of the workers          shuffle partitions
=================  ==============================  =============================  =====================
``local[N]``       threads of the driver JVM;      the driver's interpreter       2 x N (batch: 8 x N,
                   workers inherit its environment (``PYSPARK_PYTHON`` forced)    then coalesced)
``local-cluster``  separate executor JVMs on this  ``PYSPARK_PYTHON``, else the   2 x executors x cores
``[E,C,M]``        machine                         driver's interpreter           (batch: 8 x, then
                                                                                  coalesced)
cluster            other machines (``spark://``,   ``PYSPARK_PYTHON``, else       Spark's default;
                   ``yarn``, ``k8s://``)           ``python3`` on the workers     adaptive execution
                                                                                  coalesces them
=================  ==============================  =============================  =====================

On every master whose executors are separate processes (local-cluster and clusters)
sparkseq *ships itself*: :func:`ship` zips the packages the Python workers import
(``sparkseq``, ``sql_rewrites``, ``udafs`` and the pure-Python ``sqlglot``) once per
content digest into a cache directory and adds the zip with ``addPyFile`` before any
function is registered, so every function carries it; :func:`check_workers` then runs
one small job that imports them on the executors and raises
:class:`WorkerEnvironmentError` naming whatever is missing (numpy, pyarrow, pandas, a
Python of another version). On ``local[N]`` the workers import the driver's own files.
"""

from __future__ import annotations

import enum
import hashlib
import importlib.metadata
import io
import os
import re
import sys
import time
import weakref
import zipfile
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from sparkseq.spark import worker_probe
from udafs.errors import SparkSeqError

#: The packages a Python worker imports: sparkseq's three and the one pure-Python
#: dependency the ``seq_*`` functions parse patterns with. numpy, pyarrow and pandas have
#: native code built for one platform: they must be installed on the workers.
SHIPPED_PACKAGES = ("sparkseq", "sql_rewrites", "udafs", "sqlglot")

#: ``local[N]`` gives a task one attempt: a single killed Python worker fails the query.
#: sparkseq's local masters retry a failed task once (``local[N,2]``), like a cluster's
#: ``spark.task.maxFailures`` (4) does; a URL that names its own count keeps it.
LOCAL_TASK_ATTEMPTS = 2

_LOCAL = re.compile(r"local(?:\[\s*(\*|\d+)\s*(?:,\s*(\d+)\s*)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]")


class MasterKind(enum.Enum):
    """Where a master runs its executors (see the module docstring)."""

    LOCAL = "local"
    LOCAL_CLUSTER = "local-cluster"
    CLUSTER = "cluster"


@dataclass(frozen=True)
class Master:
    """A classified master URL.

    Attributes
    ----------
    url : str
        The URL Spark is started with (for ``local[N]``: with the task attempts, see
        :data:`LOCAL_TASK_ATTEMPTS`).
    kind : MasterKind
    cores : int or None
        Task slots the URL fixes (``N``; executors x cores), None on a cluster.
    """

    url: str
    kind: MasterKind
    cores: int | None

    @property
    def on_this_machine(self) -> bool:
        """Executors run here: the driver's interpreter path exists for them."""
        return self.kind is not MasterKind.CLUSTER

    @property
    def ships(self) -> bool:
        """Executors are separate processes that cannot see the driver's files by inheritance."""
        return self.kind is not MasterKind.LOCAL


def classify(url: str) -> Master:
    """Classify a Spark master URL.

    Examples
    --------
    >>> classify("local[4]")
    Master(url='local[4,2]', kind=<MasterKind.LOCAL: 'local'>, cores=4)
    >>> classify("local-cluster[2,1,1024]").cores
    2
    >>> classify("spark://10.0.0.1:7077").kind
    <MasterKind.CLUSTER: 'cluster'>
    """
    url = url.strip()
    local = _LOCAL.fullmatch(url)
    if local is not None:
        threads, attempts = local.group(1), local.group(2)
        cores = (os.cpu_count() or 1) if threads == "*" else int(threads or 1)
        return Master(f"local[{threads or 1},{attempts or LOCAL_TASK_ATTEMPTS}]", MasterKind.LOCAL, cores)
    cluster = _LOCAL_CLUSTER.fullmatch(url)
    if cluster is not None:
        return Master(url, MasterKind.LOCAL_CLUSTER, int(cluster.group(1)) * int(cluster.group(2)))
    return Master(url, MasterKind.CLUSTER, None)


def python_environment(master: Master, root: Path) -> None:
    """Choose the Python workers' interpreter (and, on ``local[N]``, their import path).

    ``local[N]``: the driver's interpreter, forced — its workers unpickle the driver's
    objects, so they must run the same Python with the same packages — and ``root``
    (the checkout or site-packages holding sparkseq) on ``PYTHONPATH``, which they
    inherit. local-cluster: ``PYSPARK_PYTHON`` when set, else the driver's interpreter
    (this machine has it). Cluster: untouched — the driver's absolute path need not
    exist on other machines; ``PYSPARK_PYTHON`` (or ``spark.pyspark.python``, see
    :func:`worker_python_conf`) names the workers' Python, else Spark runs ``python3``.
    """
    if master.kind is MasterKind.LOCAL:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if str(root) not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, paths)])
    elif master.on_this_machine:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.on_this_machine:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no loopback-hostname warning


def worker_python_conf(conf: dict[str, str]) -> None:
    """Honour ``spark.pyspark.python`` in ``conf``: PySpark reads the workers' interpreter
    only from ``PYSPARK_PYTHON`` when a session is built in Python (the setting is
    spark-submit's), so copy it there."""
    if conf.get("spark.pyspark.python"):
        os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]


# --- shipping ---------------------------------------------------------------------------


def package_zip(cache: Path) -> Path:
    """The zip of :data:`SHIPPED_PACKAGES` in ``cache``, built when not there yet.

    Named by sparkseq's version and a digest of every shipped source file, so an edited
    checkout ships a new zip and an unchanged one reuses the old. Holds ``.py`` files
    only (workers compile them; ``__pycache__`` of the driver's Python stays home).
    """
    files = sorted(_sources())
    digest = hashlib.sha256()
    for name, path in files:
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    target = cache / f"sparkseq-{_version()}-{digest.hexdigest()[:16]}.zip"
    if not target.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, path in files:
                archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), path.read_bytes(),
                                 compress_type=zipfile.ZIP_DEFLATED)
        partial = target.with_suffix(f".{os.getpid()}.tmp")  # another driver may build it at the same time
        partial.write_bytes(buffer.getvalue())
        partial.replace(target)
        _prune(cache, keep=target)
    return target


#: Zips of other digests older than this are deleted when a new one is built (a driver
#: still running from one serves it to executors as they start; a day covers that).
STALE_ZIP_S = 24 * 3600


def _prune(cache: Path, keep: Path) -> None:
    now = time.time()
    for old in cache.glob("sparkseq-*.zip"):
        if old != keep and now - old.stat().st_mtime > STALE_ZIP_S:
            old.unlink(missing_ok=True)


def _sources() -> list[tuple[str, Path]]:
    """(name in the zip, file) of every ``.py`` file of the shipped packages."""
    found = []
    for package in SHIPPED_PACKAGES:
        module = sys.modules.get(package) or __import__(package)
        base = Path(module.__file__).resolve().parent  # type: ignore[arg-type]
        for path in base.rglob("*.py"):
            found.append(((Path(package) / path.relative_to(base)).as_posix(), path))
    return found


def _version() -> str:
    try:
        return importlib.metadata.version("sparkseq")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def ship(spark: SparkSession, cache: Path) -> Path:
    """Add sparkseq's zip (:func:`package_zip`) to ``spark``'s Python workers' path.

    Call before any Python function is created: each one captures the context's list of
    Python includes when it is built. Adding the same zip again does nothing.
    """
    path = package_zip(cache)
    sc = spark.sparkContext
    if path.name not in (sc._python_includes or []):
        sc.addPyFile(str(path))
    return path


# --- checking the workers ---------------------------------------------------------------


class WorkerEnvironmentError(SparkSeqError):
    """The executors' Python cannot run sparkseq (the message names what is missing)."""


#: The contexts whose workers passed :func:`check_workers` (a reused session is not checked again).
_checked: weakref.WeakSet[object] = weakref.WeakSet()


def check_workers(spark: SparkSession, *, again: bool = False) -> list[worker_probe.Report]:
    """Import sparkseq's worker modules on the executors, one task per task slot; once
    per SparkContext unless ``again``. Returns what each task found (empty when skipped).

    Raises
    ------
    WorkerEnvironmentError
        When a worker lacks numpy, pyarrow or pandas (or has a version outside
        sparkseq's requirements), cannot import the shipped packages, or runs a Python
        of another version than the driver's.
    """
    from pyspark import cloudpickle

    sc = spark.sparkContext
    if sc in _checked and not again:
        return []
    cloudpickle.register_pickle_by_value(worker_probe)  # the probe must run where sparkseq does not import
    slots = max(sc.defaultParallelism, 1)
    try:
        answers = sc.parallelize(range(slots), slots).map(worker_probe.probe).collect()
    except Exception as exc:  # PySpark's own checks fail the job before the probe runs
        raise WorkerEnvironmentError(_job_failure(str(exc))) from None
    reports = [worker_probe.Report(*answer) for answer in answers]
    problems = sorted({line for report in reports for line in worker_probe.problems(report, requirements())})
    if problems:
        hosts = ", ".join(sorted({report.host for report in reports}))
        raise WorkerEnvironmentError(f"the Python workers on {hosts} ({reports[0].executable}) cannot run "
                                     f"sparkseq: {'; '.join(problems)}. {WORKER_HELP}")
    _checked.add(sc)
    return reports


#: What a user does about a worker environment that cannot run sparkseq.
WORKER_HELP = ("Install Python {python} with {packages} on every worker and point PYSPARK_PYTHON (or "
               "conf spark.pyspark.python) at it, or ship a packed environment with spark.archives "
               "(docs/cluster.md)").format(python="%d.%d" % sys.version_info[:2], packages="numpy, pyarrow and pandas")


def _job_failure(message: str) -> str:
    """A clear message from the failure of the probe job."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    mismatch = next((line for line in lines if "PYTHON_VERSION_MISMATCH" in line or "different version" in line), None)
    if mismatch is not None:
        return f"the Python workers run another Python than the driver: {mismatch}. {WORKER_HELP}"
    missing = next((line for line in lines if "No module named" in line or "Cannot run program" in line), None)
    first = missing or next((line for line in lines if "Error" in line), lines[0] if lines else message)
    return f"the Python workers cannot run sparkseq's check job: {first}. {WORKER_HELP}"


def requirements() -> dict[str, str]:
    """sparkseq's requirement specifiers for the workers' packages, e.g. ``{"pandas": ">=2.2,<3"}``."""
    try:
        requires = importlib.metadata.requires("sparkseq") or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    found = {}
    for line in requires:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*([<>=!~][^;]*)?(;.*)?", line)
        if match and match.group(1).lower() in worker_probe.WORKER_PACKAGES and not match.group(3):
            found[match.group(1).lower()] = (match.group(2) or "").strip()
    return found


__all__ = ["LOCAL_TASK_ATTEMPTS", "Master", "MasterKind", "SHIPPED_PACKAGES", "WorkerEnvironmentError",
           "check_workers", "classify", "package_zip", "python_environment", "ship", "worker_python_conf"]
