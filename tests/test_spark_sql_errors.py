"""Every error of SEMANTICS section 7 through ``sparkseq.sql``: its class, its message,
raised before any Spark job starts, and nothing changed (SEMANTICS: "Bad input gets a
clear error and changes nothing")."""

from __future__ import annotations

import pytest

from sparkseq.statements.sql_api import sql
from sql_rewrites import errors as E
from tests.sql_cases import jobs_started

pytestmark = pytest.mark.usefixtures("isolated_hierarchies")  # tests see only their own hierarchies

FROM = "SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts {}) AS m"
FUNNEL = "PATTERN SEQ(VK, BK) DEFINE VK AS action = 'view', BK AS action = 'buy'"

CASES = [  # (id, statement text, error class, message pattern)
    ("parse", FROM.format("PATTERN SEQ(A,, B) TYPE BY action"), E.SqlParseError,
     r"Expecting a symbol.* at line 2, column 90\n   2 \| SELECT \* FROM clicks .*\n +\| +\^$"),
    ("unknown-table", FROM.replace("clicks", "clickz").format(FUNNEL), E.UnknownTableError,
     r"relation 'clickz' is not a table or view of this Spark session; tables and views: .*clicks"),
    ("unknown-column", FROM.format(FUNNEL.replace("action = 'view'", "actoin = 'view'")), E.UnknownColumnError,
     r"unknown column 'actoin' in DEFINE of VK; did you mean 'action'\?"),
    ("unknown-symbol", FROM.format("PATTERN SEQ(VK, BK) DEFINE VK AS action = 'view'"), E.UnknownSymbolError,
     r"symbol BK is used in PATTERN but not defined"),
    ("unknown-hierarchy", FROM.format("PATTERN SEQ(kindle) TYPE BY item HIERARCHY products"),
     E.UnknownHierarchyError, r"HIERARCHY products: no concept hierarchies are registered"),
    ("unknown-measure-function", FROM.format(FUNNEL + " MEASURES STDDEV(BK.price) AS s"), E.UnknownMeasureError,
     r"measure s = STDDEV\(BK.price\) is not supported; use one of COUNT\(\*\)"),
    ("measure-on-negated", FROM.format("PATTERN SEQ(view, !rec, buy) TYPE BY action MEASURES SUM(rec.price) AS s"),
     E.NegatedMeasureError, r"measure s references rec, which appears only negated"),
    ("leading-negation", FROM.format("PATTERN SEQ(!rec, view) TYPE BY action"),
     E.EdgeNegationWithoutWindowError, r"has a leading negation, which is only defined within a time window"),
    ("trailing-negation", FROM.format("PATTERN SEQ(view, !rec) TYPE BY action"),
     E.EdgeNegationWithoutWindowError, r"has a trailing negation"),
    ("only-negation", FROM.format("PATTERN SEQ(!rec) TYPE BY action WITHIN INTERVAL 1 MINUTE"),
     E.OnlyNegationError, r"has only negated symbols"),
    ("zero-window", FROM.format(FUNNEL + " WITHIN INTERVAL 0 MINUTES"), E.NonPositiveWindowError,
     r"WITHIN must be positive"),
    ("negative-slide", FROM.format(FUNNEL + " WITHIN INTERVAL 10 MINUTES SLIDE INTERVAL -1 MINUTE"),
     E.NonPositiveWindowError, r"SLIDE must be positive"),
    ("sum-of-string", FROM.format(FUNNEL + " MEASURES SUM(BK.action) AS s"), E.NonNumericMeasureError,
     r"measure s = SUM\(BK.action\): column action is STRING, not numeric"),
    ("unused-symbol", FROM.format(FUNNEL + ", REC AS action = 'rec'"), E.UnusedSymbolError,
     r"symbol REC is defined but not used"),
    ("duplicate-symbol", FROM.format(FUNNEL + ", VK AS item = 'kindle'"), E.DuplicateSymbolError,
     r"symbol VK is defined twice"),
    ("slide-without-within", FROM.format(FUNNEL + " SLIDE INTERVAL 1 MINUTE"), E.SlideWithoutWithinError,
     r"SLIDE needs WITHIN"),
    ("slide-longer-than-within", FROM.format(FUNNEL + " WITHIN INTERVAL 1 MINUTE SLIDE INTERVAL 2 MINUTES"),
     E.SlideLongerThanWithinError, r"SLIDE INTERVAL '2' MINUTES is longer than WITHIN INTERVAL '1' MINUTE"),
    ("month", FROM.format(FUNNEL + " WITHIN INTERVAL 1 MONTH"), E.BadIntervalError,
     r"months and years have no fixed length"),
    ("number-on-timestamp", FROM.format(FUNNEL + " WITHIN 600"), E.WindowTypeMismatchError,
     r"so WITHIN takes an interval"),
    ("order-by-string", FROM.replace("ORDER BY ts", "ORDER BY action").format(FUNNEL), E.OrderByError,
     r"ORDER BY column action is STRING"),
    ("partition-by-expression", FROM.replace("customer_id", "customer_id % 10").format(FUNNEL),
     E.PartitionByError, r"PARTITION BY takes source columns"),
    ("missing-alias", FROM.format(FUNNEL + " MEASURES COUNT(*)"), E.MissingMeasureAliasError,
     r"needs a name: write it as COUNT\(\*\) AS name"),
    ("max-of-array", FROM.format(FUNNEL + " MEASURES MAX(BK.tags) AS t"), E.UnsupportedMeasureTypeError,
     r"MAX over ARRAY<STRING> is not supported"),
    ("seq-function-pattern", "SELECT customer_id, seq_count(ts, action, 'SEQ(view,, buy)') FROM clicks "
     "GROUP BY customer_id", E.SqlParseError, r"Expecting a symbol"),
    ("seq-function-symbol", "SELECT customer_id, seq_sum(ts, action, 'SEQ(view, !rec, buy)', "
     "INTERVAL 10 MINUTES, 'rec', price) FROM clicks GROUP BY customer_id", E.NegatedMeasureError,
     r"seq_sum: symbol rec appears only negated"),
]


@pytest.fixture(scope="module")
def clicks(spark) -> str:
    spark.sql("""CREATE OR REPLACE TEMP VIEW clicks AS SELECT * FROM VALUES
                 (1L, TIMESTAMP'2024-05-01 10:00:00', 'view', 'kindle', 99.99BD, array('a')),
                 (1L, TIMESTAMP'2024-05-01 10:01:00', 'buy', 'kindle', 99.99BD, array('b'))
                 AS t(customer_id, ts, action, item, price, tags)""")
    spark.sql("DROP VIEW IF EXISTS must_not_exist")
    return "clicks"


@pytest.mark.parametrize(("text", "error", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_before_any_job_and_nothing_changes(spark, clicks: str, text: str, error: type, message: str) -> None:
    before = jobs_started(spark)
    script = f"CREATE OR REPLACE TEMP VIEW must_not_exist AS SELECT 1 AS x;\n{text}"
    with pytest.raises(error, match=message) as caught:
        sql(spark, script)
    assert isinstance(caught.value, E.SqlRewriteError) or error.__module__.startswith("sparkseq")
    assert jobs_started(spark) == before
    assert not spark.catalog.tableExists("must_not_exist")


def test_parse_error_points_into_the_script(spark, clicks: str) -> None:
    with pytest.raises(E.SqlParseError) as caught:
        sql(spark, "SELECT 1;\nSELECT * FROM clicks\n  MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A,, B)) m")
    err = caught.value
    assert (err.line, err.col) == (3, 46)
    assert err.excerpt.splitlines()[0] == "   3 |   MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A,, B)) m"
    assert err.excerpt.splitlines()[1].endswith("^")


def test_spark_analysis_errors_also_come_before_any_job(spark, clicks: str) -> None:
    """An unknown function in DEFINE is Spark's to find: it does, while the script is checked,
    and the error points at the function in the user's text, not into the generated SQL."""
    before = jobs_started(spark)
    with pytest.raises(E.SparkAnalysisError,
                       match=r"^DEFINE of A: \[UNRESOLVED_ROUTINE\].*`no_such_function`") as caught:
        sql(spark, "CREATE OR REPLACE TEMP VIEW must_not_exist AS SELECT 1 AS x;\n"
                   + FROM.format("PATTERN SEQ(A) DEFINE A AS no_such_function(action)"))
    assert (caught.value.position.line, caught.value.position.column) == (2, 103)
    assert "__sparkseq" not in str(caught.value)
    assert jobs_started(spark) == before
    assert not spark.catalog.tableExists("must_not_exist")


def test_every_section_7_error_is_covered() -> None:
    named = {"SqlParseError", "UnknownColumnError", "UnknownTableError", "UnknownSymbolError",
             "UnknownHierarchyError", "UnknownMeasureError", "NegatedMeasureError", "EdgeNegationWithoutWindowError",
             "OnlyNegationError", "NonPositiveWindowError", "NonNumericMeasureError"}
    assert named <= {c[2].__name__ for c in CASES}
