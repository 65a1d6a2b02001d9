"""An installed wheel works like a checkout: the demo and ``spark.sql`` with MATCH_AGGREGATE.

The checkout is built into a wheel with pip (in a copy, so nothing is written into the
repository), the wheel installed with ``--no-deps`` into a new virtual environment in a
temporary directory, and run there from a working directory outside the repository.
The new environment sees the dependencies already installed beside the interpreter that
runs the tests (pyspark, numpy, ...) through a ``.pth`` line naming that site-packages
directory; Python does not process ``.pth`` files of a directory added that way, so the
checkout's editable install of sparkseq (its ``__editable__`` finder) stays out, and the
test asserts that every module came from the new environment. To start one JVM only, one
process runs ``python -m sparkseq demo`` (through ``runpy``, as ``-m`` does) and then, in
a new session, one MATCH_AGGREGATE statement through plain ``spark.sql``, which needs the
parser extension's jar from the wheel. Both answers are compared with what the
checkout's demo prints. Every subprocess (build, install, runs) gets the tests' environment
without what points into the checkout or the tests' Spark (:func:`clean_env`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SUBPROCESS_JVM_OPTIONS

#: One worker under pytest-xdist (``--dist loadgroup``): the module's wheel is built once.
pytestmark = pytest.mark.xdist_group("wheel")

ROOT = Path(__file__).resolve().parents[2]
#: Not copied for the build: version control, caches, environments and earlier build output.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", ".hypothesis", ".ruff_cache", ".mypy_cache", ".sparkseq-tmp",
                                     "__pycache__", "build", "dist", "*.egg-info", "spark-warehouse", "metastore_db",
                                     "sparkseq-warehouse")
#: Environment variables (by prefix) that would let the tests' process into the new environment:
#: its checkout, its interpreter, its Spark and its settings. ``sparkseq.session()`` puts the
#: checkout on ``PYTHONPATH`` (for local workers) once any Spark test has run; that checkout holds
#: ``sparkseq.egg-info``, so pip, run for the new venv with it on the path, took sparkseq 0.1.0 for
#: installed ("already installed with the same version") and left the venv without it.
LEAKY_ENV_PREFIXES = ("PYTHON", "PYSPARK_", "SPARK_", "SPARKSEQ_", "PYTEST_", "VIRTUAL_ENV", "CONDA_PREFIX",
                      "__PYVENV_LAUNCHER__", "MALLOC_")
#: pip settings that would install somewhere else or not build the wheel in isolation; the others
#: (where packages come from: index, find-links, certificates) are kept.
LEAKY_PIP_ENV = ("PIP_TARGET", "PIP_PREFIX", "PIP_ROOT", "PIP_USER", "PIP_PYTHON", "PIP_REQUIRE_VIRTUALENV",
                 "PIP_NO_BUILD_ISOLATION", "PIP_IGNORE_INSTALLED", "PIP_EDITABLE")

#: What the checkout's ``python -m sparkseq demo`` prints (the sample clicks are deterministic).
DEMO_LINES = (
    "Top customers by completed funnels (30,812 clicks):",
    "2,658 customers touched the funnel, 320 completed it 991 times, bringing 24,765.09 in case sales.",
)
#: The demo's top customer (customer_id, funnels, revenue) and busiest window (funnels, customers, revenue).
DEMO_TOP_CUSTOMER = ["871", "11", "274.89"]
DEMO_BUSIEST_WINDOW = ["12", "2", "299.88"]

#: Runs in the new environment: the demo as ``python -m sparkseq demo`` runs it, then one
#: statement through ``spark.sql``; prints one JSON line (``RESULT {...}``) at the end.
INSTALLED_RUN = """
import json, runpy, sys

sys.argv = ["python -m sparkseq", "demo"]
try:
    runpy.run_module("sparkseq", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    demo_exit = stop.code

import pyspark, sql_rewrites, udafs
import sparkseq
from sparkseq import demo

spark = sparkseq.session()
demo.load(spark)
row = spark.sql('''
  SELECT count(*) AS customers, sum(funnels) AS funnels, CAST(sum(revenue) AS STRING) AS revenue
  FROM clicks MATCH_AGGREGATE (
    PARTITION BY customer_id ORDER BY ts
    PATTERN SEQ(VK, BK, !REC, VC, BC)
    DEFINE VK  AS action = 'view' AND item = 'kindle', BK AS action = 'buy' AND item = 'kindle',
           REC AS action = 'recommendation',
           VC  AS action = 'view' AND item = 'case',   BC AS action = 'buy' AND item = 'case'
    MEASURES COUNT(*) AS funnels, SUM(BC.price) AS revenue
    WITHIN INTERVAL 10 MINUTES) AS m''').first()
files = {m.__name__: m.__file__ for m in (sparkseq, sql_rewrites, udafs, pyspark)}
print("RESULT " + json.dumps({"demo_exit": demo_exit, "files": files, "clicks": str(demo.CLICKS),
                              "spark_sql": [row.customers, row.funnels, row.revenue]}))
spark.stop()
"""


def build_wheel(source: Path, work: Path) -> Path:
    """The wheel pip builds from a copy of ``source`` (in ``work``), as ``pip wheel .`` would."""
    copy, dist = work.resolve() / "source", work.resolve() / "dist"
    shutil.copytree(source, copy, ignore=NOT_SOURCES)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(copy), "--no-deps", "--quiet",
                    "--disable-pip-version-check", "-w", str(dist)], cwd=copy, env=clean_env(), check=True,
                   timeout=600)
    [wheel] = dist.glob("sparkseq-*.whl")
    return wheel


def install(wheel: Path, venv: Path) -> Path:
    """A new virtual environment holding ``wheel`` (no dependencies); returns its Python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv.parent, env=clean_env(),
                   check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet",
                    "--disable-pip-version-check", str(wheel)], cwd=venv.parent, env=clean_env(), check=True,
                   timeout=600)
    return python


def see_installed_dependencies(python: Path) -> None:
    """Let ``python``'s environment import what is installed beside the tests' interpreter.

    A path line in a ``.pth`` file is appended to ``sys.path`` after the environment's own
    site-packages, and the ``.pth`` files inside it are not processed: the editable install
    of the checkout (``__editable__*.pth``) does not run there.
    """
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          env=clean_env(), capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    (Path(site) / "installed-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")


def clean_env(scratch: Path | None = None) -> dict[str, str]:
    """The tests' environment without what points into the checkout or the tests' Spark (for every
    subprocess here: the build, the install and the runs); Spark scratch in ``scratch``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(LEAKY_ENV_PREFIXES) and k not in LEAKY_PIP_ENV}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["SPARK_SUBMIT_OPTS"] = SUBPROCESS_JVM_OPTIONS  # the tests' JVM options only (tests/conftest.py)
    if scratch is not None:
        env["SPARKSEQ_SCRATCH"] = str(scratch)
    return env


def run_installed(python: Path, work: Path) -> tuple[str, dict]:
    """Run :data:`INSTALLED_RUN` with ``python`` from ``work``: the output and its RESULT line."""
    (work / "installed_run.py").write_text(INSTALLED_RUN)
    done = subprocess.run([str(python), "installed_run.py"], cwd=work, env=clean_env(work / "scratch"),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert result, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout, json.loads(result[-1].removeprefix("RESULT "))


def first_row(output: str, title: str) -> list[str]:
    """The whitespace-separated cells of the first row of the table printed under ``title``."""
    lines = output.split(title, 1)[1].splitlines()
    return lines[2].split()  # the rest of the title line, the column names, then the first row


#: Top-level entries of the checkout that other tests write (Spark scratch, hypothesis's examples).
SCRATCH_ENTRIES = {".sparkseq-tmp", ".hypothesis", ".pytest_cache", "__pycache__"}


def checkout_entries() -> set[str]:
    """The checkout's top-level files and folders, but for other tests' scratch."""
    return {entry.name for entry in ROOT.iterdir()} - SCRATCH_ENTRIES


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the new environment's Python, a working directory outside the repository).

    Built, installed and run in the environment a Spark test leaves behind whatever ran
    before: the checkout on ``PYTHONPATH``, as ``sparkseq.session()`` puts it there for its
    local workers (alone, the module saw none of it and passed; after Spark tests pip
    skipped the install). Nothing may appear in the checkout meanwhile."""
    work = tmp_path_factory.mktemp("wheel")
    assert not work.resolve().is_relative_to(ROOT)
    before = checkout_entries()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        patch.setenv("PYSPARK_PYTHON", sys.executable)
        python = install(build_wheel(ROOT, work), work / "venv")
        see_installed_dependencies(python)
        yield python, work
    assert checkout_entries() == before, "the wheel's build, install or runs wrote into the checkout"


def test_subprocesses_get_none_of_the_tests_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"PYTHONPATH": str(ROOT), "PYSPARK_GATEWAY_PORT": "1", "PYSPARK_GATEWAY_SECRET": "x",
                       "SPARK_HOME": "/spark", "SPARKSEQ_MASTER": "local[1]", "VIRTUAL_ENV": str(ROOT / ".venv"),
                       "PIP_TARGET": "/elsewhere", "PIP_FIND_LINKS": "/wheels"}.items():
        monkeypatch.setenv(key, value)
    env = clean_env(Path("/scratch"))
    assert not {"PYTHONPATH", "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "SPARK_HOME", "SPARKSEQ_MASTER",
                "VIRTUAL_ENV", "PIP_TARGET"} & env.keys()
    assert env["SPARKSEQ_SCRATCH"] == "/scratch" and env["PIP_FIND_LINKS"] == "/wheels"
    assert env["SPARK_SUBMIT_OPTS"] == SUBPROCESS_JVM_OPTIONS


def test_the_wheel_holds_the_demo_and_the_parser_extension(installed: tuple[Path, Path]) -> None:
    python, _ = installed
    package = python.parents[1] / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages" / "sparkseq"
    for part in ("demo.py", "data/clicks.csv", "jvm/sparkseq-extension.jar", "log4j2.properties"):
        assert (package / part).is_file(), f"the wheel lacks sparkseq/{part}"


def test_python_m_sparkseq_answers_from_the_wheel(installed: tuple[Path, Path]) -> None:
    python, work = installed
    done = subprocess.run([str(python), "-m", "sparkseq", "--help"], cwd=work, env=clean_env(work / "scratch"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "demo" in done.stdout and "sql" in done.stdout


def test_demo_and_spark_sql_run_from_the_wheel(installed: tuple[Path, Path]) -> None:
    python, work = installed
    output, result = run_installed(python, work)
    venv = python.parents[1]
    modules = {name: Path(file) for name, file in result["files"].items()}
    for name in ("sparkseq", "sql_rewrites", "udafs"):
        assert modules[name].is_relative_to(venv), f"{name} imported from {modules[name]}, not the new venv"
    assert not modules["pyspark"].is_relative_to(venv)  # a dependency, seen through the .pth line
    assert Path(result["clicks"]).is_relative_to(venv)
    assert result["demo_exit"] in (0, None), output
    for line in DEMO_LINES:
        assert line in output, output
    assert first_row(output, "Top customers by completed funnels") == DEMO_TOP_CUSTOMER
    assert first_row(output, "Busiest 10-minute windows")[-3:] == DEMO_BUSIEST_WINDOW
    assert result["spark_sql"] == [2_658, 991, "24765.09"]
