"""Helpers for the Spark end-to-end tests: many oracle groups in one table, one query.

A *case* is a list of groups (``oracle.Events``) evaluated with one plan. The table
has columns ``g`` (group number), ``ts``, ``mask``, ``i`` (BIGINT) and ``f``
(DOUBLE), matching the kernel tests' ``COLUMNS = (INT, FLOAT)``; a few extra rows
with a NULL ``ts`` must be ignored by every query.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal

from pyspark.sql import DataFrame, Row, SparkSession

from tests.support import oracle
from tests.support.doubles import same_double
from udafs.plan import Plan

SCHEMA = "g int, ts bigint, mask bigint, i bigint, f double"
Key = tuple[int, int | None]  # (group, window_start)


def events_frame(spark: SparkSession, groups: Sequence[oracle.Events]) -> DataFrame:
    """All groups in one DataFrame, plus a NULL-time row per group that takes part in nothing."""
    rows = []
    for g, ev in enumerate(groups):
        ints, floats = ev.values
        rows += [(g, t, m, i, f) for t, m, i, f in zip(ev.ts, ev.mask, ints, floats)]
        rows.append((g, None, -1, 7, 7.0))
    return spark.createDataFrame(rows, SCHEMA)


def expected(plan: Plan, groups: Sequence[oracle.Events]) -> dict[Key, list[object]]:
    """The oracle's rows per (group, window_start); groups without instances have none."""
    want: dict[Key, list[object]] = {}
    for g, ev in enumerate(groups):
        if not any(m & plan.pattern_symbols_mask for m in ev.mask):
            continue
        for ws, _, vals in oracle.evaluate(ev, plan):
            want[(g, ws)] = vals
    return want


def measure_names(plan: Plan) -> list[str]:
    return [m.name or f"m{j}" for j, m in enumerate(plan.measures)]


def got(plan: Plan, rows: Iterable[Row], key: str = "g") -> dict[Key, list[object]]:
    """Query rows in the shape of :func:`expected`; checks window_end = start + WITHIN."""
    out: dict[Key, list[object]] = {}
    for r in rows:
        ws = r["window_start"] if plan.slide else None
        if plan.slide:
            assert r["window_end"] == ws + plan.within
        k = (r[key], ws)
        assert k not in out, f"duplicate output row {k}"
        out[k] = [r[n] for n in measure_names(plan)]
    return out


def assert_same(plan: Plan, have: dict[Key, list[object]], want: dict[Key, list[object]]) -> None:
    """Same rows; exact values equal, floats close (NaN equal to NaN), NULL where the oracle says None."""
    assert sorted(have, key=repr) == sorted(want, key=repr)
    for k, w in want.items():
        for m, hv, wv in zip(plan.measures, have[k], w):
            where = (k, m)
            if wv is None or hv is None:
                assert hv is None and wv is None, (where, hv, wv)
            elif isinstance(hv, float):
                assert same_double(hv, float(wv)), (where, hv, wv)
            else:
                assert isinstance(hv, (int, Decimal)) and hv == wv, (where, hv, wv)
