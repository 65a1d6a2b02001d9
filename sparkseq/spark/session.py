"""A SparkSession set up for sparkseq: embedded local Spark by default, any master URL otherwise."""

from __future__ import annotations

import getpass
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TypeGuard

from pyspark import SparkContext
from pyspark.sql import SparkSession

from sparkseq.spark import cluster, jars
from sparkseq.spark import progress as progress_display
from sparkseq.spark import warehouse as warehouses
from sparkseq.spark.gateway import is_connect_session
from sparkseq.spark.registration import register

DEFAULT_MASTER = "local[2]"
_PACKAGE = Path(__file__).resolve().parents[1]
_ROOT = _PACKAGE.parent  # the source checkout (or site-packages when installed)


def session(master: str | None = None, *, app_name: str = "sparkseq", conf: Mapping[str, object] | None = None,
            parser_extension: bool = True, check_workers: bool = True, progress: bool | None = None,
            warehouse: str | os.PathLike[str] | None = None) -> SparkSession:
    """Start (or reuse) a SparkSession, register sparkseq's functions in it and let its
    ``spark.sql`` accept MATCH_AGGREGATE.

    Parameters
    ----------
    master : str, optional
        Spark master URL, or a Spark Connect URL ``sc://host:port``. Default: the
        ``SPARKSEQ_MASTER`` environment variable, else ``local[2]``. A ``local[N]``
        master retries a failed task once (``local[N,2]``; :mod:`sparkseq.spark.cluster`).
        With a ``local-cluster[...]`` or cluster URL sparkseq ships itself to the
        executors (:func:`sparkseq.spark.cluster.ship`); their Python must have numpy,
        pyarrow and pandas (docs/cluster.md). With a Connect URL, sparkseq must be
        installed on the server (its Python workers run sparkseq's functions).
    app_name : str
        Spark application name.
    conf : mapping, optional
        Spark settings; they override sparkseq's defaults (see :func:`default_conf`).
        For a Connect session, runtime settings only.
    parser_extension : bool
        Load sparkseq's parser extension (:mod:`sparkseq.spark.jvm_parser`), so that
        ``spark.sql`` — and the Thrift and Connect servers — take MATCH_AGGREGATE text.
        When it cannot be loaded (a Spark session was already running in this process
        without it), a :class:`ParserExtensionWarning` says so and ``sparkseq.sql``
        remains the way to run MATCH_AGGREGATE. A Connect session takes MATCH_AGGREGATE
        in ``spark.sql`` when its server is ``python -m sparkseq connect-server``.
    check_workers : bool
        On a master with separate executor processes, run one small job at start that
        imports sparkseq on the executors and raises
        :class:`sparkseq.spark.cluster.WorkerEnvironmentError` naming what their Python lacks
        (:func:`sparkseq.spark.cluster.check_workers`), instead of a ``ModuleNotFoundError``
        in the first query.
    progress : bool, optional
        Show the progress of long jobs: Spark's console progress bar on stderr in a
        terminal, a line per stage in a notebook (:mod:`sparkseq.spark.progress`). ``None``
        (default): the ``SPARKSEQ_PROGRESS`` environment variable (``1`` / ``0`` /
        ``auto``), else on exactly in interactive use (stderr a terminal, or a notebook):
        never under pytest, in CI (``CI`` set) or with stderr to a file or a pipe.
        Decided when the session's JVM starts; ignored for a Connect session.
    warehouse : str or path, optional
        Keep Spark's catalog — databases, tables, views — in this directory, so that it
        outlives the process: Spark's Hive catalog with its metastore in
        ``<warehouse>/metastore_db`` (embedded Derby: one process at a time) and managed
        tables' files in ``<warehouse>/warehouse`` (:mod:`sparkseq.spark.warehouse`). Settings in
        ``conf`` (or Spark's configuration directory) that name an external metastore
        (``spark.hadoop.hive.metastore.uris``, ``spark.hadoop.javax.jdo.option.ConnectionURL``)
        replace the Derby database. Raises :class:`sparkseq.spark.warehouse.CatalogInUseError`
        when another process has the metastore open, and
        :class:`sparkseq.spark.warehouse.CatalogError` when a session with another catalog already
        runs in this process. ``None`` (default): Spark's in-memory catalog, whose tables
        vanish with the process (their files too).

    Examples
    --------
    >>> import sparkseq
    >>> spark = sparkseq.session()  # doctest: +SKIP
    >>> spark.sql("SELECT k, n FROM (SELECT * FROM VALUES ('a', 1, 'view'), ('a', 2, 'buy') AS t(k, ts, action)) "
    ...           "MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action "
    ...           "MEASURES COUNT(*) AS n) AS m").collect()
    [Row(k='a', n=1)]
    """
    master = master or os.environ.get("SPARKSEQ_MASTER") or DEFAULT_MASTER
    if master.startswith("sc://"):
        if warehouse is not None:
            raise ValueError("warehouse= sets up the catalog of a driver started here; a Spark Connect server keeps "
                             "its own (python -m sparkseq connect-server --warehouse DIR)")
        return _connect_session(master, app_name, conf)
    where = cluster.classify(master)
    display = progress_display.choose(progress)
    user = {key: str(value) for key, value in (conf or {}).items()}
    store = warehouses.resolve(warehouse, user) if warehouse is not None else None
    running = SparkContext._active_spark_context
    if store is not None and running is not None:  # before getOrCreate changes the running session's settings
        warehouses.check_same_catalog(running.getConf(), store)
    _process_environment(where)
    settings = {**default_conf(where.url, derby_log=None if store is None else store.derby_log),
                **progress_conf(display), **({} if store is None else store.conf(user)), **user}
    memory_tables = store is None and in_memory_tables(settings)
    if running is None:
        if store is not None:
            warehouses.claim(store)  # CatalogInUseError before a JVM starts
        elif memory_tables:
            warehouses.reset_memory_catalog_tables(scratch_dir())
    cluster.worker_python_conf(settings)
    settings = _with_jvm_path(settings)
    unavailable = None
    if parser_extension:
        settings, unavailable = _with_extension(settings)
    builder = SparkSession.builder.master(where.url).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if store is not None:
        try:
            warehouses.open_catalog(spark, store)
        except warehouses.CatalogError:
            if running is None:
                spark.stop()
            raise
    if display is progress_display.Display.STAGE_LINES:
        progress_display.show_stage_lines(spark.sparkContext)
    if where.ships:  # before any function is built: each captures the zip then
        cluster.ship(spark, scratch_dir() / "pyfiles")
        if check_workers:
            cluster.check_workers(spark)
    register(spark)
    if parser_extension and unavailable is None:
        from sparkseq.spark import jvm_parser

        unavailable = jvm_parser.try_install(spark)
    if unavailable is not None:
        warnings.warn(f"spark.sql does not accept MATCH_AGGREGATE in this session: {unavailable}",
                      ParserExtensionWarning, stacklevel=2)
    return spark


def in_memory_tables(settings: dict[str, str]) -> bool:
    """Whether a session without ``warehouse=`` started with ``settings`` keeps its managed
    tables' files where they are removed with the process
    (:func:`sparkseq.spark.warehouse.memory_catalog_tables`): with Spark's in-memory catalog. Hive
    support asked for by hand (``spark.sql.catalogImplementation=hive`` in ``conf`` or
    ``spark-defaults.conf``) keeps its tables, so their files go to the scratch directory's
    ``warehouse/`` instead (``settings`` is changed so)."""
    if settings.get(warehouses.WAREHOUSE_DIR) != str(warehouses.memory_catalog_tables(scratch_dir())):
        return False  # a warehouse of the caller's
    if warehouses.catalog_implementation(settings) == "hive":
        settings[warehouses.WAREHOUSE_DIR] = str(scratch_dir() / "warehouse")
        return False
    return True


def progress_conf(display: progress_display.Display) -> dict[str, str]:
    """Spark's console progress bar on or off: on only for :attr:`~sparkseq.spark.progress.Display.CONSOLE_BAR`
    (it needs Spark's status store, not its web UI)."""
    return {"spark.ui.showConsoleProgress": str(display is progress_display.Display.CONSOLE_BAR).lower()}


def _process_environment(where: cluster.Master) -> None:
    """Environment variables the JVM about to start (and what it starts) inherit.

    (None places local-cluster's executor files: Spark's LocalSparkCluster gives its workers
    no work directory and reads no ``SPARK_WORKER_DIR``, so they go under
    ``$SPARK_HOME/work/<application id>``.)"""
    cluster.python_environment(where, _ROOT)
    if where.kind is cluster.MasterKind.LOCAL:  # local workers inherit the JVM's environment, which inherits ours
        for key, value in WORKER_MALLOC.items():
            os.environ.setdefault(key, value)


class ParserExtensionWarning(UserWarning):
    """``spark.sql`` of the session sparkseq returned does not accept MATCH_AGGREGATE
    (the message says why); ``sparkseq.sql(spark, text)`` does."""


def _with_jvm_path(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` plus the JVM path's jar on the class path (:mod:`sparkseq.spark.jvm_path`)."""

    return jars.aggregates_conf(settings)


def _with_extension(settings: dict[str, str]) -> tuple[dict[str, str], str | None]:
    """``settings`` plus those loading the parser extension; or unchanged, and why not."""

    try:
        return jars.extension_conf(settings), None
    except jars.JvmParserUnavailable as exc:
        return settings, str(exc)


def _connect_session(url: str, app_name: str, conf: Mapping[str, object] | None) -> SparkSession:
    """A Spark Connect session at ``url`` with sparkseq's functions registered (server-side)."""
    builder = SparkSession.builder.remote(url).appName(app_name)
    for key, value in (conf or {}).items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    register(spark)
    if jars.CLASS_NAME not in (spark.conf.get("spark.sql.extensions", "") or ""):
        warnings.warn(f"spark.sql does not accept MATCH_AGGREGATE in this session: the Spark Connect server at "
                      f"{url} was started without sparkseq's parser extension (python -m sparkseq connect-server "
                      "starts one with it); use sparkseq.sql(spark, text)", ParserExtensionWarning, stacklevel=3)
    return spark


def is_session(value: object) -> TypeGuard[SparkSession]:
    """True for a SparkSession, classic or Spark Connect."""
    return isinstance(value, SparkSession) or is_connect_session(value)


#: HotSpot does not compile methods longer than 8,000 bytes of bytecode; Spark's generated
#: code for a row mask over many symbols (one CASE WHEN per symbol, OR-ed: a workload
#: group over 45 event types) is such a method, and runs interpreted: reading and masking
#: bench/sharing.py's funnels input took 8.0x as long without this flag (``--masks``).
JIT_HUGE_METHODS = "-XX:-DontCompileHugeMethods"


#: Lets adaptive execution coalesce the shuffle partitions of a query that is being cached.
CACHED_PLAN_COALESCING = "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning"

#: Shuffle partitions of a batch query before adaptive execution coalesces them (streaming
#: queries keep ``spark.sql.shuffle.partitions``).
INITIAL_PARTITIONS = "spark.sql.adaptive.coalescePartitions.initialPartitionNum"
#: Per core, on local masters. ``bench/spark_settings.py --setting <this>=4,16`` (2 cores):
#: the E-Cube roll-up cube (8 days as partition keys; with 4 its engine stage ran 3 tasks
#: of 1, 3 and 4 days) 1.94 -> 1.17 s (0.60); a single cuboid, a 20-query shared workload
#: and 5 statements alone 0.97-1.03 (medians of 4). Setting ``spark.sql.shuffle.partitions``
#: to eight per core instead made the live operator's micro-batches 2.3x slower
#: (bench/streaming.py --operators: 16 state stores a batch).
INITIAL_PARTITIONS_PER_CORE = 8

#: Rows per Arrow batch between the JVM and Python, and of ``toArrow()``: Spark's default,
#: 10,000, set explicitly because a larger one was tried and taken back. 100,000 was a
#: little faster (``bench/spark_settings.py --setting <this>=10000,100000``, medians of 4:
#: the E-Cube roll-up cube 0.90, a single cuboid 1.05, a 20-query shared workload 0.94, 5
#: statements alone 0.95), but with it (and with 30,000) ``collect_workload`` of a
#: 120-query workload — 20 M result rows — ran the default 1 GB driver out of heap
#: (``java.lang.OutOfMemoryError`` collecting the result), where 10,000 collected it in a
#: new session (bench/sharing.py's routes stream; 2026-11-27) — though later, in a long
#: session, it failed too: the 1 GB heap was the limit (:data:`LOCAL_DRIVER_MEMORY`).
#: Writing the same results (``workload(output=...)``) was fine with 100,000. With 2 GB
#: both sizes collect. Measured again with the 2 GB heap and the sorted shared pass
#: (2026-11-27, the twelfth session; medians of 5): cube 0.91, single 0.94, 20 queries
#: shared 0.96, 5 statements alone 1.00 — a gain of a few percent that moved the other way
#: for the single cuboid the time before (1.05), so 10,000 stays.
ARROW_BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch"
ARROW_BATCH_ROWS_DEFAULT = 10_000

#: The driver's heap on local masters, where the driver JVM also runs the executors
#: (Spark's default: 1 GB), unless ``SPARK_DRIVER_MEMORY`` or ``conf=`` set it. With 1 GB,
#: ``collect_workload`` of bench/sharing.py's 120-query workloads (20 M result rows
#: collected to the driver) ran out of heap (``java.lang.OutOfMemoryError``) with Arrow
#: batches of 100,000 and 30,000 rows and, later in a long session, of 10,000; with 2 GB
#: each stream's workload collected three times in a row, with 10,000 and with 100,000 (2026-11-27).
#: The heap grows to it only when needed.
LOCAL_DRIVER_MEMORY = "2g"

ROCKSDB_STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
#: RocksDB's changelog checkpointing: each micro-batch's commit writes the batch's changes to
#: a changelog file, and a snapshot of the store's files is uploaded every few batches in the
#: background, instead of at every commit (a flush, a file sync and a zip of the files per
#: state store and micro-batch). Streams only; a checkpoint written without it restarts with
#: it, and the other way round (Spark's streaming guide). docs/engine.md "The live operator in
#: the JVM" has the figures.
ROCKSDB_CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

#: The Python worker daemon of local masters (:mod:`udafs.workers.daemon`): PySpark's, without
#: the traceback of a worker whose output a LIMIT left unread, nor PySpark's pandas warnings.
WORKER_DAEMON = "udafs.workers.daemon"


def default_conf(master: str, *, derby_log: Path | None = None) -> dict[str, str]:
    """sparkseq's Spark settings for ``master``: quiet, small, scratch files in one place.

    Managed tables of the (in-memory) catalog go to a directory of this process
    (:func:`sparkseq.spark.warehouse.memory_catalog_tables`); Derby's log to ``derby_log``,
    else to the scratch directory.
    """
    scratch = scratch_dir()
    conf = {
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        ARROW_BATCH_ROWS: str(ARROW_BATCH_ROWS_DEFAULT),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.warehouse.dir": str(warehouses.memory_catalog_tables(scratch)),
        # derby.log goes to the scratch directory, or beside a persistent catalog's metastore.
        # (Not via derby.system.home: with it set, the Thrift server's throw-away Derby
        # metastore fails to open on every client disconnect and Hive retries for ~20 s
        # before the disconnect completes.)
        "spark.driver.extraJavaOptions": (f"-Dlog4j2.configurationFile={(_PACKAGE / 'log4j2.properties').as_uri()}"
                                          f" -Dderby.stream.error.file={derby_log or scratch / 'derby.log'}"
                                          f" {JIT_HUGE_METHODS}"),
        "spark.executor.extraJavaOptions": JIT_HUGE_METHODS,
        # A workload's shared pass is cached (sparkseq.statements.workloads), and Spark plans a query
        # it caches without adaptive coalescing unless this is on: on a cluster, with the
        # default 200 shuffle partitions, every pass ran 200 tasks (bench/cluster.py).
        CACHED_PLAN_COALESCING: "true",
        # live MATCH_AGGREGATE keeps per-partition evaluator state (sparkseq.running.live):
        # RocksDB holds large state on disk instead of in executor memory
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_STATE_STORE,
        ROCKSDB_CHANGELOG: "true",
    }
    conf.update({f"spark.executorEnv.{key}": os.environ.get(key, value) for key, value in WORKER_MALLOC.items()})
    where = cluster.classify(master)
    if where.cores is not None:
        conf.update({
            # Spark's default of 200 shuffle partitions costs seconds of task overhead per
            # query on a laptop (streaming queries: one state store per partition and
            # micro-batch); two per core keeps both busy. On a cluster adaptive execution
            # coalesces the 200 (sparkseq.statements.workloads too).
            "spark.sql.shuffle.partitions": str(2 * where.cores),
            # Batch queries (adaptive execution) hash into more partitions first and let
            # adaptive execution coalesce them by size: with few heavy partition keys (an
            # E-Cube over 8 days) two per core put up to 4 keys in one task and left a
            # core idle (INITIAL_PARTITIONS_PER_CORE).
            INITIAL_PARTITIONS: str(INITIAL_PARTITIONS_PER_CORE * where.cores),
            "spark.default.parallelism": str(2 * where.cores),
            **({} if "SPARK_DRIVER_MEMORY" in os.environ else {"spark.driver.memory": LOCAL_DRIVER_MEMORY}),
            "spark.local.dir": str(scratch / "local"),
            "spark.ui.enabled": "false",
        })
    if where.kind is cluster.MasterKind.LOCAL:  # workers import this checkout (on PYTHONPATH) only here
        conf["spark.python.daemon.module"] = WORKER_DAEMON
    return conf


def scratch_dir() -> Path:
    """Where Spark writes warehouse and scratch files.

    ``SPARKSEQ_SCRATCH`` if set; else ``.sparkseq-tmp/`` in the source checkout
    (gitignored); else ``sparkseq-<user>`` in the system temp directory.
    """
    env = os.environ.get("SPARKSEQ_SCRATCH")
    if env:
        path = Path(env)
    elif (_ROOT / "pyproject.toml").is_file() and os.access(_ROOT, os.W_OK):
        path = _ROOT / ".sparkseq-tmp"
    else:
        path = Path(tempfile.gettempdir()) / f"sparkseq-{getpass.getuser()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


#: glibc malloc settings for the Python workers. The kernels allocate and free many
#: large numpy arrays; by default glibc serves each from a fresh mmap and returns it at
#: once, so every pass page-faults its memory in again. Keeping up to 32 MB blocks on
#: the heap and trimming lazily made the E-Cube kernel 1.8x faster (0.54 -> 0.30 s for
#: 48 cuboids over 183,000 events; bench/ecube.py). A worker keeps at most ~256 MB of
#: freed memory. Set any of them in the environment to override.
WORKER_MALLOC = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(256 << 20),
    "MALLOC_TOP_PAD_": str(64 << 20),
}
