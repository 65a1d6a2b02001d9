"""Analysis: a parsed MATCH_AGGREGATE -> a checked, typed :class:`MatchAggregateQuery`.

Every user error of SEMANTICS section 7 is raised here (or by the parser), before any
Spark job: unknown relations, columns, symbols, hierarchies and measures; unused or
duplicate symbols; measures on negated symbols; edge negation without WITHIN; a
pattern of only negations; bad, non-positive or mistyped WITHIN / SLIDE; SUM/AVG over
non-numeric columns; MIN/MAX over unsupported types; unsupported WHERE predicates
(:mod:`sql_rewrites.clauses.predicates`) and STRATEGY / WHERE with CUBE or PATTERNS.

Inputs are explicit: the schema provider (:mod:`sql_rewrites.logical.schema`) and optionally a
hierarchy resolver (:mod:`sql_rewrites.logical.hierarchy`); nothing is read from globals.

>>> from sql_rewrites.analysis.analyzer import analyze_sql
>>> schema = {"clicks": {"id": "bigint", "ts": "timestamp", "action": "string"}}
>>> [q] = analyze_sql(
...     "SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY id ORDER BY ts "
...     "PATTERN SEQ(A, B) DEFINE A AS action = 'a', B AS action = 'b' "
...     "MEASURES COUNT(*) AS n WITHIN INTERVAL 1 MINUTE) AS m", schema)
>>> [(o.name, o.type_text) for o in q.outputs]
[('id', 'BIGINT'), ('n', 'BIGINT')]
>>> q.plan.within
60000000
"""

from __future__ import annotations

from sqlglot import exp

from sql_rewrites.analysis.cube_analysis import CubeAnalysis, build_cuboids, is_cube
from sql_rewrites.clauses.measures import MeasureContext, resolve_measures
from sql_rewrites.clauses.predicates import PredicateResolver
from sql_rewrites.clauses.selection import (
    check_quantified_predicates,
    check_quantified_strategy,
    refuse_in_cube,
    strategy_of,
    with_local_conditions,
)
from sql_rewrites.clauses.symbols import (
    CompiledPattern,
    PatternSymbol,
    check_edge_negation,
    check_spelling,
    compile_pattern,
    symbol_key,
)
from sql_rewrites.clauses.uncertainty import check_precise_quantifiers, resolve_uncertainty
from sql_rewrites.clauses.uncertainty import check_where as check_uncertain_where
from sql_rewrites.clauses.windows import WindowSpec
from sql_rewrites.errors import (
    DuplicateSymbolError,
    HierarchyError,
    OrderByError,
    PartitionByError,
    UnknownSymbolError,
    UnresolvedSourceError,
    UnusedSymbolError,
)
from sql_rewrites.logical.hierarchy import ConceptHierarchy, HierarchyResolver, resolve_hierarchy
from sql_rewrites.logical.query import (
    MatchAggregateQuery,
    MeasureSpec,
    OrderKey,
    OutputColumn,
    PartitionKey,
    SymbolOrigin,
    SymbolSpec,
    check_unique_outputs,
)
from sql_rewrites.logical.schema import Catalog, ColumnSchema, RelationSchema, SchemaProvider
from sql_rewrites.logical.scope import ColumnScope
from sql_rewrites.logical.sources import SourceResolver
from sql_rewrites.logical.sql_types import ORDER_TYPES_HELP, order_kind
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement
from sql_rewrites.syntax.expressions import MatchAggregate, node_position
from udafs.plan import CountType, Measure, Plan

WINDOW_COLUMNS = ("window_start", "window_end")


class Analyzer:
    """Analyses the MATCH_AGGREGATE operators of one statement (memoised per node).

    Parameters
    ----------
    schema : SchemaProvider
        Relation name -> ``{column: Spark type}`` mapping, or a callable.
    hierarchies : HierarchyResolver, optional
        Needed only by clauses using ``HIERARCHY``.
    sql : str, optional
        The statement text, for positions in error messages.
    """

    def __init__(
        self, schema: SchemaProvider, *, hierarchies: HierarchyResolver | None = None, sql: str | None = None
    ) -> None:
        self.sql = sql
        self.hierarchies = hierarchies
        self.sources = SourceResolver(Catalog(schema), lambda n: self.analyze(n).output_schema(), sql)
        self._memo: dict[int, MatchAggregateQuery] = {}

    def analyze_tree(self, tree: exp.Expr) -> list[MatchAggregateQuery]:
        """Analyse every operator in ``tree``, innermost first."""
        nodes = list(tree.find_all(MatchAggregate, bfs=False))
        return [self.analyze(node) for node in reversed(nodes)]

    def analyze(self, node: MatchAggregate) -> MatchAggregateQuery:
        """Analyse one operator (see module docstring for the errors raised)."""
        if id(node) not in self._memo:
            self._memo[id(node)] = self._analyze(node)
        return self._memo[id(node)]

    def _analyze(self, node: MatchAggregate) -> MatchAggregateQuery:
        source = self.sources.source_schema(node)
        scope = ColumnScope(node, source, self.sql)
        keys = self._partition_keys(node, scope)
        order = self._order_key(node, scope)
        uncertainty = resolve_uncertainty(node, scope, order, self.sql)  # UNCERTAIN BETWEEN: expected values
        if is_cube(node):
            return self._analyze_cube(node, source, scope, keys, order)
        pattern = compile_pattern(node.args["pattern"], self.sql)
        if uncertainty is not None:
            check_precise_quantifiers(pattern, node_position(node.args.get("uncertain"), self.sql))
        within, slide = self._windows(node, order, pattern)
        symbols = self._symbols(node, pattern, scope)
        count_type = CountType(node.args["count_type"].name.lower() if node.args.get("count_type") else "bigint")
        if uncertainty is not None:
            count_type = CountType.DOUBLE
        ctx = MeasureContext(pattern, scope.find, count_type, self.sql)
        measures = resolve_measures(node.args.get("measures"), ctx)
        where = PredicateResolver(ctx, keys, scope.local_condition).resolve(node.args.get("where"))
        if uncertainty is not None:
            check_uncertain_where(node, where.predicates, where.iterators, self.sql)
        symbols = with_local_conditions(symbols, where.local)
        plan = Plan(
            symbols=tuple(s.name for s in symbols),
            elements=pattern.elements,
            negations=pattern.negations,
            within=within,
            slide=slide,
            measures=tuple(Measure(m.kind, m.symbol, m.value_column, m.name, m.places, m.digits) for m in measures),
            columns=tuple(v.value_type for v in ctx.value_columns),
            count_type=count_type,
            strategy=strategy_of(node),
            predicates=tuple(where.predicates),
            iterator_predicates=tuple(where.iterators),
            uncertain=None if uncertainty is None else uncertainty.step,
        )
        check_quantified_strategy(plan, node_position(node.args.get("strategy"), self.sql))
        check_quantified_predicates(plan, node_position(node.args.get("where"), self.sql))
        outputs = self._outputs(node, keys, order, measures, slide is not None)
        return MatchAggregateQuery(
            node, source, keys, order, symbols, tuple(ctx.value_columns), tuple(measures), plan, outputs,
            uncertainty=uncertainty, anchor=node.parent,
        )

    def _analyze_cube(self, node: MatchAggregate, source: RelationSchema, scope: ColumnScope,
                      keys: tuple[PartitionKey, ...], order: OrderKey) -> MatchAggregateQuery:
        """An E-Cube operator (:mod:`sql_rewrites.analysis.cube_analysis`): one MultiPlan for all cuboids."""
        refuse_in_cube(node, self.sql)
        type_column = node.args["type_by"].copy() if node.args.get("type_by") else None
        if type_column is not None:
            scope.find(type_column, "TYPE BY")
        cube = CubeAnalysis(node, self.sql, self._hierarchy(node, type_column), type_column)
        within, slide = self._windows(node, order, None)
        written = self._symbols(node, cube.written, scope)
        count_type = CountType(node.args["count_type"].name.lower() if node.args.get("count_type") else "bigint")
        ctx = MeasureContext(cube.written, scope.find, count_type, self.sql)
        measures = resolve_measures(node.args.get("measures"), ctx)
        cuboids = build_cuboids(cube, written, measures)
        table, index = cube.symbol_table(cuboids, written, measures)
        columns = tuple(v.value_type for v in ctx.value_columns)
        plan = cube.plans(cuboids, index, tuple(s.name for s in table), measures, within, slide, columns,
                          count_type)
        before = [OutputColumn(k.name, k.column.dtype) for k in keys]
        if slide is not None:
            before += [OutputColumn(name, order.column.dtype) for name in WINDOW_COLUMNS]
        outputs = cube.outputs(before, measures)
        return MatchAggregateQuery(node, source, keys, order, tuple(table), tuple(ctx.value_columns),
                                   tuple(measures), plan, outputs, cube=cube.spec(cuboids, measures),
                                   anchor=node.parent)

    # --- keys and time ------------------------------------------------------------------

    def _partition_keys(self, node: MatchAggregate, scope: ColumnScope) -> tuple[PartitionKey, ...]:
        keys = []
        for expression in node.args.get("partition_by") or []:
            if not isinstance(expression, exp.Column):
                raise PartitionByError(
                    f"PARTITION BY takes source columns, got {expression.sql(dialect=SparkSeq)}; compute it in a "
                    "subquery and partition by its alias",
                    node_position(expression, self.sql),
                )
            column = self._typed(scope.find(expression, "PARTITION BY"), "PARTITION BY", expression)
            keys.append(PartitionKey(expression.name, expression, column))
        return tuple(keys)

    def _order_key(self, node: MatchAggregate, scope: ColumnScope) -> OrderKey:
        ordered = node.args["order"].expressions
        where = node_position(node.args["order"], self.sql)
        if len(ordered) != 1 or ordered[0].args.get("desc") or not isinstance(ordered[0].this, exp.Column):
            raise OrderByError(
                f"ORDER BY takes exactly one ascending column (the event time), got "
                f"{node.args['order'].sql(dialect=SparkSeq)}",
                where,
            )
        expression = ordered[0].this
        column = self._typed(scope.find(expression, "ORDER BY"), "ORDER BY", expression)
        kind = order_kind(column.dtype)
        if kind is None:
            raise OrderByError(
                f"ORDER BY column {column.name} is {column.type_text}; the event time must be {ORDER_TYPES_HELP} "
                f"(e.g. ORDER BY CAST({column.name} AS TIMESTAMP) in a subquery)",
                node_position(expression, self.sql),
            )
        return OrderKey(expression.name, expression, column, kind)

    def _typed(self, column: ColumnSchema, context: str, expression: exp.Expr) -> ColumnSchema:
        if not column.known:
            raise UnresolvedSourceError(
                f"{context}: the type of column {column.name} cannot be derived from the source; "
                f"write CAST(... AS <type>) AS {column.name} in the subquery",
                node_position(expression, self.sql),
            )
        return column

    def _windows(
        self, node: MatchAggregate, order: OrderKey, pattern: CompiledPattern | None
    ) -> tuple[int | None, int | None]:
        window = WindowSpec.of_clauses(node.args.get("within"), node.args.get("slide"), order.name, order.kind,
                                       self.sql)
        if pattern is not None:  # E-Cube checks each cuboid instead
            check_edge_negation(pattern, window.within is not None, self.sql)
        return window.within, window.slide

    # --- symbols ------------------------------------------------------------------------

    def _symbols(
        self, node: MatchAggregate, pattern: CompiledPattern, scope: ColumnScope
    ) -> tuple[SymbolSpec, ...]:
        definitions = self._definitions(node, pattern)
        type_column = node.args["type_by"].copy() if node.args.get("type_by") else None
        if type_column is not None:
            scope.find(type_column, "TYPE BY")
        hierarchy = self._hierarchy(node, type_column)
        all_names = {s.name.casefold() for s in pattern.symbols} | {k[1] for k in definitions}
        specs = []
        for symbol in pattern.symbols:
            definition = definitions.get(symbol_key(symbol.first.this))
            if definition is not None:
                others = all_names - {symbol.name.casefold()}
                condition = scope.local_condition(definition.this, symbol.name, others)
                specs.append(SymbolSpec(symbol.index, symbol.name, condition, SymbolOrigin.DEFINE))
            else:
                specs.append(self._typed_symbol(symbol, type_column, hierarchy))
        return tuple(specs)

    def _hierarchy(self, node: MatchAggregate, type_column: exp.Column | None) -> ConceptHierarchy | None:
        name = node.args.get("hierarchy")
        if name is None:
            return None
        where = node_position(name, self.sql)
        if type_column is None:
            raise HierarchyError(
                f"HIERARCHY {name.name} needs TYPE BY <column>: hierarchy nodes are values of that column", where
            )
        return resolve_hierarchy(self.hierarchies, name.name, where)

    def _definitions(self, node: MatchAggregate, pattern: CompiledPattern) -> dict[tuple[bool, str], exp.Alias]:
        definitions: dict[tuple[bool, str], exp.Alias] = {}
        for definition in node.args.get("define") or []:
            key = symbol_key(definition.args["alias"])
            if key in definitions:
                raise DuplicateSymbolError(
                    f"symbol {definition.alias} is defined twice in DEFINE", node_position(definition, self.sql)
                )
            if pattern.find(key) is None:
                raise UnusedSymbolError(
                    f"symbol {definition.alias} is defined but not used in PATTERN {pattern.node.sql()}; "
                    "remove its definition or use it in the pattern",
                    node_position(definition, self.sql),
                )
            definitions[key] = definition
        return definitions

    def _typed_symbol(
        self, symbol: PatternSymbol, type_column: exp.Column | None, hierarchy: ConceptHierarchy | None
    ) -> SymbolSpec:
        where = node_position(symbol.first, self.sql)
        if type_column is None:
            written = f"'{symbol.name}'" if symbol.quoted else symbol.name
            raise UnknownSymbolError(
                f"symbol {written} is used in PATTERN but not defined; add it to DEFINE "
                f"({symbol.name} AS <condition>) or add TYPE BY <column> to match it against a type column",
                where,
            )
        check_spelling(symbol, self.sql)
        if hierarchy is None:
            equal = exp.EQ(this=type_column.copy(), expression=exp.Literal.string(symbol.name))
            return SymbolSpec(symbol.index, symbol.name, equal, SymbolOrigin.TYPE_BY)
        values = hierarchy.descendants_or_self(symbol.name, where)
        condition = exp.In(this=type_column.copy(), expressions=[exp.Literal.string(v) for v in values])
        return SymbolSpec(symbol.index, symbol.name, condition, SymbolOrigin.HIERARCHY)

    # --- outputs ------------------------------------------------------------------------

    def _outputs(
        self,
        node: MatchAggregate,
        keys: tuple[PartitionKey, ...],
        order: OrderKey,
        measures: list[MeasureSpec],
        windows: bool,
    ) -> tuple[OutputColumn, ...]:
        outputs = [OutputColumn(k.name, k.column.dtype) for k in keys]
        if windows:
            outputs += [OutputColumn(name, order.column.dtype) for name in WINDOW_COLUMNS]
        outputs += [OutputColumn(m.name, m.output_type) for m in measures]
        layout = f"the PARTITION BY columns, {' and '.join(WINDOW_COLUMNS)} (with SLIDE), then the MEASURES names"
        return check_unique_outputs(outputs, "MATCH_AGGREGATE", layout, node_position(node, self.sql))


def analyze(
    node: MatchAggregate,
    schema: SchemaProvider,
    *,
    hierarchies: HierarchyResolver | None = None,
    sql: str | None = None,
) -> MatchAggregateQuery:
    """Analyse one parsed MATCH_AGGREGATE node (see :class:`Analyzer`)."""
    return Analyzer(schema, hierarchies=hierarchies, sql=sql).analyze(node)


def analyze_sql(
    sql: str, schema: SchemaProvider, *, hierarchies: HierarchyResolver | None = None
) -> list[MatchAggregateQuery]:
    """Parse one statement and analyse each MATCH_AGGREGATE in it, innermost first."""
    tree = parse_statement(sql)
    return Analyzer(schema, hierarchies=hierarchies, sql=sql).analyze_tree(tree)


__all__ = ["Analyzer", "analyze", "analyze_sql", "RelationSchema"]
