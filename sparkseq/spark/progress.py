"""Progress of long Spark work in interactive use: Spark's console bar, or a line per stage.

:func:`sparkseq.session` asks :func:`choose` how to show progress:

* in a terminal (stderr is one), Spark's own console progress bar
  (``spark.ui.showConsoleProgress``: ``[Stage 3:=====>      (5 + 2) / 10]`` on stderr,
  redrawn in place; it reads Spark's status store, which exists with the web UI off);
* in a notebook (an IPython kernel), where the JVM's stderr is not the cell's output, a
  line per stage printed by this module (:class:`StageLines`) from Spark's status tracker;
  also when progress is forced on and stderr is a file or a pipe (a log takes lines, not a
  redrawn bar);
* nothing under pytest (``PYTEST_CURRENT_TEST``), in CI (``CI``), or when stderr is not a
  terminal.

``progress=True`` / ``False`` (or ``SPARKSEQ_PROGRESS=1`` / ``0``; ``auto`` or unset: the
rules above) forces it on or off; the argument wins over the variable.
"""

from __future__ import annotations

import enum
import os
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.core.status import StatusTracker

#: The environment variable forcing progress on (``1``, ``on``, ``true``, ``yes``) or off
#: (``0``, ``off``, ``false``, ``no``); ``auto`` or unset: decided as the module says.
PROGRESS_ENV = "SPARKSEQ_PROGRESS"
_ON = ("1", "on", "true", "yes")
_OFF = ("0", "off", "false", "no")

#: A stage is shown once it has run this long (Spark's console bar waits 0.5 s too).
FIRST_LINE_AFTER_S = 0.5
#: How often the status tracker is asked.
POLL_EVERY_S = 0.5
#: At most one line per stage this often while it runs (a notebook cell keeps every line).
LINE_EVERY_S = 5.0


class Display(enum.Enum):
    """How a session shows the progress of its jobs."""

    NONE = "none"
    CONSOLE_BAR = "console bar"
    STAGE_LINES = "stage lines"


def choose(progress: bool | None) -> Display:
    """How to show progress: ``progress`` if given, else ``SPARKSEQ_PROGRESS``, else on
    exactly in interactive use (:func:`interactive`); a terminal gets Spark's bar, anything
    else lines.

    Raises
    ------
    ValueError
        ``SPARKSEQ_PROGRESS`` holds something else than on, off or auto.
    """
    wanted = progress if progress is not None else _from_environment()
    if wanted is None:
        wanted = interactive()
    if not wanted:
        return Display.NONE
    return Display.CONSOLE_BAR if _terminal() else Display.STAGE_LINES


def interactive() -> bool:
    """A person is watching: stderr is a terminal or the code runs in a notebook, and
    neither pytest nor a CI system runs it."""
    if os.environ.get("PYTEST_CURRENT_TEST") or os.environ.get("CI", "").lower() not in ("", *_OFF):
        return False
    return _terminal() or in_notebook()


def _from_environment() -> bool | None:
    value = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if value in ("", "auto"):
        return None
    if value in _ON + _OFF:
        return value in _ON
    raise ValueError(f"{PROGRESS_ENV}={value!r}: use one of {', '.join(_ON)} (on), {', '.join(_OFF)} (off) or auto")


def _terminal() -> bool:
    """stderr is a terminal, and it is the JVM's (file descriptor 2): Spark's bar goes there."""
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty() and stream.fileno() == 2
    except (AttributeError, ValueError, OSError):  # a stream without a file descriptor
        return False


def in_notebook() -> bool:
    """True inside an IPython kernel (Jupyter, VS Code, ...): its cells show what Python
    writes, not what the JVM does."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


#: The line printer of each SparkContext that has one.
_printers: weakref.WeakKeyDictionary[SparkContext, StageLines] = weakref.WeakKeyDictionary()


def show_stage_lines(context: SparkContext, out: TextIO | None = None) -> None:
    """Print a line per running stage of ``context`` to ``out`` (default: ``sys.stderr``
    as it is when a line is printed) from a daemon thread, once per context."""
    if context not in _printers:
        _printers[context] = StageLines(context, out)
        _printers[context].start()


class StageLines(threading.Thread):
    """A daemon thread printing, for each stage that runs longer than
    :data:`FIRST_LINE_AFTER_S`, a line when it is first seen, at most every
    :data:`LINE_EVERY_S` while its count of finished tasks moves, and one when it ends:
    ``[Stage 3: 5/10 tasks done, 2 running]``. It ends with its SparkContext."""

    def __init__(self, context: SparkContext, out: TextIO | None = None) -> None:
        super().__init__(name="sparkseq-progress", daemon=True)
        self._context = context
        self._out = out
        self._seen: dict[int, float] = {}  # stage -> when first seen
        self._printed: dict[int, tuple[float, int]] = {}  # stage -> (when, tasks done) last printed

    def run(self) -> None:
        try:
            tracker = self._context.statusTracker()
            while self._context._jsc is not None:  # None once stopped
                self._poll(tracker, time.monotonic())
                time.sleep(POLL_EVERY_S)
        except Exception:  # noqa: BLE001 - the session stopped under the poll: progress ends with it
            return

    def _poll(self, tracker: StatusTracker, now: float) -> None:
        active = set(tracker.getActiveStageIds())
        for stage in sorted(active):
            info = tracker.getStageInfo(stage)
            first = self._seen.setdefault(stage, now)
            if info is None or now - first < FIRST_LINE_AFTER_S:
                continue
            last = self._printed.get(stage)
            if last is None or (now - last[0] >= LINE_EVERY_S and info.numCompletedTasks != last[1]):
                self._print(f"[Stage {stage}: {info.numCompletedTasks}/{info.numTasks} tasks done, "
                            f"{info.numActiveTasks} running]")
                self._printed[stage] = (now, info.numCompletedTasks)
        for stage in [s for s in self._printed if s not in active]:
            info = tracker.getStageInfo(stage)
            done = f"{info.numCompletedTasks}/{info.numTasks} tasks" if info is not None else "all tasks"
            self._print(f"[Stage {stage}: ended, {done} done]")
            del self._printed[stage]
        for stage in [s for s in self._seen if s not in active]:
            del self._seen[stage]

    def _print(self, line: str) -> None:
        print(line, file=self._out or sys.stderr, flush=True)
