"""EXPLAIN for MATCH_AGGREGATE: what the compiler made of a statement, as readable text."""

from __future__ import annotations

from collections.abc import Sequence

from sparkseq.running.live import JVM_VIEW_PREFIX as LIVE_JVM_VIEW_PREFIX
from sparkseq.running.live import VIEW_PREFIX as LIVE_VIEW_PREFIX
from sql_rewrites.clauses.windows import describe_length
from sql_rewrites.engine_contract import engine_result_type
from sql_rewrites.logical.query import MatchAggregateQuery, MeasureSpec
from sql_rewrites.logical.sql_types import OrderKind
from sql_rewrites.planning.planner import CubePaths, PathChoice
from sql_rewrites.rewriter import OperatorExplanation, StatementExplanation
from sql_rewrites.syntax.dialect import SparkSeq
from udafs.plan import MeasureKind

ENGINE_TIME = {
    OrderKind.TIMESTAMP: "microseconds since 1970-01-01 00:00:00 UTC",
    OrderKind.TIMESTAMP_NTZ: "microseconds since 1970-01-01 00:00:00 (wall clock)",
    OrderKind.INTEGRAL: "the column's value",
}
LABEL = 14  # width of the label column


def describe_statement(explained: StatementExplanation, number: int, total: int,
                       paths: Sequence[PathChoice | CubePaths | None] = ()) -> str:
    """One statement: its text, each MATCH_AGGREGATE's analysis (with ``paths[i]``, the
    execution path of operator ``i``, when known), and the Spark SQL that runs."""
    lines = [f"-- statement {number} of {total}", explained.original]
    if not explained.operators and explained.rewritten == explained.original:
        lines += ["", "(no MATCH_AGGREGATE: runs in Spark unchanged)"]
        return "\n".join(lines)
    if not explained.operators:  # seq_* aggregates split from Spark's own (sql_rewrites.generation.aggregates)
        lines += ["", "(seq_* functions computed in a grouped query of their own, joined on the GROUP BY keys)"]
    for i, operator in enumerate(explained.operators):
        lines += ["", *describe_operator(operator, paths[i] if i < len(paths) else None)]
    lines += ["", "Spark SQL:", explained.rewritten]
    return "\n".join(lines)


def describe_operator(operator: OperatorExplanation, path: PathChoice | CubePaths | None = None) -> list[str]:
    """The analysis of one MATCH_AGGREGATE, one ``label  value`` row per fact."""
    q = operator.query
    rows: list[tuple[str, str]] = _cuboids(q) if q.cube is not None else [("pattern", q.plan.describe())]
    rows += [("symbols" if i == 0 else "", f"{s.name:<{_width(q)}}  {s.origin.value.upper():<9}  "
              f"{s.condition.sql(dialect=SparkSeq)}") for i, s in enumerate(q.symbols)]
    rows.append(("partition by", ", ".join(f"{k.name} {k.column.type_text}" for k in q.partition_keys)
                 or "(none: all rows are one partition)"))
    rows.append(("order by", f"{q.order.name} {q.order.column.type_text} "
                             f"(engine time: {ENGINE_TIME[q.order.kind]})"))
    if q.uncertainty is not None:
        u = q.uncertainty
        rows.append(("uncertain", f"each event at one of {u.lo_column.name}, {u.lo_column.name} + step, ... <= "
                                  f"{u.hi_column.name} (step {_length(u.step, q.order.kind)}; NULL: {q.order.name}), "
                                  "uniform and independent; measures are expected values over the possible worlds"))
    rows.append(("within", _length(q.plan.within, q.order.kind)))
    if q.plan.slide is not None:
        rows.append(("slide", f"{_length(q.plan.slide, q.order.kind)}; windows [k*slide, k*slide + within)"))
    rows += [("measures" if i == 0 else "", f"{m.name} = {_measure(q, m)} -> {m.output_type.sql(dialect=SparkSeq)}")
             for i, m in enumerate(q.measures)]
    rows.append(("count type", q.plan.count_type.value.upper()))
    rows.append(("outputs", ", ".join(f"{o.name} {o.type_text}" for o in q.outputs)))
    if operator.function_name.startswith(LIVE_VIEW_PREFIX):
        emitted = ("each (partition, window) row once, when the watermark passes the window's end (append mode)"
                   if q.plan.slide is not None else "a running result per partition when it changed (update mode)")
        how = ("flatMapGroupsWithState per key in the JVM, SparkSeqLive" if
               operator.function_name.startswith(LIVE_JVM_VIEW_PREFIX) else "applyInPandasWithState per bucket of keys")
        rows.append(("live", f"streaming source: state per partition key ({how}), results in view "
                             f"{operator.function_name}; {emitted}"))
    else:
        rows.append(("engine", f"{operator.function_name} -> {engine_result_type(q.plan)}"))
    if isinstance(path, CubePaths):  # an E-Cube: one grouped call, or each cuboid on its path
        rows += [("path" if i == 0 else "", line) for i, line in enumerate(path.describe())]
    elif path is not None:
        rows.append(("path", path.describe()))
    rows.append(("plan", q.plan.to_json()))
    title = f"MATCH_AGGREGATE {q.alias or '(no alias)'} over {q.source_schema.name}"
    return [title, *(f"  {label:<{LABEL}}{value}" for label, value in rows)]


def _cuboids(q: MatchAggregateQuery) -> list[tuple[str, str]]:
    """An E-Cube's cuboids: pattern, levels, and whether it is evaluated or derived."""
    cube = q.cube
    assert cube is not None
    width = max(len(t) for t in cube.texts)
    rows = []
    for i, (text, cuboid) in enumerate(zip(cube.texts, cube.cuboids)):
        levels = "[" + ", ".join("-" if v is None else str(v) for v in cube.levels[i]) + "]"
        if cuboid.hidden:
            how = "hidden part: rows typed exactly as the concept"
        elif cuboid.derived_from is not None:
            how = "derived: sum of " + ", ".join(f"#{j}" for j in cuboid.derived_from)
        else:
            how = "evaluated"
        rows.append(("cuboids" if i == 0 else "", f"#{i:<3} {text:<{width}}  levels {levels:<12} {how}"))
    return rows


def _width(q: MatchAggregateQuery) -> int:
    return max(len(s.name) for s in q.symbols)


def _measure(q: MatchAggregateQuery, m: MeasureSpec) -> str:
    if m.kind is MeasureKind.COUNT_STAR:
        return "COUNT(*)"
    if q.cube is not None:
        symbol = q.cube.measure_symbols[q.measures.index(m)] or "?"
    else:
        symbol = q.plan.symbols[m.symbol] if m.symbol is not None else "?"
    if m.kind is MeasureKind.COUNT:
        return f"COUNT({symbol})"
    column = q.value_columns[m.value_column].name if m.value_column is not None else "?"
    return f"{m.kind.value.upper()}({symbol}.{column})"


def _length(value: int | None, kind: OrderKind) -> str:
    """A window length in the ORDER BY column's terms: ``10 minutes`` or ``600``."""
    return "(none)" if value is None else describe_length(value, kind.takes_intervals)


__all__ = ["describe_statement", "describe_operator"]
