"""What a Python worker has: the probe :func:`sparkseq.spark.cluster.check_workers` runs on executors.

This module imports only the standard library, and its functions travel to the workers
by value (``cloudpickle.register_pickle_by_value``): the probe runs — and reports —
even where sparkseq itself cannot be imported. It returns plain tuples, which any
worker can pickle back.
"""

from __future__ import annotations

import importlib
import operator
import re
import socket
import sys
from typing import NamedTuple

#: Packages with native code the workers must have installed (sparkseq ships the rest).
WORKER_PACKAGES = ("numpy", "pyarrow", "pandas")
#: Modules whose import proves the shipped packages work: the UDF bodies' modules.
WORKER_MODULES = ("udafs.workers.grouped", "udafs.workers.shared", "udafs.workers.streaming",
                  "sparkseq.spark.functions")


class Report(NamedTuple):
    """One worker's answer (built on the driver from the probe's plain tuple)."""

    host: str
    executable: str
    python: tuple[int, int]
    versions: dict[str, str | None]  # None: not importable
    import_error: str | None


def probe(_: object) -> tuple:
    """Runs on a worker: host, interpreter, Python version, package versions, import error."""
    versions: dict[str, str | None] = {}
    for name in WORKER_PACKAGES:
        try:
            versions[name] = str(importlib.import_module(name).__version__)
        except Exception:  # ImportError, or a broken install failing otherwise
            versions[name] = None
    error = None
    if all(versions.values()):
        try:
            for module in WORKER_MODULES:
                importlib.import_module(module)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
    return socket.gethostname(), sys.executable, tuple(sys.version_info[:2]), versions, error


def problems(report: Report, requirements: dict[str, str]) -> list[str]:
    """What in ``report`` stops sparkseq, in words; ``requirements`` maps a package to
    its version specifiers (``">=2.2,<3"``)."""
    found = []
    if report.python != tuple(sys.version_info[:2]):
        found.append("Python %d.%d (the driver runs %d.%d)" % (*report.python, *sys.version_info[:2]))
    for name in WORKER_PACKAGES:
        version = report.versions.get(name)
        if version is None:
            found.append(f"{name} is not installed")
        elif not satisfies(version, requirements.get(name, "")):
            found.append(f"{name} {version} is installed, sparkseq needs {name}{requirements[name]}")
    if report.import_error:
        found.append(f"importing sparkseq fails ({report.import_error})")
    return found


_OPERATORS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq,
              "!=": operator.ne}


def satisfies(version: str, specifiers: str) -> bool:
    """Whether ``version`` meets comma-separated ``specifiers`` (``>=``, ``<``, ``==`` ... on
    release numbers; pre-release tags are ignored).

    Examples
    --------
    >>> satisfies("2.3.3", ">=2.2,<3"), satisfies("3.0.0", ">=2.2,<3"), satisfies("1.26.4", "")
    (True, False, True)
    """
    for spec in filter(None, (s.strip() for s in specifiers.split(","))):
        match = re.fullmatch(r"(>=|<=|==|!=|>|<)\s*([\d.]+)", spec)
        if match is None:
            continue  # a form this check does not read (~=, wildcards): pip enforced it already
        op, bound = _OPERATORS[match.group(1)], _release(match.group(2))
        mine = _release(version)
        width = max(len(mine), len(bound))
        if not op(mine + (0,) * (width - len(mine)), bound + (0,) * (width - len(bound))):
            return False
    return True


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


__all__ = ["Report", "WORKER_MODULES", "WORKER_PACKAGES", "probe", "problems", "satisfies"]
