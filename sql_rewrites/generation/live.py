"""The live form of an analysed MATCH_AGGREGATE: what runs it over a streaming source.

The batch rewrite groups the engine's input rows by the partition keys and calls the
engine function once per group. Over a stream the Spark layer (``sparkseq.running.live``)
instead keeps each partition's evaluator in Spark's state store and emits results as
the watermark advances. From the compiler it takes a :class:`LiveQuery`:

* ``events``: the engine's input rows — the batch rewrite's own events select
  (:func:`sql_rewrites.generation.generate.engine_events`) plus the event-time column itself,
  which carries the stream's watermark (Spark drops late rows by it); for a
  contiguity strategy also rows of no symbol, which count in contiguity ranks;
* ``output(view)``: the typed output over the relation the Spark layer registers
  with the partition keys and the engine's result fields — the batch rewrite's outer
  select, so types, NULLs and overflow errors are the same.

:func:`live_query` refuses, with :class:`~sql_rewrites.errors.StreamingError`, what a
live stream cannot answer. Pure: analysed queries in, sqlglot trees out.

The JVM live operator (``sparkseq/jvm/SparkSeqLive.java``) runs the plans
:func:`jvm_live_shape` accepts, from the plan literal :func:`jvm_live_literal` writes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sqlglot import exp

from sql_rewrites.clauses.measures import FUNNEL_FUNCTIONS
from sql_rewrites.errors import StreamingError
from sql_rewrites.generation.generate import (
    EngineInput,
    aliased,
    engine_events,
    engine_input,
    engine_roles,
    flat_output,
    result_columns,
)
from sql_rewrites.generation.jvm_path import jvm_shape, plan_literal
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.logical.sql_types import OrderKind
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.expressions import node_position
from udafs.plan import Plan, Strategy, funnel_measures


@dataclass(frozen=True)
class LiveQuery:
    """One MATCH_AGGREGATE over a stream, as the Spark layer runs it (module docstring)."""

    query: MatchAggregateQuery
    spec: EngineInput
    events: exp.Select
    event_time: str
    ts: str
    mask: str
    values: tuple[str, ...]

    @property
    def plan(self) -> Plan:
        """The engine plan (a single plan: E-Cubes are refused on streams)."""
        return self.query.plan  # type: ignore[return-value]

    @property
    def keys(self) -> tuple[str, ...]:
        """The partition key columns of ``events`` (named as the output columns)."""
        return tuple(name for name, _ in self.spec.keys)

    @property
    def order_column(self) -> str:
        """The source column of the event time (it must carry the stream's watermark)."""
        return self.query.order.column.name

    @property
    def fields(self) -> tuple[str, ...]:
        """The names the result fields must have in the relation :meth:`output` reads:
        window start, window end, one per measure, the error (:mod:`udafs.contract`)."""
        return result_columns(self.spec)

    def output(self, relation: str) -> exp.Subquery:
        """The operator's replacement: its typed output over ``relation`` (keys by name,
        then :attr:`fields`), with the operator's alias."""
        return aliased(self.query, flat_output(self.spec, relation))


def live_query(query: MatchAggregateQuery, sql: str | None = None) -> LiveQuery:
    """The live form of ``query`` (``sql``: the statement text, for error positions).

    Raises
    ------
    StreamingError
        An event time that is not a TIMESTAMP, an E-Cube, cross-event predicates or a
        strategy without SLIDE, STRICT CONTIGUITY with PARTITION BY.
    """
    check_live(query, sql)
    # contiguity ranks are counted by the live evaluator (a window function cannot run on
    # a stream), over every row: rows of no symbol are kept for them
    spec = dataclasses.replace(engine_input(query), seq=None)
    roles = engine_roles(spec)
    events, (ts, mask, *values) = engine_events(
        spec, query.node.this.copy(), extra=((roles.event_time, query.order.expression),),
        all_rows=query.single_plan.strategy.contiguous)
    return LiveQuery(query, spec, events, roles.event_time, ts, mask, tuple(values))


def check_live(query: MatchAggregateQuery, sql: str | None = None) -> None:
    """Raise :class:`StreamingError` for what a live stream cannot answer (see :func:`live_query`)."""
    node = query.node
    if query.order.kind is not OrderKind.TIMESTAMP:
        kind = "TIMESTAMP_NTZ" if query.order.kind is OrderKind.TIMESTAMP_NTZ else "numeric"
        raise StreamingError(
            f"ORDER BY {query.order.name} is {kind}; over a streaming source the event time must be a TIMESTAMP "
            "column carrying the stream's watermark (Spark's watermark needs a TIMESTAMP): compute one in the "
            "source, e.g. CAST(x AS TIMESTAMP) or timestamp_seconds(x), and set the watermark on it",
            node_position(node.args["order"], sql))
    if query.cube is not None:
        raise StreamingError("CUBE / PATTERNS (E-Cube) is not supported over a streaming source; write one "
                             "MATCH_AGGREGATE per pattern", node_position(node, sql))
    plan = query.single_plan
    if plan.uncertain is not None:
        raise StreamingError("ORDER BY ... UNCERTAIN BETWEEN (imprecise timestamps) is not supported over a streaming "
                             "source (the live evaluator takes point event times); evaluate imprecise data in batch",
                             node_position(node.args["order"], sql))
    if funnel_measures(plan) and plan.slide is None:
        funnel = next(m for m in node.args.get("measures") or [] if m.this.name.upper() in FUNNEL_FUNCTIONS)
        raise StreamingError(
            f"{funnel.this.sql(dialect=SparkSeq)} over a streaming source needs WITHIN ... SLIDE: each final window's "
            "prefixes are then counted on its own rows, while a running funnel without SLIDE would have to keep "
            "every row of the partition in the state", node_position(funnel, sql))
    if plan.extended and plan.slide is None:
        raise StreamingError(
            f"{_extensions(plan)} over a streaming source need{'s' if _single(plan) else ''} WITHIN ... SLIDE: each "
            "final window is then evaluated on its own rows, while a running result without SLIDE would have to "
            "keep every row of the partition in the state", node_position(node.args.get("where") or node, sql))
    if plan.strategy is Strategy.STRICT_CONTIGUITY and query.partition_keys:
        raise StreamingError(
            "STRICT CONTIGUITY ranks rows across all partitions of the input, but a stream's partitions are "
            "evaluated apart; use PARTITION CONTIGUITY, or no PARTITION BY", node_position(node.args["strategy"], sql))


def _extensions(plan: Plan) -> str:
    used = [text for text, on in (("cross-event predicates (WHERE)", bool(plan.predicates)),
                                  ("Kleene iterator predicates (WHERE)", bool(plan.iterator_predicates)),
                                  (f"STRATEGY {plan.strategy.name.replace('_', ' ')}",
                                   plan.strategy is not Strategy.SKIP_TILL_ANY_MATCH)) if on]
    return " and ".join(used)


def _single(plan: Plan) -> bool:
    return sum((bool(plan.predicates), bool(plan.iterator_predicates),
                plan.strategy is not Strategy.SKIP_TILL_ANY_MATCH)) == 1


def jvm_live_shape(plan: Plan) -> str | None:
    """None when the JVM live operator evaluates ``plan`` exactly, else why not (in SQL words).

    With SLIDE each window is counted on its own rows: its rows are less than WITHIN apart,
    so the window's count is the plan's count without WITHIN, and every shape the JVM path
    counts without a window is covered (middle negation, COUNT, SUM, AVG, MIN, MAX). Without
    SLIDE the running result is carried from one time group to the next: COUNT(*) and
    COUNT(X) of the JVM path's shapes, without a negation under WITHIN."""
    if plan.has_edge_negation:
        return "a leading or trailing negation is counted by the Python live operator"
    if plan.slide is not None:
        return jvm_shape(dataclasses.replace(plan, within=None, slide=None))
    if plan.columns:
        return "without SLIDE, SUM, AVG, MIN and MAX are carried by the Python live operator"
    if plan.within is not None and any(plan.negations):
        return "without SLIDE, a negation together with WITHIN is counted by the Python live operator"
    return jvm_shape(plan)


def jvm_live_literal(plan: Plan) -> str:
    """The plan as ``SparkSeqLive`` reads it: the JVM path's literal
    (:func:`sql_rewrites.generation.jvm_path.plan_literal`) of the plan each window is counted with
    (without WITHIN and SLIDE when it slides); the live window travels apart.

    Raises
    ------
    ValueError
        ``plan`` is not a JVM live shape (:func:`jvm_live_shape`).
    """
    reason = jvm_live_shape(plan)
    if reason is not None:
        raise ValueError(f"this plan cannot run on the JVM live operator: {reason}")
    return plan_literal(dataclasses.replace(plan, within=None, slide=None) if plan.slide is not None else plan)


__all__ = ["LiveQuery", "live_query", "check_live", "jvm_live_shape", "jvm_live_literal"]
