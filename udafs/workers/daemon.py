"""The Python worker daemon of local masters: PySpark's own, without its console noise.

On ``local[N]`` the Python workers' stderr is the console of the user's process (the
JVM copies it there), and PySpark's daemon (``pyspark.daemon``) prints two things there
that say nothing to a user:

* a ``BrokenPipeError`` traceback when the JVM hangs up on a worker before reading all
  of its output. That is normal: ``show(3)`` (a ``LIMIT``) is satisfied before the task
  has consumed the worker's results, and nothing waits for the rest. PySpark re-raises
  the failed flush so that the worker ends (``spark.python.daemon.killWorkerOnFlushFailure``)
  and the daemon prints it; here the worker ends just the same, silently.
* pandas ``FutureWarning`` s raised by PySpark's own code — its pandas-based stateful
  operator, which the live MATCH_AGGREGATE runs on, concatenates empty frames — which
  sparkseq cannot change.

:func:`sparkseq.spark.session.default_conf` names this module ``spark.python.daemon.module``
on local masters, whose workers import this checkout (on other masters the daemon
starts before sparkseq is shipped). It imports nothing of sparkseq's: the daemon must
start no thread before it forks its workers.
"""

from __future__ import annotations

import socket
import warnings

from pyspark import daemon

#: PySpark's loop of one forked worker, which :func:`quiet_worker` wraps.
PYSPARK_WORKER = daemon.worker
#: Warnings of PySpark's own modules this daemon's workers do not print.
PYSPARK_MODULES = r"pyspark(\.|$)"


def quiet_worker(sock: socket.socket, authenticated: bool) -> int:
    """Serve tasks on ``sock`` like PySpark's worker loop; once the JVM has closed the
    connection (broken pipe, reset), end without a traceback. The non-zero code makes
    the daemon drop the worker rather than reuse it, as PySpark does after a failed flush."""
    try:
        return PYSPARK_WORKER(sock, authenticated)
    except (BrokenPipeError, ConnectionResetError):
        return 1


def main() -> None:
    """Run PySpark's daemon with :func:`quiet_worker` and PySpark's ``FutureWarning`` s off."""
    warnings.filterwarnings("ignore", category=FutureWarning, module=PYSPARK_MODULES)
    daemon.worker = quiet_worker  # the daemon's manager looks it up at each fork
    daemon.manager()


if __name__ == "__main__":
    main()
