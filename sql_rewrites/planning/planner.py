"""The execution plan of a statement: which path every engine call takes, decided in one place.

Input: the compiled plans (a statement's, an E-Cube's cuboids', a sharing group's
members'), one frozen :class:`PlanSettings` read from the session once per statement
(``sparkseq.running.execution_paths.plan_settings``), and what is known of the source:
Spark's size estimate (:class:`SourceSize`, no job) and the keys over a threshold counted
by a statistics job (:class:`KeyStatistics`), or None where nothing was measured.
Output: one frozen value — a :class:`PathChoice` per statement, :class:`CubePaths` per
E-Cube, :class:`GroupPaths` per sharing group — that EXPLAIN prints and execution runs
as given.

The rules:

* ``sparkseq.path`` forces a path (an error naming why when the plan cannot take it);
* a statement alone runs no statistics job: when Spark's estimate of its source leaves
  room for a key over :func:`big_key_threshold` rows, the statement counts its keys as
  it runs and the keys over the threshold take the big-key path (:func:`big_key_path`:
  time split, else streaming), the others the grouped path (or the JVM path) —
  :attr:`PathChoice.by_key_size`, and EXPLAIN lists both;
* a sharing group's members and an E-Cube measured by one statistics job
  (:func:`measured_path`): a key over ``split_rows`` whose span holds
  :data:`MIN_CHUNKS` chunks of twice the window → time split (the keys to cut as
  literals); a key over ``stream_rows`` in a plan that cannot be split → streaming;
  else grouped;
* what would run grouped runs on the JVM path when the plan is a JVM shape
  (:func:`sql_rewrites.generation.jvm_path.jvm_shape`) and the session can load it.

Pure: no Spark.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sql_rewrites.generation.jvm_path import JVM_REASON, jvm_shape
from sql_rewrites.planning.timesplit import CHUNK_ROWS, MAX_SPLIT_LITERALS, MIN_CHUNKS, SPLIT_ROWS, SplitKey
from udafs.plan import Plan, splittable, streamable

#: A key with more rows than this, in a plan that cannot be split, goes to the
#: bounded-memory streaming path: the grouped UDAF's worker held 1.6 GB at 10 M rows and
#: failed at 50 M; the streaming UDTF holds O(window) rows per open key.
STREAM_ROWS = 8_000_000
#: Spark's size estimate of the source (bytes) under which no key can be big (no statistics,
#: no key counted as the statement runs), for a source whose row count Spark does not know:
#: an engine row carries its time and mask
#: (16 bytes). Not a proof for compressed files: Spark estimates a parquet file by its
#: size on disk, 9.5 bytes per row for bench/scale.py's events (47.6 MB for 5 M rows), so
#: keys up to ~6.7 M rows of such a file run grouped without statistics.
MIN_ROW_BYTES = 16
#: The key size (rows) up to which a statement that only counts (COUNT(*), COUNT(X): no value
#: column) keeps a key on the JVM path; over it the key takes the big-key path (time split,
#: else streaming), as every key over ``split_rows`` does on the Python paths. The measured
#: crossover: one key runs in one task on the JVM path, on every core when time-split; a
#: 5 M-row key took 0.78x the time split's time on a quiet machine (``bench/jvm_path.py
#: --events 5000000 --keys 1 --rounds 3 --split``: 2.50 s against 3.19 s, medians of 3; 0.92x
#: at load 19-38), a 10 M-row key 1.97x
#: (``bench/memory.py --events 10000000 --paths jvm time-split``: 350 s against 178 s, on
#: local[2]), so the bound sits just above the even point. Above the time split's 4 M: Spark's
#: size estimate of a source then rules out such a key more often, sparing the statement the
#: count of its keys as it runs (``bench/peers.py --sizes 10m``: ``auto`` counting took 1.95x
#: the JVM path's time; the 87 MB file of 10 M events on 1,000 keys leaves room for 5.4 M rows).
#: Memory: the JVM path holds a key's rows in the executor's heap, 665 MB at the peak for a
#: 10 M-row key (the same bench/memory.py run, garbage included), about 400 MB at this bound.
#: Value measures keep the time split's threshold (their pair counts take a BigInteger per row).
JVM_COUNT_ROWS = 6_000_000
#: The stream threshold of a statement that must not run on the streaming path: more rows
#: than any key has. A persistent view's query (created or read) is such a statement: the
#: streaming path calls a table function, which Spark resolves by name inside a view, and
#: sparkseq's are temporary functions (a view's big keys run time-split or grouped).
NO_STREAMING = 2**62


class Path(str, enum.Enum):
    """How a statement's engine runs."""

    GROUPED = "grouped"  # one grouped Arrow UDAF call per partition key
    TIME_SPLIT = "time-split"  # big keys cut into time chunks, partials combined
    STREAMING = "streaming"  # rows sorted by (key hash, time) through the streaming UDTF
    JVM = "jvm"  # one Catalyst aggregate call per partition key, in the JVM (sql_rewrites.generation.jvm_path)


#: The paths that take a cuboid out of the cube's one engine call (a big key).
BIG_KEY_PATHS = (Path.TIME_SPLIT, Path.STREAMING)


@dataclass(frozen=True)
class PlanSettings:
    """The session's settings every path decision reads, read once per statement.

    ``forced``: the path ``sparkseq.path`` forces (None: ``auto``). ``split_rows``,
    ``chunk_rows``, ``stream_rows``: the thresholds (``sparkseq.timeSplit.*``,
    ``sparkseq.streaming.rows``). ``streaming`` false: the query of a persistent view,
    which never takes the streaming path (:data:`NO_STREAMING`) nor the JVM path.
    ``jvm_missing``: why the session cannot run the JVM path (None: it can);
    ``session`` false: there is no session (EXPLAIN from schemas alone), so the JVM path
    and Spark's estimate of the source are not known. ``chunk_multiple``: a split key's
    chunks are rounded up to a multiple of this (the tasks that run at once). ``jvm_rows``:
    the key size up to which a statement that only counts stays on the JVM path
    (:data:`JVM_COUNT_ROWS`, ``sparkseq.jvm.countRows``).
    """

    forced: Path | None = None
    split_rows: int = SPLIT_ROWS
    chunk_rows: int = CHUNK_ROWS
    stream_rows: int = STREAM_ROWS
    streaming: bool = True
    session: bool = False
    jvm_missing: str | None = None
    chunk_multiple: int = 1
    jvm_rows: int = JVM_COUNT_ROWS

    @property
    def stream_limit(self) -> int:
        """The stream threshold in force: :data:`NO_STREAMING` without ``streaming``."""
        return self.stream_rows if self.streaming else NO_STREAMING

    @property
    def python_forced(self) -> Path | None:
        """``forced`` for what only runs in Python (an E-Cube, a sharing group's pass):
        ``sparkseq.path=jvm`` means ``auto`` there."""
        return None if self.forced is Path.JVM else self.forced


@dataclass(frozen=True)
class SourceSize:
    """Spark's size estimate of a source, no job: bytes and rows, None where unknown
    (rows are known for analysed tables, in-memory data and ranges)."""

    bytes: int | None = None
    rows: int | None = None

    def room(self, threshold: int) -> str | None:
        """Why the estimate leaves room for a key over ``threshold`` rows (:func:`room_for_key`);
        None when it rules such a key out."""
        if not room_for_key(threshold, self.bytes, self.rows):
            return None
        if self.rows is not None:
            estimate = f"{self.rows:,} rows"
        elif self.bytes is not None and self.bytes < 2**62:
            estimate = f"{self.bytes:,} bytes"
        else:
            estimate = "unknown"
        return f"Spark's size estimate of the source ({estimate}) leaves room for a key over {threshold:,} rows"


@dataclass(frozen=True)
class KeyStatistics:
    """A partition key's row count and time range (engine time units), and ``xxhash64``
    of its key values (None without PARTITION BY, or when not collected)."""

    rows: int
    first: int
    last: int
    key_hash: int | None = None


@dataclass(frozen=True)
class PathChoice:
    """The chosen path, why, and for a time split the thresholds it uses."""

    path: Path
    reason: str
    split_rows: int = SPLIT_ROWS
    chunk_rows: int = CHUNK_ROWS
    #: The keys to cut and their chunks, from the statistics job (None: the generated SQL
    #: finds the keys over ``split_rows`` and sizes their chunks itself, reading the source twice).
    split_keys: tuple[SplitKey, ...] | None = None
    #: Set when the keys are counted as the statement runs, in its own plan
    #: (:func:`sized_path`): the keys with more rows than this take ``path``, the others
    #: ``small_path`` (None: every key takes ``path``).
    by_key_size: int | None = None
    #: With :attr:`by_key_size`, the path of the keys under it: grouped, or the JVM path.
    small_path: Path = Path.GROUPED
    #: Decided without Spark's estimate of the source (no session): with
    #: :attr:`by_key_size`, the estimate decides when the statement runs whether its keys
    #: are counted at all (else every key takes ``small_path``).
    pending: bool = False
    #: Decided without a session: what runs grouped runs on the JVM path where the
    #: session loads it (the plan is a JVM shape).
    maybe_jvm: bool = False
    #: Why the JVM path, which would take (part of) the statement, cannot run in this
    #: session (the Spark layer warns once per process); None when it runs or is not wanted.
    jvm_unavailable: str | None = None
    #: Set when :attr:`reason` says why no key takes the plan's big-key path (Spark's size
    #: estimate rules such a key out at the JVM path's own bound, :func:`key_threshold`, or
    #: positional markers keep the keys from being counted): moved to the JVM path, the
    #: reason stays after the JVM path's.
    big_key_ruled_out: bool = False

    def describe(self) -> str:
        """EXPLAIN's ``path`` line: the path, or every path the statement may take when a
        key's path is decided as it runs, and why."""
        def named(path: Path) -> str:
            return "grouped, or jvm where the session loads the JVM path" if self.maybe_jvm and \
                path is Path.GROUPED else path.value

        if self.by_key_size is None:
            return f"{named(self.path)} ({self.reason})"
        head = (f"per key, counted when the statement runs: {self.path.value} for keys over {self.by_key_size:,} "
                f"rows, {named(self.small_path)} for the others")
        if self.pending:
            head += "; only when Spark's size estimate of the source leaves room for such keys, else every key " \
                    + named(self.small_path)
        return f"{head} ({self.reason})"


def statistics_threshold(plan: Plan, split_rows: int = SPLIT_ROWS, stream_rows: int = STREAM_ROWS) -> int | None:
    """The row count above which a key changes the path of ``plan`` (what the statistics
    job looks for); None when no count can (the plan neither splits nor streams)."""
    if splittable(plan) is None:
        return min(split_rows, stream_rows) if streamable(plan) is None else split_rows
    return stream_rows if streamable(plan) is None else None


def room_for_key(threshold: int, source_bytes: int | None, source_rows: int | None = None) -> bool:
    """Whether Spark's estimate of a source (bytes, rows; None: unknown) leaves room for a
    key of more than ``threshold`` rows.

    ``source_rows`` (Spark's row count; None: unknown) decides when known: no key holds
    more rows than the whole source. Spark reports it for a bare ``range`` and, with
    ``spark.sql.cbo.enabled`` or ``spark.sql.cbo.planStats.enabled``, for analysed tables
    (``ANALYZE TABLE ... COMPUTE STATISTICS``). Otherwise ``source_bytes`` (None: unknown)
    does, at :data:`MIN_ROW_BYTES` per row: a heuristic, not a proof, for compressed
    files, whose estimate is their size on disk. A wrong guess costs speed or memory,
    never exactness: every path is exact.
    """
    if source_rows is not None:
        return source_rows > threshold
    return source_bytes is None or source_bytes > threshold * MIN_ROW_BYTES


def big_key_threshold(plan: Plan, split_rows: int = SPLIT_ROWS, stream_rows: int = STREAM_ROWS) -> int | None:
    """The row count over which a key counted as the statement runs takes
    :func:`big_key_path`: ``split_rows`` for a plan that splits by time (a key cut into
    chunks needs no streaming), ``stream_rows`` for one that only streams; None for one
    that does neither. With the default thresholds it is :func:`statistics_threshold`."""
    if splittable(plan) is None:
        return split_rows
    return stream_rows if streamable(plan) is None else None


def big_key_path(plan: Plan, split_rows: int = SPLIT_ROWS, chunk_rows: int = CHUNK_ROWS) -> PathChoice:
    """The path of ``plan`` for a key known only to exceed :func:`big_key_threshold`
    rows: time split (the chunks sized as it runs) when the plan splits, else the streaming
    path when it streams, else grouped."""
    if splittable(plan) is None:
        return PathChoice(Path.TIME_SPLIT, f"cut into time chunks of about {chunk_rows:,} rows", split_rows, chunk_rows)
    if streamable(plan) is None:
        return PathChoice(Path.STREAMING, "through the bounded-memory streaming function", split_rows, chunk_rows)
    return PathChoice(Path.GROUPED, f"not splittable by time ({splittable(plan)}) nor streamable "
                                    f"({streamable(plan)})", split_rows, chunk_rows)


def split_key(key: KeyStatistics, within: int, chunk_rows: int, multiple: int = 1) -> SplitKey:
    """A measured key cut into chunks of about ``chunk_rows`` rows of equal time length, at
    least ``2 * within`` (what the generated SQL computes for keys without literal bounds),
    their number rounded up to a multiple of ``multiple`` (the tasks that run at once:
    with 15 equal chunks on 2 cores one core idles for the last one)."""
    n_chunks = -(-key.rows // chunk_rows)
    n_chunks = -(-n_chunks // multiple) * multiple
    length = max((key.last - key.first) // n_chunks + 1, 2 * within)
    return SplitKey(key.key_hash, key.first, length, (key.last - key.first) // length + 1)


def forced_path(plan: Plan, settings: PlanSettings, forced: Path) -> PathChoice:
    """The path ``forced`` by ``sparkseq.path``.

    Raises
    ------
    ValueError
        The plan cannot take it, naming why.
    """
    if forced is Path.JVM:
        shape = jvm_shape(plan)
        if shape is not None:
            raise ValueError(f"this statement cannot run on the JVM path: {shape}")
    elif forced is Path.TIME_SPLIT and splittable(plan) is not None:
        raise ValueError(f"this statement cannot run time-split: {splittable(plan)}")
    elif forced is Path.STREAMING and streamable(plan) is not None:
        raise ValueError(f"this statement cannot run on the streaming path: {streamable(plan)}")
    return PathChoice(forced, "forced by sparkseq.path", settings.split_rows, settings.chunk_rows)


def _no_forced_streaming(settings: PlanSettings) -> None:
    if settings.forced is Path.STREAMING and not settings.streaming:
        raise ValueError("sparkseq.path=streaming cannot apply to the query of a persistent view: the streaming path "
                         "calls a table function, which Spark resolves by name inside a view, and sparkseq's are "
                         "temporary functions; run the query itself for the streaming path")


def measured_path(plan: Plan, big_keys: Sequence[KeyStatistics] | None, settings: PlanSettings) -> PathChoice:
    """The Python path of one plan from the keys a statistics job counted over
    :func:`statistics_threshold` rows (``big_keys``; None: none collected, none needed):
    time split when a key exceeds ``split_rows`` and its span holds :data:`MIN_CHUNKS`
    chunks of twice the window (the keys as literals, :func:`split_key`, while there are
    at most :data:`MAX_SPLIT_LITERALS`); otherwise streaming when a key exceeds the
    stream threshold (too big for one worker's memory); otherwise grouped. A forced path
    (:attr:`PlanSettings.forced`) wins (:func:`forced_path`)."""
    if settings.forced is not None:
        return forced_path(plan, settings, settings.forced)
    split_rows, chunk_rows, stream_rows = settings.split_rows, settings.chunk_rows, settings.stream_limit
    reason, stream_reason = splittable(plan), streamable(plan)
    keys = list(big_keys or [])
    if reason is None and plan.within is not None:  # splittable: it has a window
        min_span = MIN_CHUNKS * 2 * plan.within
        usable = [k for k in keys if k.rows > split_rows and min_span <= k.last - k.first < 2**62]
        if usable:
            top = max(usable, key=lambda k: k.rows)
            literal = len(keys) <= MAX_SPLIT_LITERALS and all(k.key_hash is not None or len(keys) == 1 for k in usable)
            return PathChoice(Path.TIME_SPLIT, f"{len(usable)} partition key(s) over {split_rows:,} rows (largest "
                                               f"{top.rows:,}): cut into time chunks of about {chunk_rows:,} rows",
                              split_rows, chunk_rows,
                              tuple(split_key(k, plan.within, chunk_rows, settings.chunk_multiple) for k in usable)
                              if literal else None)
        if any(k.rows > split_rows for k in keys):
            reason = f"the keys over {split_rows:,} rows span less than {MIN_CHUNKS} chunks of twice the WITHIN window"
    huge = [k for k in keys if k.rows > stream_rows]
    if huge and stream_reason is None:
        return PathChoice(Path.STREAMING, f"{len(huge)} partition key(s) over {stream_rows:,} rows (largest "
                                          f"{max(k.rows for k in huge):,}) and "
                                          f"{reason or 'no time split'}: bounded-memory streaming",
                          split_rows, chunk_rows)
    if reason is not None:
        return PathChoice(Path.GROUPED, f"not splittable by time: {reason}", split_rows, chunk_rows)
    return PathChoice(Path.GROUPED, f"no partition key holds more than {split_rows:,} rows", split_rows, chunk_rows)


def sized_path(plan: Plan, settings: PlanSettings, estimate: str = "", threshold: int | None = None) -> PathChoice:
    """The path of a statement whose source may hold a big key, decided without measuring
    the source: the statement counts its keys as it runs, the keys over ``threshold`` rows
    (default :func:`big_key_threshold`; :func:`key_threshold` for the JVM path) take the
    big-key path (:func:`big_key_path`) and the others the grouped path
    (:attr:`PathChoice.by_key_size`). ``estimate`` says why such a key is possible (Spark's
    size estimate of the source).

    Raises
    ------
    ValueError
        When no key size changes the plan's path (it neither splits nor streams).
    """
    if threshold is None:
        threshold = big_key_threshold(plan, settings.split_rows, settings.stream_limit)
    if threshold is None:
        raise ValueError(f"no key size changes this plan's path: not splittable by time ({splittable(plan)}) "
                         f"nor streamable ({streamable(plan)})")
    big = big_key_path(plan, settings.split_rows, settings.chunk_rows)
    return PathChoice(big.path, f"{big.reason}{'; ' + estimate if estimate else ''}", settings.split_rows,
                      settings.chunk_rows, by_key_size=threshold)


def statement_path(plan: Plan, settings: PlanSettings, size: SourceSize | None = None, *,
                   markers: bool = False, big_keys: Sequence[KeyStatistics] | None = None) -> PathChoice:
    """The path of one statement (no E-Cube) from ``settings`` and what is known of its
    source: ``big_keys`` counted by a statistics job (a sharing group's member), else
    Spark's size estimate ``size`` (a statement alone: its keys counted as it runs where
    the estimate leaves room for a big key, :func:`sized_path`); neither (no session,
    ``settings.session`` false): the rule as far as the plan fixes it, left to the
    estimate when the statement runs (:attr:`PathChoice.pending`). ``markers``: the
    statement holds positional parameter markers, which would be read twice if its keys
    were counted as it runs. What would run grouped runs on the JVM path where
    :func:`jvm_choice` allows it.

    Raises
    ------
    ValueError
        A forced path the plan cannot take.
    """
    _no_forced_streaming(settings)
    choice = jvm_choice(plan, _python_path(plan, settings, size, markers, big_keys), settings)
    if not settings.session and settings.forced is None and jvm_shape(plan) is None:
        return replace(choice, maybe_jvm=True)
    return choice


def _python_path(plan: Plan, settings: PlanSettings, size: SourceSize | None, markers: bool,
                 big_keys: Sequence[KeyStatistics] | None) -> PathChoice:
    threshold = key_threshold(plan, settings)
    if settings.forced is not None or big_keys is not None or threshold is None:
        return measured_path(plan, big_keys, settings)
    if size is None:
        if settings.session:
            return measured_path(plan, [], settings)
        return replace(sized_path(plan, settings), pending=True)
    room = size.room(threshold)
    if room is None:
        if threshold > settings.split_rows:  # the JVM path's own bound (key_threshold)
            return PathChoice(Path.GROUPED, f"Spark's size estimate of the source rules out a key over {threshold:,} "
                                            "rows", settings.split_rows, settings.chunk_rows, big_key_ruled_out=True)
        return measured_path(plan, [], settings)
    if markers:
        return PathChoice(Path.GROUPED, f"{room}, but the keys cannot be counted as the statement runs: its positional "
                                        "parameter markers (?) would be read twice (named markers, :name, can)",
                          settings.split_rows, settings.chunk_rows, big_key_ruled_out=True)
    return sized_path(plan, settings, room, threshold)


def _jvm_wanted(plan: Plan, settings: PlanSettings) -> bool:
    """Whether ``auto`` wants the JVM path for what ``plan`` would run grouped: a JVM shape,
    in a session, not a persistent view's query (whether the path loads aside)."""
    return settings.session and settings.streaming and settings.forced is None and jvm_shape(plan) is None


def runs_on_jvm(plan: Plan, settings: PlanSettings) -> bool:
    """Whether :func:`jvm_choice` moves what ``plan`` would run grouped under ``auto`` to the
    JVM path: a JVM shape, in a session whose JVM path loads, not a persistent view's query."""
    return _jvm_wanted(plan, settings) and settings.jvm_missing is None


def key_threshold(plan: Plan, settings: PlanSettings) -> int | None:
    """The row count over which a key, counted as the statement runs, leaves the path of the
    other keys for the big-key path: :func:`big_key_threshold`, or for a statement that only
    counts and runs on the JVM path (:func:`runs_on_jvm`) at least ``settings.jvm_rows``
    (:data:`JVM_COUNT_ROWS`: the JVM path kept up with the time split up to about that key
    size, and holds such a key in its heap); None when no key size changes the plan's path."""
    threshold = big_key_threshold(plan, settings.split_rows, settings.stream_limit)
    if threshold is not None and not plan.columns and runs_on_jvm(plan, settings):
        return max(threshold, settings.jvm_rows)
    return threshold


def size_threshold(plans: Sequence[Plan], settings: PlanSettings) -> int | None:
    """The key size Spark's estimate of the source is asked about for ``plans`` (a
    statement's, or a cube's cuboids' with ``sparkseq.path=jvm`` read as ``auto``): the
    lowest :func:`big_key_threshold`; None when the estimate decides nothing (a forced
    path, or no plan splits or streams): then no estimate is needed."""
    if settings.forced is not None:
        return None
    found = [t for t in (big_key_threshold(p, settings.split_rows, settings.stream_limit) for p in plans)
             if t is not None]
    return min(found) if found else None


def jvm_choice(plan: Plan, choice: PathChoice, settings: PlanSettings) -> PathChoice:
    """``choice`` with what it runs on the grouped path moved to the JVM path when ``plan``
    is a JVM shape (:func:`sql_rewrites.generation.jvm_path.jvm_shape`) and the session can
    run the path (``settings.jvm_missing``). The cost rule, measured (docs/engine.md "JVM
    path", "The cost rule"): the JVM path took less time than the kernel path wherever keys
    are many (1 M and 10 M events on 1,000 keys, every covered shape at 1 M, SLIDE with 60
    windows a row, 20,000 keys of one row), so it takes every key but the big ones; a key over the big-key threshold
    (:func:`key_threshold`: the time split's, or for a statement that only counts
    :data:`JVM_COUNT_ROWS`, about where one key on the JVM path stops keeping up with the
    time split on every core) keeps the big-key path. For
    ``auto`` and ``sparkseq.path=jvm`` only, and never for a persistent view's query (it runs
    in Python); ``jvm`` where the JVM path cannot run falls back to grouped. Without a
    session nothing moves (:attr:`PathChoice.pending` says the JVM path may take the
    grouped part)."""
    missing = settings.jvm_missing
    if choice.path is Path.JVM:  # forced by sparkseq.path=jvm: the rule itself never picks it
        if missing is None or not settings.session or not settings.streaming:
            return choice
        return replace(choice, path=Path.GROUPED, jvm_unavailable=missing,
                       reason=f"sparkseq.path=jvm, but the JVM path is unavailable: {missing}")
    if not _jvm_wanted(plan, settings) or not (choice.path is Path.GROUPED or choice.by_key_size is not None):
        return choice
    if missing is not None:
        return replace(choice, reason=f"{choice.reason}; not on the JVM path: {missing}", jvm_unavailable=missing)
    if choice.by_key_size is not None:
        return replace(choice, small_path=Path.JVM, reason=f"{choice.reason}; the other keys {JVM_REASON}")
    if choice.big_key_ruled_out:
        return replace(choice, path=Path.JVM, reason=f"{JVM_REASON}; {choice.reason}")
    return replace(choice, path=Path.JVM, reason=JVM_REASON)


@dataclass(frozen=True)
class CubePaths:
    """How an E-Cube statement runs: in one grouped engine call per key (``cuboids`` None),
    or as the UNION ALL of its cuboid statements
    (:mod:`sql_rewrites.planning.cube_paths`), ``cuboids[j]`` the path of the j-th
    reported cuboid (``texts[j]``); ``reason`` says why."""

    reason: str
    cuboids: tuple[PathChoice, ...] | None = None
    texts: tuple[str, ...] = ()
    #: Left to Spark's size estimate of the source when the statement runs (no session).
    pending: bool = False
    #: Set when the keys are counted as the statement runs: the keys with more rows than
    #: this run each cuboid on ``cuboids``' path, the others the one grouped call (None:
    #: every key takes ``cuboids``' paths).
    by_key_size: int | None = None

    @property
    def split(self) -> bool:
        """Whether each cuboid runs as its own statement."""
        return self.cuboids is not None

    def describe(self) -> list[str]:
        """EXPLAIN's ``path`` lines: the cube's path and why, then each cuboid's when split."""
        if self.cuboids is None:
            return [f"grouped, every cuboid in one engine call per key ({self.reason})"]
        width = max(len(t) for t in self.texts)
        if self.by_key_size is not None:
            head = (f"every cuboid in one engine call per key, and for the keys over {self.by_key_size:,} rows, "
                    "counted when the statement runs, each cuboid its own statement, UNION ALL")
            if self.pending:
                head += ("; only when Spark's size estimate of the source leaves room for such keys, else every "
                         "key in the one grouped call")
            head += f" ({self.reason})"
        else:
            head = f"each cuboid its own statement, UNION ALL ({self.reason})"
        return [head, *(f"{t:<{width}}  {c.path.value} ({c.reason})" for t, c in zip(self.texts, self.cuboids))]


def _stuck(plan: Plan) -> str:
    """Why a plan neither splits nor streams."""
    return f"not splittable by time ({splittable(plan)}) nor streamable ({streamable(plan)})"


def cube_path(texts: Sequence[str], plans: Sequence[Plan], settings: PlanSettings, size: SourceSize | None = None,
              *, markers: bool = False, big_keys: Sequence[KeyStatistics] | None = None,
              unmeasured: str | None = None) -> CubePaths:
    """The path of an E-Cube whose reported cuboids are ``plans`` (pattern ``texts``).

    With ``big_keys`` (a statistics job counted the keys over :func:`group_threshold`
    rows; ``unmeasured``: why it failed, the cube then stays grouped) each cuboid's path by
    :func:`measured_path`: the cube splits only when some cuboid's path is time-split or
    streaming, else it stays one grouped call per key, which shares the scan and the
    derivations. Without them (a statement alone) from Spark's estimate ``size``: the keys
    over the cuboids' lowest threshold, counted as the statement runs, run each cuboid as
    its own statement on its big-key path (:func:`big_key_path`), the others stay in the
    one grouped call; no session (``size`` None, ``settings.session`` false): that,
    pending the estimate. ``sparkseq.path`` (but ``jvm``, which means ``auto`` here):
    ``grouped`` keeps the one call, another path runs every cuboid on it.

    Raises
    ------
    ValueError
        A forced path some cuboid cannot take, naming the cuboid.
    """
    _no_forced_streaming(settings)
    forced = settings.python_forced
    settings = replace(settings, forced=forced)
    if forced is Path.GROUPED:
        return CubePaths("forced by sparkseq.path")
    if forced is not None or big_keys is not None or unmeasured is not None:
        return _measured_cube(texts, plans, settings, big_keys, unmeasured)
    threshold = size_threshold(plans, settings)
    if threshold is None:
        return CubePaths(f"no cuboid can run time-split or streaming: {_stuck(plans[0])}")
    if size is None:
        if settings.session:
            return CubePaths(f"Spark's size estimate of the source rules out a key over {threshold:,} rows")
        return replace(_sized_cube(texts, plans, settings, threshold, "decided from Spark's size estimate of the "
                                                                      "source when the statement runs"), pending=True)
    room = size.room(threshold)
    if room is None:
        return CubePaths(f"Spark's size estimate of the source rules out a key over {threshold:,} rows")
    if markers:
        return CubePaths(f"{room}, but the keys cannot be counted as the statement runs: its positional parameter "
                         "markers (?) would be read twice (named markers, :name, can)")
    return _sized_cube(texts, plans, settings, threshold, room)


def _sized_cube(texts: Sequence[str], plans: Sequence[Plan], settings: PlanSettings, threshold: int,
                estimate: str) -> CubePaths:
    choices = tuple(big_key_path(p, settings.split_rows, settings.chunk_rows) for p in plans)
    return CubePaths(estimate, choices, tuple(texts), by_key_size=threshold)


def _measured_cube(texts: Sequence[str], plans: Sequence[Plan], settings: PlanSettings,
                   big_keys: Sequence[KeyStatistics] | None, unmeasured: str | None) -> CubePaths:
    if unmeasured is not None and settings.forced is None:
        return CubePaths(f"statistics unavailable ({unmeasured})")
    choices = []
    for text, plan in zip(texts, plans):
        try:
            choices.append(measured_path(plan, big_keys, settings))
        except ValueError as exc:
            raise ValueError(f"cuboid {text}: {exc}") from None
    if settings.forced is not None:
        return CubePaths(f"forced by sparkseq.path: each cuboid {settings.forced.value}", tuple(choices), tuple(texts))
    big = [c for c in choices if c.path in BIG_KEY_PATHS]
    if big:
        return CubePaths(f"{len(big)} of {len(choices)} cuboids leave the one engine call per key for a big key",
                         tuple(choices), tuple(texts))
    threshold = group_threshold(plans, settings)
    if threshold is None:
        return CubePaths(f"no cuboid can run time-split or streaming: {_stuck(plans[0])}")
    keys = [k for k in big_keys or [] if k.rows > threshold]
    if not keys:
        return CubePaths(f"no partition key holds more than {threshold:,} rows")
    largest = max(k.rows for k in keys)
    return CubePaths(f"{len(keys)} partition key(s) over {threshold:,} rows (largest {largest:,}) change no "
                     f"cuboid's path (e.g. {texts[0]}: {choices[0].reason})")


@dataclass(frozen=True)
class GroupPaths:
    """Each member's path (by member index) of a workload's sharing group, the members that
    run in the shared pass, and why the group's statistics job ran (None: it did not)."""

    choices: tuple[PathChoice, ...]
    shared: tuple[int, ...]
    measured: str | None = None

    def is_shared(self, member: int) -> bool:
        """Whether member ``member`` reads its rows from the group's shared pass."""
        return member in self.shared

    def describe(self, member: int) -> str:
        """Member ``member``'s path as EXPLAIN WORKLOAD prints it."""
        choice = self.choices[member]
        where = "shared pass" if self.is_shared(member) else "on its own"
        return f"{choice.path.value}, {where} ({choice.reason})"


def group_threshold(plans: Sequence[Plan], settings: PlanSettings) -> int | None:
    """The row count above which a key changes some member's path of a sharing group (or
    some cuboid's of an E-Cube): what their one statistics job looks for; None when no
    count changes any."""
    found = [t for t in (statistics_threshold(p, settings.split_rows, settings.stream_limit) for p in plans)
             if t is not None]
    return min(found) if found else None


def group_statistics(plans: Sequence[Plan], settings: PlanSettings, size: SourceSize) -> tuple[int, str] | None:
    """Whether a sharing group whose members are ``plans`` runs its statistics job: the
    threshold it counts keys over and why (Spark's estimate ``size`` of the source leaves
    room for a key that would change a member's path); None when it runs none (a forced
    path, no member that splits or streams, or an estimate that rules such keys out)."""
    if settings.python_forced is not None:
        return None
    threshold = group_threshold(plans, settings)
    if threshold is None:
        return None
    if not any(t is not None and room_for_key(t, size.bytes, size.rows)
               for t in (statistics_threshold(p, settings.split_rows, settings.stream_limit) for p in plans)):
        return None
    room = size.room(threshold)
    return None if room is None else (threshold, room)


def group_path(plans: Sequence[Plan], settings: PlanSettings, big_keys: Sequence[KeyStatistics] | None, *,
               measured: str | None = None, unmeasured: str | None = None) -> GroupPaths:
    """The path of every member of a sharing group from the statistics of the group's
    keys over :func:`group_threshold` rows (``big_keys``; None: none collected, none
    needed; ``measured``: why the job ran). The members share source, PARTITION BY and
    ORDER BY, so one job serves all:

    * a member whose path is **grouped** stays in the shared pass;
    * a member whose path is **time-split** or **streaming** leaves the pass and runs on
      its own, on that path, with the group's statistics (no second job);
    * when fewer than two members stay, the one left runs alone grouped (a pass of one
      member shares nothing).

    Members leave whole instead of only their big keys: the big key alone is what costs —
    a key over the split threshold holds millions of rows, next to which the second scan
    of the source a member alone pays is small. ``sparkseq.path`` (but ``jvm``, which
    means ``auto`` here) applies to every member: ``grouped`` keeps them all in the
    shared pass, another path takes them all out of it (an error when a member cannot
    take it). ``unmeasured``: why the statistics job failed (every member then stays
    grouped, as a statement alone does).

    Raises
    ------
    ValueError
        A forced path some member cannot take.
    """
    settings = replace(settings, forced=settings.python_forced)
    if unmeasured is not None and settings.forced is None:
        choices = tuple(PathChoice(Path.GROUPED, f"statistics unavailable ({unmeasured}): grouped",
                                   settings.split_rows, settings.chunk_rows) for _ in plans)
    else:
        choices = tuple(measured_path(p, big_keys, settings) for p in plans)
    shared = tuple(i for i, c in enumerate(choices) if c.path is Path.GROUPED)
    return GroupPaths(choices, shared if len(shared) > 1 else (), measured)
