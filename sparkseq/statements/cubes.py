"""E-Cube results in Python: run a cube once, then roll up and drill down on it.

>>> import sparkseq
>>> sparkseq.register_hierarchy(spark, "sectors", [("DELL", "Computer"), ("IBM", "Computer"), ("GS", "Finance")])
ConceptHierarchy(name='sectors', parent_of={'DELL': 'Computer', 'IBM': 'Computer', 'GS': 'Finance'})
>>> spark.sql("SELECT * FROM VALUES (1, 'DELL'), (2, 'IBM'), (3, 'GS'), (4, 'GS') AS t(ts, company)"
...           ).createOrReplaceTempView("ticks")
>>> cube = sparkseq.cube(spark, "SELECT * FROM ticks MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(DELL, GS) "
...                      "CUBE (CONCEPT ROLLUP 1) TYPE BY company HIERARCHY sectors MEASURES COUNT(*) AS n) AS m")
>>> base = cube.at("SEQ(DELL, GS)")
>>> base.df.collect()
[Row(pattern='SEQ(DELL, GS)', levels=[1, 1], n=2)]
>>> sector = sparkseq.rollup(base, position=1, to="Computer")
>>> sector.df.collect(), sector.from_cube
([Row(pattern='SEQ(Computer, GS)', levels=[0, 1], n=4)], True)

The cube's DataFrame is cached, so every pattern it holds is answered by filtering
it on ``pattern`` — no new scan. A pattern outside the cube is answered by running
the same statement for that one pattern (``PATTERNS (SEQ(...))``): same source,
partitioning, windows and measures; :attr:`CubeView.from_cube` says which happened.

Operations (positions are 1-based over the pattern's elements, negations included):

* ``rollup(view, position=p, to=node)``: concept roll-up, ``node`` an ancestor of p's;
* ``rollup(view, drop=p)``: pattern roll-up, delete element p;
* ``drilldown(view, position=p, to=node)``: concept drill-down, ``node`` below p's;
* ``drilldown(view, insert=p, symbol=name)``: pattern drill-down, ``name`` becomes
  element p (``!name`` for a negation).

In SQL the same navigation is a filter on the cube's view:
``SELECT * FROM cube_view WHERE pattern = 'SEQ(Computer, QQQ, ANAT)'``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sparkseq.running.execution_paths import PathReplacer
from sparkseq.spark import hierarchies as registry
from sparkseq.spark.catalog import SessionSchemas
from sparkseq.spark.registration import engine_function
from sparkseq.statements.scripts import compile_statement, run_checked_sql
from sql_rewrites.errors import CubeError
from sql_rewrites.generation.cube_navigation import single_pattern_statement
from sql_rewrites.logical.cube import CubeElement, Cuboid
from sql_rewrites.logical.hierarchy import ConceptHierarchy, HierarchyResolver, resolve_hierarchy
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.syntax.statements import split_statements


@dataclass(frozen=True)
class Cube:
    """One E-Cube statement's result: the cached DataFrame and its cuboids."""

    spark: SparkSession
    text: str
    df: DataFrame
    query: MatchAggregateQuery
    hierarchy: ConceptHierarchy | None
    resolver: HierarchyResolver | None

    @property
    def patterns(self) -> list[str]:
        """The patterns (cuboids) the cube holds, as their ``pattern`` column values."""
        cube = self.query.cube
        assert cube is not None
        return [cube.texts[i] for i in cube.reported]

    def at(self, pattern: str) -> CubeView:
        """The cube's rows for one of its patterns.

        Raises
        ------
        CubeError
            ``pattern`` is not a cuboid of this cube.
        """
        cube = self.query.cube
        assert cube is not None
        for i in cube.reported:
            if cube.texts[i] == pattern:
                return CubeView(self, cube.cuboids[i].elements, self.df.where(F.col("pattern") == pattern), True)
        raise CubeError(f"{pattern} is not a pattern of this cube; it holds {', '.join(self.patterns)}")


@dataclass(frozen=True)
class CubeView:
    """The rows of one pattern, reached from a :class:`Cube` (see module docstring)."""

    cube: Cube
    elements: tuple[CubeElement, ...]
    df: DataFrame
    from_cube: bool

    @property
    def pattern(self) -> str:
        """The pattern as the ``pattern`` column spells it."""
        return Cuboid(self.elements).text()


def cube(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None) -> Cube:
    """Run one E-Cube statement (``PATTERN ... CUBE (...)`` or ``PATTERNS (...)``) and cache it.

    Raises
    ------
    CubeError
        ``text`` is not one statement with exactly one E-Cube MATCH_AGGREGATE, or its
        output lacks the ``pattern`` column.
    SqlRewriteError
        Any analysis error of the statement, before a job starts.
    """
    statements = split_statements(text)
    if len(statements) != 1:
        raise CubeError(f"sparkseq.cube takes one statement, got {len(statements)}")
    resolver = registry.resolver(spark, hierarchies)
    explained = compile_statement(text, statements[0], SessionSchemas(spark), resolver,
                                  functools.partial(engine_function, spark), replace=PathReplacer(spark))
    cubes = [op.query for op in explained.operators if op.query.cube is not None]
    if len(cubes) != 1:
        raise CubeError("sparkseq.cube needs exactly one E-Cube MATCH_AGGREGATE (CUBE or PATTERNS), "
                        f"found {len(cubes)}")
    df = run_checked_sql(spark, text, statements[0], explained)
    if "pattern" not in df.columns:
        raise CubeError("the statement's result must keep the cube's pattern column to navigate it")
    name = cubes[0].node.args.get("hierarchy")
    hierarchy = resolve_hierarchy(resolver, name.name) if name is not None else None
    return Cube(spark, statements[0].text, df.cache(), cubes[0], hierarchy, resolver)


def rollup(view: CubeView, *, position: int | None = None, to: str | None = None,
           drop: int | None = None) -> CubeView:
    """Concept roll-up (``position``, ``to`` an ancestor) or pattern roll-up (``drop``).

    Raises
    ------
    CubeError
        A bad position, a ``to`` that is not an ancestor, or a pattern left with no
        positive element.
    """
    elements = list(view.elements)
    if drop is not None:
        _check_position(view, drop)
        del elements[drop - 1]
    else:
        element = _element(view, position, to)
        hierarchy = _hierarchy(view)
        if to not in hierarchy.ancestors(element.name):
            raise CubeError(f"{to!r} is not an ancestor of {element.name} (its ancestors: "
                            f"{', '.join(hierarchy.ancestors(element.name)) or 'none'})")
        elements[position - 1] = _node(element, to)  # type: ignore[operator]
    return _view(view, tuple(elements))


def drilldown(view: CubeView, *, position: int | None = None, to: str | None = None,
              insert: int | None = None, symbol: str | None = None) -> CubeView:
    """Concept drill-down (``position``, ``to`` below it) or pattern drill-down (``insert``, ``symbol``).

    Raises
    ------
    CubeError
        A bad position, a ``to`` that is not below the element, or an unknown symbol.
    """
    elements = list(view.elements)
    hierarchy = _hierarchy(view)
    if insert is not None:
        if not symbol or not 1 <= insert <= len(elements) + 1:
            raise CubeError(f"insert takes a position 1..{len(elements) + 1} and a symbol")
        negated, name = symbol.startswith("!"), symbol.lstrip("!")
        if name not in hierarchy.nodes:
            raise CubeError(f"{name!r} is not a node of hierarchy {hierarchy.name}")
        elements.insert(insert - 1, CubeElement(name, (True, name), negated=negated, node=True))
    else:
        element = _element(view, position, to)
        if element.name not in hierarchy.ancestors(str(to)):
            raise CubeError(f"{to!r} is not below {element.name} in hierarchy {hierarchy.name}")
        elements[position - 1] = _node(element, str(to))  # type: ignore[operator]
    return _view(view, tuple(elements))


def _check_position(view: CubeView, position: int | None) -> None:
    if position is None or not 1 <= position <= len(view.elements):
        raise CubeError(f"positions of {view.pattern} are 1..{len(view.elements)}, got {position}")


def _element(view: CubeView, position: int | None, to: str | None) -> CubeElement:
    _check_position(view, position)
    element = view.elements[position - 1]  # type: ignore[operator]
    if to is None or not element.node:
        raise CubeError(f"element {position} of {view.pattern} is not a hierarchy node, or no 'to' node was given")
    return element


def _hierarchy(view: CubeView) -> ConceptHierarchy:
    if view.cube.hierarchy is None:
        raise CubeError("this cube's statement has no HIERARCHY to navigate")
    return view.cube.hierarchy


def _node(element: CubeElement, name: str) -> CubeElement:
    return replace(element, name=name, key=(True, name), node=True, quoted=False, exact=False)


def _view(view: CubeView, elements: tuple[CubeElement, ...]) -> CubeView:
    """The rows of ``elements``: from the cached cube if it holds them, else a new statement."""
    if all(e.negated for e in elements):
        raise CubeError("a pattern needs at least one positive element")
    text = Cuboid(elements).text()
    if text in view.cube.patterns:
        return view.cube.at(text)
    from sparkseq.statements.sql_api import sql  # the statement for one pattern, same shape as the cube's

    df = sql(view.cube.spark, single_pattern_statement(view.cube.text, elements), hierarchies=view.cube.resolver)
    types = dict(view.cube.df.dtypes)
    missing = [F.lit(None).cast(types[c]).alias(c) for c in view.cube.df.columns if c not in df.columns]
    if missing:  # measures of symbols the pattern lacks: NULL, as in the cube
        df = df.select("*", *missing).select(*view.cube.df.columns)
    return CubeView(view.cube, elements, df, False)


__all__ = ["Cube", "CubeView", "cube", "rollup", "drilldown"]
