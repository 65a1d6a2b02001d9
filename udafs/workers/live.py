"""The live operator's function: one bucket of partitions per call, state in Spark's store.

``sparkseq.running.live`` runs a MATCH_AGGREGATE over a streaming source as
``groupBy(bucket).applyInPandasWithState(live_function(...), ...)`` with an event-time
timeout. ``bucket`` is a hash of the partition key modulo a fixed number of buckets:
Spark calls the function once per bucket and micro-batch (and once more when the
bucket's timeout passes), and the function drives one
:class:`~udafs.kernels.incremental.live.LiveEvaluator` per partition key of the bucket. (One
call per key costs a Python round trip per key and batch; measured in
``bench/streaming.py --operators``.)

Input columns, by position: the bucket, the key (a canonical string: the partition
key columns encoded by Spark), the event-time column (kept so that Spark drops late
rows), the engine time ``ts``, the symbol ``mask``, then per value column its value
(NULL replaced by 0) and a validity flag — so no nullable integer passes through
pandas, which would turn it into an inexact float.

Output columns: ``key``, ``window_start``, ``window_end``, ``m0 .. mk``, ``error`` —
the engine contract's result fields (:mod:`udafs.contract`) after the key, built as
Arrow-backed pandas columns so that NULL, NaN and exact decimals reach Spark as they
are. The bucket's state is one BINARY value: every key's evaluator state, encoded by
:mod:`udafs.state_codec`, with a digest of the plan and the bucket count; state
written by another query is refused (:class:`~udafs.errors.StateError`) instead of
being read as if it were this one's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from udafs import contract, state_codec
from udafs.errors import CountOverflowError, StateError
from udafs.kernels import GroupResult
from udafs.kernels.incremental.live import LiveEvaluator, advance_all
from udafs.kernels.values import nonfinite
from udafs.plan import Plan
from udafs.workers.grouped import (
    PARTITION_SLOT,
    Verbatim,
    arrow_type,
    parse_plan,
    result_arrays,
    result_fields,
    result_rows,
)

if TYPE_CHECKING:  # imported where the worker needs it: pandas is a third of ``import sparkseq``'s time
    import pandas as pd

KEY = "key"
STATE_DDL = "state BINARY"
FIRST_VALUE = 5  # input position of the first value column (see the module docstring)


def state_digest(plan_json: str, buckets: int) -> str:
    """What the stored state must have been written for: the plan, the bucket count and,
    for plans whose carried state counts non-finite DOUBLE values apart
    (:mod:`udafs.kernels.values.nonfinite`), that layout: state an earlier sparkseq wrote for
    such a plan carried NaN-prone sums and is refused rather than misread."""
    plan = parse_plan(plan_json)
    layout = "|nonfinite=1" if plan.within is None and nonfinite.split(plan) is not None else ""
    return hashlib.sha1(f"{plan_json}|buckets={buckets}{layout}".encode()).hexdigest()[:16]


def stored_digest(blob: bytes) -> str | None:
    """The plan digest a stored bucket state was written for (None if it has none)."""
    stored = state_codec.decode(blob)
    return stored.get("digest") if isinstance(stored, dict) else None


def output_ddl(plan: Plan) -> str:
    """The function's output schema: the key, then the engine contract's result fields."""
    fields = [(KEY, contract.STRING), *result_fields(plan), (contract.ERROR, contract.STRING)]
    return ", ".join(f"{name} {sql}" for name, sql in fields)


def live_function(plan_json: str, buckets: int) -> Callable[[tuple, Iterator[pd.DataFrame], object],
                                                             Iterator[pd.DataFrame]]:
    """The ``applyInPandasWithState`` function for a plan (module docstring)."""
    digest = state_digest(plan_json, buckets)

    def run(bucket: tuple, frames: Iterator[pd.DataFrame], state: object) -> Iterator[pd.DataFrame]:
        plan = parse_plan(plan_json)
        keys = _load(plan, state, digest)
        touched = _add_rows(plan, keys, frames)
        watermark = state.getCurrentWatermarkMs()  # type: ignore[attr-defined]
        out = _advance(plan, keys, touched, watermark * 1000 + 1) if watermark > 0 else []
        _save(keys, state, digest, watermark)
        if out:
            yield _frame(plan, out)

    return run


def _load(plan: Plan, state: object, digest: str) -> dict[str, LiveEvaluator]:
    """The bucket's evaluators by key, from the stored state (none when there is none)."""
    if not state.exists:  # type: ignore[attr-defined]
        return {}
    stored = state_codec.decode(state.get[0])  # type: ignore[attr-defined]
    if not isinstance(stored, dict) or stored.get("digest") != digest:
        found = stored.get("digest") if isinstance(stored, dict) else None
        raise StateError(f"the checkpoint holds state of a different MATCH_AGGREGATE, or of an earlier sparkseq "
                         f"whose state layout differs (state digest {found}, this query's {digest}: "
                         f"{plan.describe()}); a query restarted from a checkpoint must be the same statement — "
                         "start a changed query with a new checkpoint location")
    return {k: LiveEvaluator.from_state(plan, s) for k, s in zip(stored["keys"], stored["states"])}


def _add_rows(plan: Plan, keys: dict[str, LiveEvaluator], frames: Iterator[pd.DataFrame]) -> set[str]:
    """Hand each key its rows of this batch; return the keys that got rows."""
    import pandas as pd

    parts = [f for f in frames if len(f)]
    if not parts:
        return set()
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    codes, names = pd.factorize(frame.iloc[:, 1], sort=False)
    order = np.argsort(codes, kind="stable")
    cuts = np.flatnonzero(np.diff(codes[order])) + 1
    ts, mask = frame.iloc[:, 3].to_numpy(np.int64)[order], frame.iloc[:, 4].to_numpy(np.int64)[order]
    cols = [(_values(frame.iloc[:, FIRST_VALUE + 2 * j])[order],
             frame.iloc[:, FIRST_VALUE + 2 * j + 1].to_numpy(bool)[order]) for j in range(len(plan.columns))]
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(order)]):
        name = names[codes[order[a]]]
        live = keys.get(name)
        if live is None:
            live = keys[name] = LiveEvaluator(plan)
        live.add(ts[a:b], mask[a:b], [(v[a:b], ok[a:b]) for v, ok in cols])
    return set(names)


def _values(column: pd.Series) -> np.ndarray:
    """A value column for the engine: as it is, except the plain text of a DECIMAL wider
    than 18 digits (``sparkseq.running.live.engine_value``), read as exact unscaled Python ints."""
    if column.dtype != object:
        return column.to_numpy()
    return np.array([int(text.replace(".", "")) for text in column], dtype=object)


def _advance(plan: Plan, keys: dict[str, LiveEvaluator], touched: set[str], complete_before: int
             ) -> list[tuple[str, GroupResult | str]]:
    """Advance every key that got rows or whose wake-up time has come (all together:
    :func:`advance_all`); drop idle keys. Returns per key what is final (a result, or an
    error message)."""
    due = [name for name, live in keys.items()
           if name in touched or ((t := live.wakeup()) is not None and t <= complete_before)]
    out: list[tuple[str, GroupResult | str]] = []
    for name, res in zip(due, advance_all([keys[name] for name in due], complete_before)):
        if isinstance(res, CountOverflowError):
            out.append((name, str(res.with_partition(Verbatim(PARTITION_SLOT)))))
        elif res is not None and result_rows(res):
            out.append((name, res))
        if keys[name].idle:
            del keys[name]
    return out


def _save(keys: dict[str, LiveEvaluator], state: object, digest: str, watermark: int) -> None:
    """Store the bucket's evaluators and wake the bucket when the earliest key is due."""
    if not keys:
        state.remove()  # type: ignore[attr-defined]
        return
    blob = state_codec.encode({"digest": digest, "keys": list(keys), "states": [k.to_state() for k in keys.values()]})
    state.update((blob,))  # type: ignore[attr-defined]
    due = [d for d in (k.wakeup() for k in keys.values()) if d is not None]
    if due:
        # due: the least complete_before (µs, exclusive) that helps, reached once
        # watermark * 1000 + 1 >= due; Spark times a bucket out once the watermark
        # (ms) is strictly greater than the timestamp set, and refuses one below it.
        at = -(-(min(due) - 1) // 1000) - 1
        state.setTimeoutTimestamp(max(at, watermark, 1))  # type: ignore[attr-defined]


def _frame(plan: Plan, out: list[tuple[str, GroupResult | str]]) -> pd.DataFrame:
    """The output rows of this call as pandas columns that Spark converts exactly: masked
    integer and float arrays (a NaN stays NaN, NULL stays NULL), decimals as Decimals."""
    import pandas as pd

    names = [KEY] + [name for name, _ in result_fields(plan)] + [contract.ERROR]
    columns: list[list[pa.Array]] = [[] for _ in names]
    for key, res in out:
        if isinstance(res, str):  # the generated SQL raises it, naming the partition
            n, arrays = 1, [pa.nulls(1, arrow_type(sql)) for _, sql in result_fields(plan)] + [pa.array([res])]
        else:
            n = result_rows(res)
            arrays = result_arrays(plan, res) + [pa.nulls(n, pa.string())]
        for column, array in zip(columns, [pa.array([key] * n, pa.string()), *arrays]):
            column.append(array)
    return pd.DataFrame({name: _pandas(pa.concat_arrays(c)) for name, c in zip(names, columns)})


def _pandas(array: pa.Array) -> pd.api.extensions.ExtensionArray | np.ndarray:
    """One output column for Spark's pandas-to-Arrow conversion, which masks every value
    pandas calls null: NaN in a float64 column would become NULL, a NULL in an int64
    column would make it float. Masked arrays keep both apart."""
    import pandas as pd

    valid = ~np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_integer(array.type):
        return pd.arrays.IntegerArray(array.fill_null(0).to_numpy().astype(np.int64), ~valid)
    if pa.types.is_floating(array.type):
        return pd.arrays.FloatingArray(array.fill_null(0.0).to_numpy().astype(np.float64), ~valid)
    if pa.types.is_decimal(array.type):
        return np.array([Decimal(v) if ok else None for v, ok in zip(array.to_pylist(), valid)], dtype=object)
    out = np.empty(len(array), dtype=object)  # one Python value per row: a STEPS(*) list stays one value
    for i, value in enumerate(array.to_pylist()):
        out[i] = value
    return out


__all__ = ["live_function", "output_ddl", "state_digest", "stored_digest", "KEY", "STATE_DDL"]
