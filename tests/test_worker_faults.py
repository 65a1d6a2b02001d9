"""The worker fault of :mod:`udafs.workers.faults`: off the engine's path unless the variable
is set when a worker starts, and, armed, a SIGKILL of exactly the process that finds the file.

Each case runs in a fresh Python (the variable is read once, at import). Killing a real
worker inside a Spark query, and the retry's identical answer, is
``tests/test_spark_local_cluster.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from udafs.workers.faults import KILL_WORKER_ONCE

ROOT = Path(__file__).resolve().parents[1]
#: The engine's worker-side entry points, each called once per engine call.
ENTRY_POINTS = ("udafs.workers.grouped:aggregate_group", "udafs.workers.grouped:aggregate_many",
                "udafs.workers.shared:_evaluated", "udafs.workers.timesplit:chunk_state")

PROBE = """
import importlib, sys
wrapped = []
for entry in sys.argv[1:]:
    module, name = entry.split(":")
    function = getattr(importlib.import_module(module), name)
    wrapped.append(hasattr(function, "__wrapped__"))
print(wrapped)
"""

CALL = """
from udafs.workers.faults import with_worker_fault
print(with_worker_fault(lambda x: x + 1)(41), flush=True)
"""


def run(code: str, *args: str, armed_by: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != KILL_WORKER_ONCE}
    if armed_by is not None:
        env[KILL_WORKER_ONCE] = str(armed_by)
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_without_the_variable_the_entry_points_are_the_plain_functions() -> None:
    done = run(PROBE, *ENTRY_POINTS, armed_by=None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([False] * len(ENTRY_POINTS))


def test_with_the_variable_every_entry_point_checks_for_the_file(tmp_path: Path) -> None:
    done = run(PROBE, *ENTRY_POINTS, armed_by=tmp_path / "kill")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([True] * len(ENTRY_POINTS))


def test_the_file_kills_the_caller_once_and_is_consumed(tmp_path: Path) -> None:
    kill = tmp_path / "kill"
    not_yet = run(CALL, armed_by=kill)  # the variable set, no file: nothing happens
    assert (not_yet.returncode, not_yet.stdout.strip()) == (0, "42"), not_yet.stderr
    kill.touch()
    killed = run(CALL, armed_by=kill)
    assert killed.returncode == -signal.SIGKILL and killed.stdout == ""
    assert not kill.exists()
    again = run(CALL, armed_by=kill)  # consumed: the next call runs
    assert (again.returncode, again.stdout.strip()) == (0, "42"), again.stderr
