"""Progress of long jobs: shown in interactive use, never otherwise, forced by a setting.

Each case starts ``sparkseq.session()`` with its environment and runs one job of about
three seconds (two tasks sleeping in the JVM), its output to a pseudo-terminal (Python's
``pty``: what a person at a terminal has) or to a pipe. The cases of one kind of output
run one after the other in one Python process (one JVM start each kind, not each case),
each in a new session of its own: the session is stopped at the end of a case, so the
next case's decision is made afresh, and the first case of each process runs in a fresh
process. Spark's console bar draws ``[Stage 0:>   (0 + 2) / 2]``; the line printer writes
``[Stage 0: 0/2 tasks done, ...]``.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sparkseq.spark import progress

ROOT = Path(__file__).resolve().parent.parent
#: Runs the cases given as JSON (``[[name, {variable: value}], ...]``) one after the other, each
#: in its own session with the environment it started with plus the case's variables; prints
#: ``== case <name>`` before each.
CHILD = """
import json, os, sys
import sparkseq
base = dict(os.environ)
for name, extra in json.loads(sys.argv[1]):
    os.environ.clear()
    os.environ.update({**base, **extra})
    print(f"== case {name}", flush=True)
    spark = sparkseq.session("local[2]")
    spark.range(0, 4, 1, 2).selectExpr("reflect('java.lang.Thread', 'sleep', 1500L) AS slept").collect()
    print("done", flush=True)
    spark.stop()
"""
#: name -> (output to a terminal?, environment variables set for the case)
CASES = {
    "terminal": (True, {}),
    "pipe": (False, {}),
    "terminal, CI": (True, {"CI": "true"}),
    "terminal, forced off": (True, {progress.PROGRESS_ENV: "0"}),
    "pipe, forced on": (False, {progress.PROGRESS_ENV: "1"}),
}


def child_environment() -> dict[str, str]:
    """The test's environment as a person's shell would have it (not under pytest, not in CI)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "CI", progress.PROGRESS_ENV)}


def child_command(terminal: bool) -> list[str]:
    """The child running every case of one kind of output, in :data:`CASES`' order."""
    cases = [[name, extra] for name, (on_terminal, extra) in CASES.items() if on_terminal is terminal]
    return [sys.executable, "-c", CHILD, json.dumps(cases)]


def split_cases(output: str) -> dict[str, str]:
    """Each case's part of the child's output (what follows its ``== case`` line)."""
    parts = [part.split("\n", 1) for part in output.split("== case ")[1:]]
    return {name.rstrip("\r"): rest for name, rest in parts}


def run_on_terminal(env: dict[str, str], timeout: float = 900) -> str:
    """The child's stdout and stderr, both on one pseudo-terminal."""
    leader, follower = pty.openpty()
    child = subprocess.Popen(child_command(terminal=True), cwd=ROOT, env=env, stdin=follower, stdout=follower,
                             stderr=follower)
    os.close(follower)
    output, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([leader], [], [], 1.0)[0]:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            elif child.poll() is not None:
                break
    finally:
        os.close(leader)
        if child.poll() is None:
            child.kill()
        child.wait()
    assert child.returncode == 0, output.decode(errors="replace")
    return output.decode(errors="replace")


def run_on_pipe(env: dict[str, str]) -> str:
    """The child's stdout and stderr, both on one pipe."""
    done = subprocess.run(child_command(terminal=False), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=900)
    output = done.stdout.decode(errors="replace")  # as written: a carriage return stays one
    assert done.returncode == 0, output
    return output


@pytest.fixture(scope="module")
def outputs() -> dict[str, str]:
    """Every case's output; the two children (terminal, pipe) run at the same time."""
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(run, child_environment()) for run in (run_on_terminal, run_on_pipe)]
        found = {name: text for future in runs for name, text in split_cases(future.result()).items()}
    assert sorted(found) == sorted(CASES), found.keys()
    return found


def test_a_terminal_shows_sparks_progress_bar(outputs: dict[str, str]) -> None:
    shown = outputs["terminal"]
    assert "done" in shown
    assert "[Stage 0:" in shown and "(0 + 2) / 2]" in shown, shown


@pytest.mark.parametrize("case", ["pipe", "terminal, CI", "terminal, forced off"])
def test_no_progress_without_a_person_watching(outputs: dict[str, str], case: str) -> None:
    assert "done" in outputs[case]
    assert "Stage" not in outputs[case], outputs[case]


def test_forced_on_output_to_a_pipe_gets_a_line_per_stage(outputs: dict[str, str]) -> None:
    shown = outputs["pipe, forced on"]
    assert "[Stage 0: " in shown and "/2 tasks done" in shown, shown
    assert "\r" not in shown


def test_the_setting_takes_on_off_and_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(progress.PROGRESS_ENV, "sometimes")
    with pytest.raises(ValueError, match="SPARKSEQ_PROGRESS='sometimes'"):
        progress.choose(None)
    monkeypatch.setenv(progress.PROGRESS_ENV, "auto")
    assert progress.choose(None) is progress.Display.NONE  # under pytest
    assert progress.choose(False) is progress.Display.NONE
    monkeypatch.setenv(progress.PROGRESS_ENV, "on")
    assert progress.choose(None) is progress.choose(True) is not progress.Display.NONE
    assert progress.choose(False) is progress.Display.NONE  # the argument wins
