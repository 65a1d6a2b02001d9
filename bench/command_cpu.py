"""CPU seconds and wall seconds of a command and of every process it starts, for variants
of its environment run alternately: how the tests' JVM options and profiles were chosen.

A command that starts Spark leaves its CPU in processes no one waits for (the driver's JVM,
Python workers), which ``time`` does not count. This runs the command in a session of its
own and samples every process of that session (``/proc``, every 0.3 s: a process living
less than that is undercounted), summing each one's user + system seconds. On a shared
machine the wall time depends on the load; the CPU seconds much less.

Run, e.g. a test file with and without the tests' class-data archive (each ``--variant`` is
``name`` or ``name:VAR=value,VAR=value``, added to the command's environment)::

    .venv/bin/python bench/command_cpu.py --rounds 2 --variant default \\
        --variant "no-archive:SPARKSEQ_TESTS_CLASS_ARCHIVE=" -- \\
        .venv/bin/python -m pytest tests/spark/test_spark_udaf.py -q -p no:xdist

The figures: medians over the rounds, and each variant's median CPU over the first's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

SAMPLE_S = 0.3


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds of every process of the command's session, exit code."""
    tick = os.sysconf("SC_CLK_TCK")
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL)
    ticks: dict[tuple[int, str], int] = {}  # (pid, start time) -> user + system ticks seen last

    def sample() -> None:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    text = stat.read()
            except OSError:
                continue
            fields = text[text.rfind(")") + 2:].split()  # after "pid (name) "
            if int(fields[3]) == process.pid:  # the session id
                key = (int(entry), fields[19])
                ticks[key] = max(ticks.get(key, 0), int(fields[11]) + int(fields[12]))

    while process.poll() is None:
        sample()
        time.sleep(SAMPLE_S)
    sample()  # what the session left running
    return time.perf_counter() - started, sum(ticks.values()) / tick, process.returncode


def variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, assignments = text.partition(":")
    values = dict(item.split("=", 1) for item in assignments.split(",") if item)
    return name, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", type=variant, required=True,
                        help="name or name:VAR=value,VAR=value (environment added to the command's)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("command", nargs="+")
    arguments = parser.parse_args()
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in arguments.variant}
    for round_number in range(arguments.rounds):
        for name, values in arguments.variant:
            wall, cpu, code = run(arguments.command, {**os.environ, **values})
            seen[name].append((wall, cpu))
            print(f"round {round_number + 1} {name}: {wall:.1f} s wall, {cpu:.1f} CPU-s, exit {code}", flush=True)
    first = statistics.median(cpu for _, cpu in seen[arguments.variant[0][0]])
    for name, runs in seen.items():
        cpu = statistics.median(c for _, c in runs)
        print(f"{name}: median {statistics.median(w for w, _ in runs):.1f} s wall, {cpu:.1f} CPU-s, "
              f"{cpu / first:.2f}x the first's CPU")


if __name__ == "__main__":
    main()
