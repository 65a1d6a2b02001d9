"""All query statements' results of a workload from one Spark job.

A workload's statements run lazily (:mod:`sparkseq.statements.workloads`): each query statement is
a DataFrame that reads its rows from its group's cached pass when it is used, so
reading every statement's result is one Spark job per statement. Here the query
statements' DataFrames become one *result table* instead — a union of per-statement
projections with a statement-number column — read by one job:

* statements whose results have the same column types share one *slot* of columns
  (``__sparkseq_r<slot>_<column>``, positional, so any names and duplicates survive);
  a row carries its statement's number and nulls in every other slot, so the table is
  as wide as the distinct result layouts, not as the number of statements;
* :func:`collect_results` collects it with one ``toArrow()`` and splits it on the driver
  (by runs of rows of one statement: :func:`rows_by_statement`), each statement's Arrow
  table typed and named as its own DataFrame;
* :func:`write_results` writes it with one job, partitioned by statement number
  (``<output>/__sparkseq_statement=<n>/``, Parquet), for results too big for the driver;
  each statement's DataFrame then reads its own partition.

Statements that only select a sharing group member's columns do not need a branch of
their own: one *routed* select over the group's pass gives all of them their rows
(:mod:`sql_rewrites.generation.routed_results`; :class:`Routed` here), so the pass is read once.

Pure Spark plumbing: what the statements compute is decided by the workload's plan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

STATEMENT_COLUMN = "__sparkseq_statement"


def _slot_column(slot: int, column: int) -> str:
    return f"__sparkseq_r{slot}_{column}"


@dataclass(frozen=True)
class ResultLayout:
    """Where each statement's columns are in the result table: statement number ->
    (slot, the statement's column names, its schema)."""

    statements: dict[int, tuple[int, tuple[str, ...], T.StructType]]
    schema: T.StructType  # the result table's

    def columns(self, number: int) -> list[Column]:
        """Statement ``number``'s columns of the result table, named as its own."""
        slot, names, _ = self.statements[number]
        return [F.col(_slot_column(slot, j)).alias(name) for j, name in enumerate(names)]

    def targets(self, number: int) -> tuple[str, ...]:
        """The result table's columns holding statement ``number``'s columns, in order."""
        slot, names, _ = self.statements[number]
        return tuple(_slot_column(slot, j) for j in range(len(names)))


@dataclass(frozen=True)
class Routed:
    """Statements whose rows one select over a group's pass gives (module docstring):
    ``schemas`` holds each one's result columns by statement number (no DataFrame of its
    own is needed); ``select(layout)`` returns :data:`STATEMENT_COLUMN` and their target
    columns (:meth:`ResultLayout.targets`) of the result table."""

    schemas: Mapping[int, T.StructType]
    select: Callable[[ResultLayout], DataFrame]

    @property
    def numbers(self) -> frozenset[int]:
        return frozenset(self.schemas)


def result_table(frames: Sequence[tuple[int, DataFrame]], routed: Sequence[Routed] = ()
                 ) -> tuple[DataFrame, ResultLayout]:
    """One DataFrame holding the rows of every statement: a union of a projection of each
    ``(statement number, DataFrame)`` in ``frames``, and of one select per :class:`Routed`
    for the statements it routes (module docstring). ``frames`` and ``routed`` are not both
    empty, and no statement is in both."""
    schemas = {number: frame.schema for number, frame in frames}
    for r in routed:
        schemas.update(r.schemas)
    slots: dict[tuple[str, ...], int] = {}
    slot_types: list[list[T.DataType]] = []
    statements: dict[int, tuple[int, tuple[str, ...], T.StructType]] = {}
    for number in sorted(schemas):
        schema = schemas[number]
        types = [f.dataType for f in schema.fields]
        key = tuple(t.json() for t in types)
        if key not in slots:
            slots[key] = len(slots)
            slot_types.append(types)
        statements[number] = (slots[key], tuple(schema.names), schema)
    layout = ResultLayout(statements, T.StructType())

    def completed(branch: DataFrame) -> DataFrame:  # every column of the table, typed NULL where not filled
        projection = [F.col(STATEMENT_COLUMN).cast("int").alias(STATEMENT_COLUMN)]
        for s, types in enumerate(slot_types):
            for j, data_type in enumerate(types):
                name = _slot_column(s, j)
                projection.append(F.col(name) if name in branch.columns else F.lit(None).cast(data_type).alias(name))
        return branch.select(*projection)

    branches = [completed(r.select(layout)) for r in routed]
    for number, frame in frames:
        own = frame.toDF(*layout.targets(number))
        branches.append(completed(own.select(F.lit(number).alias(STATEMENT_COLUMN), "*")))
    table = branches[0]
    for branch in branches[1:]:
        table = table.union(branch)
    return table, ResultLayout(statements, table.schema)


def collect_results(frames: Sequence[tuple[int, DataFrame]], routed: Sequence[Routed] = ()) -> dict[int, pa.Table]:
    """Every statement's rows as an Arrow table, from one Spark job (``toArrow``), by
    statement number; columns named and typed as the statement's DataFrame (or its routed
    schema) gives them (``frames``, ``routed``: :func:`result_table`)."""
    if not frames and not routed:
        return {}
    table, layout = result_table(frames, routed)
    collected = table.toArrow()
    by_statement = rows_by_statement(collected)
    out = {}
    for number, (slot, names, schema) in layout.statements.items():
        rows = by_statement.get(number, collected.slice(0, 0))
        arrays = [rows.column(_slot_column(slot, j)) for j in range(len(names))]
        # the union made every column nullable: each statement's own nullability back
        fields = [pa.field(name, array.type, nullable=own.nullable)
                  for name, array, own in zip(names, arrays, schema.fields)]
        out[number] = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    return out


#: Rows per run of one statement below which :func:`rows_by_statement` sorts instead of
#: slicing: a slice costs about 10 µs, a sort and gather about 60 ns a row (ad hoc, 20 M
#: rows in 2,000 chunks: by 14,000 runs 0.16 s, by sorting and one gather 1.2 s).
SHORT_RUN_ROWS = 128


def rows_by_statement(table: pa.Table) -> dict[int, pa.Table]:
    """The rows of a collected result table by statement number (:data:`STATEMENT_COLUMN`,
    not null), each statement's in the order they have in ``table``.

    The rows come in runs of one statement (a union branch's rows; a pass's rows of one
    member per engine call), so each run is a zero-copy slice of ``table``; a table of runs
    shorter than :data:`SHORT_RUN_ROWS` on average is first ordered by statement with a
    stable sort (one gather) instead."""
    if not table.num_rows:
        return {}
    numbers = table.column(STATEMENT_COLUMN).combine_chunks().to_numpy(zero_copy_only=False)
    starts = _run_starts(numbers)
    if len(starts) * SHORT_RUN_ROWS > len(numbers):
        # numbers of 16 bits sort by radix: about 4x faster than int32 for millions of rows
        order = np.argsort(numbers.astype(np.int16) if numbers.max() < 2**15 else numbers, kind="stable")
        table, numbers = table.combine_chunks().take(pa.array(order)), numbers[order]
        starts = _run_starts(numbers)
    ends = np.append(starts[1:], len(numbers))
    runs: dict[int, list[pa.Table]] = {}
    for number, start, end in zip(numbers[starts].tolist(), starts.tolist(), ends.tolist()):
        runs.setdefault(number, []).append(table.slice(start, end - start))
    return {number: pa.concat_tables(pieces) for number, pieces in runs.items()}


def _run_starts(numbers: np.ndarray) -> np.ndarray:
    """The first row of each run of equal values in ``numbers`` (not empty)."""
    return np.concatenate(([0], np.flatnonzero(numbers[1:] != numbers[:-1]) + 1))


def write_results(spark: SparkSession, frames: Sequence[tuple[int, DataFrame]], output: str | Path, *,
                  mode: str = "error", routed: Sequence[Routed] = ()) -> dict[int, DataFrame]:
    """Write every statement's rows with one Spark job, Parquet partitioned by statement
    number under ``output`` (``mode``: Spark's save mode; ``append`` adds statements to an
    earlier write; ``routed``: :func:`result_table`); returns each statement's DataFrame
    over its partition, by statement number (reading one is a job of its own)."""
    if not frames and not routed:
        return {}
    table, layout = result_table(frames, routed)
    path = str(output)
    table.write.partitionBy(STATEMENT_COLUMN).mode(mode).parquet(path)
    # the result table's schema, given: no inference, and a statement without rows (no
    # partition directory) reads as empty
    written = spark.read.schema(layout.schema).parquet(path)
    return {number: written.where(F.col(STATEMENT_COLUMN) == number).select(*layout.columns(number))
            for number in layout.statements}


__all__ = ["SHORT_RUN_ROWS", "STATEMENT_COLUMN", "ResultLayout", "Routed", "collect_results", "result_table",
           "rows_by_statement", "write_results"]
