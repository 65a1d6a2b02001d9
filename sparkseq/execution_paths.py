"""Choosing a statement's execution path from the data: grouped UDAF, time split or streaming.

For every MATCH_AGGREGATE whose path a key's size could change (one that could run
time-split or streaming) :class:`PathReplacer` asks Spark's size estimate of the source
(an analysis, no job). When it rules out a key over the threshold ``T`` the statement
runs grouped; otherwise the statement itself counts its keys as it runs
(:func:`sql_rewrites.timesplit.sized_path`, :func:`sql_rewrites.path_queries.by_key_size`):
the keys over ``T`` rows take the time split (or streaming) path, the others the grouped
path, UNION ALL. So ``spark.sql`` and ``sparkseq.sql`` run no Spark job before the
caller asks for rows, a statement with an analysis error runs none at all, and EXPLAIN
prints the plan that runs. An E-Cube does the same with its cuboids
(:func:`decide_cube`, :func:`sql_rewrites.cube_paths.sized_cube_paths`: for the big keys
each cuboid runs on its own path). A workload's sharing group instead decides per
member from one statistics job (``GROUP BY keys HAVING COUNT(*) > T``, :func:`decide_group`,
:mod:`sql_rewrites.workload_paths`), when the estimate leaves room for such a key — also
when ``sparkseq.workload`` is called, before rows are asked for: which members share the
group's pass fixes the SQL of each statement (:func:`group_statistics_reason`). This
module reads the estimates, registers the functions a path calls and asks Spark where
its hash partitioning sends a chunk; the SQL it runs or hands to the rewriter is built
by :mod:`sql_rewrites.path_queries`. Session settings:

* ``sparkseq.path``: ``auto`` (default), ``grouped`` (the kernel path), ``time-split``,
  ``streaming`` or ``jvm`` (tests, benchmarks). ``auto`` and ``jvm`` run on the JVM path
  (:mod:`sql_rewrites.jvm_path`, :mod:`sparkseq.jvm_path`) what would run grouped when the
  plan is a JVM shape; ``jvm`` on another shape is an error naming why, and where the JVM
  path cannot run (no jar in the JVM, Spark Connect) both warn once and run in Python;
* ``sparkseq.streaming.rows``: keys over this many rows in a plan that cannot be split go to
  the bounded-memory streaming path (default :data:`~sql_rewrites.timesplit.STREAM_ROWS`);
* ``sparkseq.timeSplit.splitRows`` / ``sparkseq.timeSplit.chunkRows``: the thresholds
  (defaults :data:`~sql_rewrites.timesplit.SPLIT_ROWS`, :data:`~sql_rewrites.timesplit.CHUNK_ROWS`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession

from sparkseq.jvm_path import jvm_function, jvm_path_missing
from sparkseq.registration import (
    engine_function,
    engine_function_name,
    stream_function,
    stream_function_name,
    time_split_function_names,
    time_split_functions,
)
from sql_rewrites.cube_paths import (
    CubePaths,
    big_keys_threshold,
    cuboid_plans,
    planned_cube_paths,
    sized_cube_paths,
)
from sql_rewrites.jvm_path import jvm_shape
from sql_rewrites.logical import MatchAggregateQuery
from sql_rewrites.markers import positional_markers
from sql_rewrites.path_queries import (
    PathFunctions,
    big_keys_sql,
    cube_on_paths,
    key_types_sql,
    operator_on_path,
)
from sql_rewrites.rewriter import Replaced, Replacement
from sql_rewrites.timesplit import (
    CHUNK_ROWS,
    MAX_SPLIT_LITERALS,
    SPLIT_ROWS,
    STREAM_ROWS,
    KeyStatistics,
    Path,
    PathChoice,
    big_key_threshold,
    choose_path,
    jvm_choice,
    planned_path,
    room_for_key,
    sized_path,
    statistics_needed,
)
from sql_rewrites.workload_paths import GroupPaths, group_paths, group_threshold
from udafs.plan import Plan

PATH_CONF = "sparkseq.path"
ANSI_CONF = "spark.sql.ansi.enabled"
SPLIT_ROWS_CONF = "sparkseq.timeSplit.splitRows"
CHUNK_ROWS_CONF = "sparkseq.timeSplit.chunkRows"
STREAM_ROWS_CONF = "sparkseq.streaming.rows"
#: At most this many big keys are fetched by the statistics job (the largest first): one
#: more than the time-split query takes as literals, so that it knows when there are more.
MAX_KEYS_REPORTED = MAX_SPLIT_LITERALS + 1


def forced_path(spark: SparkSession) -> Path | None:
    """The path ``sparkseq.path`` forces, None for ``auto``.

    Raises
    ------
    ValueError
        For a value that names no path.
    """
    value = (spark.conf.get(PATH_CONF, "auto") or "auto").strip().lower()
    if value == "auto":
        return None
    try:
        return Path(value)
    except ValueError:
        allowed = ", ".join(["auto", *(p.value for p in Path)])
        raise ValueError(f"{PATH_CONF} must be one of {allowed}, got {value!r}") from None


def python_forced_path(spark: SparkSession) -> Path | None:
    """:func:`forced_path` for what only runs in Python (an E-Cube, a workload's shared
    pass): ``sparkseq.path=jvm`` means ``auto`` there."""
    forced = forced_path(spark)
    return None if forced is Path.JVM else forced


def ansi_mode(spark: SparkSession) -> bool:
    """Whether Spark's ANSI arithmetic is on (an overflow raises instead of wrapping)."""
    return str(spark.conf.get(ANSI_CONF, "true")).strip().lower() == "true"


def thresholds(spark: SparkSession, streaming: bool = True) -> tuple[int, int, int]:
    """(split rows, chunk rows, stream rows) from the session settings; without ``streaming``
    no key is big enough for the streaming path (:data:`NO_STREAMING`)."""
    return (_positive(spark, SPLIT_ROWS_CONF, SPLIT_ROWS), _positive(spark, CHUNK_ROWS_CONF, CHUNK_ROWS),
            _positive(spark, STREAM_ROWS_CONF, STREAM_ROWS) if streaming else NO_STREAMING)


#: The stream threshold of a statement that must not run on the streaming path: more rows
#: than any key has. A persistent view's query (created or read) is such a statement: the
#: streaming path calls a table function, which Spark resolves by name inside a view, and
#: sparkseq's are temporary functions (a view's big keys run time-split or grouped).
NO_STREAMING = 2**62


def _no_forced_streaming(forced: Path | None, streaming: bool) -> None:
    if forced is Path.STREAMING and not streaming:
        raise ValueError(f"{PATH_CONF}=streaming cannot apply to the query of a persistent view: the streaming path "
                         "calls a table function, which Spark resolves by name inside a view, and sparkseq's are "
                         "temporary functions; run the query itself for the streaming path")


def _positive(spark: SparkSession, key: str, default: int) -> int:
    raw = spark.conf.get(key, str(default))
    try:
        value = int(str(raw).replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"{key} must be a positive integer, got {raw!r}")
    return value


def decide(spark: SparkSession | None, query: MatchAggregateQuery, *, streaming: bool = True
           ) -> PathChoice | CubePaths:
    """The path of ``query`` (module docstring; an E-Cube's: :func:`decide_cube`), from
    the session's settings and Spark's size estimate of the source: no job. Without a
    session, the path as far as the plan fixes it. Without ``streaming``, never the
    streaming path (:data:`NO_STREAMING`) nor the JVM path (a persistent view's query
    runs in Python). What would run grouped runs on the JVM path where
    :func:`~sql_rewrites.timesplit.jvm_choice` allows it (``auto`` and ``jvm``)."""
    choice = _python_decision(spark, query, streaming=streaming)
    if spark is None or not streaming or isinstance(choice, CubePaths) or forced_path(spark) not in (None, Path.JVM):
        return choice
    if jvm_shape(query.single_plan) is not None:
        return choice
    return jvm_choice(query.single_plan, choice, None if jvm_function(spark) else jvm_path_missing(spark))


def _python_decision(spark: SparkSession | None, query: MatchAggregateQuery, *, streaming: bool = True
                     ) -> PathChoice | CubePaths:
    if query.cube is not None:
        return decide_cube(spark, query, streaming=streaming)
    plan = query.single_plan
    if spark is None:
        return planned_path(plan)
    forced, ansi = forced_path(spark), ansi_mode(spark)
    _no_forced_streaming(forced, streaming)
    split_rows, chunk_rows, stream_rows = thresholds(spark, streaming)
    threshold = big_key_threshold(plan, split_rows, stream_rows)
    if forced is not None or threshold is None:
        return planned_path(plan, forced, split_rows, chunk_rows, stream_rows, ansi=ansi)
    room = key_room(spark, query, threshold)
    if room is None:
        return choose_path(plan, [], None, split_rows, chunk_rows, stream_rows, ansi=ansi)
    if positional_markers(query.node):
        return PathChoice(Path.GROUPED, f"{room}, but the keys cannot be counted as the statement runs: its positional "
                                        "parameter markers (?) would be read twice (named markers, :name, can)",
                          split_rows, chunk_rows)
    return sized_path(plan, split_rows, chunk_rows, stream_rows, room)


def decide_cube(spark: SparkSession | None, query: MatchAggregateQuery, *, streaming: bool = True) -> CubePaths:
    """The path of an E-Cube ``query`` (:mod:`sql_rewrites.cube_paths`): as :func:`decide`,
    with the thresholds of the lowest cuboid; no job."""
    texts, plans = cuboid_plans(query)
    if spark is None:
        return planned_cube_paths(texts, plans)
    forced, ansi = python_forced_path(spark), ansi_mode(spark)
    _no_forced_streaming(forced, streaming)
    split_rows, chunk_rows, stream_rows = thresholds(spark, streaming)
    threshold = big_keys_threshold(plans, split_rows, stream_rows)
    if forced is not None or threshold is None:
        return planned_cube_paths(texts, plans, forced, split_rows, chunk_rows, stream_rows, ansi=ansi)
    room = key_room(spark, query, threshold)
    if room is None:
        return CubePaths(f"Spark's size estimate of the source rules out a key over {threshold:,} rows")
    if positional_markers(query.node):
        return CubePaths(f"{room}, but the keys cannot be counted as the statement runs: its positional parameter "
                         "markers (?) would be read twice (named markers, :name, can)")
    return sized_cube_paths(texts, plans, split_rows, chunk_rows, stream_rows, room)


def key_room(spark: SparkSession, query: MatchAggregateQuery, threshold: int) -> str | None:
    """Why Spark's size estimate of the source of ``query`` leaves room for a key over
    ``threshold`` rows (no job: :func:`sql_rewrites.timesplit.room_for_key`); None when it
    rules such a key out."""
    size, rows = source_size(spark, query)
    if not room_for_key(threshold, size, rows):
        return None
    if rows is not None:
        estimate = f"{rows:,} rows"
    elif size is not None and size < 2**62:
        estimate = f"{size:,} bytes"
    else:
        estimate = "unknown"
    return f"Spark's size estimate of the source ({estimate}) leaves room for a key over {threshold:,} rows"


def group_statistics(spark: SparkSession, query: MatchAggregateQuery, plans: Sequence[Plan], split_rows: int,
                     stream_rows: int) -> tuple[list[KeyStatistics] | None, str | None]:
    """The big keys of the source of ``query`` for ``plans`` (a workload group's members: one
    source, PARTITION BY and ORDER BY): the keys over the lowest
    threshold, from at most one statistics job (None: none needed), and why the job failed
    (None: it did not)."""
    threshold = group_threshold(plans, split_rows, stream_rows)
    if threshold is None:
        return None, None
    size, rows = source_size(spark, query)
    if not any(statistics_needed(p, size, split_rows, stream_rows, rows) for p in plans):
        return None, None
    try:
        return big_keys(spark, query, threshold), None
    except Exception as exc:  # as in decide: the statement runs, only unmeasured
        return None, type(exc).__name__


def group_statistics_reason(spark: SparkSession, query: MatchAggregateQuery, plans: Sequence[Plan]) -> str | None:
    """Why :func:`decide_group` runs its statistics job for ``plans`` (a workload group's
    members, ``query`` any of them): Spark's size estimate of the source leaves room for a
    key that would change a member's path (no job); None when it runs none."""
    if python_forced_path(spark) is not None:
        return None
    split_rows, _, stream_rows = thresholds(spark)
    threshold = group_threshold(plans, split_rows, stream_rows)
    if threshold is None:
        return None
    size, rows = source_size(spark, query)
    if not any(statistics_needed(p, size, split_rows, stream_rows, rows) for p in plans):
        return None
    return key_room(spark, query, threshold)


def source_size(spark: SparkSession, query: MatchAggregateQuery) -> tuple[int | None, int | None]:
    """Spark's estimate of the operator's source (no job): (bytes, rows); None where unknown
    (rows are known for analysed tables, in-memory data and ranges)."""
    try:
        frame = spark.sql(query.scoped_sql())
        stats = frame._jdf.queryExecution().optimizedPlan().stats()
    except Exception:  # Spark Connect has no JVM handle; an estimate is an optimisation only
        return None, None
    rows = stats.rowCount()
    return int(str(stats.sizeInBytes())), int(str(rows.get())) if rows.isDefined() else None  # Scala BigInts


def big_keys(spark: SparkSession, query: MatchAggregateQuery, threshold: int) -> list[KeyStatistics]:
    """Row count, time range and key hash of the keys with more than ``threshold`` rows
    (one job: :func:`sql_rewrites.path_queries.big_keys_sql`)."""
    rows = spark.sql(big_keys_sql(query, threshold, MAX_KEYS_REPORTED)).collect()
    keyed = bool(query.partition_keys)
    return [KeyStatistics(int(r["n"]), int(r["t0"]), int(r["t1"]), int(r["h"]) if keyed else None)
            for r in rows if r["t0"] is not None]


def key_types(spark: SparkSession, query: MatchAggregateQuery) -> list[str]:
    """Spark SQL types of the partition keys (the streaming UDTF's output schema names them)."""
    sql = key_types_sql(query)
    return [] if sql is None else [f.dataType.simpleString() for f in spark.sql(sql).schema]


#: Tasks per shuffle partition for a time split's chunks: chunks are hashed to tasks, and
#: with more tasks than chunks a collision (two chunks in one task) rarely leaves a core idle.
TASKS_PER_PARTITION = 4


def shuffle_partitions(spark: SparkSession) -> int:
    """The session's shuffle partitions (sparkseq sizes them to twice the cores, :mod:`sparkseq.session`)."""
    try:
        return max(1, int(spark.conf.get("spark.sql.shuffle.partitions", "4") or "4"))
    except ValueError:
        return 4


def chunk_tasks(spark: SparkSession) -> int:
    """Tasks the chunks of a time-split statement are spread over: a multiple of the
    session's shuffle partitions."""
    return TASKS_PER_PARTITION * shuffle_partitions(spark)


#: Spark's hash partitioning: ``pmod(Murmur3(value, seed 42), n)`` (``HashPartitioning``).
_HASH_SEED = 42


def task_keys(spark: SparkSession, tasks: int) -> list[int] | None:
    """For each task ``p < tasks`` the smallest BIGINT that Spark's hash partitioning into
    ``tasks`` partitions sends to ``p``, from Spark's own Murmur3 (no job); None when there
    is no JVM to ask (Spark Connect): the chunks are then hashed to tasks."""
    try:
        murmur = spark._jvm.org.apache.spark.unsafe.hash.Murmur3_x86_32(_HASH_SEED)  # type: ignore[union-attr]
        found: dict[int, int] = {}
        for value in range(64 * tasks):  # about tasks·ln(tasks) tries
            found.setdefault(murmur.hashLong(value) % tasks, value)
            if len(found) == tasks:
                return [found[p] for p in range(tasks)]
    except Exception:  # no JVM handle; placement is an optimisation only
        return None
    return None


def planned_replacer(spark: SparkSession | None, then: Replacement | None = None) -> Replacement:
    """EXPLAIN's ``replace`` hook: ``then``'s replacement first, else the operator on the
    path :func:`decide` chooses — the statement that runs, calling the functions by the
    names they are registered under, none registered (the rewriter's default for grouped)."""
    def replace(ordinal: int, query: MatchAggregateQuery) -> Replaced | None:
        earlier = then(ordinal, query) if then is not None else None
        if earlier is not None:
            return earlier
        if spark is None:
            return None
        return path_replacement(spark, query, decide(spark, query), register=False)
    return replace


class PathReplacer:
    """The ``replace`` hook (:data:`sql_rewrites.rewriter.Replacement`) that runs each
    statement on its path (time-split, streaming, JVM, or those by key size; grouped is
    the rewriter's default); ``choices`` records each operator's :class:`PathChoice` by ordinal.
    Without ``streaming`` (a persistent view's query), never the streaming path."""

    def __init__(self, spark: SparkSession, then: Replacement | None = None, *, streaming: bool = True) -> None:
        self.spark, self.then, self.streaming = spark, then, streaming
        self.choices: dict[int, PathChoice | CubePaths] = {}

    def __call__(self, ordinal: int, query: MatchAggregateQuery) -> Replaced | None:
        if self.then is not None:
            earlier = self.then(ordinal, query)
            if earlier is not None:
                return earlier
        choice = self.choices.get(ordinal)
        if choice is None:  # decided once per operator (sparkseq.scripts.run_checked may ask twice)
            choice = self.choices[ordinal] = decide(self.spark, query, streaming=self.streaming)
        return path_replacement(self.spark, query, choice)


def path_replacement(spark: SparkSession, query: MatchAggregateQuery, choice: PathChoice | CubePaths, *,
                     register: bool = True) -> Replaced | None:
    """The operator ``query`` replaced by its statement on ``choice``'s path
    (:mod:`sql_rewrites.path_queries`), with the engine function it uses (registered in
    ``spark`` unless ``register`` is false: EXPLAIN); None for the grouped path (the
    rewriter's default), and for an E-Cube that stays one grouped call."""
    if isinstance(choice, CubePaths):
        if choice.cuboids is None:
            return None
        _, plans = cuboid_plans(query)
        functions = [path_functions(spark, query, p, c, register=register) for p, c in zip(plans, choice.cuboids)]
        engine = None
        if choice.by_key_size is not None:
            engine = engine_function(spark, query.plan) if register else engine_function_name(query.plan)
        return cube_on_paths(query, choice.cuboids, functions, by_size=choice.by_key_size, engine=engine)
    if choice.path is Path.GROUPED:
        return None
    return operator_on_path(query, choice, path_functions(spark, query, query.single_plan, choice, register=register))


def path_functions(spark: SparkSession, query: MatchAggregateQuery, plan: Plan, choice: PathChoice, *,
                   register: bool = True) -> PathFunctions:
    """The functions ``plan`` (the plan of ``query``, or one of its cuboids') calls on
    ``choice``'s path, registered in ``spark`` (only named, without ``register``); for a
    time split also where its chunks go; by key size also the grouped engine function."""
    grouped = None
    if choice.by_key_size is not None or choice.path is Path.GROUPED:
        grouped = engine_function(spark, plan) if register else engine_function_name(plan)
    if choice.path is Path.STREAMING:
        types = key_types(spark, query)
        stream = stream_function(spark, plan, types) if register else stream_function_name(plan, types)
        return PathFunctions(engine=grouped, stream=stream)
    if choice.path is Path.TIME_SPLIT:
        tasks, placed = chunk_tasks(spark), None
        if choice.split_keys is not None:  # one task per chunk, as many tasks as chunks
            placed = task_keys(spark, max(tasks, sum(k.chunks for k in choice.split_keys)))
        split = time_split_functions(spark, plan) if register else time_split_function_names(plan)
        return PathFunctions(engine=grouped, split=split, chunk_tasks=tasks,
                             task_keys=None if placed is None else tuple(placed))
    return PathFunctions(engine=grouped)


def decide_group(spark: SparkSession, query: MatchAggregateQuery, plans: Sequence[Plan]) -> GroupPaths:
    """The paths of a workload's sharing group (:mod:`sql_rewrites.workload_paths`):
    ``plans`` are its members' plans, ``query`` any member (they share source, PARTITION BY
    and ORDER BY). At most one statistics job for the group (its run plans from the data
    anyway; a statement alone, :func:`decide`, runs none); ``sparkseq.path`` forces every
    member's path."""
    forced, ansi = python_forced_path(spark), ansi_mode(spark)
    split_rows, chunk_rows, stream_rows = thresholds(spark)
    if forced is not None:
        return group_paths(plans, None, forced, split_rows, chunk_rows, stream_rows, ansi=ansi)
    keys, unmeasured = group_statistics(spark, query, plans, split_rows, stream_rows)
    return group_paths(plans, keys, None, split_rows, chunk_rows, stream_rows, ansi=ansi,
                       chunk_multiple=shuffle_partitions(spark), unmeasured=unmeasured)


__all__ = [
    "CHUNK_ROWS_CONF",
    "ANSI_CONF",
    "PATH_CONF",
    "SPLIT_ROWS_CONF",
    "STREAM_ROWS_CONF",
    "PathReplacer",
    "ansi_mode",
    "big_keys",
    "decide",
    "decide_cube",
    "decide_group",
    "group_statistics",
    "group_statistics_reason",
    "forced_path",
    "python_forced_path",
    "key_room",
    "key_types",
    "path_functions",
    "path_replacement",
    "planned_replacer",
    "source_size",
    "thresholds",
]
