"""Running a statement on the path the planner decides: settings read, the source measured, functions registered.

For every MATCH_AGGREGATE this module reads the session's settings once
(:func:`plan_settings`, a frozen :class:`~sql_rewrites.planning.planner.PlanSettings`),
asks Spark's size estimate of the source when the decision depends on it
(:func:`source_size`: an analysis, no job) and hands both to the pure planner
(:mod:`sql_rewrites.planning.planner`), whose decision it then runs as given: it
registers the functions the path calls and asks Spark where its hash partitioning sends
a chunk (:func:`path_functions`); the SQL is built by
:mod:`sql_rewrites.planning.path_queries`. A statement alone runs no job before its rows
are asked for: where the estimate leaves room for a big key the statement counts its
keys as it runs (:func:`sql_rewrites.planning.path_queries.by_key_size`), and EXPLAIN
says which paths each key may take. A workload's sharing group is measured by one
statistics job (:func:`sql_rewrites.planning.planner.group_statistics`: the keys over a threshold, and
in the same scan the rows per symbol, :func:`sparkseq.running.statistics.measure`), when the
estimate leaves room for such a key, run by ``sparkseq.statements.workloads.group_run`` — also when
``sparkseq.workload`` is called, before rows are asked for: which members share the
group's pass fixes the SQL of each statement. Session settings:

* ``sparkseq.path``: ``auto`` (default), ``grouped`` (the kernel path), ``time-split``,
  ``streaming`` or ``jvm`` (tests, benchmarks). ``auto`` and ``jvm`` run on the JVM path
  (:mod:`sql_rewrites.generation.jvm_path`, :mod:`sparkseq.spark.jvm_path`) what would run
  grouped when the plan is a JVM shape; ``jvm`` on another shape is an error naming why,
  and where the JVM path cannot run (no jar in the JVM, Spark Connect) both warn once and
  run in Python;
* ``sparkseq.streaming.rows``: keys over this many rows in a plan that cannot be split go to
  the bounded-memory streaming path (default :data:`~sql_rewrites.planning.planner.STREAM_ROWS`);
* ``sparkseq.timeSplit.splitRows`` / ``sparkseq.timeSplit.chunkRows``: the thresholds
  (defaults :data:`~sql_rewrites.planning.timesplit.SPLIT_ROWS`,
  :data:`~sql_rewrites.planning.timesplit.CHUNK_ROWS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pyspark.sql import SparkSession

from sparkseq.spark.jvm_path import jvm_path_missing, warn_jvm_unavailable
from sparkseq.spark.registration import (
    engine_function,
    engine_function_name,
    stream_function,
    stream_function_name,
    time_split_function_names,
    time_split_functions,
)
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.planning.cube_paths import cuboid_plans
from sql_rewrites.planning.path_queries import (
    PathFunctions,
    cube_on_paths,
    key_types_sql,
    operator_on_path,
)
from sql_rewrites.planning.planner import (
    JVM_COUNT_ROWS,
    STREAM_ROWS,
    CubePaths,
    Path,
    PathChoice,
    PlanSettings,
    SourceSize,
    cube_path,
    size_threshold,
    statement_path,
)
from sql_rewrites.planning.timesplit import CHUNK_ROWS, SPLIT_ROWS
from sql_rewrites.rewriter import Replaced, Replacement
from sql_rewrites.syntax.markers import positional_markers
from udafs.plan import Plan

PATH_CONF = "sparkseq.path"
SPLIT_ROWS_CONF = "sparkseq.timeSplit.splitRows"
CHUNK_ROWS_CONF = "sparkseq.timeSplit.chunkRows"
STREAM_ROWS_CONF = "sparkseq.streaming.rows"
JVM_ROWS_CONF = "sparkseq.jvm.countRows"


def forced_path(spark: SparkSession) -> Path | None:
    """The path ``sparkseq.path`` forces, None for ``auto``.

    Raises
    ------
    ValueError
        For a value that names no path, listing the valid values.
    """
    value = (spark.conf.get(PATH_CONF, "auto") or "auto").strip().lower()
    if value == "auto":
        return None
    try:
        return Path(value)
    except ValueError:
        allowed = ", ".join(["auto", *(p.value for p in Path)])
        raise ValueError(f"{PATH_CONF} must be one of {allowed}, got {value!r}") from None


def plan_settings(spark: SparkSession | None, *, streaming: bool = True) -> PlanSettings:
    """The settings the planner reads, from the session once (defaults without one).
    Without ``streaming`` (a persistent view's query) never the streaming path nor the
    JVM path.

    Raises
    ------
    ValueError
        A setting with a value that names no path or is not a positive integer.
    """
    if spark is None:
        return PlanSettings()
    return PlanSettings(forced_path(spark), _positive(spark, SPLIT_ROWS_CONF, SPLIT_ROWS),
                        _positive(spark, CHUNK_ROWS_CONF, CHUNK_ROWS), _positive(spark, STREAM_ROWS_CONF, STREAM_ROWS),
                        streaming=streaming, session=True, jvm_missing=jvm_path_missing(spark),
                        chunk_multiple=shuffle_partitions(spark),
                        jvm_rows=_positive(spark, JVM_ROWS_CONF, JVM_COUNT_ROWS))


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
    """The path of ``query`` (a statement alone, or an E-Cube) by the planner
    (:func:`~sql_rewrites.planning.planner.statement_path`,
    :func:`~sql_rewrites.planning.planner.cube_path`), from the session's settings and,
    where it decides something, Spark's size estimate of the source: no job. Without a
    session, the decision as far as the plan fixes it. Where the JVM path would take the
    statement but cannot run (the planner's :attr:`PathChoice.jvm_unavailable`), the one
    :class:`~sparkseq.spark.jvm_path.JvmPathUnavailable` warning."""
    settings = plan_settings(spark, streaming=streaming)
    markers = bool(positional_markers(query.node))
    if query.cube is not None:
        texts, plans = cuboid_plans(query)
        size = _size(spark, query, plans, replace(settings, forced=settings.python_forced))
        return cube_path(texts, plans, settings, size, markers=markers)
    plan = query.single_plan
    choice = statement_path(plan, settings, _size(spark, query, [plan], settings), markers=markers)
    if choice.jvm_unavailable is not None:
        warn_jvm_unavailable(choice.jvm_unavailable)
    return choice


def _size(spark: SparkSession | None, query: MatchAggregateQuery, plans: Sequence[Plan],
          settings: PlanSettings) -> SourceSize | None:
    """Spark's estimate of the source, asked only where it decides something
    (:func:`~sql_rewrites.planning.planner.size_threshold`)."""
    if spark is None or size_threshold(plans, settings) is None:
        return None
    return source_size(spark, query)


def source_size(spark: SparkSession, query: MatchAggregateQuery) -> SourceSize:
    """Spark's estimate of the operator's source (no job): bytes and rows, None where
    unknown (rows are known for analysed tables, in-memory data and ranges)."""
    try:
        frame = spark.sql(query.scoped_sql())
        stats = frame._jdf.queryExecution().optimizedPlan().stats()
    except Exception:  # Spark Connect has no JVM handle; an estimate is an optimisation only
        return SourceSize()
    rows = stats.rowCount()
    return SourceSize(int(str(stats.sizeInBytes())), int(str(rows.get())) if rows.isDefined() else None)


def key_types(spark: SparkSession, query: MatchAggregateQuery) -> list[str]:
    """Spark SQL types of the partition keys (the streaming UDTF's output schema names them)."""
    sql = key_types_sql(query)
    return [] if sql is None else [f.dataType.simpleString() for f in spark.sql(sql).schema]


#: Tasks per shuffle partition for a time split's chunks: chunks are hashed to tasks, and
#: with more tasks than chunks a collision (two chunks in one task) rarely leaves a core idle.
TASKS_PER_PARTITION = 4


def shuffle_partitions(spark: SparkSession) -> int:
    """The session's shuffle partitions (sparkseq sizes them to twice the cores, :mod:`sparkseq.spark.session`)."""
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


class PathReplacer:
    """The ``replace`` hook (:data:`sql_rewrites.rewriter.Replacement`) that runs each
    operator on the path :func:`decide` chose for it (time-split, streaming, JVM, or those
    by key size; grouped is the rewriter's default); ``choices`` records each operator's
    decision by ordinal, decided once — EXPLAIN prints those. Without ``streaming`` (a
    persistent view's query), never the streaming path. Without ``register`` (EXPLAIN),
    the functions are named, not registered; without a session, only decided (the
    grouped SQL is shown)."""

    def __init__(self, spark: SparkSession | None, then: Replacement | None = None, *, streaming: bool = True,
                 register: bool = True) -> None:
        self.spark, self.then, self.streaming, self.register = spark, then, streaming, register
        self.choices: dict[int, PathChoice | CubePaths] = {}

    def __call__(self, ordinal: int, query: MatchAggregateQuery) -> Replaced | None:
        if self.then is not None:
            earlier = self.then(ordinal, query)
            if earlier is not None:
                return earlier
        choice = self.choices.get(ordinal)
        if choice is None:  # decided once per operator (sparkseq.statements.scripts.run_checked may ask twice)
            choice = self.choices[ordinal] = decide(self.spark, query, streaming=self.streaming)
        if self.spark is None:
            return None
        return path_replacement(self.spark, query, choice, register=self.register)


def path_replacement(spark: SparkSession, query: MatchAggregateQuery, choice: PathChoice | CubePaths, *,
                     register: bool = True) -> Replaced | None:
    """The operator ``query`` replaced by its statement on ``choice``'s path
    (:mod:`sql_rewrites.planning.path_queries`), with the engine function it uses (registered in
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


__all__ = [
    "CHUNK_ROWS_CONF",
    "JVM_ROWS_CONF",
    "PATH_CONF",
    "SPLIT_ROWS_CONF",
    "STREAM_ROWS_CONF",
    "PathReplacer",
    "decide",
    "forced_path",
    "key_types",
    "path_functions",
    "path_replacement",
    "plan_settings",
    "source_size",
]
