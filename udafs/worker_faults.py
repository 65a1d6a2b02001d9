"""A documented fault for tests: kill the Python worker that evaluates the next group, once.

Spark recovers a failed task by running it again; sparkseq's tests prove the retry gives
the identical answer by killing a real Python worker in the middle of a query. Set
``SPARKSEQ_KILL_WORKER_ONCE`` in the workers' environment (``spark.executorEnv.*``) to
a file path; while that file exists, the next worker about to evaluate a group deletes
it and kills itself with SIGKILL — exactly what the kernel's OOM killer or an operator
does. Only one worker wins the deletion, so exactly one task fails. Without the variable
(or the file) this costs one environment lookup per group. The path must be on a file
system the workers share with whoever arms it (one machine: local, local-cluster).
"""

from __future__ import annotations

import os
import signal

KILL_WORKER_ONCE = "SPARKSEQ_KILL_WORKER_ONCE"


def kill_if_armed() -> None:
    """Kill this process (SIGKILL) if the file named by :data:`KILL_WORKER_ONCE` exists, deleting it."""
    armed = os.environ.get(KILL_WORKER_ONCE)
    if not armed:
        return
    try:
        os.unlink(armed)
    except OSError:  # not armed, or another worker was first
        return
    os.kill(os.getpid(), signal.SIGKILL)


__all__ = ["KILL_WORKER_ONCE", "kill_if_armed"]
