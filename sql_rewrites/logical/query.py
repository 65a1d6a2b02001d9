"""The typed logical form of one MATCH_AGGREGATE, produced by analysis.

Everything generation needs is here, resolved and checked: source columns, keys,
event time, one condition per symbol, value columns, measures, the engine plan and
the output columns with their exact SQL types (SEMANTICS section 1: PARTITION BY
columns, then ``window_start``/``window_end`` only with SLIDE, then the measures).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from sql_rewrites.errors import DuplicateOutputColumnError, SourcePosition
from sql_rewrites.logical.cube import CubeSpec
from sql_rewrites.logical.schema import ColumnSchema, RelationSchema
from sql_rewrites.logical.sources import in_scope
from sql_rewrites.logical.sql_types import OrderKind, type_text
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.expressions import MatchAggregate
from udafs.multiplan import MultiPlan
from udafs.plan import MeasureKind, Plan, ValueType


class SymbolOrigin(str, enum.Enum):
    """Where a symbol's condition comes from."""

    DEFINE = "define"
    TYPE_BY = "type_by"
    HIERARCHY = "hierarchy"


@dataclass(frozen=True)
class PartitionKey:
    """A PARTITION BY column: output name, source expression and type."""

    name: str
    expression: exp.Expr
    column: ColumnSchema


@dataclass(frozen=True)
class OrderKey:
    """The ORDER BY (event time) column and how it maps to engine int64 time."""

    name: str
    expression: exp.Expr
    column: ColumnSchema
    kind: OrderKind


@dataclass(frozen=True)
class Uncertainty:
    """``UNCERTAIN BETWEEN lo AND hi STEP step``: the columns holding each event's first and
    last possible time (typed like ORDER BY) and the step between possible times, in
    engine units."""

    lo: exp.Column
    hi: exp.Column
    lo_column: ColumnSchema
    hi_column: ColumnSchema
    step: int


@dataclass(frozen=True)
class SymbolSpec:
    """Symbol ``index`` (mask bit ``index``) and its row condition over the source."""

    index: int
    name: str
    condition: exp.Expr
    origin: SymbolOrigin


@dataclass(frozen=True)
class ValueColumn:
    """A source column carried to the engine for SUM/MIN/MAX/AVG (``Plan.columns``)."""

    name: str
    expression: exp.Expr
    column: ColumnSchema
    value_type: ValueType
    to_engine: Callable[[exp.Expr], exp.Expr]


@dataclass(frozen=True)
class MeasureSpec:
    """One output measure: plan entry, engine field type and conversion to SQL type."""

    name: str
    kind: MeasureKind
    symbol: int | None
    value_column: int | None
    engine_type: str
    output_type: exp.DataType
    from_engine: Callable[[exp.Expr], exp.Expr]
    places: int = 0  # AVG over a DECIMAL column: udafs.plan.Measure.places and .digits
    digits: int = 0


@dataclass(frozen=True)
class OutputColumn:
    """A column of the operator's result."""

    name: str
    dtype: exp.DataType

    @property
    def type_text(self) -> str:
        """Spark SQL text of the type, e.g. ``BIGINT``."""
        return type_text(self.dtype)


def check_unique_outputs(outputs: list[OutputColumn], what: str, layout: str,
                         where: SourcePosition | None) -> tuple[OutputColumn, ...]:
    """``outputs`` as a tuple, checked to name no column twice (case-insensitively).

    Raises
    ------
    DuplicateOutputColumnError
        Naming the clash, the output ``layout`` and how to fix it.
    """
    seen: set[str] = set()
    for output in outputs:
        if output.name.casefold() in seen:
            raise DuplicateOutputColumnError(
                f"{what} would output two columns named {output.name}; output columns are {layout}; "
                "rename the measure", where)
        seen.add(output.name.casefold())
    return tuple(outputs)


@dataclass(frozen=True)
class MatchAggregateQuery:
    """One analysed MATCH_AGGREGATE (see module docstring)."""

    node: MatchAggregate
    source_schema: RelationSchema
    partition_keys: tuple[PartitionKey, ...]
    order: OrderKey
    symbols: tuple[SymbolSpec, ...]
    value_columns: tuple[ValueColumn, ...]
    measures: tuple[MeasureSpec, ...]
    plan: Plan | MultiPlan
    outputs: tuple[OutputColumn, ...]
    cube: CubeSpec | None = None  # E-Cube queries: plan is a MultiPlan, one plan per cuboid
    uncertainty: Uncertainty | None = None  # imprecise timestamps: measures are expected values
    #: Where the operator stood when it was analysed (its parent then): once the rewrite has
    #: replaced the operator in its statement, :meth:`scoped_sql` finds the CTEs from here.
    anchor: exp.Expr | None = field(default=None, compare=False, repr=False)

    @property
    def alias(self) -> str:
        """The operator's alias (``AS m``), or ``""``."""
        return self.node.alias

    def reads_table(self, name: str) -> bool:
        """True when the operator's source is the table or view ``name`` itself (case-insensitive),
        not a subquery or join."""
        source = self.node.this
        return isinstance(source, exp.Table) and source.name.casefold() == name.casefold()

    def scoped_sql(self, select: exp.Select | None = None) -> str:
        """``select`` over the operator's source (default ``SELECT *`` of it) as Spark SQL,
        with the statement's CTEs visible at the operator: Spark analyses it on its own."""
        query = exp.select("*").from_(self.node.this.copy()) if select is None else select
        where = self.node if self.node.parent is not None or self.anchor is None else self.anchor
        return in_scope(query, where).sql(dialect=SparkSeq)

    @property
    def single_plan(self) -> Plan:
        """The plan of an operator that is no E-Cube (whose plan is a MultiPlan)."""
        if not isinstance(self.plan, Plan):
            raise TypeError("an E-Cube MATCH_AGGREGATE has one plan per cuboid (a MultiPlan), not one Plan")
        return self.plan

    def output_schema(self) -> RelationSchema:
        """The result as a relation schema (for operators reading this one)."""
        columns = tuple(ColumnSchema(o.name, o.dtype, o.type_text) for o in self.outputs)
        return RelationSchema(self.alias or "match_aggregate", columns, derived=True)
