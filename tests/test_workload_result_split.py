"""A collected result table split by statement (``sparkseq.running.workload_results.rows_by_statement``),
against filtering it statement by statement; no Spark session."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkseq.running.workload_results import SHORT_RUN_ROWS, STATEMENT_COLUMN, rows_by_statement


@st.composite
def collected_tables(draw: st.DrawFn) -> pa.Table:
    """A table of statement numbers and row ids in runs (long or short), cut into chunks anywhere."""
    runs = draw(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 3 * SHORT_RUN_ROWS)), max_size=12)
                | st.lists(st.tuples(st.integers(0, 6), st.integers(1, 3)), max_size=60))
    numbers = np.array([n for n, length in runs for _ in range(length)], dtype=np.int32)
    rows = pa.table({STATEMENT_COLUMN: numbers, "row": np.arange(len(numbers), dtype=np.int64),
                     "value": pa.array([None if i % 5 == 0 else float(i) for i in range(len(numbers))])})
    cuts = sorted(draw(st.lists(st.integers(0, len(numbers)), max_size=6)))
    pieces = [rows.slice(lo, hi - lo) for lo, hi in zip([0, *cuts], [*cuts, len(numbers)])]
    return pa.concat_tables(pieces)


@settings(max_examples=300, deadline=None)
@given(collected_tables())
def test_each_statement_gets_exactly_its_rows_in_order(table: pa.Table) -> None:
    split = rows_by_statement(table)
    numbers = table.column(STATEMENT_COLUMN).to_numpy()
    assert set(split) == set(numbers.tolist())
    for number, rows in split.items():
        expected = table.filter(pa.array(numbers == number))
        assert rows.schema == table.schema
        assert rows.combine_chunks().equals(expected.combine_chunks())


def test_an_empty_table_has_no_statements() -> None:
    empty = pa.table({STATEMENT_COLUMN: pa.array([], pa.int32()), "x": pa.array([], pa.int64())})
    assert rows_by_statement(empty) == {}
