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
``--by-process`` also prints, per variant's last round, the CPU of each kind of process (a
Spark driver JVM by its ``spark.app.name``, a Python process by its module or script): where
a test run's CPU goes, e.g. ``-- bash .ci/run`` in a fresh clone.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import statistics
import subprocess
import time

SAMPLE_S = 0.3


def kind(cmdline: str) -> str:
    """What a process is, for ``--by-process``: a JVM by its Spark application name (else its
    main class), a Python process by its module or script, else its program."""
    words = cmdline.split()
    if not words:
        return "?"
    if os.path.basename(words[0]) == "java":
        app = re.search(r"spark\.app\.name=(\S+)", cmdline)
        main = next((w for w in words[1:] if re.fullmatch(r"[a-z]\w*(\.\w+)+", w) and not w.endswith(".jar")), "?")
        return f"java {app.group(1) if app else main.rsplit('.', 1)[-1]}"
    if "python" in os.path.basename(words[0]):
        rest = words[1:]
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
            rest = rest[1:]
        if rest[:1] == ["-m"] and len(rest) > 1:
            return f"python -m {rest[1]}"
        if rest[:1] == ["-c"]:  # e.g. a pytest-xdist worker
            return "python -c"
        return f"python {os.path.basename(rest[0]) if rest else ''}".rstrip()
    return os.path.basename(words[0])


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, int, dict[str, tuple[int, float]]]:
    """Wall seconds, CPU seconds of every process of the command's session, exit code, and
    ``{kind: (processes, CPU seconds)}`` (:func:`kind`)."""
    tick = os.sysconf("SC_CLK_TCK")
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL)
    ticks: dict[tuple[int, str], int] = {}  # (pid, start time) -> user + system ticks seen last
    kinds: dict[tuple[int, str], str] = {}  # (pid, start time) -> kind seen last (a script may exec java)

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
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as raw:
                        cmdline = raw.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    cmdline = ""
                if cmdline.strip() or key not in kinds:  # an exiting process shows none
                    kinds[key] = kind(cmdline)

    while process.poll() is None:
        sample()
        time.sleep(SAMPLE_S)
    sample()  # what the session left running
    processes = collections.Counter(kinds[key] for key in ticks)
    used = collections.Counter[str]()
    for key, seen in ticks.items():
        used[kinds[key]] += seen / tick
    return (time.perf_counter() - started, sum(ticks.values()) / tick, process.returncode,
            {name: (count, used[name]) for name, count in processes.items()})


def variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, assignments = text.partition(":")
    values = dict(item.split("=", 1) for item in assignments.split(",") if item)
    return name, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", type=variant, required=True,
                        help="name or name:VAR=value,VAR=value (environment added to the command's)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--by-process", action="store_true",
                        help="also print each kind of process's CPU seconds (the last round of each variant)")
    parser.add_argument("command", nargs="+")
    arguments = parser.parse_args()
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in arguments.variant}
    for round_number in range(arguments.rounds):
        for name, values in arguments.variant:
            wall, cpu, code, by_kind = run(arguments.command, {**os.environ, **values})
            seen[name].append((wall, cpu))
            print(f"round {round_number + 1} {name}: {wall:.1f} s wall, {cpu:.1f} CPU-s, exit {code}", flush=True)
            if arguments.by_process and round_number == arguments.rounds - 1:
                for what, (count, used) in sorted(by_kind.items(), key=lambda item: -item[1][1]):
                    print(f"    {used:8.1f} CPU-s {used / cpu if cpu else 0:6.1%} {count:4d} x {what}", flush=True)
    first = statistics.median(cpu for _, cpu in seen[arguments.variant[0][0]])
    for name, runs in seen.items():
        cpu = statistics.median(c for _, c in runs)
        ratio = f"{cpu / first:.2f}x" if first else "-"  # a command too short to sample shows no CPU
        print(f"{name}: median {statistics.median(w for w, _ in runs):.1f} s wall, {cpu:.1f} CPU-s, "
              f"{ratio} the first's CPU")


if __name__ == "__main__":
    main()
