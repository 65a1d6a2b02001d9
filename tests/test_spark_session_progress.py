"""Progress of long jobs: shown in interactive use, never otherwise, forced by a setting.

Each case runs a fresh Python process that starts ``sparkseq.session()`` and one job of
about three seconds (two tasks sleeping in the JVM), its output to a pseudo-terminal
(Python's ``pty``: what a person at a terminal has) or to a pipe. Spark's console bar
draws ``[Stage 0:>   (0 + 2) / 2]``; the line printer writes ``[Stage 0: 0/2 tasks done, ...]``.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sparkseq import progress

ROOT = Path(__file__).resolve().parent.parent
CHILD = """
import sparkseq
spark = sparkseq.session("local[2]")
spark.range(0, 4, 1, 2).selectExpr("reflect('java.lang.Thread', 'sleep', 1500L) AS slept").collect()
print("done", flush=True)
spark.stop()
"""
#: name -> (output to a terminal?, environment variables set for the child)
CASES = {
    "terminal": (True, {}),
    "pipe": (False, {}),
    "terminal, CI": (True, {"CI": "true"}),
    "terminal, forced off": (True, {progress.PROGRESS_ENV: "0"}),
    "pipe, forced on": (False, {progress.PROGRESS_ENV: "1"}),
}


def child_environment(extra: dict[str, str]) -> dict[str, str]:
    """The test's environment as a person's shell would have it (not under pytest, not in CI)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "CI", progress.PROGRESS_ENV)}
    return {**env, **extra}


def run_on_terminal(env: dict[str, str], timeout: float = 600) -> str:
    """The child's stdout and stderr, both on one pseudo-terminal."""
    leader, follower = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", CHILD], cwd=ROOT, env=env, stdin=follower, stdout=follower,
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
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def outputs() -> dict[str, str]:
    """Every case's output; the cases run at the same time (each starts its own Spark)."""
    def run(name: str) -> str:
        terminal, extra = CASES[name]
        return (run_on_terminal if terminal else run_on_pipe)(child_environment(extra))

    with ThreadPoolExecutor(len(CASES)) as pool:
        return dict(zip(CASES, pool.map(run, CASES)))


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
