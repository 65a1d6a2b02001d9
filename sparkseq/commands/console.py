"""What every command shares on the terminal: its text argument, Ctrl-C, and errors
ended with one line instead of a traceback."""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The line of a Python traceback naming the exception: ``sql_rewrites.errors.SqlParseError: ...``.
PYTHON_ERROR_LINE = re.compile(r"^((?:\w+\.)*)(\w+(?:Error|Exception|Warning|Exit)\b.*)")


#: Exit code after Ctrl-C: as if killed by SIGINT.
INTERRUPTED = 128 + 2


def read_text(args: argparse.Namespace) -> str:
    if (args.text is None) == (args.file is None):
        raise SystemExit("give the SQL either as an argument or with --file, not both")
    return args.file.read_text() if args.file is not None else args.text


class Interruption:
    """Ctrl-C (and SIGTERM) for a command that drives Spark.

    A signal handler runs in the main thread, which is then mostly waiting inside a py4j
    call; calling the JVM from there re-enters that call's connection (PySpark's own
    handler does, to cancel jobs, then raises ``KeyboardInterrupt`` inside the call, and
    py4j logs a page of tracebacks for each). This handler hands ``stop`` to another
    thread and returns; the main thread's call ends when the work it waits for stops, and
    the command then ends with one line. Spark's logs go off first: work stopped midway
    is logged as aborted. A second signal leaves at once. Handled inside ``with`` (in the
    main thread: elsewhere Python delivers no signals); the handlers before it come back
    after.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, spark: SparkSession, stop: Callable[[], object]) -> None:
        self._spark = spark
        self._stop = stop
        self.requested = threading.Event()
        self._stopped = threading.Event()
        self._previous: dict[int, object] = {}

    def __enter__(self) -> Interruption:
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.signal(signum, self._handle) for signum in self.SIGNALS}
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]  # what signal.signal returned

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` once a stop was requested (between two pieces of work)."""
        if self.requested.is_set():
            raise KeyboardInterrupt

    def wait(self, timeout: float) -> None:
        """Once a stop was requested, wait for ``stop`` to return (before stopping the session under it)."""
        if self.requested.is_set():
            self._stopped.wait(timeout)

    def _handle(self, signum: int, frame: object) -> None:
        self.check()  # the second signal
        self.requested.set()
        threading.Thread(target=self._stopping, name="sparkseq-interruption", daemon=True).start()

    def _stopping(self) -> None:
        try:
            self._spark.sparkContext.setLogLevel("OFF")
            self._stop()
        except Exception:  # noqa: BLE001 - the work ends anyway, or a second signal ends the command
            pass
        finally:
            self._stopped.set()


def quiet_error_loggers() -> None:
    """PySpark logs every SQL error as a JSON line on stderr before raising it; the command
    reports each error once, itself."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


class CommandFailure(Exception):
    """A mistake in the command's arguments found once Spark runs (a bad --schema)."""


@contextlib.contextmanager
def reporting(interruption: Interruption | None = None) -> Iterator[None]:
    """End the command with one line (plus the excerpt of a SQL error) on stderr for any
    sparkseq or Spark error, instead of a traceback; after Ctrl-C (``interruption``), any
    error is the work it stopped, and the line says so."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from udafs.errors import SparkSeqError

    try:
        yield
    except KeyboardInterrupt:
        raise SystemExit(interrupted()) from None
    except (SparkSeqError, CommandFailure, PySparkException, Py4JJavaError) as exc:
        if interruption is not None and interruption.requested.is_set():
            raise SystemExit(interrupted()) from None
        if isinstance(exc, (SparkSeqError, CommandFailure)):
            print(f"{type(exc).__name__}: {exc}" if isinstance(exc, SparkSeqError) else str(exc), file=sys.stderr)
        else:
            print(f"{type(exc).__name__}: {spark_message(exc)}", file=sys.stderr)
        raise SystemExit(1) from None


def interrupted() -> int:
    print("interrupted", file=sys.stderr)
    return INTERRUPTED


def spark_message(exc: BaseException) -> str:
    """Spark's message on one line: for a Python worker's error its last line (the exception),
    for a JVM error without a PySpark class the Java exception's message."""
    from sparkseq.statements.spark_errors import message_of

    java = getattr(exc, "java_exception", None)
    if java is not None:
        return str(java.toString()).strip().splitlines()[0]
    if type(exc).__name__ == "PythonException":
        lines = str(exc).rstrip().splitlines()
        raised = [i for i, line in enumerate(lines) if PYTHON_ERROR_LINE.match(line)]
        if raised:  # the worker's exception (a sparkseq error keeps its excerpt), without module path
            return "\n".join([PYTHON_ERROR_LINE.sub(r"\2", lines[raised[-1]]), *lines[raised[-1] + 1:]])
    return message_of(exc)
