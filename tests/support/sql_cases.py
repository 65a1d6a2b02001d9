"""Helpers for the SQL end-to-end tests: a plan as MATCH_AGGREGATE text, job counting.

The case tables are those of :mod:`tests.support.spark_cases` (``g``, ``ts``, ``mask``, ``i``
BIGINT, ``f`` DOUBLE); symbol ``S<k>`` of a plan is DEFINEd as bit ``k`` of ``mask``,
so a row may be an instance of several symbols, exactly as the oracle sees it.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from udafs.plan import CountType, Measure, MeasureKind, Plan

VALUE_COLUMNS = ("i", "f")  # plan.columns of the kernel tests: (INT, FLOAT)


def pattern_symbols(plan: Plan) -> list[int]:
    """Indices of the symbols the pattern mentions, positive or negated."""
    return [k for k in range(len(plan.symbols)) if plan.pattern_symbols_mask >> k & 1]


def measure_sql(plan: Plan, m: Measure, columns: tuple[str, ...] = VALUE_COLUMNS) -> str:
    """One MEASURES entry, e.g. ``SUM(S1.i) AS m0`` (``columns`` names ``plan.columns``)."""
    name = f"`{m.name}`"
    if m.kind is MeasureKind.COUNT_STAR:
        return f"COUNT(*) AS {name}"
    if m.kind.funnel:
        return f"{'STEPS(*)' if m.kind is MeasureKind.STEPS else 'MAX_STEP()'} AS {name}"
    symbol = plan.symbols[m.symbol]
    if m.kind is MeasureKind.COUNT:
        return f"COUNT({symbol}) AS {name}"
    return f"{m.kind.value.upper()}({symbol}.{columns[m.column]}) AS {name}"


def window_sql(value: int, timestamp: bool, unit: str = "MICROSECONDS") -> str:
    """A WITHIN / SLIDE length of ``value`` engine units, for a BIGINT or a TIMESTAMP
    ORDER BY (``unit``: what one engine time unit is on the timestamp)."""
    return f"INTERVAL {value} {unit}" if timestamp else str(value)


def match_aggregate(plan: Plan, source: str = "cases", *, timestamp: bool = False, alias: str = "m",
                    keys: str = "g", order: str = "ts", where: str = "", strategy: str = "",
                    columns: tuple[str, ...] = VALUE_COLUMNS, unit: str = "MICROSECONDS") -> str:
    """``<source> MATCH_AGGREGATE (...) AS <alias>`` computing ``plan`` per ``keys`` (``where``:
    the WHERE clause's condition, ``strategy``: the STRATEGY clause's words, both optional;
    ``unit``: the timestamp span of one engine time unit in WITHIN / SLIDE)."""
    defines = ", ".join(f"{plan.symbols[k]} AS (mask & {1 << k}) <> 0" for k in pattern_symbols(plan))
    clauses = [f"PARTITION BY {keys}" if keys else "", f"ORDER BY {order}", f"PATTERN {plan.describe()}",
               f"DEFINE {defines}", f"WHERE {where}" if where else "",
               f"MEASURES {', '.join(measure_sql(plan, m, columns) for m in plan.measures)}"]
    if plan.within is not None:
        clauses.append(f"WITHIN {window_sql(plan.within, timestamp, unit)}")
    if plan.slide is not None:
        clauses.append(f"SLIDE {window_sql(plan.slide, timestamp, unit)}")
    if plan.count_type is not CountType.BIGINT:
        clauses.append(f"COUNT TYPE {plan.count_type.value.upper()}")
    if strategy:
        clauses.append(f"STRATEGY {strategy}")
    body = "\n  ".join(c for c in clauses if c)
    return f"{source} MATCH_AGGREGATE (\n  {body}\n) AS {alias}"


def select_sql(plan: Plan, source: str = "cases", *, timestamp: bool = False) -> str:
    """A query whose rows :func:`tests.support.spark_cases.got` reads (window bounds as engine ints)."""
    columns = ["g"]
    if plan.slide is not None:
        bound = "unix_micros({})" if timestamp else "{}"
        columns += [bound.format("window_start") + " AS window_start", bound.format("window_end") + " AS window_end"]
    columns += [f"`{m.name}`" for m in plan.measures]
    return f"SELECT {', '.join(columns)} FROM {match_aggregate(plan, source, timestamp=timestamp)}"


def jobs_started(spark: SparkSession) -> int:
    """How many Spark jobs this session has started (after the listener bus caught up)."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    ids = spark.sparkContext.statusTracker().getJobIdsForGroup(None)
    return max(ids, default=-1) + 1
