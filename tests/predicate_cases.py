"""Extended plans (predicates, iterator predicates, strategies) as MATCH_AGGREGATE text.

The case table has ``g`` (partition), ``ts``, ``mask`` and the three value columns of
the kernel tests' ``COLUMNS3`` (INT, FLOAT, FLOAT): ``i`` BIGINT, ``f`` DOUBLE and
``s`` DOUBLE (NaN, -0.0, inf ...). Symbol ``S<k>`` is DEFINEd as bit k of ``mask``.

The SQL names predicates by symbol, so a predicate on an element whose symbol stands
at several positive positions cannot be written; :func:`sql_expressible` drops those.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession

from tests import oracle, sql_cases
from udafs.kernels.predicates import compare
from udafs.plan import CmpOp, IteratorPredicate, Plan, Strategy

COLUMNS = ("i", "f", "s")
SCHEMA = "g int, ts bigint, mask bigint, i bigint, f double, s double"


def unique_positions(plan: Plan) -> set[int]:
    """Positions whose symbol stands at no other positive position."""
    count: dict[int, int] = {}
    for e in plan.elements:
        count[e.symbol] = count.get(e.symbol, 0) + 1
    return {i for i, e in enumerate(plan.elements) if count[e.symbol] == 1}


def sql_expressible(plan: Plan) -> Plan:
    """``plan`` without the predicates SQL cannot name (repeated symbols); measures read
    columns 0 and 1 only (sums of NaN / inf compare badly)."""
    ok = unique_positions(plan)
    preds = tuple(p for p in plan.predicates if p.left in ok and p.right in ok)
    its = tuple(q for q in plan.iterator_predicates if q.element in ok)
    measures = tuple(dataclasses.replace(m, column=min(m.column, 1)) if m.column is not None else m
                     for m in plan.measures)
    return dataclasses.replace(plan, predicates=preds, iterator_predicates=its, measures=measures)


def _constant(value: int | float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


def _plus(value: int | float) -> str:
    if not value:
        return ""
    return f" + {_constant(value)}" if value > 0 else f" - {_constant(-value)}"


def _op(op: CmpOp, rnd: random.Random) -> str:
    return rnd.choice(["<>", "!="]) if op is CmpOp.NE else op.value


def where_sql(plan: Plan, seed: int = 0) -> str:
    """The WHERE condition of ``plan``'s predicates, in varied but equivalent forms: sides
    swapped with the mirrored operator; for integers also the constant moved to either
    side (for doubles each constant stays on its side: moving it would round differently)."""
    rnd = random.Random(seed)
    sym = lambda pos: plan.symbols[plan.elements[pos].symbol]  # noqa: E731
    conds = []
    for p in plan.predicates:
        left = f"{sym(p.left)}.{COLUMNS[p.left_column]}"
        right = f"{sym(p.right)}.{COLUMNS[p.right_column]}"
        exact = not compare.is_float(plan, (p.offset, p.left_offset), p.left_column, p.right_column)
        conds.append(_comparison(left, right, p.op, p.left_offset, p.offset, exact, rnd))
    for q in plan.iterator_predicates:
        s, c = sym(q.element), COLUMNS[q.column]
        exact = not compare.is_float(plan, (q.offset, q.left_offset), q.column)
        other = f"{s}[1].{c}" if q.first else f"{s}[i-1].{c}"
        running = _running_extreme(q)  # the equivalent MAX / MIN(B[1..i-1]) form, if any
        # (with doubles only for a constant on one side: the compiler refuses two, see _running_extreme)
        if running and (exact or not (q.offset and q.left_offset)) and rnd.randrange(2):
            other = f"{running}({s}[1..i-1].{c})"
        conds.append(_comparison(f"{s}[i].{c}", other, q.op, q.left_offset, q.offset, exact, rnd))
    return " AND ".join(conds)


def _running_extreme(q: IteratorPredicate) -> str | None:
    """MAX or MIN when ``B[i] OP agg(B[1..i-1]) + k`` is equivalent to ``q``, k being its
    net constant (docs/predicates-and-strategies.md section 7), else None."""
    k, op = q.offset - q.left_offset, q.op
    if not q.first:
        if op in (CmpOp.GE, CmpOp.GT) and k >= 0:
            return "MAX"
        if op in (CmpOp.LE, CmpOp.LT) and k <= 0:
            return "MIN"
        return "MAX" if op is CmpOp.EQ and k >= 0 else None
    if op in (CmpOp.GE, CmpOp.GT) and k >= 0:
        return "MIN"
    return "MAX" if op in (CmpOp.LE, CmpOp.LT) and k <= 0 else None


def _comparison(left: str, right: str, op: CmpOp, left_offset: int | float, offset: int | float, exact: bool,
                rnd: random.Random) -> str:
    """``left + left_offset OP right + offset`` in one of its equivalent spellings."""
    if exact and rnd.randrange(2):  # integers: one net constant, on either side
        net = offset - left_offset
        left_offset, offset = (0, net) if rnd.randrange(2) else (-net, 0)
    if rnd.randrange(2):
        return f"{left}{_plus(left_offset)} {_op(op, rnd)} {right}{_plus(offset)}"
    return f"{right}{_plus(offset)} {_op(op.mirrored(), rnd)} {left}{_plus(left_offset)}"


def match_aggregate(plan: Plan, source: str = "pcases", seed: int = 0, **options: object) -> str:
    """``<source> MATCH_AGGREGATE (...) AS m`` computing ``plan`` per ``g``, with its WHERE and
    (always when not the default, else on odd seeds) its STRATEGY clause; ``options`` go to
    :func:`tests.sql_cases.match_aggregate`."""
    spelled = plan.strategy is not Strategy.SKIP_TILL_ANY_MATCH or seed % 2
    return sql_cases.match_aggregate(plan, source, where=where_sql(plan, seed), columns=COLUMNS,
                                     strategy=plan.strategy.sql if spelled else "", **options)


def select_sql(plan: Plan, seed: int = 0) -> str:
    columns = ["g"] + (["window_start", "window_end"] if plan.slide else []) + [f"`{m.name}`" for m in plan.measures]
    return f"SELECT {', '.join(columns)} FROM {match_aggregate(plan, seed=seed)}"


def with_stream_ranks(groups: Sequence[oracle.Events]) -> list[oracle.Events]:
    """The groups with ``seq`` = dense rank of ts over every row of every group (STRICT
    CONTIGUITY ranks the whole input table)."""
    distinct = sorted({t for ev in groups for t in ev.ts})
    rank = {t: k for k, t in enumerate(distinct)}
    return [dataclasses.replace(ev, seq=[rank[t] for t in ev.ts]) for ev in groups]


def events_frame(spark: SparkSession, groups: Sequence[oracle.Events]) -> DataFrame:
    """All groups in one DataFrame, plus a NULL-time row per group that takes part in nothing."""
    rows = []
    for g, ev in enumerate(groups):
        ints, floats, special = ev.values
        rows += [(g, t, m, i, f, s) for t, m, i, f, s in zip(ev.ts, ev.mask, ints, floats, special)]
        rows.append((g, None, -1, 7, 7.0, 7.0))
    return spark.createDataFrame(rows, SCHEMA)
