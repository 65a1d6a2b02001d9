"""Time split in SQL: a huge partition cut into time chunks evaluated by parallel tasks.

:func:`time_split_query` builds the same typed output as
:func:`sql_rewrites.generation.generate.engine_query`, but the engine runs in two aggregations:

    SELECT <typed output> FROM (
      SELECT k, <combine fn>(__state) AS __result FROM (         -- per key: add partials up
        SELECT k, <chunk fn>(__ts, __mask, __v0, ..., __lo, __hi) AS __state FROM (
          SELECT e.*, __chunk, lo and hi of __chunk FROM (
            SELECT e.*, explode(<chunks that need the row>) AS __chunk
            FROM <events> e LEFT JOIN (                          -- keys over the threshold
              SELECT k, MIN(__ts) AS __t0, <chunk length> AS __len FROM <events>
              GROUP BY k HAVING COUNT(*) > <split rows>) s ON e.k <=> s.k))
        WHERE __chunk IS NOT NULL GROUP BY k, __chunk)
      GROUP BY k) ... (the checks of engine_query)

A key with more than ``split_rows`` rows is cut into chunks of about ``chunk_rows`` rows
each (equal time lengths, at least ``2 * WITHIN``); every other key is one chunk whose
``__lo`` is NULL (evaluated whole). A row goes to its own chunk and to the neighbours
whose context needs it (``chunk_regions`` in :mod:`udafs.kernels.incremental.timesplit`): the next
chunk when it lies within ``w`` (``2w`` with a leading negation) of that chunk's
start, the previous one when it lies within ``w`` of its own chunk's start (trailing
negation, or SLIDE: windows starting there reach it). Chunks are at least ``2w`` long,
so no row reaches further.

With the big keys measured by the statistics job (``split_keys``) there is no ``LEFT
JOIN``: a ``CASE`` on ``xxhash64`` of the keys gives each row its key's ``t0``,
``len`` and first task as literals, and ``[lo, hi)`` is computed from the chunk number
after the shuffle.

Whether a statement takes this path is decided by :mod:`sql_rewrites.planning.planner`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import NamedTuple

from sqlglot import exp

from sql_rewrites.generation.generate import (
    EngineInput,
    Roles,
    check_function_name,
    engine_roles,
    events_select,
    output_projections,
    output_select,
    sanitize,
)
from sql_rewrites.logical.sql_types import DType
from udafs.plan import Plan, splittable, streamable

#: A key with more rows than this is split by time. Chosen for memory, not speed
#: (bench/scale.py, quiet 2-core VM): one task's Python worker peaked at 1.09 GB for
#: 5 M rows of one key and 4.07 GB for 20 M, so 4 M rows keep it under ~0.9 GB. Speed
#: breaks even between 5 M (split 7.6 s vs one task 5.4 s) and 20 M rows (18.7 s vs
#: 23.3 s): keys of 4-10 M rows pay up to ~1.4x for the bounded memory.
SPLIT_ROWS = 4_000_000
#: Rows per chunk of a split key. The grouped UDAF's worker held 1.6 GB at 10 M rows
#: and 5.3 GB at 20 M (~160-265 bytes per row; bench/scale.py: 4.0 GB at 20 M); 1.5 M rows keep a chunk's
#: worker near 400 MB, well under 1 GB, and still give a 20 M key 14 tasks.
CHUNK_ROWS = 1_500_000
#: At most this many keys to cut are passed to the time-split query as literals (their
#: hash, first time and chunk length: one small broadcast table); with more big keys the
#: query finds them itself (a second read of the source).
MAX_SPLIT_LITERALS = 100
#: At most this many big keys are asked of the statistics job (the largest first): one more
#: than the time-split query takes as literals, so that the planner knows when there are more.
MAX_KEYS_REPORTED = MAX_SPLIT_LITERALS + 1
#: A split key needs at least this many chunks of length 2 * WITHIN in its time span;
#: with fewer, replicated edge rows would dominate (the window is too long for the span).
MIN_CHUNKS = 4
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class SplitKey:
    """A key to cut, as the statistics job measured it: chunk ``c`` (``0 <= c < chunks``) of
    the key whose values hash to ``key_hash`` (None: the one partition of a statement
    without PARTITION BY) is ``[first + c·length, first + (c+1)·length)``."""

    key_hash: int | None
    first: int
    length: int
    chunks: int


def time_split_query(spec: EngineInput, chunk_function: str, combine_function: str, source: exp.Expr,
                     split_rows: int = SPLIT_ROWS, chunk_rows: int = CHUNK_ROWS,
                     partitions: int | None = None, split_keys: Sequence[SplitKey] | None = None,
                     task_keys: Sequence[int] | None = None) -> exp.Select:
    """The time-split query of ``spec`` over ``source`` (module docstring); every identifier
    quoted. ``split_rows`` and ``chunk_rows`` must be positive integers.

    ``partitions``: distribute the chunks by their number over this many tasks (a
    ``REPARTITION`` hint on the chunk column alone, which the chunk aggregation reuses).
    Without it Spark hashes ``(key, chunk)`` into its shuffle partitions and adaptive
    execution coalesces them, which put all chunks of a key into one or two tasks
    (measured, bench/scale.py). Keys that are not split get a hash of the key as their
    chunk number, so they spread too.

    ``split_keys``: the keys to cut and their chunks as the statistics job measured them
    (:attr:`sql_rewrites.planning.planner.PathChoice.split_keys`), joined as literals by the hash of the key values;
    then ``split_rows`` and ``chunk_rows`` are not used and the source is read once.
    Another key whose values hash the same (about one in 2**64 / 100) is cut at the same
    boundaries, which is still exact: any cut is.

    ``task_keys`` (with ``split_keys``; instead of ``partitions``): ``task_keys[p]`` is a
    BIGINT that Spark's hash partitioning into ``len(task_keys)`` partitions sends to
    partition ``p``. The chunks of the split keys are numbered one after the other and
    chunk ``i`` goes to task ``i mod len(task_keys)``: no two chunks share a task while
    there are enough (hashing the chunk numbers put two or three chunks into some tasks
    and left others empty).

    Raises
    ------
    ValueError
        When the plan cannot be split, a function name is not an identifier, a
        threshold is not a positive integer, or ``split_keys`` is empty, names a key
        without a hash in a statement with PARTITION BY, or has a chunk shorter than
        ``2 * WITHIN``.
    """
    plan = spec.plan
    if not isinstance(plan, Plan) or splittable(plan) is not None or spec.instances is not None:
        raise ValueError("only a single plan that splittable() accepts can run time-split")
    for value in (split_rows, chunk_rows) + (() if partitions is None else (partitions,)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"split_rows, chunk_rows and partitions must be positive integers, got {value!r}")
    if 2 * plan.window > _INT64_MAX:
        raise ValueError("the WITHIN window is too long to split by time")
    if split_keys is not None:
        _check_split_keys(split_keys, plan.window, bool(spec.keys))
    if task_keys is not None and (split_keys is None or partitions is not None or not task_keys or not all(
            isinstance(t, int) and not isinstance(t, bool) and -2**63 <= t < 2**63 for t in task_keys)):
        raise ValueError("task_keys must be BIGINTs, given with split_keys and without partitions")
    roles = engine_roles(spec)
    names = _SplitNames.of(roles)
    keys = [name for name, _ in spec.keys] or [roles.all_rows]
    events = events_select(spec, source, roles)
    events = exp.select("*").from_(events.subquery(roles.events)).where(exp.and_(
        exp.NEQ(this=exp.column(roles.mask), expression=exp.Literal.number(0)),
        exp.column(roles.ts).is_(exp.null()).not_()))
    sizes = (_measured_sizes(split_keys, names) if split_keys is not None
             else _sizes(plan, events, keys, roles, names, split_rows, chunk_rows))
    chunked, (lo, hi) = _chunked(plan, events, keys, roles, names, sizes, bool(spec.keys))
    chunk_keys = [exp.column(names.chunk)]
    if task_keys is not None:
        chunked = _placed(chunked, task_keys, names)
        chunk_keys.append(exp.column(names.task))  # a function of the chunk: the same groups
    if partitions is not None or task_keys is not None:
        n = len(task_keys) if task_keys is not None else partitions
        spread = exp.Anonymous(this="REPARTITION", expressions=[exp.Literal.number(n), chunk_keys[-1].copy()])
        chunked.set("hint", exp.Hint(expressions=[spread]))
    arguments = [exp.column(roles.ts), exp.column(roles.mask), *(exp.column(v) for v in roles.values), lo, hi]
    chunks = (exp.select(*(exp.column(k) for k in keys),
                         exp.alias_(exp.Anonymous(this=check_function_name(chunk_function), expressions=arguments),
                                    names.state))
              .from_(chunked.subquery(names.chunks))
              .group_by(*(exp.column(k) for k in keys), *chunk_keys))
    combine = exp.Anonymous(this=check_function_name(combine_function), expressions=[exp.column(names.state)])
    groups = (exp.select(*(exp.column(k) for k in keys), exp.alias_(combine, roles.result))
              .from_(chunks.subquery(names.states))
              .group_by(*(exp.column(k) for k in keys)))
    return sanitize(output_select(spec, groups, roles))  # type: ignore[return-value]


def streaming_query(spec: EngineInput, stream_function: str, source: exp.Expr) -> exp.Select:
    """The typed output of ``spec`` computed by the streaming UDTF ``stream_function``
    (:mod:`udafs.workers.streaming`: rows distributed by a hash of the keys, sorted by it and
    time; one evaluator per open key, O(window) rows held). The UDTF raises an overflow
    itself, naming the partition. Every identifier quoted; the plan is a string literal.
    """
    plan = spec.plan
    if not isinstance(plan, Plan) or streamable(plan) is not None or spec.seq is not None or spec.bounds is not None:
        raise ValueError("only a single plan that streamable() accepts can run on the streaming path")
    roles = engine_roles(spec)
    bucket = roles.fresh("bucket")
    keys = [name for name, _ in spec.keys]
    events = events_select(spec, source, roles)
    key_hash: exp.Expr = (exp.Anonymous(this="xxhash64", expressions=[exp.column(k) for k in keys]) if keys
                          else exp.cast(exp.Literal.number(0), DType.BIGINT))
    inner = (exp.select(exp.alias_(key_hash, bucket), *(exp.column(c) for c in [*keys, roles.ts, roles.mask,
                                                                                 *roles.values]))
             .from_(events.subquery(roles.events))
             .where(exp.and_(exp.NEQ(this=exp.column(roles.mask), expression=exp.Literal.number(0)),
                             exp.column(roles.ts).is_(exp.null()).not_())))
    inner.set("distribute", exp.Distribute(expressions=[exp.column(bucket)]))
    inner.set("sort", exp.Sort(expressions=[exp.Ordered(this=exp.column(c), nulls_first=True)
                                            for c in (bucket, roles.ts)]))
    call = exp.Anonymous(this=check_function_name(stream_function), expressions=[
        exp.Anonymous(this="TABLE", expressions=[inner]), exp.Literal.string(plan.to_json())])
    fields = [roles.window_start, roles.window_end, *roles.measures]
    udtf_fields = ["window_start", "window_end", *(f"m{j}" for j in range(len(plan.measures)))]
    rows = exp.select(*(exp.alias_(exp.column(f"k{i}"), k) for i, k in enumerate(keys)),
                      *(exp.alias_(exp.column(u), f) for u, f in zip(udtf_fields, fields)),
                      exp.alias_(exp.cast(exp.null(), "STRING"), roles.error)
                      ).from_(exp.Table(this=call))
    select = exp.select(*output_projections(spec, roles, roles.groups, roles.groups)).from_(rows.subquery(roles.groups))
    return sanitize(select)  # type: ignore[return-value]


@dataclass(frozen=True)
class _SplitNames:
    """Fresh column and subquery names of one time-split statement (``split_<role>``)."""

    chunk: str
    lo: str
    hi: str
    t0: str
    len: str
    hash: str
    first_task: str
    task: str
    state: str
    chunks: str
    states: str
    sizes: str
    own: str
    exploded: str

    @classmethod
    def of(cls, roles: Roles) -> _SplitNames:
        return cls(*(roles.fresh(f"split_{field.name}") for field in fields(cls)))


class _Sizes(NamedTuple):
    """The keys to cut with their first time and chunk length, and how rows find them."""

    table: exp.Expr | None  # one row per key to cut: (keys, t0, len), joined on ``on``; None: literals
    on: exp.Expr | None  # the join condition; None: every row (one partition)
    #: With literal bounds: the expressions of t0, len and first task of a row's key (NULL
    #: for a key that is not cut), over the row's key hash column.
    literals: tuple[exp.Expr, exp.Expr, exp.Expr] | None = None


def _sizes(plan: Plan, events: exp.Select, keys: list[str], roles: Roles, names: _SplitNames,
           split_rows: int, chunk_rows: int) -> _Sizes:
    """The keys over ``split_rows`` rows found by a subquery over the events (a second read)."""
    ts = exp.column(roles.ts)
    count = exp.Count(this=exp.Star())
    n_chunks = exp.cast(exp.Ceil(this=exp.Div(this=exp.cast(count.copy(), DType.DOUBLE),
                                              expression=exp.Literal.number(chunk_rows))), DType.BIGINT)
    span = exp.paren(exp.Sub(this=exp.Max(this=ts.copy()), expression=exp.Min(this=ts.copy())))
    chunk_length = exp.Greatest(this=exp.Add(this=exp.IntDiv(this=span, expression=n_chunks),
                                             expression=exp.Literal.number(1)),
                                expressions=[exp.Literal.number(2 * plan.window)])
    sizes = (exp.select(*(exp.column(k) for k in keys), exp.alias_(exp.Min(this=ts.copy()), names.t0),
                        exp.alias_(chunk_length, names.len))
             .from_(events.copy().subquery(names.sizes + "_events"))
             .group_by(*(exp.column(k) for k in keys))
             .having(exp.GT(this=count.copy(), expression=exp.Literal.number(split_rows))))
    on = exp.and_(*(exp.NullSafeEQ(this=exp.column(k, table=roles.events), expression=exp.column(k, table=names.sizes))
                    for k in keys))
    return _Sizes(sizes.subquery(names.sizes), on)


def _measured_sizes(split_keys: Sequence[SplitKey], names: _SplitNames) -> _Sizes:
    """The keys the statistics job measured, as literals chosen by the row's key hash: a
    ``CASE`` per bound, no join (arithmetic only in the map stage)."""
    def bigint(value: int) -> exp.Expr:
        return exp.cast(exp.Literal.number(value), DType.BIGINT)

    firsts = [sum(k.chunks for k in split_keys[:i]) for i in range(len(split_keys))]  # chunks numbered in a row
    columns = ([bigint(k.first) for k in split_keys], [bigint(k.length) for k in split_keys],
               [bigint(first) for first in firsts])
    if split_keys[0].key_hash is None:  # no PARTITION BY: the one partition is cut
        return _Sizes(None, None, (columns[0][0], columns[1][0], columns[2][0]))
    hashes = [bigint(k.key_hash or 0) for k in split_keys]

    def by_hash(values: list[exp.Expr]) -> exp.Expr:
        return exp.Case(this=exp.column(names.hash),
                        ifs=[exp.If(this=h.copy(), true=v) for h, v in zip(hashes, values)])

    return _Sizes(None, None, (by_hash(columns[0]), by_hash(columns[1]), by_hash(columns[2])))


def _check_split_keys(split_keys: Sequence[SplitKey], within: int, keyed: bool) -> None:
    if not split_keys:
        raise ValueError("split_keys must name at least one key to cut")
    for k in split_keys:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (k.first, k.length)) or \
                (k.key_hash is not None and not isinstance(k.key_hash, int)):
            raise ValueError(f"a key to cut needs integer bounds, got {k!r}")
        if keyed == (k.key_hash is None) or (not keyed and len(split_keys) > 1):
            raise ValueError("with PARTITION BY every key to cut needs its key hash; without it, one key and no hash")
        if not isinstance(k.chunks, int) or k.chunks <= 0:
            raise ValueError(f"a key to cut needs a positive number of chunks, got {k!r}")
        if k.length < 2 * within or not -2**63 <= k.first < 2**63:
            raise ValueError(f"a key's chunks must be at least twice the WITHIN window, got {k!r}")


def _placed(chunked: exp.Select, task_keys: Sequence[int], names: _SplitNames) -> exp.Select:
    """``chunked`` with the task key of each row's chunk: task ``(first task of its key +
    chunk) mod n`` for split keys, a hash of the key for the others (their chunk number)."""
    n = len(task_keys)
    index = exp.Anonymous(this="pmod", expressions=[
        exp.Add(this=exp.column(names.chunk), expression=exp.Coalesce(
            this=exp.column(names.first_task), expressions=[exp.Literal.number(0)])), exp.Literal.number(n)])
    keys = exp.Array(expressions=[exp.cast(exp.Literal.number(t), DType.BIGINT) for t in task_keys])
    position = exp.cast(exp.Add(this=index, expression=exp.Literal.number(1)), DType.INT)
    task = exp.Anonymous(this="element_at", expressions=[keys, position])
    return exp.select("*", exp.alias_(task, names.task)).from_(chunked.subquery(names.chunks + "_z"))


def _chunked(plan: Plan, events: exp.Select, keys: list[str], roles: Roles, names: _SplitNames,
             sizes: _Sizes, spec_keys: bool) -> tuple[exp.Select, tuple[exp.Expr, exp.Expr]]:
    """Every row once per chunk that needs it, and the expressions of the chunk's ``[lo, hi)``
    (NULL: whole key) that the chunk function takes: columns of the rows for bounds from a
    join, computed from the chunk and the key after the shuffle for literal bounds.

    Arithmetic on the row's key bounds only: its own chunk, and an array of one chunk for
    every row but those within reach of a neighbour (no join with literal bounds, no NULL
    entries to filter out after the ``explode``)."""
    w = plan.window
    ts = exp.column(roles.ts)
    t0, length = exp.column(names.t0), exp.column(names.len)
    key_hash: exp.Expr = (exp.Anonymous(this="xxhash64", expressions=[exp.column(k) for k in keys])
                          if spec_keys else exp.Literal.number(0))  # spreads the keys that are not split
    if sizes.literals is not None:
        hashed = exp.select("*", exp.alias_(key_hash, names.hash)).from_(events.subquery(roles.events))
        bounds = exp.select("*", *(exp.alias_(e, n) for e, n in zip(sizes.literals, (names.t0, names.len,
                                                                                    names.first_task))))
        bounded = bounds.from_(hashed.subquery(roles.events))
        whole: exp.Expr = exp.column(names.hash)
    else:
        table = sizes.table
        assert table is not None
        bounded = (exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier(roles.events)),
                              exp.alias_(exp.column(names.t0, table=names.sizes), names.t0),
                              exp.alias_(exp.column(names.len, table=names.sizes), names.len))
                   .from_(events.subquery(roles.events)))
        bounded = (bounded.join(table, join_type="cross") if sizes.on is None
                   else bounded.join(table, on=sizes.on, join_type="left"))
        bounded.set("hint", exp.Hint(expressions=[exp.Anonymous(this="BROADCAST", expressions=[
            exp.to_identifier(names.sizes)])]))  # one row per big key: never shuffle the events for it
        whole = key_hash
    since = exp.paren(exp.Sub(this=ts.copy(), expression=t0.copy()))
    # floor((ts - t0) / len), exact also below t0 (a key whose hash collides with a cut key's)
    own = exp.IntDiv(this=exp.paren(exp.Sub(this=since.copy(), expression=exp.Anonymous(
        this="pmod", expressions=[since.copy(), length.copy()]))), expression=length.copy())
    with_own = exp.select("*", exp.alias_(own, names.own)).from_(bounded.subquery(names.exploded + "_b"))

    def start(chunk: exp.Expr) -> exp.Expr:
        return exp.Add(this=t0.copy(), expression=exp.Mul(this=exp.paren(chunk), expression=length.copy()))

    o = exp.column(names.own)
    neighbours: list[tuple[exp.Expr, exp.Expr]] = []  # (the row lies within reach of it, chunk)
    if plan.slide is None:
        reach = 2 * w if plan.negations[0] else w
        nxt = exp.Add(this=o.copy(), expression=exp.Literal.number(1))
        neighbours.append((exp.GTE(this=ts.copy(), expression=exp.Sub(
            this=start(nxt.copy()), expression=exp.Literal.number(reach))), nxt))
    if plan.slide is not None or plan.negations[-1]:
        prev = exp.Sub(this=o.copy(), expression=exp.Literal.number(1))
        neighbours.append((exp.LT(this=ts.copy(), expression=exp.Add(
            this=start(o.copy()), expression=exp.Literal.number(w))), prev))
    chunk_list = exp.case().when(length.copy().is_(exp.null()), exp.Array(expressions=[whole]))
    for subset in sorted(_subsets(len(neighbours)), key=len, reverse=True):
        if subset:
            chunk_list = chunk_list.when(exp.and_(*(neighbours[i][0].copy() for i in subset)), exp.Array(
                expressions=[o.copy(), *(neighbours[i][1].copy() for i in subset)]))
    chunk_list = chunk_list.else_(exp.Array(expressions=[o.copy()]))
    exploded = exp.select("*", exp.alias_(exp.Explode(this=chunk_list), names.chunk)) \
        .from_(with_own.subquery(names.exploded))
    if sizes.literals is not None:  # [lo, hi) from the chunk and the key after the shuffle: 2 columns fewer
        t0_of_key, length_of_key = (_with_hash(e, key_hash) for e in sizes.literals[:2])
        return exploded, _bounds(t0_of_key, length_of_key, exp.column(names.chunk))
    lo, hi = _bounds(t0, length, exp.column(names.chunk))
    with_lo = exp.select("*", exp.alias_(lo, names.lo), exp.alias_(hi, names.hi))
    return with_lo.from_(exploded.subquery(names.chunks + "_x")), (exp.column(names.lo), exp.column(names.hi))


def _bounds(t0: exp.Expr, length: exp.Expr, chunk: exp.Expr) -> tuple[exp.Expr, exp.Expr]:
    """``[lo, hi)`` of chunk ``chunk`` of a key cut at ``t0 + i·length``; NULL for a key not cut."""
    lo = exp.If(this=length.copy().is_(exp.null()), true=exp.null(), false=exp.Add(
        this=t0.copy(), expression=exp.Mul(this=chunk.copy(), expression=length.copy())))
    return lo, exp.Add(this=lo.copy(), expression=length.copy())


def _with_hash(tree: exp.Expr, key_hash: exp.Expr) -> exp.Expr:
    """``tree`` (a bound chosen by the key hash column) over the key hash expression itself."""
    tree = tree.copy()
    if isinstance(tree, exp.Case) and isinstance(tree.this, exp.Column):
        tree.set("this", key_hash.copy())
    return tree


def _subsets(n: int) -> list[tuple[int, ...]]:
    """Every subset of ``range(n)`` as a sorted tuple."""
    return [tuple(i for i in range(n) if bits >> i & 1) for bits in range(2 ** n)]


__all__ = [
    "CHUNK_ROWS",
    "MAX_KEYS_REPORTED",
    "MAX_SPLIT_LITERALS",
    "MIN_CHUNKS",
    "SPLIT_ROWS",
    "SplitKey",
    "streaming_query",
    "time_split_query",
]
