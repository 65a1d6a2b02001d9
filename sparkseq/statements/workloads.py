"""Workloads: a script of MATCH_AGGREGATE statements run with one pass per sharing group.

>>> import sparkseq
>>> spark.sql("SELECT * FROM VALUES (1, 1, 'OakSt'), (1, 2, 'MainSt'), (1, 3, 'ElmSt'), (1, 4, 'ParkAve') "
...           "AS t(vehicle_id, ts, street)").createOrReplaceTempView("positions")
>>> script = '''
...     CREATE OR REPLACE TEMP VIEW q1 AS SELECT * FROM positions MATCH_AGGREGATE (PARTITION BY vehicle_id
...       ORDER BY ts PATTERN SEQ(OakSt, MainSt) TYPE BY street MEASURES COUNT(*) AS oak_main) m;
...     CREATE OR REPLACE TEMP VIEW q2 AS SELECT * FROM positions MATCH_AGGREGATE (PARTITION BY vehicle_id
...       ORDER BY ts PATTERN SEQ(ElmSt, ParkAve) TYPE BY street MEASURES COUNT(*) AS elm_park) m;
...     SELECT * FROM q1 JOIN q2 USING (vehicle_id)'''
>>> frames = sparkseq.workload(spark, script)  # both operators in one pass over positions
>>> frames[-1].collect()
[Row(vehicle_id=1, oak_main=1, elm_park=1)]
>>> sparkseq.release_workload(spark, script)  # the cached group result goes
['__sparkseq_shared_...']

Operators reading the same table or view with the same PARTITION BY and ORDER BY
(:func:`sql_rewrites.generation.shared.sharing_key`) are computed together: their group's query
(:mod:`sql_rewrites.generation.shared`) is cached once as ``__sparkseq_shared_<digest>`` — one
scan, one shuffle, engine calls over whole partitions for all of them — and every
member's operator reads its own rows from it. Inside the pass, which members are
counted together on one timeline is decided once, before it runs, from one statistics
job over the source (rows per symbol; :mod:`sql_rewrites.planning.timeline_plan`), and the
engine runs that decision as given. Each statement keeps its own result (the returned
DataFrames, or the views it creates). Statements run in order, as :func:`sparkseq.sql`
runs them; every statement is checked first, so a mistake in any of them raises before
any job starts.

No job before rows are asked for: :func:`workload` without ``output`` returns
DataFrames read later, so it caches each group lazily (``CACHE LAZY TABLE``: the first
job reading a member fills the cache) and runs no statistics job for the timelines —
each engine call decides them from its own rows by the same cost model, unless an
earlier job's statistics of the unchanged source are kept (:func:`sparkseq.running.statistics.recent`).
:func:`collect_workload` and ``workload(output=...)``, which ask for the rows, run the
statistics job and the pass as part of delivering them.

A source with a key too big for one worker changes that: the group's members take the
path a statement alone takes, from one statistics job for the group
(:func:`group_run`, :func:`sql_rewrites.planning.planner.group_path`);
members whose path is time split or streaming leave the shared pass and run on their
own, the others still share it. :func:`explain_workload` prints each member's path.
That job runs only when Spark's size estimate of the source leaves room for such a key,
and then also when :func:`workload` is called: which members share a pass fixes the SQL
of every statement, so it is decided before the DataFrames exist (EXPLAIN says so).

Errors Spark raises while the pass or the statistics job evaluates a DEFINE condition
(a malformed value cast under ANSI mode) point at that condition in the script as
written (:func:`sparkseq.spark.jvm_parser.with_origins`), as they do for a statement alone.

Not shared: E-Cube operators (already one pass), operators over subqueries, CTEs or
other operators, operators with joins attached, operators whose source the script
itself creates or replaces, and operators over streaming sources (each runs as its own
live operator, :mod:`sparkseq.running.live`). Operators that run alone take their path as in
:func:`sparkseq.sql`.

The cached results stay until :func:`release_workload` (or the session's end); running
the same script again recomputes them from the data as it is then.

Reading each returned DataFrame is a Spark job of its own. To get every query
statement's result from one job: :func:`collect_workload` (each statement's rows as a
``pyarrow.Table`` beside its DataFrame), or ``workload(..., output=DIR)`` (written as
Parquet partitioned by statement, for results of any size; each DataFrame reads its
part) — :mod:`sparkseq.running.workload_results`; one job per run of statements that write no
data (a statement that may change what an earlier query reads has those collected first).
There, a group whose members are all read by statements that only select their columns
(``SELECT k, window_start, n FROM t MATCH_AGGREGATE (...) m``), all delivered by one job,
is not cached: that job reads its pass once and routes each row to its statement
(:mod:`sql_rewrites.generation.routed_results`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from sparkseq.running import live
from sparkseq.running.execution_paths import PathReplacer, path_replacement, plan_settings, source_size
from sparkseq.running.workload_results import STATEMENT_COLUMN, ResultLayout, Routed, collect_results, write_results
from sparkseq.spark.gateway import is_connect_session
from sparkseq.spark.jvm_parser import with_origins
from sparkseq.statements.scripts import SESSION_KEYWORDS, Checked, check_script, run_checked
from sparkseq.statements.spark_errors import condition_of
from sql_rewrites.clauses.windows import describe_length
from sql_rewrites.generation.routed_results import Route, routed_select, selected_columns
from sql_rewrites.generation.shared import Member, SharedGroup, build_group, group_members, sharing_key
from sql_rewrites.logical.hierarchy import HierarchyResolver
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.planning.planner import GroupPaths, group_path, group_statistics
from sql_rewrites.planning.symbol_statistics import SymbolStatistics
from sql_rewrites.planning.timeline_plan import (
    describe_statistics,
    describe_timelines,
    needs_statistics,
    plan_timelines,
)
from sql_rewrites.rewriter import Replacement
from sql_rewrites.statement_effects import created_relations
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.statements import Statement
from udafs import contract
from udafs.kernels.multiplan.partitions import laid_end_to_end
from udafs.workers.shared import ROWS_PER_CALL, grouped_pass, sorted_pass


@dataclass(frozen=True)
class WorkloadPlan:
    """The statements of a script and the sharing groups among their operators."""

    text: str
    statements: tuple[Statement, ...]
    groups: tuple[SharedGroup, ...]
    checked: tuple[Checked, ...] = ()

    def table(self, group: int) -> str:
        """The cached shared result of group ``group``."""
        return self._tables[group]

    @functools.cached_property
    def _tables(self) -> tuple[str, ...]:  # a digest of each group's plan (120 members: 8 ms each)
        return tuple(f"__sparkseq_shared_{hashlib.sha1(g.plan.to_json().encode()).hexdigest()[:12]}"
                     for g in self.groups)

    def member_of(self, statement: int, ordinal: int) -> tuple[int, int] | None:
        """(group, member index) of a statement's operator, or None when it runs alone."""
        for g, group in enumerate(self.groups):
            for i, member in enumerate(group.members):
                if (member.statement, member.ordinal) == (statement, ordinal):
                    return g, i
        return None


def plan_workload(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None) -> WorkloadPlan:
    """Check every statement (errors before any job) and find the sharing groups.

    Raises
    ------
    SqlRewriteError
        Any statement's parse or analysis error.
    """
    checked = check_script(spark, text, hierarchies=hierarchies)
    statements = [c.statement for c in checked]
    created = set().union(*(created_relations(s) for s in statements))
    members: list[Member] = []
    # hierarchy statements and those the check deferred (reading what an earlier statement
    # creates) have no explanation yet: they run on their own
    for item in checked:
        for ordinal, operator in enumerate(item.explanation.operators if item.explanation else ()):
            key = sharing_key(operator.query)
            if operator.function_name.startswith(live.VIEW_PREFIX):
                continue  # over a stream: a live operator of its own
            if key is not None and _relation(key[0]) not in created:
                members.append(Member(item.number, ordinal, operator.query))
    return WorkloadPlan(text, tuple(statements), tuple(group_members(members)), tuple(checked))


def _relation(source_sql: str) -> str:
    """The case-folded relation name of a sharing key's source (``db.t AS x`` -> ``db.t``)."""
    return source_sql.split(" AS ")[0].replace("`", "").casefold()


@dataclass(frozen=True)
class StatementResult:
    """One statement of a workload run by :func:`collect_workload`: for a query, its rows
    from the workload's one result job (``arrow``), and its DataFrame (typed, for
    interactive use; reading it is a job of its own)."""

    statement: Statement
    arrow: pa.Table | None  # None for a statement that is not a query
    made: Callable[[], DataFrame] = field(repr=False, compare=False)

    @functools.cached_property
    def frame(self) -> DataFrame:
        """The statement's DataFrame: for a statement whose rows were routed from its group's
        pass (:mod:`sql_rewrites.generation.routed_results`; that pass is not cached), a DataFrame of
        the rows in ``arrow``, made when first asked for."""
        return self.made()


def workload(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None,
             output: str | Path | None = None, overwrite: bool = False) -> list[DataFrame]:
    """Run a script with shared execution (module docstring); one DataFrame per statement.

    With ``output`` (a directory), every query statement's result is written there by
    one Spark job (:func:`sparkseq.running.workload_results.write_results`: Parquet partitioned by
    statement number) and its DataFrame reads its own partition; ``overwrite`` replaces
    what ``output`` holds, else an existing ``output`` is an error.

    Raises
    ------
    SqlRewriteError
        Any statement's error, before any statement runs.
    FileExistsError
        ``output`` exists and ``overwrite`` is not set (before any statement runs).
    """
    if output is None:
        return [frame for _, frame in run_workload(spark, text, hierarchies=hierarchies)]
    if not overwrite and _exists(spark, str(output)):
        raise FileExistsError(f"workload output {str(output)!r} exists (pass overwrite=True to replace it)")
    plan = plan_workload(spark, text, hierarchies=hierarchies)
    frames: dict[int, DataFrame] = {}
    written = 0

    def deliver(pending: list[tuple[int, DataFrame]], routed: list[Routed]) -> None:
        nonlocal written
        mode = "append" if written else "overwrite" if overwrite else "error"  # Connect knows no "errorifexists"
        frames.update(write_results(spark, pending, output, mode=mode, routed=routed))
        written += 1

    ran = _run_delivering(spark, text, plan, hierarchies, deliver)
    return [frames[number] if frame is None else frames.get(number, frame) for number, (_, frame) in enumerate(ran)]


def collect_workload(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None
                     ) -> list[StatementResult]:
    """Run a script with shared execution and collect every query statement's result with
    one Spark job (:func:`sparkseq.running.workload_results.collect_results`) — one per run of
    statements that write no data: a statement that may change what an earlier query
    reads (``INSERT``, ``CREATE TABLE``, ``DROP TABLE`` ...) has the queries before it
    collected first. Results come to the driver: for big ones use :func:`workload` with
    ``output``.

    Raises
    ------
    SqlRewriteError
        Any statement's error, before any statement runs.
    """
    plan = plan_workload(spark, text, hierarchies=hierarchies)
    tables: dict[int, pa.Table] = {}
    routed: dict[int, T.StructType] = {}

    def deliver(pending: list[tuple[int, DataFrame]], by_group: list[Routed]) -> None:
        tables.update(collect_results(pending, by_group))
        for r in by_group:
            routed.update(r.schemas)

    def made(number: int, frame: DataFrame | None) -> Callable[[], DataFrame]:
        if number not in routed:
            assert frame is not None  # only routed statements are not run
            return lambda: frame
        return lambda: spark.createDataFrame(tables[number], schema=routed[number])

    ran = _run_delivering(spark, text, plan, hierarchies, deliver)
    return [StatementResult(statement, tables.get(number), made(number, frame))
            for number, (statement, frame) in enumerate(ran)]


def _run_delivering(spark: SparkSession, text: str, plan: WorkloadPlan, hierarchies: HierarchyResolver | None,
                    deliver: Callable[[list[tuple[int, DataFrame]], list[Routed]], None]
                    ) -> list[tuple[Statement, DataFrame | None]]:
    """Run every statement in order; hand the query statements to ``deliver`` together, and
    before any statement that may change the data they read: the DataFrames of those with
    a branch of their own, and the routed selects (:class:`_Routing`) giving the others
    their rows. A routed statement whose result columns the check knows is not run at all
    (its DataFrame here is None)."""
    ran: list[tuple[Statement, DataFrame | None]] = []
    pending: list[tuple[int, DataFrame | None]] = []
    routing = _Routing(spark, plan)
    statements = _run_plan(spark, text, plan, hierarchies, routing)

    def delivered() -> None:
        routed = routing.selects(pending)
        numbers = frozenset().union(*(r.numbers for r in routed))
        own: list[tuple[int, DataFrame]] = []
        for n, frame in pending:
            if n not in numbers:
                assert frame is not None  # only routed statements are not run
                own.append((n, frame))
        deliver(own, routed)

    for number, statement in enumerate(plan.statements):
        if pending and not _keeps_data(statement):
            delivered()
            pending = []
        ran.append(next(statements))
        if statement.is_query:
            pending.append((number, ran[-1][1]))
    if pending:
        delivered()
    return ran


class _Routing:
    """Which sharing groups' statements get their rows routed from the group's pass
    (:mod:`sql_rewrites.generation.routed_results`) when results are delivered: a group all of whose
    pass members are read by statements that only select their columns, all delivered by
    one job. Such a group's pass is a view, not cached: the delivering job reads it once."""

    def __init__(self, spark: SparkSession, plan: WorkloadPlan) -> None:
        self.spark, self.plan = spark, plan
        batch, self.batches = 0, []
        for statement in plan.statements:  # the job that delivers each statement (_run_delivering)
            batch += not _keeps_data(statement)
            self.batches.append(batch)
        self.groups: dict[int, tuple[SharedGroup, str]] = {}
        self.statements: dict[int, tuple[int, int, tuple[str, ...]]] = {}  # number: (group, member, columns)

    def routable(self, shared: SharedGroup) -> bool:
        """Whether every member of ``shared`` is read by a query statement that only selects
        its columns, all in one delivery."""
        numbers = {m.statement for m in shared.members}
        return (len(numbers) == len(shared.members) and len({self.batches[n] for n in numbers}) == 1
                and all(self.plan.statements[m.statement].is_query and self._columns(m) is not None
                        for m in shared.members))

    def describe(self, shared: SharedGroup) -> str:
        """How ``collect_workload`` and ``workload(output=...)`` deliver the pass of ``shared``."""
        if self.routable(shared):
            analysed = all(self.plan.checked[m.statement].result_schema is not None for m in shared.members)
            return ("routed: every member's statement only selects its columns, so the job delivering the results "
                    "reads the pass once (not cached) and routes each row to its statement"
                    + ("; the statements are not run on their own (their result columns are the check's)"
                       if analysed else ""))
        others = sorted({m.statement + 1 for m in shared.members if not self.plan.statements[m.statement].is_query
                         or self._columns(m) is None})
        why = (f"statement(s) {_members(others)} do more than select their operator's columns" if others else
               "its statements are delivered by more than one job")
        return f"cached, one branch of the result job per statement: {why}"

    def add(self, group: int, shared: SharedGroup, table: str) -> None:
        self.groups[group] = (shared, table)
        for index, member in enumerate(shared.members):
            columns = self._columns(member)
            assert columns is not None  # routable
            self.statements[member.statement] = (group, index, columns)

    def _columns(self, member: Member) -> tuple[str, ...] | None:
        explanation = self.plan.checked[member.statement].explanation
        assert explanation is not None  # members are operators of checked statements
        return selected_columns(member.query, explanation.operators[member.ordinal].replacement)

    def runs(self, number: int) -> bool:
        """Whether statement ``number`` (reached by the run, its group's pass prepared) must
        be run for a DataFrame: not when its rows are routed and the check found its result
        columns (:attr:`sparkseq.statements.scripts.Checked.result_schema`)."""
        return number not in self.statements or self.plan.checked[number].result_schema is None

    def selects(self, pending: list[tuple[int, DataFrame | None]]) -> list[Routed]:
        """The routed selects giving the routed statements among ``pending`` their rows."""
        by_group: dict[int, list[tuple[int, int, tuple[str, ...], T.StructType]]] = {}
        for number, frame in pending:
            if number in self.statements:
                group, index, columns = self.statements[number]
                schema = frame.schema if frame is not None else self.plan.checked[number].result_schema
                assert schema is not None  # a statement not run has the check's (runs)
                by_group.setdefault(group, []).append((number, index, columns, schema))
        return [self._routed(*self.groups[group], entries) for group, entries in by_group.items()]

    def _routed(self, shared: SharedGroup, table: str,
                entries: list[tuple[int, int, tuple[str, ...], T.StructType]]) -> Routed:
        def select(layout: ResultLayout) -> DataFrame:
            routes = [Route(index, number, columns, layout.targets(number)) for number, index, columns, _ in entries]
            return self.spark.sql(routed_select(shared, table, routes, STATEMENT_COLUMN))

        return Routed({number: schema for number, _, _, schema in entries}, select)


def _keeps_data(statement: Statement) -> bool:
    """Whether running ``statement`` leaves the data of every relation as it was: queries,
    session settings and temporary views (names bound to queries)."""
    if statement.is_query or statement.keyword in SESSION_KEYWORDS:
        return True
    words = [t.text.upper() for t in statement.tokens[:6]]
    return words[:1] == ["CREATE"] and "VIEW" in words and bool({"TEMP", "TEMPORARY"} & set(words))


def _exists(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` exists in the file system Spark writes it to (on Spark Connect, the
    server's: asked by analysing a read of it, no job)."""
    if is_connect_session(spark):
        try:
            spark.read.format("text").load(path).schema  # noqa: B018 - the analysis is the question
        except PySparkException as exc:  # anything but a missing path: something is there
            return condition_of(exc) != "PATH_NOT_FOUND"
        return True
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a classic session's driver
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return bool(hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(hadoop_path))


def run_workload(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None
                 ) -> Iterator[tuple[Statement, DataFrame]]:
    """:func:`workload` statement by statement, lazily: every statement is checked before the
    first is yielded, and each runs when the iteration reaches it (a group's shared pass
    with the first statement that reads it)."""
    return _every_one_run(_run_plan(spark, text, plan_workload(spark, text, hierarchies=hierarchies), hierarchies))


def _every_one_run(ran: Iterator[tuple[Statement, DataFrame | None]]) -> Iterator[tuple[Statement, DataFrame]]:
    for statement, frame in ran:
        assert frame is not None  # without routing every statement runs (_run_plan)
        yield statement, frame


def _run_plan(spark: SparkSession, text: str, plan: WorkloadPlan, hierarchies: HierarchyResolver | None,
              routing: _Routing | None = None) -> Iterator[tuple[Statement, DataFrame | None]]:
    """Run the checked statements in order (:func:`sparkseq.statements.scripts.run_checked`), each
    group's run and pass prepared when its first member's statement is reached. With
    ``routing`` (the results delivered by one job), a statement whose rows that job routes
    from the pass is not run (:meth:`_Routing.runs`): its DataFrame is None."""
    runs: dict[int, GroupRun] = {}
    prepared: set[int] = set()

    streams = live.replacer(spark, text)  # operators over streaming sources run as live operators alone

    def prepare(group: int, index: int) -> GroupRun:
        """The group's run (its statistics jobs, when its first member is reached; without
        ``routing`` — DataFrames read later — only the one for big keys) and, when member
        ``index`` stays in the pass, the pass: a view read once by the job delivering the
        results when routed, else cached (lazily without ``routing``: by the first job
        reading it)."""
        if group not in runs:
            runs[group] = group_run(spark, plan.groups[group], text=text, lazy=routing is None)
        run = runs[group]
        if run.shared is not None and run.paths.is_shared(index) and group not in prepared:
            table = plan.table(group)
            if routing is not None and routing.routable(run.shared):
                _pass_view(spark, run.shared, table, table, text)
                routing.add(group, run.shared, table)
            else:
                _cache_group(spark, run.shared, table, text, lazy=routing is None)
            prepared.add(group)
        return run

    def replace_for(number: int) -> Replacement:
        alone = PathReplacer(spark, streams)  # an operator outside every group: its own path

        def replace(ordinal: int, query: MatchAggregateQuery) -> tuple | None:
            found = plan.member_of(number, ordinal)
            if found is None:
                return alone(ordinal, query)
            group, index = found
            run = prepare(group, index)
            if run.shared is None or not run.paths.is_shared(index):
                return path_replacement(spark, query, run.paths.choices[index])
            return run.shared.replacement(run.paths.shared.index(index), plan.table(group)), plan.table(group)

        return replace

    def runs_itself(item: Checked) -> bool:
        if routing is None:
            return True
        found = plan.member_of(item.number, 0)  # a routed statement has one operator
        if found is not None:
            prepare(*found)
        return routing.runs(item.number)

    schemas: dict = {}  # read once while no statement changes the relation (run_checked)
    for item in plan.checked:
        if not runs_itself(item):
            yield item.statement, None
            continue
        yield item.statement, run_checked(spark, text, item, schemas, hierarchies=hierarchies,
                                          replace=replace_for(item.number))


def release_workload(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None
                     ) -> list[str]:
    """Drop the cached shared results :func:`workload` keeps for ``text``'s sharing groups
    (the DataFrames it returned must not be read afterwards); returns the names dropped.
    Nothing runs but the analysis of the statements."""
    plan = plan_workload(spark, text, hierarchies=hierarchies)
    return [name for name in (plan.table(g) for g in range(len(plan.groups))) if _drop_cached(spark, name)]


def _drop_cached(spark: SparkSession, name: str) -> bool:
    """Uncache and drop a group's result (cached, or a view of its pass) and its staging
    views; False when there was none. (Dropping a view made by ``CACHE TABLE ... AS
    SELECT`` leaves its data cached.)"""
    spark.sql(f"UNCACHE TABLE IF EXISTS `{name}`")
    for staging in (f"{name}_pass", f"{name}_engine"):
        spark.catalog.dropTempView(staging)
    return spark.catalog.dropTempView(name)


def explain_workload(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None) -> str:
    """What :func:`workload` would do with ``text``: the sharing groups, and for each its
    members with their execution paths (the statistics job for big keys, when Spark's
    estimate of the source leaves room for one, run here too), shared symbols, the shared
    timelines the pass executes (the decision the pass is given, from the same statistics
    job :func:`collect_workload` and ``workload(output=...)`` make, :func:`group_run`; run
    here too; :func:`workload`'s DataFrames decide in each engine call instead), how
    :func:`collect_workload` and ``workload(output=...)`` deliver its results (routed from
    one read of the pass, or cached), and the group's Spark SQL. Nothing else runs."""
    plan = plan_workload(spark, text, hierarchies=hierarchies)
    routing = _Routing(spark, plan)
    lines = [f"-- workload of {len(plan.statements)} statements, {len(plan.groups)} sharing group(s)"]
    shared = {(m.statement, m.ordinal) for g in plan.groups for m in g.members}
    alone = [i + 1 for i, s in enumerate(plan.statements) if s.has_match_aggregate
             and not any(st == i for st, _ in shared)]
    if alone:
        lines.append(f"statements run on their own: {', '.join(map(str, alone))}")
    for g, group in enumerate(plan.groups):
        first = group.members[0].query
        keys = ", ".join(k.name for k in first.partition_keys) or "(none)"
        lines += ["", f"group {g + 1}: {len(group.members)} operators over {first.node.this.sql(dialect=SparkSeq)}, "
                      f"PARTITION BY {keys}, ORDER BY {first.order.name}; cached as {plan.table(g)}"]
        clock = first.order.kind.takes_intervals
        run = group_run(spark, group, text=text)
        keys_job = run.paths.measured
        if keys_job is not None:
            lines.append(f"  paths from one job counting the source's keys, run by every way of running the workload "
                         f"— workload() too, when called, before any rows are asked for: {keys_job}, and which "
                         "members share the pass fixes every statement's SQL")
        for i, member in enumerate(group.members):
            p = member.query.plan
            window = "" if p.within is None else f" WITHIN {describe_length(p.within, clock)}" + (
                "" if p.slide is None else f" SLIDE {describe_length(p.slide, clock)}")
            lines.append(f"  member {i}: statement {member.statement + 1}, {group.plan.plans[i].describe()}{window}")
            lines.append(f"    path: {run.paths.describe(i)}")
        for k, (name, condition) in enumerate(group.symbols):
            lines.append(f"  {'symbols' if k == 0 else '':<8} bit {k:<2} {name:<12} {condition.sql(dialect=SparkSeq)}")
        lines.append("")
        if run.shared is None:
            lines.append("  execution: no shared pass, every member runs on its own path (above)")
            continue
        leaving = [i for i in range(len(group.members)) if not run.paths.is_shared(i)]
        events, (ts, mask, *values) = run.shared.events()
        frame = spark.sql(events.sql(dialect=SparkSeq))  # analysed only, for the key types
        calls = _engine_calls(run.shared, _sorted_keys(frame, _keys(frame, ts, mask, values)))
        lines.append(f"  execution: one scan, one shuffle and {calls} for "
                     + (f"members {_members(run.paths.shared)}; members {_members(leaving)} run on their own "
                        "paths (above)" if leaving else "all members"))
        basis = ("no statistics needed: no two members could share a timeline" if run.statistics is None else
                 describe_statistics(run.statistics))
        lines.append(f"  in the engine call, as collect_workload and workload(output=...) execute it (udafs.timelines "
                     f"cost model; {basis}):")
        lines += ["    " + line for line in describe_timelines(run.shared, run.statistics, run.paths.shared)]
        if run.statistics is not None:
            lines.append("  workload() (DataFrames read later) runs no statistics job before rows are asked for: its "
                         "engine calls each decide from their own rows by the same model, unless the statistics of an "
                         "earlier job over the same unchanged source are kept")
        lines.append(f"  results of collect_workload and workload(output=...): {routing.describe(run.shared)}")
        lines += ["", f"  Spark SQL of the group's input (shuffled by the partition keys into one Arrow pass, "
                      f"udafs.workers.shared, cached as {plan.table(g)} by workload()):",
                  "  " + events.sql(dialect=SparkSeq, pretty=True).replace("\n", "\n  ")]
    return "\n".join(lines)


def _members(indices: list[int] | tuple[int, ...]) -> str:
    return ", ".join(map(str, indices))


@dataclass(frozen=True)
class GroupRun:
    """How a sharing group runs: each member's path, and the pass of the members that
    stay shared (None when none do) with its shared timelines decided
    (:func:`sql_rewrites.planning.timeline_plan.plan_timelines`) from ``statistics``."""

    paths: GroupPaths
    shared: SharedGroup | None
    statistics: SymbolStatistics | None = None


def group_run(spark: SparkSession, group: SharedGroup, *, text: str | None = None, lazy: bool = False) -> GroupRun:
    """The paths of ``group``'s members and, for those that stay grouped, their pass with
    its shared timelines, from at most one statistics job over the source
    (:func:`sparkseq.running.statistics.measure`): its big keys, when Spark's estimate of the
    source (asked once) leaves room for one that changes a member's path
    (:func:`sql_rewrites.planning.planner.group_statistics`, then
    :func:`~sql_rewrites.planning.planner.group_path`), and in the same scan the rows per symbol the
    timelines are decided from (skipped when no two members could share one). ``lazy``
    (DataFrames read later) and no big key possible: no job — the statistics kept from an
    earlier one over the unchanged source, else the timelines left to each engine call,
    decided from its own rows by the same model. ``text``: the script, where an error of
    the statistics job is placed."""
    from sparkseq.running import statistics as collected

    settings = plan_settings(spark)
    first = group.members[0].query
    plans = [m.query.single_plan for m in group.members]
    size = source_size(spark, first)
    job = group_statistics(plans, settings, size)
    measured = None
    if job is None:
        paths = group_path(plans, settings, None)
    else:
        try:
            measured = collected.measure(spark, group, text=text, size=size, big_key_rows=job[0])
        except Exception as exc:  # as a statement alone: it runs, only unmeasured
            paths = group_path(plans, settings, None, measured=job[1], unmeasured=type(exc).__name__)
        else:
            paths = group_path(plans, settings, measured.big_keys, measured=job[1])
    shared: SharedGroup | None = group
    if len(paths.shared) < len(group.members):
        shared = build_group([group.members[i] for i in paths.shared]) if paths.shared else None
    if shared is None:
        return GroupRun(paths, None)
    if not needs_statistics(shared):
        return GroupRun(paths, plan_timelines(shared, None))
    if measured is not None:  # the same job counted every member's symbols
        statistics = measured.of(shared)
        return GroupRun(paths, plan_timelines(shared, statistics), statistics)
    if lazy:
        kept = collected.recent(spark, shared)
        return GroupRun(paths, shared) if kept is None else GroupRun(paths, plan_timelines(shared, kept), kept)
    statistics = collected.collect(spark, shared, text=text, size=size)
    return GroupRun(paths, plan_timelines(shared, statistics), statistics)


def _cache_group(spark: SparkSession, shared: SharedGroup, table: str, text: str | None = None, *,
                 lazy: bool = False) -> None:
    """Compute a group's shared result once (one job; with ``lazy``, by the first job that
    reads it) and keep it cached as ``table`` (:func:`_pass_view`)."""
    _pass_view(spark, shared, table, f"{table}_pass", text)
    spark.sql(f"CACHE {'LAZY ' if lazy else ''}TABLE `{table}` AS SELECT * FROM `{table}_pass`")


def _pass_view(spark: SparkSession, shared: SharedGroup, table: str, view: str, text: str | None = None) -> None:
    """A group's shared result (the group's ``table``, run before: dropped) as the
    temporary view ``view``.

    The pass is an Arrow function (:mod:`udafs.workers.shared`) over the group's engine
    input rows: its per-window rows reach Spark as Arrow tables, not as one
    ``array<struct>`` per partition converted through Python objects. With keys Arrow
    compares as Spark groups them (:func:`_sorted_keys`) the rows are shuffled by the keys
    and sorted by keys and time within each Spark partition (``mapInArrow``: calls over
    many whole partitions, :func:`_engine_calls`); otherwise grouped by the keys
    (``applyInArrow``, one call per partition). An engine error (a count too large for
    its type) fails the job reading the view with its message; an error of a DEFINE
    condition points at it in ``text``, the script the members were compiled from."""
    events, (ts, mask, *values) = shared.events()
    sql = events.sql(dialect=SparkSeq)
    frame = spark.sql(with_origins(spark, sql, shared.members, text) if text is not None else sql)
    keys = _keys(frame, ts, mask, values)
    error = "__sparkseq_error"
    types = [sql for _, sql in contract.multi_result_fields(shared.plan)] + [contract.STRING]
    names = (*shared.output_names, error)
    schema = T.StructType([frame.schema[k] for k in keys] + [
        T.StructField(name, T._parse_datatype_string(sql)) for name, sql in zip(names, types)])
    if _sorted_keys(frame, keys):
        shuffled = frame.repartition(*keys) if keys else frame.repartition(1)
        body = sorted_pass(shared.plan.to_json(), keys, ts, mask, values, names)
        result = shuffled.sortWithinPartitions(*keys, ts).mapInArrow(body, schema)
    else:
        grouped = grouped_pass(shared.plan.to_json(), keys, ts, mask, values, names)
        result = frame.groupBy(*keys).applyInArrow(grouped, schema)
    _drop_cached(spark, table)  # the same group run before: recomputed from the data now
    staging = f"{table}_engine"
    result.createOrReplaceTempView(staging)
    columns = ", ".join(f"`{c}`" for c in (*keys, *shared.cached_names))
    spark.sql(f"CREATE OR REPLACE TEMP VIEW `{view}` AS SELECT {columns} FROM `{staging}` "
              f"WHERE CASE WHEN `{error}` IS NULL THEN TRUE ELSE raise_error(`{error}`) END")


def _keys(frame: DataFrame, ts: str, mask: str, values: list[str]) -> list[str]:
    """The partition key columns of a group's engine input."""
    return [c for c in frame.columns if c not in (ts, mask, *values)]


def _sorted_keys(frame: DataFrame, keys: list[str]) -> bool:
    """True when every key is of a type Arrow compares as Spark groups it (numbers,
    binary-collated strings, binary, booleans, dates, timestamps): the pass can find
    partitions in rows sorted by the keys (:func:`udafs.workers.shared.sorted_pass`)."""
    plain = (T.NumericType, T.BinaryType, T.BooleanType, T.DateType, T.TimestampType, T.TimestampNTZType)
    return all(isinstance(t, plain) or (isinstance(t, T.StringType) and t.collation == "UTF8_BINARY")
               for t in (frame.schema[k].dataType for k in keys))


def _engine_calls(shared: SharedGroup, sorted_keys: bool) -> str:
    """How the pass calls the engine (:func:`_pass_view`), in words for EXPLAIN;
    ``sorted_keys`` as :func:`_sorted_keys` decided."""
    if not sorted_keys:
        return "one engine call per partition (grouped by the partition keys)"
    gathered = f"engine calls over about {ROWS_PER_CALL:,} rows of whole partitions (sorted by key and time), "
    if laid_end_to_end(shared.plan):
        return gathered + "all partitions of a call evaluated at once, laid end to end on one time axis"
    return gathered + ("each partition evaluated on its own (not every member has SLIDE, an exact count type "
                       "and exact timestamps)")


__all__ = ["StatementResult", "WorkloadPlan", "collect_workload", "explain_workload", "plan_workload",
           "release_workload", "run_workload", "workload"]
