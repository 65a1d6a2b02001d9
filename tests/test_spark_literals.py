"""Literals mean in sparkseq what they mean in Spark.

Spark itself is the reference: random literals of every form Spark accepts are
evaluated by Spark as the user wrote them and as sparkseq prints them (the printer
every rewritten statement goes through), and the string values sparkseq's dialect
reads must be the values Spark reads. Then the issue's reproductions end to end.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

import sparkseq
from sql_rewrites.errors import SqlParseError, SqlRewriteError
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement

# --- literal source texts ----------------------------------------------------------------

PLAIN = st.characters(codec="utf-8", exclude_characters="'\"\\", exclude_categories=("Cs",))
ESCAPED = st.sampled_from(list("0bnrtZ%_'\"\\afvx7uU9 \n") + ["\u00e9"])


def _hex(width: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(0, high).map(lambda v: f"{v:0{width}x}")


def _fragment(quote: str) -> st.SearchStrategy[str]:
    """One piece of a quoted literal's body (its quote character is ``quote``)."""
    other = '"' if quote == "'" else "'"
    return st.one_of(
        st.text(PLAIN, min_size=1, max_size=4),
        st.just(quote * 2),  # a doubled quote: one quote
        st.just(other),
        ESCAPED.map(lambda c: "\\" + c),
        _hex(4, 0xFFFF).map(lambda h: "\\u" + h),  # surrogates included
        st.sampled_from(["\\uD83D\\uDE00", "\\ud800", "\\u12", "\\U0001F600", "\\U0000004a"]),
        # control characters, written as such and as escapes (sqlglot prints \x07 as \a: Spark's 'a')
        st.sampled_from(["\x07", "\x0b", "\x0c", "\x00", "\\u0007", "\\013", "\\014"]),
        _hex(8, 0x10FFFF).map(lambda h: "\\U" + h),
        st.integers(0, 0o777).map(lambda v: f"\\{v:03o}"),  # 3 octal digits, first 0-7
    )


@st.composite
def quoted(draw: st.DrawFn) -> str:
    quote = draw(st.sampled_from(["'", '"']))
    body = "".join(draw(st.lists(_fragment(quote), max_size=6)))
    if body.endswith("\\"):  # a backslash would escape the closing quote
        body += "\\"
    return quote + body + quote


@st.composite
def raw(draw: st.DrawFn) -> str:
    quote = draw(st.sampled_from(["'", '"']))
    body = draw(st.text(st.characters(codec="utf-8", exclude_characters=quote, exclude_categories=("Cs",)),
                        max_size=6))
    return draw(st.sampled_from("rR")) + quote + body + quote


@st.composite
def string_literal(draw: st.DrawFn) -> str:
    """One string constant: literals written one after another are one in Spark."""
    parts = draw(st.lists(st.one_of(quoted(), raw()), min_size=1, max_size=3))
    text = parts[0]
    for part in parts[1:]:
        text += draw(st.sampled_from([" ", "\n", " /* c */ ", "\n-- c\n"])) + part
    return text


BINARY = st.one_of(st.binary(max_size=5).map(lambda b: f"X'{b.hex()}'"), st.sampled_from(["X'4'", "x'abc'"]))
TYPED = st.one_of(
    st.dates().map(lambda d: f"DATE '{d.isoformat()}'"),
    st.datetimes().map(lambda t: f"TIMESTAMP '{t.isoformat(sep=' ')}'"),
    st.datetimes().map(lambda t: f"TIMESTAMP_NTZ '{t.isoformat(sep=' ')}'"),
    st.sampled_from(["1e3", "1.5BD", "10L", "7S", "3Y", "1.0D", "2.5", "-0.0"]),
)
UNITS = ["DAY", "DAYS", "HOUR", "HOURS", "MINUTE", "MINUTES", "SECOND", "SECONDS", "MILLISECOND",
         "MICROSECONDS", "WEEK"]
INTERVALS = st.one_of(
    st.builds(lambda n, u: f"INTERVAL {n} {u}", st.integers(-99, 99), st.sampled_from(UNITS)),
    st.builds(lambda n, u: f"INTERVAL '{n}' {u}", st.integers(-99, 99), st.sampled_from(UNITS[:8])),
    st.builds(lambda a, b: f"INTERVAL {a} DAYS {b} HOURS", st.integers(0, 9), st.integers(0, 23)),
    st.builds(lambda a, b: f"INTERVAL '{a} {b}:03:04.5' DAY TO SECOND", st.integers(0, 9), st.integers(0, 23)),
    st.builds(lambda a: f"INTERVAL '{a}:30' HOUR TO MINUTE", st.integers(0, 99)),
    st.builds(lambda a: f"INTERVAL '{a} hours 5 minutes'", st.integers(0, 99)),
    st.builds(lambda a: f"INTERVAL -'{a}' DAY", st.integers(0, 99)),
)


def _probe(literal: str) -> str:
    """Columns that show a literal's type and exact value (intervals do not collect to Python)."""
    return f"typeof({literal}), CAST({literal} AS STRING)"


def _binary_probe(literal: str) -> str:
    return f"typeof({literal}), hex({literal})"


def _evaluate(spark: SparkSession, literals: list[str], printer) -> list[object] | None:
    columns = ", ".join(printer(lit) for lit in literals)
    try:
        return list(spark.sql(f"SELECT {columns}").first())
    except PySparkException:
        return None


def _through_sparkseq(literal: str) -> str:
    """The literal as sparkseq prints it in a rewritten statement."""
    return parse_statement(f"SELECT {literal}").expressions[0].sql(dialect=SparkSeq)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(string_literal(), min_size=1, max_size=12))
def test_string_literals_read_as_spark_reads_them(spark: SparkSession, literals: list[str]) -> None:
    as_written = _evaluate(spark, literals, lambda lit: lit)
    assume(as_written is not None)  # a form Spark does not accept (none expected, but not ours to test)
    read = [parse_statement(f"SELECT {lit}").expressions[0] for lit in literals]
    assert [node.this for node in read] == as_written, literals
    assert _evaluate(spark, literals, lambda lit: _through_sparkseq(lit)) == as_written, literals


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(TYPED, INTERVALS, string_literal()), min_size=1, max_size=10), st.lists(BINARY, max_size=3))
def test_every_literal_form_evaluates_the_same_after_printing(spark: SparkSession, literals: list[str],
                                                              binaries: list[str]) -> None:
    def probe(text: str, printed: bool) -> str:
        shown = _through_sparkseq(text) if printed else text
        return _binary_probe(shown) if text in binaries else _probe(shown)

    every = literals + binaries
    as_written = _evaluate(spark, every, lambda lit: probe(lit, False))
    assume(as_written is not None)
    assert _evaluate(spark, every, lambda lit: probe(lit, True)) == as_written, every


# --- the reproductions, through sparkseq.sql ---------------------------------------------

EVENTS = "SELECT * FROM VALUES (1, 1, 'a''b'), (1, 2, 'c'), (1, 3, 'it''s'), (1, 4, 'c') AS ev(k, ts, t)"


@pytest.fixture(scope="module")
def quoted_events(spark: SparkSession) -> str:
    spark.sql(f"CREATE OR REPLACE TEMP VIEW quoted_events AS {EVENTS}")
    return "quoted_events"


def _count(spark: SparkSession, text: str) -> list[tuple]:
    return [tuple(r) for r in sparkseq.sql(spark, text).collect()]


def test_doubled_quote_in_define(spark: SparkSession, quoted_events: str) -> None:
    text = (f"SELECT n FROM {quoted_events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, C) "
            "DEFINE A AS t = 'a''b', C AS t = 'c' MEASURES COUNT(*) AS n) AS m")
    assert _count(spark, text) == [(2,)]


def test_doubled_quote_in_select_list(spark: SparkSession, quoted_events: str) -> None:
    text = (f"SELECT 'it''s' AS s, 'x' 'y' AS xy, r'\\d' AS r, n FROM {quoted_events} MATCH_AGGREGATE ("
            "PARTITION BY k ORDER BY ts PATTERN SEQ(c) TYPE BY t MEASURES COUNT(*) AS n) AS m")
    assert _count(spark, text) == [("it's", "xy", "\\d", 2)]


def test_doubled_quote_in_pattern_symbol(spark: SparkSession, quoted_events: str) -> None:
    text = (f"SELECT n FROM {quoted_events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts "
            "PATTERN SEQ('a''b', 'it\\'s', c) TYPE BY t MEASURES COUNT(*) AS n) AS m")
    assert _count(spark, text) == [(1,)]


def test_doubled_quote_inside_a_function_pattern(spark: SparkSession, quoted_events: str) -> None:
    text = f"SELECT seq_count(ts, t, 'SEQ(''a''''b'', c)') AS n FROM {quoted_events} GROUP BY k"
    assert _count(spark, text) == [(2,)]
    bad = f"SELECT seq_count(ts, t, 'SEQ(''a''''b'', )') AS n FROM {quoted_events} GROUP BY k"
    with pytest.raises(SqlParseError):  # checked before any job, as for other patterns
        sparkseq.sql(spark, bad)


def test_legacy_escaped_literals_refused(spark: SparkSession, quoted_events: str) -> None:
    spark.conf.set("spark.sql.parser.escapedStringLiterals", "true")
    try:
        with pytest.raises(SqlRewriteError, match="escapedStringLiterals"):
            sparkseq.sql(spark, f"SELECT seq_count(ts, t, 'SEQ(c)') FROM {quoted_events}")
    finally:
        spark.conf.unset("spark.sql.parser.escapedStringLiterals")
