"""The native path without Spark: which shapes it takes, the SQL it writes, its quoting."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.generation.generate import engine_input
from sql_rewrites.planning.native import BIGINT_LENGTH, DECIMAL, MAX_LENGTH, arithmetic, native_query, native_shape
from sql_rewrites.planning.timesplit import NATIVE_AUTO_LENGTH, Path, choose_path, planned_path
from udafs.errors import CountOverflowError, OverflowSlot, measure_words, overflow_template
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, Strategy, ValueType
from udafs.workers.grouped import Verbatim

ABC = Plan(symbols=("A", "B", "C"), elements=(Element(0), Element(1), Element(2)), negations=(0, 0, 0, 0),
           within=10)


def variant(**changes: object) -> Plan:
    fields = {f: getattr(ABC, f) for f in ("symbols", "elements", "negations", "within", "slide", "measures",
                                            "columns", "count_type", "strategy")}
    return Plan(**{**fields, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(("plan", "reason"), [
    (variant(slide=5), "SLIDE"),
    (variant(elements=(Element(0), Element(1, kleene=True), Element(2))), "Kleene"),
    (variant(negations=(0, 0, 2, 0)), "negated"),
    (variant(strategy=Strategy.SKIP_TILL_NEXT_MATCH), "skip-till-next-match"),
    (variant(measures=(Measure(MeasureKind.MAX, 0, 0, "x"),), columns=(ValueType.INT,)),
     "COUNT measures only, not MAX"),
], ids=["slide", "kleene", "negation", "strategy", "max"])
def test_unsupported_shapes_name_the_reason(plan: Plan, reason: str) -> None:
    assert reason in (native_shape(plan) or "")


def test_positive_count_shapes_are_native() -> None:
    assert native_shape(ABC) is None
    assert native_shape(variant(within=None)) is None
    assert native_shape(variant(elements=(Element(1), Element(1)), negations=(0, 0, 0),
                                measures=(Measure(MeasureKind.COUNT, 1, None, "b"),))) is None
    long = tuple(Element(0) for _ in range(MAX_LENGTH + 1))
    assert "longer than" in (native_shape(variant(elements=long, negations=(0,) * (len(long) + 1))) or "")


def test_native_is_chosen_by_the_cost_rule_or_forced_and_an_unsupported_shape_says_why() -> None:
    auto = choose_path(ABC, [])
    assert (auto.path is Path.NATIVE) == (ABC.length <= NATIVE_AUTO_LENGTH)
    if auto.path is not Path.NATIVE:
        assert "costs more natively than on the kernel path" in auto.reason
        assert planned_path(ABC).path is not Path.NATIVE
    assert choose_path(ABC, None, Path.NATIVE).path is Path.NATIVE
    assert choose_path(ABC, None, Path.GROUPED).path is Path.GROUPED
    with pytest.raises(ValueError, match="native path does not evaluate SLIDE"):
        choose_path(variant(slide=5), None, Path.NATIVE)
    with pytest.raises(ValueError, match="ANSI"):
        choose_path(ABC, None, Path.NATIVE, ansi=False)


def test_bigint_rows_only_where_no_row_can_overflow() -> None:
    assert BIGINT_LENGTH == 3 and arithmetic(ABC) == "BIGINT"
    assert arithmetic(variant(count_type=CountType.DECIMAL)) == DECIMAL
    assert arithmetic(variant(elements=(Element(0),) * 4, negations=(0,) * 5)) == DECIMAL
    sql = native_sql()
    assert "AS BIGINT) AS `__sparkseq_is0`" in sql and "SUM(CAST(`__sparkseq_count` AS DECIMAL(38, 0)))" not in sql
    assert "SUM(SHIFTRIGHT(`__sparkseq_count`, 32))" in sql and "SUM(`__sparkseq_count` & 4294967295)" in sql
    longer = native_sql(TEXT.replace("SEQ(a, b, c)", "SEQ(a, b, c, a)"))
    assert "SUM(`__sparkseq_count`)" in longer and "SHIFTRIGHT" not in longer


@pytest.mark.parametrize("count", [0, 1, 2**32 - 1, 2**32, 2**62 + 12345, 2**63 - 1])
def test_a_bigint_total_is_summed_exactly_in_two_halves(count: int) -> None:
    """The halves of :func:`partition_total`, over 2^31 - 1 rows of the same count, rejoin exactly."""
    rows = 2**31 - 1
    high, low = rows * (count >> 32), rows * (count & (2**32 - 1))
    assert high < 2**63 and low < 2**63 and high * 2**32 + low == rows * count


NASTY = "k`) x; DROP TABLE t --"
SCHEMA = {"t": {NASTY: "string", "ts": "timestamp", "kind": "string", "v": "int"}}
TEXT = (f"SELECT * FROM t MATCH_AGGREGATE (PARTITION BY `{NASTY.replace('`', '``')}` ORDER BY ts "
        "PATTERN SEQ(a, b, c) TYPE BY kind MEASURES COUNT(*) AS `n'); DROP` WITHIN INTERVAL 10 SECONDS) AS m")


def native_sql(text: str = TEXT) -> str:
    [query] = analyze_sql(text, SCHEMA)
    return native_query(engine_input(query), query.node.this.copy()).sql(dialect="spark")


def test_keys_and_names_are_quoted_and_no_python_function_is_called() -> None:
    sql = native_sql()
    [tree] = sqlglot.parse(sql, read="spark")
    assert isinstance(tree, exp.Select)
    assert NASTY in {c.name for c in tree.find_all(exp.Column)}
    assert not list(tree.find_all(exp.Drop))
    calls = {f.name.lower() for f in tree.find_all(exp.Anonymous)}
    assert calls <= {"unix_micros", "raise_error", "to_json", "named_struct"}, calls
    assert [c.alias_or_name for c in tree.expressions] == [NASTY, "n'); DROP"]


def test_within_frames_are_strict_in_engine_micros() -> None:
    sql = native_sql()
    assert "RANGE BETWEEN UNBOUNDED PRECEDING AND 10000000 PRECEDING" in sql  # first > t - w
    assert "RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING" in sql  # strictly earlier rows
    assert "ROWS" not in sql


def test_without_a_window_one_running_sum_per_level() -> None:
    sql = native_sql(TEXT.replace(" WITHIN INTERVAL 10 SECONDS", ""))
    assert sql.count(" OVER ") == 2 and "10000000" not in sql


def test_count_type_bigint_raises_the_kernel_message() -> None:
    sql = native_sql()
    assert "raise_error" in sql.lower() and "does not fit BIGINT" in sql and "9223372036854775807" in sql
    assert "does not fit" not in native_sql(TEXT.replace("WITHIN", "COUNT TYPE DECIMAL WITHIN"))


def test_the_overflow_message_is_the_kernels_template_filled_in_sql() -> None:
    """Both paths fill one template (udafs.errors.overflow_template): the kernel in Python,
    the native path with the partition's JSON and the total's digits in SQL."""
    what = measure_words("count_star", "n'); DROP")
    pieces = overflow_template(what, "BIGINT", names_partition=True)
    filled = {OverflowSlot.PARTITION: "{\"k\":1}", OverflowSlot.DIGITS: "21"}
    kernel = str(CountOverflowError(what, 21, "BIGINT", Verbatim("{\"k\":1}")))
    assert kernel == "".join(filled[p] if isinstance(p, OverflowSlot) else p for p in pieces)
    [concat] = [c for c in sqlglot.parse_one(native_sql(), read="spark").find_all(exp.Concat)]
    literals = [e.this for e in concat.expressions if isinstance(e, exp.Literal)]
    assert literals == [p for p in pieces if not isinstance(p, OverflowSlot)]
