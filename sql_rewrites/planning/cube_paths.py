"""An E-Cube statement over a huge key: each cuboid its own single-plan statement, UNION ALL.

An E-Cube evaluates all its cuboids in one engine call per partition key (a
:class:`~udafs.multiplan.MultiPlan`). Neither the time split nor the streaming path takes
several plans in one call, so a cube over a key too big for one Python worker would sit
in one worker. When the cube's statistics find such a key (or ``sparkseq.path`` forces a
path) the operator becomes instead the ``UNION ALL`` of its reported cuboids, each the
single-pattern statement of that cuboid on the path chosen for it — exact, because
each cuboid alone is exactly what the cube reports for it, at the price of one scan of
the source per cuboid:

* a cuboid's statement (:func:`cuboid_statements`) is the cube's engine input with the
  cuboid's own plan (the plan the MultiPlan evaluates for it, over the cube's symbol
  table), a mask of only the cuboid's symbols (a row of none of them reaches no engine
  call: a key holding no instance of the cuboid's symbols gives no row, as in the cube)
  and only the measures the cuboid fills;
* :func:`cube_union` puts each statement's output into the cube's columns: the
  partition keys, the window bounds with SLIDE, ``pattern`` and ``levels`` as literals,
  then every measure of the cube, NULL (of the measure's type) where the cuboid lacks
  it — the same columns, names, types and order as the grouped cube;
* :func:`cube_paths` decides from the statistics of the cube's keys (one job for the
  whole cube, as for a workload's sharing group, :mod:`sql_rewrites.planning.workload_paths`):
  each cuboid's path by :func:`~sql_rewrites.planning.timesplit.choose_path`; the cube splits
  only when some cuboid's path is time-split or streaming (or a path is forced), else it
  stays one grouped call per key, which shares the scan and the derivations (a
  workload's sharing group, whose statistics job has run);
* :func:`sized_cube_paths` decides without statistics, for a statement alone
  (``sparkseq.sql``, ``spark.sql``): the statement counts its keys as it runs, the keys
  over the lowest threshold run each cuboid on its own path and the others stay in the
  one grouped call (:func:`sql_rewrites.planning.path_queries.by_key_size`).

Derived cuboids are evaluated directly in their own statement (no derivation needed);
hidden cuboids, which only serve derivations, are not run.

Pure: analysed queries and statistics in, sqlglot trees and decisions out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlglot import exp

from sql_rewrites.generation.generate import EngineInput, aliased, engine_input, levels_literal, symbol_mask
from sql_rewrites.logical.cube import CubeSpec
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.planning.timesplit import (
    CHUNK_ROWS,
    SPLIT_ROWS,
    STREAM_ROWS,
    KeyStatistics,
    Path,
    PathChoice,
    big_key_path,
    big_key_threshold,
    choose_path,
)
from sql_rewrites.planning.workload_paths import group_threshold
from sql_rewrites.syntax.dialect import sanitize
from udafs.multiplan import MultiPlan
from udafs.plan import Plan, splittable, streamable

#: The paths that take a cuboid out of the cube's one engine call (a big key).
BIG_KEY_PATHS = (Path.TIME_SPLIT, Path.STREAMING)


@dataclass(frozen=True)
class CuboidStatement:
    """One reported cuboid as a single-plan statement: ``index`` into the cube's cuboids
    (and ``MultiPlan.plans``), its ``pattern`` text, and its engine input."""

    index: int
    text: str
    spec: EngineInput

    @property
    def plan(self) -> Plan:
        """The cuboid's plan (over the cube's symbol table)."""
        assert isinstance(self.spec.plan, Plan)
        return self.spec.plan


def cuboid_statements(query: MatchAggregateQuery) -> tuple[CuboidStatement, ...]:
    """The single-plan statement of every reported cuboid of an E-Cube ``query``, in the
    cube's order (module docstring).

    Raises
    ------
    ValueError
        ``query`` is not an E-Cube.
    """
    cube, multi = _cube_of(query)
    whole = engine_input(query)
    conditions = [(s.index, s.condition) for s in query.symbols]
    out = []
    for i in cube.reported:
        plan = multi.plans[i]
        own = [(k, c) for k, c in conditions if plan.pattern_symbols_mask >> k & 1]
        spec = replace(whole, plan=plan, mask=symbol_mask(own, query.source_schema), per_plan=(),
                       measures=tuple(whole.measures[f] for f in multi.slots[i]))
        out.append(CuboidStatement(i, cube.texts[i], spec))
    return tuple(out)


def cuboid_plans(query: MatchAggregateQuery) -> tuple[list[str], list[Plan]]:
    """The pattern text and plan of every reported cuboid of an E-Cube ``query``, in the
    cube's order: what :func:`cube_paths` decides from, without building the statements'
    SQL (36 cuboids' masks took about 0.03 s of each run of a roll-up cube, ad hoc).

    Raises
    ------
    ValueError
        ``query`` is not an E-Cube.
    """
    cube, multi = _cube_of(query)
    return [cube.texts[i] for i in cube.reported], [multi.plans[i] for i in cube.reported]


def _cube_of(query: MatchAggregateQuery) -> tuple[CubeSpec, MultiPlan]:
    cube, multi = query.cube, query.plan
    if cube is None or not isinstance(multi, MultiPlan):
        raise ValueError("cuboids come from an E-Cube MATCH_AGGREGATE only")
    return cube, multi


def cube_union(query: MatchAggregateQuery, outputs: Sequence[tuple[CuboidStatement, exp.Select]]) -> exp.Subquery:
    """The operator's replacement: ``UNION ALL`` of each cuboid statement's typed output
    (as :func:`~sql_rewrites.generation.generate.engine_query` and the other paths build it over the
    statement's ``spec``), each put into the cube's output columns (module docstring).

    Raises
    ------
    ValueError
        No outputs, or ``query`` is not an E-Cube.
    """
    return aliased(query, sanitize(cube_branches(query, outputs)))  # type: ignore[arg-type]


def cube_branches(query: MatchAggregateQuery, outputs: Sequence[tuple[CuboidStatement, exp.Select]]) -> exp.Expr:
    """The ``UNION ALL`` of :func:`cube_union`, not yet the operator's replacement: each
    output put into the cube's columns.

    Raises
    ------
    ValueError
        No outputs, or ``query`` is not an E-Cube.
    """
    cube = query.cube
    if cube is None or not outputs:
        raise ValueError("a cube union needs an E-Cube and at least one cuboid")
    # the partition keys and window bounds: the outputs before pattern, levels and the measures
    leading = [o.name for o in query.outputs[:len(query.outputs) - 2 - len(query.measures)]]
    parts: list[exp.Select] = []
    for n, (statement, output) in enumerate(outputs):
        own = {name for name, _ in statement.spec.measures}
        alias = f"__sparkseq_cuboid_{n}"
        columns: list[exp.Expr] = [exp.column(c, table=alias) for c in leading]
        columns += [exp.alias_(exp.Literal.string(statement.text), "pattern"),
                    exp.alias_(levels_literal(cube.levels[statement.index]), "levels")]
        columns += [exp.column(m.name, table=alias) if m.name in own
                    else exp.alias_(exp.cast(exp.null(), m.output_type.copy()), m.name) for m in query.measures]
        parts.append(exp.select(*columns).from_(output.subquery(alias)))
    return _union_all(parts)


def _union_all(parts: Sequence[exp.Select]) -> exp.Expr:
    """``UNION ALL`` of ``parts`` in order, as a balanced tree (no deep recursion for 256
    cuboids) built without copying them."""
    if len(parts) == 1:
        return parts[0]
    middle = len(parts) // 2
    return exp.Union(this=_union_all(parts[:middle]), expression=_union_all(parts[middle:]), distinct=False)


@dataclass(frozen=True)
class CubePaths:
    """How an E-Cube statement runs: in one grouped engine call per key (``cuboids`` None),
    or as the UNION ALL of its cuboid statements, ``cuboids[j]`` the path of the j-th
    reported cuboid (``texts[j]``); ``reason`` says why."""

    reason: str
    cuboids: tuple[PathChoice, ...] | None = None
    texts: tuple[str, ...] = ()
    #: Left to Spark's size estimate of the source (what EXPLAIN shows without a session).
    pending: bool = False
    #: Set when the keys are counted as the statement runs (:func:`sized_cube_paths`): the
    #: keys with more rows than this run each cuboid on ``cuboids``' path, the others the
    #: one grouped call (None: every key takes ``cuboids``' paths).
    by_key_size: int | None = None

    @property
    def split(self) -> bool:
        """Whether each cuboid runs as its own statement."""
        return self.cuboids is not None

    def describe(self) -> list[str]:
        """EXPLAIN's ``path`` lines: the cube's path and why, then each cuboid's when split."""
        if self.pending:
            return [f"grouped, every cuboid in one engine call per key, unless a key is big ({self.reason})"]
        if self.cuboids is None:
            return [f"grouped, every cuboid in one engine call per key ({self.reason})"]
        width = max(len(t) for t in self.texts)
        if self.by_key_size is not None:
            head = (f"every cuboid in one engine call per key, and for the keys over {self.by_key_size:,} rows, "
                    f"counted when the statement runs, each cuboid its own statement, UNION ALL ({self.reason})")
        else:
            head = f"each cuboid its own statement, UNION ALL ({self.reason})"
        return [head,
                *(f"{t:<{width}}  {c.path.value} ({c.reason})" for t, c in zip(self.texts, self.cuboids))]


def cube_paths(texts: Sequence[str], plans: Sequence[Plan], big_keys: list[KeyStatistics] | None,
               forced: Path | None = None, split_rows: int = SPLIT_ROWS, chunk_rows: int = CHUNK_ROWS,
               stream_rows: int = STREAM_ROWS, *, ansi: bool = True, chunk_multiple: int = 1,
               unmeasured: str | None = None) -> CubePaths:
    """The path of an E-Cube whose reported cuboids are ``plans`` (pattern ``texts``) from
    the statistics of its keys over :func:`~sql_rewrites.planning.workload_paths.group_threshold`
    rows (``big_keys``; None: none collected, none needed), as the module docstring says.
    ``forced`` (``sparkseq.path``): ``grouped`` keeps the one call, another path runs every
    cuboid on it. ``unmeasured``: why the statistics job failed (the cube stays grouped).

    Raises
    ------
    ValueError
        A forced path some cuboid cannot take, naming the cuboid.
    """
    if forced is Path.GROUPED:
        return CubePaths("forced by sparkseq.path")
    if unmeasured is not None and forced is None:
        return CubePaths(f"statistics unavailable ({unmeasured})")
    choices = []
    for text, plan in zip(texts, plans):
        try:
            choices.append(choose_path(plan, big_keys, forced, split_rows, chunk_rows, stream_rows, ansi=ansi,
                                       chunk_multiple=chunk_multiple))
        except ValueError as exc:
            raise ValueError(f"cuboid {text}: {exc}") from None
    if forced is not None:
        return CubePaths(f"forced by sparkseq.path: each cuboid {forced.value}", tuple(choices), tuple(texts))
    big = [c for c in choices if c.path in BIG_KEY_PATHS]
    if big:
        return CubePaths(f"{len(big)} of {len(choices)} cuboids leave the one engine call per key for a big key",
                         tuple(choices), tuple(texts))
    threshold = group_threshold(plans, split_rows, stream_rows)
    if threshold is None:
        return CubePaths(f"no cuboid can run time-split or streaming: {_stuck(plans[0])}")
    keys = [k for k in big_keys or [] if k.rows > threshold]
    if not keys:
        return CubePaths(f"no partition key holds more than {threshold:,} rows")
    largest = max(k.rows for k in keys)
    return CubePaths(f"{len(keys)} partition key(s) over {threshold:,} rows (largest {largest:,}) change no "
                     f"cuboid's path (e.g. {texts[0]}: {choices[0].reason})")


def planned_cube_paths(texts: Sequence[str], plans: Sequence[Plan], forced: Path | None = None,
                       split_rows: int = SPLIT_ROWS, chunk_rows: int = CHUNK_ROWS, stream_rows: int = STREAM_ROWS,
                       *, ansi: bool = True) -> CubePaths:
    """The path of an E-Cube as far as it is known without Spark's size estimate of the
    source (what EXPLAIN shows without a session): forced, fixed by the plans (no cuboid can
    leave the one call), or left to the estimate."""
    if forced is not None:
        return cube_paths(texts, plans, None, forced, split_rows, chunk_rows, stream_rows, ansi=ansi)
    threshold = big_keys_threshold(plans, split_rows, stream_rows)
    if threshold is None:
        return CubePaths(f"no cuboid can run time-split or streaming: {_stuck(plans[0])}")
    return CubePaths(f"decided from Spark's size estimate of the source: unless it rules out keys over {threshold:,} "
                     "rows, such keys, counted when the statement runs, run each cuboid as its own statement on its "
                     f"own path (split by time when its plan allows, else streamed), UNION ALL", pending=True)


def sized_cube_paths(texts: Sequence[str], plans: Sequence[Plan], split_rows: int = SPLIT_ROWS,
                     chunk_rows: int = CHUNK_ROWS, stream_rows: int = STREAM_ROWS, estimate: str = "") -> CubePaths:
    """The path of an E-Cube whose source may hold a big key, decided without measuring the
    source: the statement counts its keys as it runs; the keys over the cuboids' lowest
    threshold (:func:`~sql_rewrites.planning.timesplit.big_key_threshold`) run each cuboid as its
    own statement on its big-key path (:func:`~sql_rewrites.planning.timesplit.big_key_path`), the
    others stay in the one grouped call. ``estimate`` says why such a key is possible.

    Raises
    ------
    ValueError
        When no cuboid can leave the grouped call (none splits or streams).
    """
    threshold = big_keys_threshold(plans, split_rows, stream_rows)
    if threshold is None:
        raise ValueError(f"no cuboid can run time-split or streaming: {_stuck(plans[0])}")
    choices = tuple(big_key_path(p, split_rows, chunk_rows) for p in plans)
    return CubePaths(estimate or "a key may be big", choices, tuple(texts), by_key_size=threshold)


def big_keys_threshold(plans: Sequence[Plan], split_rows: int = SPLIT_ROWS, stream_rows: int = STREAM_ROWS
                       ) -> int | None:
    """The lowest :func:`~sql_rewrites.planning.timesplit.big_key_threshold` of ``plans`` (a cube's
    cuboids); None when none splits or streams."""
    return min((t for t in (big_key_threshold(p, split_rows, stream_rows) for p in plans) if t is not None),
               default=None)


def _stuck(plan: Plan) -> str:
    """Why a plan neither splits nor streams."""
    return f"not splittable by time ({splittable(plan)}) nor streamable ({streamable(plan)})"


__all__ = [
    "BIG_KEY_PATHS",
    "big_keys_threshold",
    "CubePaths",
    "CuboidStatement",
    "cube_branches",
    "cube_paths",
    "cube_union",
    "cuboid_plans",
    "cuboid_statements",
    "planned_cube_paths",
    "sized_cube_paths",
]
