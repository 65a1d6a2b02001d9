"""The stand-alone pattern-string grammar (for the BI-friendly functions)."""

from __future__ import annotations

import pytest

from sql_rewrites import errors as E
from sql_rewrites.clauses.pattern import compile_type_pattern, parse_pattern
from sql_rewrites.clauses.windows import interval_text_length
from udafs.plan import CountType, Element


def test_parse_pattern_nodes() -> None:
    pattern = parse_pattern("SEQ(VK, BK, !REC, VC+, 'View Case')")
    assert [(e.this.name, e.negated, e.kleene) for e in pattern.expressions] == [
        ("VK", False, False), ("BK", False, False), ("REC", True, False), ("VC", False, True),
        ("View Case", False, False),
    ]
    assert pattern.sql() == "SEQ(VK, BK, !REC, VC+, 'View Case')"


def test_compile_type_pattern_plan_and_mask() -> None:
    compiled = compile_type_pattern("seq(view, 'buy it', !ret, view+)", within=10, slide=5,
                                    count_type=CountType.DECIMAL)
    assert compiled.type_values == ("view", "buy it", "ret")
    plan = compiled.plan
    assert plan.elements == (Element(0), Element(1), Element(0, kleene=True))
    assert plan.negations == (0, 0, 0b100, 0)
    assert (plan.within, plan.slide, plan.count_type) == (10, 5, CountType.DECIMAL)
    assert compiled.mask_sql("ty`pe") == (
        "CAST((CASE WHEN `ty``pe` = 'view' THEN 1 ELSE 0 END) | (CASE WHEN `ty``pe` = 'buy it' THEN 2 ELSE 0 END) "
        "| (CASE WHEN `ty``pe` = 'ret' THEN 4 ELSE 0 END) AS BIGINT)"
    )


def test_quoted_values_are_escaped_in_the_mask() -> None:
    compiled = compile_type_pattern("SEQ('it\\'s', 'a\\\\b')")
    assert compiled.type_values == ("it's", "a\\b")
    assert "= 'it\\'s'" in compiled.mask_sql("t") and "= 'a\\\\b'" in compiled.mask_sql("t")


@pytest.mark.parametrize(
    ("text", "message", "col", "underlined"),
    [
        ("SEQ(A, , B)", "Expecting a symbol", 8, ","),
        ("SEQ(A, !B+)", "cannot be Kleene plus", 10, "+"),
        ("SEQ()", "at least one symbol", 5, ")"),
        ("SEQ(A, B", "Expecting )", 8, "B"),
        ("SEQ(A) junk", "Invalid expression / Unexpected token", 8, "junk"),
        ("PATTERN(A)", "Expecting SEQ(", 1, "PATTERN"),
        ("SEQ(A, 'b)", "missing closing '", 8, "'"),
    ],
)
def test_pattern_parse_errors_are_position_accurate(text: str, message: str, col: int, underlined: str) -> None:
    with pytest.raises(E.SqlParseError) as info:
        parse_pattern(text)
    error = info.value
    assert message in error.description and (error.line, error.col) == (1, col)
    source_line, carets = error.excerpt.splitlines()
    start = carets.index("^")
    assert source_line[start : start + len(underlined)] == underlined


@pytest.mark.parametrize(
    ("text", "kwargs", "error", "phrase"),
    [
        ("SEQ(!A, !B)", {}, E.OnlyNegationError, "only negated symbols"),
        ("SEQ(!A, B)", {}, E.EdgeNegationWithoutWindowError, "leading negation"),
        ("SEQ(A, !B)", {}, E.EdgeNegationWithoutWindowError, "trailing negation"),
        ("SEQ(a, A)", {}, E.AmbiguousSymbolError, "'a' and 'A'"),
        ("SEQ(A)", {"within": 0}, E.NonPositiveWindowError, "WITHIN must be a positive integer"),
        ("SEQ(A)", {"within": 1.5}, E.NonPositiveWindowError, "got 1.5"),
        ("SEQ(A)", {"slide": 5}, E.SlideWithoutWithinError, "SLIDE needs WITHIN"),
        ("SEQ(" + ", ".join(f"S{i}" for i in range(64)) + ")", {}, E.TooManySymbolsError, "at most 63"),
    ],
)
def test_pattern_rules_match_the_sql_clause(text: str, kwargs: dict, error: type[Exception], phrase: str) -> None:
    with pytest.raises(error, match=None) as info:
        compile_type_pattern(text, **kwargs)
    assert phrase in str(info.value)


def test_trailing_negation_is_fine_with_within_and_quoted_differs_from_name() -> None:
    compiled = compile_type_pattern("SEQ(a, 'A', !b)", within=1)
    assert compiled.type_values == ("a", "A", "b")


@pytest.mark.parametrize(
    ("text", "micros"),
    [("INTERVAL 10 MINUTES", 600_000_000), ("10 minutes", 600_000_000), ("INTERVAL '1.5' SECONDS", 1_500_000),
     ("1 hour 30 minutes", 5_400_000_000), ("2 weeks", 1_209_600_000_000), ("7 microseconds", 7)],
)
def test_interval_text_length(text: str, micros: int) -> None:
    assert interval_text_length(text) == micros


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("1 month", E.BadIntervalError),
        ("0 seconds", E.NonPositiveWindowError),
        ("ten minutes", E.BadIntervalError),
        ("10 minutes)", E.SqlParseError),
    ],
)
def test_interval_text_length_errors(text: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        interval_text_length(text)


@pytest.mark.parametrize(("text", "strategy", "hierarchy", "printed"), [
    ("SEQ(a, b)", "SKIP_TILL_ANY_MATCH", None, "SEQ(a, b)"),
    ("SEQ(a, b+) strategy skip  till next match", "SKIP_TILL_NEXT_MATCH", None,
     "SEQ(a, b+) STRATEGY SKIP TILL NEXT MATCH"),
    ("SEQ(a, !b, c) HIERARCHY h STRATEGY PARTITION CONTIGUITY", "PARTITION_CONTIGUITY", "h",
     "SEQ(a, !b, c) STRATEGY PARTITION CONTIGUITY HIERARCHY h"),
    ("SEQ('View Kindle', b) HIERARCHY `my h`", "SKIP_TILL_ANY_MATCH", "my h",
     "SEQ('View Kindle', b) HIERARCHY `my h`"),
])
def test_seq_function_pattern_arguments_are_parsed_by_the_dialect(text: str, strategy: str, hierarchy: str | None,
                                                                    printed: str) -> None:
    from sql_rewrites.analysis.seq_functions import hierarchy_name, pattern_argument, strategy_of
    from sql_rewrites.syntax.dialect import SparkSeq

    node = pattern_argument(text)
    assert (strategy_of(node).name, hierarchy_name(node)) == (strategy, hierarchy)
    assert node.sql(dialect=SparkSeq) == printed
    assert pattern_argument(printed).sql(dialect=SparkSeq) == printed


@pytest.mark.parametrize(("text", "phrase"), [
    ("SEQ(a, b) STRATEGY SOME MATCH", "after STRATEGY"),
    ("SEQ(a, b) HIERARCHY", "hierarchy name after HIERARCHY"),
    ("SEQ(a, b) STRATEGY STRICT CONTIGUITY STRATEGY STRICT CONTIGUITY", "STRATEGY"),
])
def test_seq_function_pattern_argument_errors_point_into_the_string(text: str, phrase: str) -> None:
    from sql_rewrites.analysis.seq_functions import pattern_argument

    with pytest.raises(E.SqlParseError) as info:
        pattern_argument(text)
    assert phrase in str(info.value) and info.value.line == 1
