"""The SQL of each execution path, and of the statistics that choose it.

The Spark layer (:mod:`sparkseq.running.execution_paths`) asks Spark for estimates and
statistics, registers the engine functions a path calls and finds where Spark's hash
partitioning sends a chunk; every query it runs or hands back to the rewriter is built
here from plain values — the analysed operator, a :class:`~sql_rewrites.planning.planner.PathChoice`
and the names of the registered functions (:class:`PathFunctions`):

* :func:`path_output`: an engine input's typed output on a path (grouped, time split,
  streaming, JVM);
* :func:`operator_on_path` / :func:`cube_on_paths`: the operator's replacement, a
  statement alone or an E-Cube as the UNION ALL of its cuboids
  (:mod:`sql_rewrites.planning.cube_paths`);
* :func:`by_key_size`: a replacement that counts its keys as it runs (no statistics job
  before it): the rows of the keys up to a threshold on the grouped path, those of the
  bigger keys on their own path, UNION ALL;
* :func:`key_types_sql`: the query whose schema names the partition keys' types (the
  streaming UDTF's output names them). A sharing group's statistics job is
  :func:`sql_rewrites.generation.shared.statistics_sql`.

Every identifier is quoted: user text only ever enters as names and values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from sqlglot import exp

from sql_rewrites.generation.generate import EngineInput, InternalNames, aliased, engine_input, engine_query, sanitize
from sql_rewrites.generation.jvm_path import JVM_FUNCTION, jvm_query
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.logical.sql_types import DType
from sql_rewrites.planning.cube_paths import cube_branches, cube_union, cuboid_statements
from sql_rewrites.planning.planner import Path, PathChoice
from sql_rewrites.planning.timesplit import streaming_query, time_split_query
from sql_rewrites.rewriter import Replaced


@dataclass(frozen=True)
class PathFunctions:
    """The registered functions a path's statement calls: the grouped engine function
    (``engine``), the streaming UDTF (``stream``), or the time split's chunk and combine
    functions (``split``) with how its chunks are spread over tasks — ``task_keys[p]``
    a BIGINT Spark's hash partitioning sends to task ``p`` (one chunk per task), else
    hashed over ``chunk_tasks`` tasks."""

    engine: str | None = None
    stream: str | None = None
    split: tuple[str, str] | None = None
    chunk_tasks: int | None = None
    task_keys: tuple[int, ...] | None = None


def path_output(spec: EngineInput, source: exp.Expr, choice: PathChoice,
                functions: PathFunctions) -> tuple[exp.Select, str]:
    """The typed output of ``spec`` over ``source`` on ``choice``'s path, and the name of
    what computes it.

    Raises
    ------
    ValueError
        ``functions`` lacks a function the path calls, or the path refuses the plan.
    """
    if choice.path is Path.JVM:
        return jvm_query(spec, source), JVM_FUNCTION
    if choice.path is Path.STREAMING:
        return streaming_query(spec, _needed(functions.stream, choice), source), _needed(functions.stream, choice)
    if choice.path is Path.TIME_SPLIT:
        if functions.split is None:
            raise ValueError("the time-split path needs its chunk and combine functions")
        chunk, combine = functions.split
        placed = functions.task_keys
        output = time_split_query(spec, chunk, combine, source, choice.split_rows, choice.chunk_rows,
                                  None if placed else functions.chunk_tasks, choice.split_keys, placed)
        return output, chunk
    return engine_query(spec, _needed(functions.engine, choice), source), _needed(functions.engine, choice)


def path_name(choice: PathChoice, functions: PathFunctions) -> str:
    """The name :func:`path_output` reports for ``choice``'s path: what computes it.

    Raises
    ------
    ValueError
        ``functions`` lacks the function the path calls.
    """
    if choice.path is Path.JVM:
        return JVM_FUNCTION
    if choice.path is Path.TIME_SPLIT:
        if functions.split is None:
            raise ValueError("the time-split path needs its chunk and combine functions")
        return functions.split[0]
    return _needed(functions.stream if choice.path is Path.STREAMING else functions.engine, choice)


def _needed(name: str | None, choice: PathChoice) -> str:
    if name is None:
        raise ValueError(f"the {choice.path.value} path needs its registered function")
    return name


def operator_on_path(query: MatchAggregateQuery, choice: PathChoice, functions: PathFunctions) -> Replaced:
    """The operator ``query`` (no E-Cube) replaced by its statement on ``choice``'s path;
    with :attr:`~sql_rewrites.planning.planner.PathChoice.by_key_size`, only the keys over it take
    that path and the others the grouped path (:func:`by_key_size`; ``functions.engine``)."""
    spec = engine_input(query)
    if choice.by_key_size is None:
        output, name = path_output(spec, query.node.this.copy(), choice, functions)
        return aliased(query, output), name
    big = replace(choice, by_key_size=None, small_path=Path.GROUPED)
    name = path_name(big, functions)
    if choice.small_path is Path.JVM:  # the keys under the threshold counted in the JVM
        return by_key_size(query, choice.by_key_size, lambda rows: jvm_query(spec, rows),
                           lambda rows: path_output(spec, rows, big, functions)[0]), f"{JVM_FUNCTION}, {name}"
    grouped = _needed(functions.engine, PathChoice(Path.GROUPED, ""))
    return by_key_size(query, choice.by_key_size, lambda rows: engine_query(spec, grouped, rows),
                       lambda rows: path_output(spec, rows, big, functions)[0]), f"{grouped}, {name}"


def cube_on_paths(query: MatchAggregateQuery, choices: Sequence[PathChoice],
                  functions: Sequence[PathFunctions], *, by_size: int | None = None,
                  engine: str | None = None) -> Replaced:
    """An E-Cube replaced by the UNION ALL of its reported cuboids' statements, cuboid
    ``j`` on ``choices[j]`` calling ``functions[j]``; the name lists what computes them.
    With ``by_size``, only the keys over that many rows run so (:func:`by_key_size`) and
    the others the one grouped call of ``engine``.

    Raises
    ------
    ValueError
        Not one choice and one set of functions per reported cuboid; ``by_size`` without
        ``engine``.
    """
    statements = cuboid_statements(query)
    if not len(statements) == len(choices) == len(functions):
        raise ValueError(f"{len(statements)} cuboids need as many path choices and functions, got "
                         f"{len(choices)} and {len(functions)}")
    names = [path_name(c, f) for c, f in zip(choices, functions)]

    def cuboids(rows: exp.Expr) -> list:
        return [(s, path_output(s.spec, rows.copy(), c, f)[0]) for s, c, f in zip(statements, choices, functions)]

    if by_size is None:
        return cube_union(query, cuboids(query.node.this)), ", ".join(dict.fromkeys(names))
    if engine is None:
        raise ValueError("a cube whose keys are counted as it runs needs its grouped engine function")
    spec = engine_input(query)
    return (by_key_size(query, by_size, lambda rows: engine_query(spec, engine, rows),
                        lambda rows: cube_branches(query, cuboids(rows))),
            ", ".join(dict.fromkeys([engine, *names])))


def by_key_size(query: MatchAggregateQuery, threshold: int, small: Callable[[exp.Expr], exp.Expr],
                big: Callable[[exp.Expr], exp.Expr]) -> exp.Subquery:
    """The operator replaced by a statement that counts its keys as it runs::

        (WITH sized AS (SELECT *, xxhash64(<keys>) AS h FROM <source>),
              big AS (SELECT h FROM sized GROUP BY h HAVING COUNT(*) > <threshold>)
         <small(rows of sized whose h is not in big)> UNION ALL <big(rows whose h is)>) AS <alias>

    ``small`` and ``big`` build the typed output (the same columns) over a relation that
    stands where the source stood: same columns, same alias. Every row is in exactly one
    branch, and all rows of a key in the same one: exact, whatever each branch computes.
    Both branches read the one ``sized`` relation, which Spark evaluates once when it is
    not deterministic (a CTE read twice is not inlined then) and reads again otherwise; with
    no key over ``threshold``, adaptive execution drops the ``big`` branch once the
    broadcast count is known to be empty. A key's count covers every source row (an upper
    bound of its engine rows, as the statistics job's,
    :func:`sql_rewrites.generation.shared.statistics_sql`); a key whose values hash like a
    big key's (about one in 2**64) joins it, which is exact on any path.
    """
    names = InternalNames(c.name for c in query.source_schema.columns)
    sized, keys, key_hash = names("sized_source"), names("big_keys"), names("key_hash")
    source = query.node.this
    alias = _alias_of(source) or names("source")
    spec = engine_input(query)
    hashed = (exp.Anonymous(this="xxhash64", expressions=[e.copy() for _, e in spec.keys]) if spec.keys
              else exp.cast(exp.Literal.number(0), DType.BIGINT))
    counted = (exp.select(exp.column(key_hash)).from_(sized).group_by(exp.column(key_hash))
               .having(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(threshold))))

    def rows(kind: str) -> exp.Expr:
        join = (exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier(sized))).from_(sized)
                .join(keys, on=exp.EQ(this=exp.column(key_hash, table=sized), expression=exp.column(key_hash,
                                                                                                  table=keys)),
                      join_type=f"LEFT {kind}"))
        join.set("hint", exp.Hint(expressions=[exp.Anonymous(this="BROADCAST", expressions=[
            exp.to_identifier(keys)])]))  # one row per big key: never shuffle the source for it
        return join.subquery(alias)

    body = exp.union(small(rows("ANTI")), big(rows("SEMI")), distinct=False)
    body = body.with_(sized, as_=exp.select("*", exp.alias_(hashed, key_hash)).from_(source.copy()))
    body = body.with_(keys, as_=counted)
    return aliased(query, sanitize(body))  # type: ignore[arg-type]


def _alias_of(source: exp.Expr) -> str | None:
    """The name the operator's expressions may qualify source columns with: the source's
    alias, else a table's own name; None for an unaliased subquery."""
    if source.alias:
        return source.alias
    return source.name if isinstance(source, exp.Table) else None


def key_types_sql(query: MatchAggregateQuery) -> str | None:
    """A query whose schema is the operator's partition keys (None without PARTITION BY)."""
    spec = engine_input(query)
    if not spec.keys:
        return None
    select = exp.select(*(exp.alias_(e.copy(), n) for n, e in spec.keys)).from_(query.node.this.copy())
    sanitize(select)
    return query.scoped_sql(select)


__all__ = [
    "PathFunctions",
    "cube_on_paths",
    "key_types_sql",
    "operator_on_path",
    "path_output",
    "by_key_size",
    "path_name",
]
