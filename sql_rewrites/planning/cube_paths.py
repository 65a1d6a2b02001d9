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
* whether the cube splits, and each cuboid's path, is decided by
  :func:`sql_rewrites.planning.planner.cube_path` (a :class:`~sql_rewrites.planning.planner.CubePaths`).

Derived cuboids are evaluated directly in their own statement (no derivation needed);
hidden cuboids, which only serve derivations, are not run.

Pure: analysed queries in, sqlglot trees out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlglot import exp

from sql_rewrites.generation.generate import EngineInput, aliased, engine_input, levels_literal, sanitize, symbol_mask
from sql_rewrites.logical.cube import CubeSpec
from sql_rewrites.logical.query import MatchAggregateQuery
from udafs.multiplan import MultiPlan
from udafs.plan import Plan


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
    cube's order: what :func:`sql_rewrites.planning.planner.cube_path` decides from, without building the statements'
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


__all__ = [
    "CuboidStatement",
    "cube_branches",
    "cube_union",
    "cuboid_plans",
    "cuboid_statements",
]
