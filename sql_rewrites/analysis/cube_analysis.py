"""Analysis of an E-Cube MATCH_AGGREGATE (``PATTERN ... CUBE (...)`` or ``PATTERNS (...)``).

The cuboids (:mod:`sql_rewrites.logical.cube`) share one symbol table: every symbol the
statement writes, every ancestor a CONCEPT ROLLUP reaches, and the "exactly this
type" symbols of hidden self cuboids. Each cuboid becomes a :class:`~udafs.plan.Plan`
over that table; together they form one :class:`~udafs.multiplan.MultiPlan`, so one
engine call per group evaluates (or derives) all of them.

Measures name symbols of the statement. In the roll-up form a measure on ``X``
follows X's base positions into every cuboid (``SUM(DELL.price)`` sums the prices of
the rows bound where DELL stood, also where it became ``Computer``); it is NULL in
cuboids that deleted them. In the list form it applies where ``X`` is written, and
is NULL in the cuboids without it. The outputs are the PARTITION BY columns, the
window bounds with SLIDE, ``pattern`` (the cuboid as text), ``levels`` (per element,
the depth of its hierarchy node, root 0, NULL for other symbols), then the measures.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from sql_rewrites.clauses.symbols import CompiledPattern, compile_pattern, plan_element, symbol_key
from sql_rewrites.errors import (
    CubeError,
    EdgeNegationWithoutWindowError,
    SourcePosition,
    TooManySymbolsError,
)
from sql_rewrites.logical.cube import (
    MAX_CUBOIDS,
    CubeElement,
    CubeSpec,
    Cuboid,
    RollupChoice,
    add_derivations,
    rollup_cuboids,
)
from sql_rewrites.logical.hierarchy import ConceptHierarchy
from sql_rewrites.logical.query import MeasureSpec, OutputColumn, SymbolOrigin, SymbolSpec, check_unique_outputs
from sql_rewrites.syntax.expressions import (
    MatchAggregate,
    MatchPattern,
    MatchPatternElement,
    MatchRollup,
    node_position,
)
from udafs.multiplan import MultiPlan
from udafs.plan import MAX_SYMBOLS, CountType, Element, Measure, Plan

CUBE_COLUMNS = ("pattern", "levels")
LEVELS_TYPE = exp.DataType.build("ARRAY<INT>")


def is_cube(node: MatchAggregate) -> bool:
    """True for an E-Cube query (CUBE or PATTERNS clause)."""
    return bool(node.args.get("cube") or node.args.get("patterns"))


class CubeAnalysis:
    """Builds cuboids, symbols, plans for one E-Cube operator (used by the Analyzer)."""

    def __init__(self, node: MatchAggregate, sql: str | None, hierarchy: ConceptHierarchy | None,
                 type_column: exp.Column | None) -> None:
        self.node, self.sql, self.hierarchy, self.type_column = node, sql, hierarchy, type_column
        listed = node.args.get("patterns")
        self.patterns: list[MatchPattern] = list(listed.expressions) if listed else [node.args["pattern"]]
        for pattern in self.patterns:
            compile_pattern(pattern, sql)  # each cuboid as written: positives, symbol count
        self.written = _union(self.patterns, sql)

    # --- cuboids ------------------------------------------------------------------------

    def cuboids(self, specs: Sequence[SymbolSpec]) -> list[Cuboid]:
        """The statement's cuboids (before derivations), base first in the roll-up form."""
        by_key = {symbol_key(s.first.this): specs[s.index] for s in self.written.symbols}
        listed = [Cuboid(tuple(self._element(e, by_key) for e in p.expressions)) for p in self.patterns]
        if self.node.args.get("patterns"):
            seen: set[tuple] = set()
            for cuboid, pattern in zip(listed, self.patterns):
                if cuboid.identity in seen:
                    raise CubeError(f"PATTERNS lists {cuboid.text()} twice", node_position(pattern, self.sql))
                seen.add(cuboid.identity)
            out = listed
        else:
            choices = self._choices(listed[0])
            try:
                out = rollup_cuboids(listed[0].elements, choices, self.hierarchy)
            except ValueError as exc:
                raise CubeError(str(exc), node_position(self.node.args["cube"], self.sql)) from None
        if len(out) > MAX_CUBOIDS:
            raise CubeError(f"the cube has {len(out)} cuboids; at most {MAX_CUBOIDS} are supported in one "
                            "statement (roll up fewer positions or fewer levels)",
                            node_position(self.node.args.get("cube") or self.node, self.sql))
        return out

    def _element(self, written: MatchPatternElement, by_key: dict) -> CubeElement:
        spec = by_key[symbol_key(written.this)]
        node = spec.origin is SymbolOrigin.HIERARCHY
        key = (True, spec.name) if node else symbol_key(written.this)
        rows = Element(0) if written.negated else plan_element(0, written, self.sql)
        return CubeElement(spec.name, key, bool(written.negated), rows.kleene, node,
                           quoted=written.is_quoted_value, min_rows=rows.min_rows, max_rows=rows.max_rows)

    def _choices(self, base: Cuboid) -> dict[int, RollupChoice]:
        choices: dict[int, RollupChoice] = {}
        for item in self.node.args["cube"].expressions:
            where = node_position(item, self.sql)
            position = self._position(item, base, where)
            old = choices.get(position, RollupChoice())
            if item.kind == "CONCEPT":
                if old.concept_to is not None:
                    raise CubeError(f"position {position + 1} has two CONCEPT ROLLUP items", where)
                to = item.args.get("to")
                choices[position] = RollupChoice(to.name if to is not None else "", old.delete)
            else:
                if old.delete:
                    raise CubeError(f"position {position + 1} has two PATTERN ROLLUP items", where)
                choices[position] = RollupChoice(old.concept_to, True)
        return choices

    def _position(self, item: MatchRollup, base: Cuboid, where: SourcePosition | None) -> int:
        target = item.this
        n = len(base.elements)
        if isinstance(target, exp.Literal) and not target.is_string:
            if not target.name.isdigit() or not 1 <= int(target.name) <= n:
                raise CubeError(f"{item.kind} ROLLUP {target.name}: positions are 1..{n} "
                                f"(the elements of {base.text()}, negations included)", where)
            return int(target.name) - 1
        key = symbol_key(target)
        found = [i for i, e in enumerate(self.patterns[0].expressions) if symbol_key(e.this) == key]
        if len(found) != 1:
            what = "is not in" if not found else f"appears {len(found)} times in"
            raise CubeError(f"{item.kind} ROLLUP {target.name}: the symbol {what} {base.text()}; name the "
                            f"position by its number (1..{n})", where)
        return found[0]

    # --- symbols ------------------------------------------------------------------------

    def symbol_ids(self, cuboid: Cuboid, measures: Sequence[MeasureSpec]) -> list[tuple]:
        """Per element, its identity in the symbol table: the symbol, tagged with the
        measured symbols that read the position. ``SEQ(X, X)`` with only the first X
        measured thus gets two bits with one condition, so the engine's per-symbol
        measure reads exactly the measured position."""
        readers: list[set[int]] = [set() for _ in cuboid.elements]
        for m in measures:
            if m.symbol is None:  # COUNT(*) reads no position
                continue
            for i in self.measure_positions(cuboid, m):
                readers[i].add(m.symbol)
        return [(*e.symbol_id, tuple(sorted(r))) for e, r in zip(cuboid.elements, readers)]

    def symbol_table(self, cuboids: Sequence[Cuboid], written: Sequence[SymbolSpec],
                     measures: Sequence[MeasureSpec]) -> tuple[list[SymbolSpec], dict[tuple, int]]:
        """One SymbolSpec per distinct symbol id (:meth:`symbol_ids`) of the cuboids, and id -> index."""
        by_id: dict[tuple, SymbolSpec] = {}
        for spec, symbol in zip(written, self.written.symbols):
            origin_node = spec.origin is SymbolOrigin.HIERARCHY
            key = (True, spec.name) if origin_node else symbol_key(symbol.first.this)
            by_id[(False, key)] = spec
        table: list[SymbolSpec] = []
        index: dict[tuple, int] = {}
        for cuboid in cuboids:
            for e, sid in zip(cuboid.elements, self.symbol_ids(cuboid, measures)):
                if sid in index:
                    continue
                spec = by_id.get(e.symbol_id) or self._new_symbol(e)
                index[sid] = len(table)
                table.append(SymbolSpec(len(table), ("=" if e.exact else "") + e.name, spec.condition, spec.origin))
        if len(table) > MAX_SYMBOLS:
            raise TooManySymbolsError(f"the cube's cuboids use {len(table)} distinct symbols (with the concepts "
                                      f"they roll up to); at most {MAX_SYMBOLS} are supported",
                                      node_position(self.node.args.get("cube") or self.node, self.sql))
        return table, index

    def _new_symbol(self, e: CubeElement) -> SymbolSpec:
        assert self.hierarchy is not None and self.type_column is not None
        column = self.type_column.copy()
        if e.exact:
            return SymbolSpec(-1, e.name, exp.EQ(this=column, expression=exp.Literal.string(e.name)),
                              SymbolOrigin.TYPE_BY)
        values = self.hierarchy.descendants_or_self(e.name)
        return SymbolSpec(-1, e.name, exp.In(this=column, expressions=[exp.Literal.string(v) for v in values]),
                          SymbolOrigin.HIERARCHY)

    # --- measures -------------------------------------------------------------------------

    def measure_positions(self, cuboid: Cuboid, measure: MeasureSpec) -> tuple[int, ...]:
        """Positions (among the cuboid's elements) whose bound rows the measure reads."""
        if measure.symbol is None:
            return ()
        symbol = self.written.symbols[measure.symbol]
        key = symbol_key(symbol.first.this)
        if self.node.args.get("patterns"):
            wanted = {i for i, e in enumerate(cuboid.elements) if not e.exact and _written_key(e) == key}
        else:
            base = {i for i, e in enumerate(self.patterns[0].expressions) if symbol_key(e.this) == key}
            wanted = {i for i, e in enumerate(cuboid.elements) if e.origin in base}
        return tuple(sorted(i for i in wanted if not cuboid.elements[i].negated))

    def plans(self, cuboids: Sequence[Cuboid], index: dict[tuple, int], names: tuple[str, ...],
              measures: Sequence[MeasureSpec], within: int | None, slide: int | None, columns: tuple,
              count_type: CountType) -> MultiPlan:
        """The MultiPlan: one plan per cuboid, measures mapped to fields by position."""
        funnel = next((m for m in measures if m.kind.funnel), None)
        if funnel is not None:  # the multi-plan engine counts each cuboid's whole pattern only
            written = "STEPS(*)" if funnel.kind.name == "STEPS" else "MAX_STEP()"
            raise CubeError(
                f"measure {funnel.name}: {written} counts the prefixes of one pattern and is not "
                "available in an E-Cube query (CUBE / PATTERNS); write a MATCH_AGGREGATE per pattern for its funnel",
                node_position(self.node.args.get("cube") or self.node.args.get("patterns") or self.node, self.sql))
        plans, slots = [], []
        for cuboid in cuboids:
            sids = self.symbol_ids(cuboid, measures)
            elements, negations = _elements(cuboid, [index[sid] for sid in sids])
            if (negations[0] or negations[-1]) and within is None:
                raise EdgeNegationWithoutWindowError(
                    f"cuboid {cuboid.text()} starts or ends with a negation, which needs WITHIN; add WITHIN or "
                    "also roll up (delete) that negation", node_position(self.node.args.get("cube"), self.sql))
            mapped, slot = [], []
            for f, m in enumerate(measures):
                symbol = self._measure_symbol(cuboid, m, [index[sid] for sid in sids])
                if symbol is None and m.symbol is not None:
                    continue
                mapped.append(Measure(m.kind, symbol, m.value_column, m.name, m.places, m.digits))
                slot.append(f)
            plans.append(Plan(symbols=names, elements=elements, negations=negations, within=within, slide=slide,
                              measures=tuple(mapped), columns=columns, count_type=count_type))
            slots.append(tuple(slot))
        fields = tuple(Measure(m.kind, None, m.value_column, m.name, m.places, m.digits) for m in measures)
        return MultiPlan(tuple(plans), fields, tuple(slots), tuple(c.derived_from for c in cuboids),
                         tuple(c.hidden for c in cuboids))

    def _measure_symbol(self, cuboid: Cuboid, m: MeasureSpec, bits: list[int]) -> int | None:
        positions = self.measure_positions(cuboid, m)
        if not positions:
            return None
        symbols = {bits[i] for i in positions}
        same = {i for i, e in enumerate(cuboid.elements) if not e.negated and bits[i] in symbols}
        if len(symbols) != 1 or same != set(positions):
            raise CubeError(f"measure {m.name} reads positions {[i + 1 for i in positions]} of cuboid "
                            f"{cuboid.text()}, which hold different concepts there; a measure reads one "
                            "symbol. Measure a symbol that appears once in the base pattern, or roll its "
                            "positions up together", node_position(self.node, self.sql))
        return symbols.pop()

    def consistent(self, measures: Sequence[MeasureSpec]):  # noqa: ANN201 - Callable for add_derivations
        """The veto for :func:`add_derivations`: every measure reads the same positions
        in the coarse cuboid and its parts, and can be mapped in each."""
        def check(coarse: Cuboid, parts: Sequence[Cuboid]) -> bool:
            for m in measures:
                want = self.measure_positions(coarse, m)
                if any(self.measure_positions(p, m) != want for p in parts):
                    return False
            return True
        return check

    def spec(self, cuboids: Sequence[Cuboid], measures: Sequence[MeasureSpec]) -> CubeSpec:
        """The cuboid metadata the generated SQL and the roll-up API use."""
        return CubeSpec(tuple(cuboids), tuple(c.text() for c in cuboids),
                        tuple(c.levels(self.hierarchy) for c in cuboids),
                        tuple(tuple(self.measure_positions(c, m) for m in measures) for c in cuboids),
                        tuple(None if m.symbol is None else self.written.symbols[m.symbol].name for m in measures))

    def outputs(self, before: list[OutputColumn], measures: Sequence[MeasureSpec]) -> tuple[OutputColumn, ...]:
        """Keys and window bounds, then ``pattern`` and ``levels``, then the measures."""
        outputs = [*before, OutputColumn("pattern", exp.DataType.build("STRING")),
                   OutputColumn("levels", LEVELS_TYPE)]
        outputs += [OutputColumn(m.name, m.output_type) for m in measures]
        layout = ("the PARTITION BY columns, window_start and window_end (with SLIDE), pattern, levels, then the "
                  "MEASURES names")
        return check_unique_outputs(outputs, "this E-Cube MATCH_AGGREGATE", layout, node_position(self.node, self.sql))


def build_cuboids(analysis: CubeAnalysis, written: Sequence[SymbolSpec],
                  measures: Sequence[MeasureSpec]) -> list[Cuboid]:
    """The statement's cuboids with derivations (and their hidden parts) added."""
    return add_derivations(analysis.cuboids(written), analysis.hierarchy, analysis.consistent(measures))


def _written_key(e: CubeElement) -> tuple[bool, str]:
    return (e.quoted, e.name) if e.quoted else (False, e.name.casefold())


def _elements(cuboid: Cuboid, bits: list[int]) -> tuple[tuple[Element, ...], tuple[int, ...]]:
    elements: list[Element] = []
    negations = [0]
    for e, bit in zip(cuboid.elements, bits):
        if e.negated:
            negations[-1] |= 1 << bit
        else:
            elements.append(Element(bit, *e.rows))
            negations.append(0)
    return tuple(elements), tuple(negations)


def _union(patterns: Sequence[MatchPattern], sql: str | None) -> CompiledPattern:
    """All written elements as one pattern: numbers the statement's symbols once."""
    elements = [e.copy() for p in patterns for e in p.expressions]
    return compile_pattern(MatchPattern(expressions=elements), sql, whole=False)


__all__ = ["CubeAnalysis", "CubeSpec", "build_cuboids", "is_cube", "CUBE_COLUMNS"]
