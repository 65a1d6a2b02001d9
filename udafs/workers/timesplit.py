"""The two grouped-aggregate Arrow UDF bodies of a time-split statement.

``chunk(ts, mask, v0, ..., lo, hi)`` evaluates one time chunk of one key
(:func:`udafs.kernels.incremental.timesplit.evaluate_chunk_in_parts`; ``lo`` NULL: the whole key) and returns
its partials as bytes; ``combine(state)`` adds a key's chunk partials up and returns
the engine contract's ``array<struct<window_start, window_end, m0, ..., error>>``, like
:func:`udafs.workers.grouped.plan_aggregate`, so the generated SQL checks errors the same
way. A chunk that fails (out of memory, counts past the exact range) passes its
message on in its state; ``combine`` reports it with the partition slot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from udafs import contract, state_codec
from udafs.errors import CountOverflowError
from udafs.kernels.incremental.timesplit import (
    chunk_of_state,
    combine_chunks,
    encode_chunk,
    evaluate_chunk_in_parts,
)
from udafs.plan import Plan
from udafs.workers.faults import with_worker_fault
from udafs.workers.grouped import (
    PARTITION_SLOT,
    Verbatim,
    as_list_value,
    error_value,
    group_arrays,
    out_of_memory,
    parse_plan,
    result_arrays,
    result_fields,
)

STATE_DDL = "binary"


def chunk_aggregate(plan_json: str) -> Callable[..., pa.Scalar]:
    """The body of the chunk function of one plan: ``f(ts, mask, v0, ..., lo, hi)``."""
    def chunk(ts: pa.Array, mask: pa.Array, *rest: pa.Array) -> pa.Scalar:
        return chunk_state(parse_plan(plan_json), ts, mask, rest)

    return chunk


@with_worker_fault  # the worker's version, found by name when the closure above is unpickled
def chunk_state(p: Plan, ts: pa.Array, mask: pa.Array, rest: Sequence[pa.Array]) -> pa.Scalar:
    """One chunk's partial state as bytes: ``rest`` is the value columns, then ``lo`` and ``hi``."""
    *values, lo, hi = rest
    bound = lo[0].as_py() if len(lo) else None
    end = hi[0].as_py() if len(hi) else None
    try:
        ts_, mask_, cols = group_arrays(p, ts, mask, values)
        return pa.scalar(encode_chunk(evaluate_chunk_in_parts(p, ts_, mask_, cols, bound, end)), pa.binary())
    except CountOverflowError as exc:
        return _error_state(str(exc.with_partition(Verbatim(PARTITION_SLOT))))
    except MemoryError:
        return _error_state(out_of_memory(PARTITION_SLOT, len(ts)) + f" (time chunk from {bound})")


def combine_aggregate(plan_json: str) -> Callable[[pa.Array], pa.Scalar]:
    """The body of the combine function of one plan: ``f(state)`` over a key's chunks."""
    def combine(states: pa.Array) -> pa.Scalar:
        p = parse_plan(plan_json)
        fields = result_fields(p) + [(contract.ERROR, contract.STRING)]
        names = [n for n, _ in fields]
        chunks = []
        for raw in states.to_pylist():
            doc = state_codec.decode(raw)
            if "error" in doc:  # type: ignore[operator]
                return error_value(fields, doc["error"])  # type: ignore[index]
            chunks.append(chunk_of_state(doc))
        try:
            res = combine_chunks(p, chunks)
        except CountOverflowError as exc:
            return error_value(fields, str(exc.with_partition(Verbatim(PARTITION_SLOT))))
        arrays = result_arrays(p, res)
        return as_list_value(arrays + [pa.nulls(len(arrays[0]), pa.string())], names)

    return combine


def _error_state(message: str) -> pa.Scalar:
    return pa.scalar(state_codec.encode({"error": message}), pa.binary())
