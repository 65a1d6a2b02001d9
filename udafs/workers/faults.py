"""A documented fault for tests: kill the Python worker that evaluates the next group, once.

Spark recovers a failed task by running it again; sparkseq's tests prove the retry gives
the identical answer by killing a real Python worker in the middle of a query. Set
``SPARKSEQ_KILL_WORKER_ONCE`` in the workers' environment (``spark.executorEnv.*``) to
a file path; while that file exists, the next worker about to evaluate a group deletes
it and kills itself with SIGKILL — exactly what the kernel's OOM killer or an operator
does. Only one worker wins the deletion, so exactly one task fails. The path must be on a
file system the workers share with whoever arms it (one machine: local, local-cluster).

The variable is read once, when a worker imports this module, and the worker-side entry
points are wrapped by :func:`with_worker_fault` when they are defined: without the
variable they are the plain functions, so the engine's path pays nothing for the fault.
With it, each call checks for the file first (what arms the fault is the file, created
at any time; the variable only says where it will be).
"""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Callable
from typing import ParamSpec, TypeVar

KILL_WORKER_ONCE = "SPARKSEQ_KILL_WORKER_ONCE"

#: The file whose existence arms the fault, from this process's environment when it imported
#: this module; None: the fault cannot be armed in this process.
ARMED_BY = os.environ.get(KILL_WORKER_ONCE) or None

Params = ParamSpec("Params")
Result = TypeVar("Result")


def kill_if_armed() -> None:
    """Kill this process (SIGKILL) if the file :data:`ARMED_BY` names exists, deleting it."""
    if ARMED_BY is None:
        return
    try:
        os.unlink(ARMED_BY)
    except OSError:  # not armed, or another worker was first
        return
    os.kill(os.getpid(), signal.SIGKILL)


def with_worker_fault(function: Callable[Params, Result]) -> Callable[Params, Result]:
    """``function`` itself when this process cannot be armed (:data:`ARMED_BY` is None), else
    ``function`` preceded by :func:`kill_if_armed` on every call."""
    if ARMED_BY is None:
        return function

    @functools.wraps(function)
    def armed(*args: Params.args, **kwargs: Params.kwargs) -> Result:
        kill_if_armed()
        return function(*args, **kwargs)

    return armed


__all__ = ["ARMED_BY", "KILL_WORKER_ONCE", "kill_if_armed", "with_worker_fault"]
