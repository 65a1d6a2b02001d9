"""Derived sources: Spark functions sqlglot cannot type get their Spark return type."""

from __future__ import annotations

import pytest

from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.errors import UnresolvedSourceError

SCHEMA = {"r": {"k": "int", "n": "bigint", "s": "string", "t": "timestamp"}}
QUERY = ("SELECT * FROM (SELECT k, {} AS x, s FROM r) MATCH_AGGREGATE (PARTITION BY k ORDER BY x "
         "PATTERN SEQ(a) TYPE BY s WITHIN INTERVAL 1 MINUTE SLIDE INTERVAL 1 MINUTE) AS m")


@pytest.mark.parametrize(("expression", "want"), [
    ("timestamp_seconds(n)", "TIMESTAMP"),
    ("TIMESTAMP_MILLIS(n)", "TIMESTAMP"),
    ("timestamp_micros(n) + INTERVAL 1 SECOND", "TIMESTAMP"),
    ("to_timestamp_ntz(s)", "TIMESTAMP_NTZ"),
    ("date_trunc('hour', t)", "TIMESTAMP"),
    ("make_timestamp(2020, 1, 1, 0, 0, k)", "TIMESTAMP"),
])
def test_time_functions_are_typed(expression: str, want: str) -> None:
    [query] = analyze_sql(QUERY.format(expression), SCHEMA)
    assert query.order.column.type_text == want
    assert [o.type_text for o in query.outputs if o.name.startswith("window_")] == [want, want]


def test_unknown_functions_still_ask_for_a_cast() -> None:
    with pytest.raises(UnresolvedSourceError, match=r"write CAST\(\.\.\. AS <type>\) AS x"):
        analyze_sql(QUERY.format("my_udf(n)"), SCHEMA)
