"""Every bad-input case of docs/sql-reference.md section 7 gives the same message, at the same
place of the user's text, on every surface: ``sparkseq.sql``, plain ``spark.sql`` (the
parser extension), the DataFrame API (where the case can be written with its arguments),
a JDBC client of the Thrift server (impyla's DB-API) and a Spark Connect client of
``python -m sparkseq connect-server`` — errors Spark's analyser raises on the generated SQL
and errors raised while the job runs (a DEFINE casting malformed strings under ANSI mode)
included — and ``sparkseq.sql`` and the DataFrame API in a Connect client with sparkseq
(there the client rewrites the statement, and places Spark's analysis errors by probing in a
clone of its server session). No message names what sparkseq generates; a workload's shared
pass places its errors too.

The Thrift server is the suite's one in-process server (``thrift_server``); the Connect
server and its client run in subprocesses, the server started when this module starts
so that its start-up overlaps the in-process surfaces, the client once for all cases.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

import sparkseq
from tests.conftest import drop_unservable_views
from tests.servers.test_thrift_server import free_port, read_banner

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 480  # as tests/servers/test_connect_server.py: a loaded 2-core machine took over 300 s
CLIENT_TIMEOUT_S = 300
VIEW = "surface_clicks"
CREATE_VIEW = (f"CREATE OR REPLACE TEMP VIEW {VIEW} AS SELECT * FROM VALUES "
               "(1L, TIMESTAMP'2024-05-01 10:00:00', 'view', 'kindle', 99.99BD, array('a')), "
               "(1L, TIMESTAMP'2024-05-01 10:01:00', 'buy', 'kindle', 99.99BD, array('b')) "
               "AS t(customer_id, ts, action, item, price, tags)")
FROM = f"SELECT * FROM {VIEW} MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts {{}}) AS m"
FUNNEL = "PATTERN SEQ(VK, BK) DEFINE VK AS action = 'view', BK AS action = 'buy'"
FUNNEL_ARGS: dict[str, Any] = {"pattern": "SEQ(VK, BK)", "define": {"VK": "action = 'view'", "BK": "action = 'buy'"}}
SYMBOLS = ", ".join(f"s{i}" for i in range(64))
SURFACES = ("sparkseq.sql", "spark.sql", "dataframe", "thrift", "connect", "connect-sparkseq", "connect-dataframe")
#: What no message may show: generated names (relations, columns, the DataFrame API's views,
#: digest-named functions), Python classes and enum members.
INTERNALS = ("_sparkseq_", "sparkseq_agg_", "sparkseq_check_", "sparkseq_stream_", "__mask", "__ts", "<class '",
             "CountType.", "MeasureKind.", "COUNT_STAR")


@dataclass(frozen=True)
class Case:
    """A bad input: its statement, the error (sparkseq's class, or Spark's condition for an
    error raised while the job runs), a pattern its message matches, the text the error
    underlines, and the DataFrame API's arguments for it (None: not expressible) with the
    text underlined there when it differs (the argument holds less than the clause)."""

    id: str
    sql: str
    kind: str
    message: str
    underlined: str
    frame: dict[str, Any] | None = None
    frame_underlined: str | None = None
    args: list[Any] | None = None
    surfaces: tuple[str, ...] = SURFACES

    def on(self, surface: str) -> bool:
        return surface in self.surfaces and (surface not in ("dataframe", "connect-dataframe")
                                             or self.frame is not None)


def funnel(**changes: Any) -> dict[str, Any]:
    return {**FUNNEL_ARGS, **changes}


CASES = [
    Case("parse", FROM.format("PATTERN SEQ(A,, B) TYPE BY action"), "SqlParseError", r"^Expecting a symbol", ",",
         {"pattern": "SEQ(A,, B)", "type_by": "action"}),
    Case("incomplete-condition", FROM.format("PATTERN SEQ(A, B) DEFINE A AS action = 'view' AND, B AS action = 'buy'"),
         "SqlParseError", r"^Expecting an expression after AND$", ",",
         funnel(pattern="SEQ(A, B)", define={"A": "action = 'view' AND", "B": "action = 'buy'"}), "AND"),
    Case("condition-ending-before-a-clause", FROM.format("PATTERN SEQ(A) DEFINE A AS action = 'view' AND "
                                                         "MEASURES COUNT(*) AS n"),
         "SqlParseError", r"^Expecting an expression after AND$", "MEASURES"),
    Case("unterminated-raw-text", FROM.format(r'PATTERN SEQ(A) DEFINE A AS action = r"a\"b"'), "SqlParseError",
         r'^unterminated text: missing closing "$', '"', funnel(pattern="SEQ(A)", define={"A": r'action = r"a\"b"'})),
    Case("unknown-table", FROM.replace(VIEW, "surface_clickz").format(FUNNEL), "UnknownTableError",
         r"^relation 'surface_clickz' is not a table or view of this Spark session", "surface_clickz"),
    Case("unknown-column", FROM.format(FUNNEL.replace("action = 'view'", "actoin = 'view'")), "UnknownColumnError",
         r"^unknown column 'actoin' in DEFINE of VK; did you mean 'action'\?", "actoin",
         funnel(define={"VK": "actoin = 'view'", "BK": "action = 'buy'"})),
    Case("unknown-symbol", FROM.format("PATTERN SEQ(VK, BK) DEFINE VK AS action = 'view'"), "UnknownSymbolError",
         r"^symbol BK is used in PATTERN but not defined", "BK", funnel(define={"VK": "action = 'view'"})),
    Case("unused-symbol", FROM.format(FUNNEL + ", REC AS action = 'rec'"), "UnusedSymbolError",
         r"^symbol REC is defined but not used", "REC AS action = 'rec'",
         funnel(define={**FUNNEL_ARGS["define"], "REC": "action = 'rec'"}), "action = 'rec'"),
    Case("duplicate-symbol", FROM.format(FUNNEL + ", VK AS item = 'kindle'"), "DuplicateSymbolError",
         r"^symbol VK is defined twice", "VK AS item = 'kindle'"),
    Case("ambiguous-symbol", FROM.format("PATTERN SEQ(view, VIEW) TYPE BY action"), "AmbiguousSymbolError",
         r"^symbol view is written as 'view' and 'VIEW'", "view", {"pattern": "SEQ(view, VIEW)", "type_by": "action"}),
    Case("too-many-symbols", FROM.format(f"PATTERN SEQ({SYMBOLS}) TYPE BY action"), "TooManySymbolsError",
         r"^pattern uses 64 distinct symbols; at most 63 are supported", f"SEQ({SYMBOLS})",
         {"pattern": f"SEQ({SYMBOLS})", "type_by": "action"}),
    Case("non-local-define", FROM.format("PATTERN SEQ(A, B) DEFINE A AS action = 'view', B AS A.price < price"),
         "NonLocalDefineError", r"^DEFINE of B: A.price refers to another symbol's row", "A.price",
         funnel(pattern="SEQ(A, B)", define={"A": "action = 'view'", "B": "A.price < price"})),
    Case("measure-on-negated", FROM.format("PATTERN SEQ(view, !rec, buy) TYPE BY action MEASURES SUM(rec.price) AS s"),
         "NegatedMeasureError", r"^measure s references rec, which appears only negated", "rec",
         {"pattern": "SEQ(view, !rec, buy)", "type_by": "action", "measures": {"s": "SUM(rec.price)"}}),
    Case("leading-negation", FROM.format("PATTERN SEQ(!rec, view) TYPE BY action"), "EdgeNegationWithoutWindowError",
         r"has a leading negation, which is only defined within a time window", "SEQ(!rec, view)",
         {"pattern": "SEQ(!rec, view)", "type_by": "action"}),
    Case("only-negation", FROM.format("PATTERN SEQ(!rec) TYPE BY action WITHIN INTERVAL 1 MINUTE"),
         "OnlyNegationError", r"has only negated symbols", "SEQ(!rec)",
         {"pattern": "SEQ(!rec)", "type_by": "action", "within": "1 minute"}),
    Case("zero-window", FROM.format(FUNNEL + " WITHIN INTERVAL 0 MINUTES"), "NonPositiveWindowError",
         r"^WITHIN must be positive", "INTERVAL 0 MINUTES"),
    Case("month", FROM.format(FUNNEL + " WITHIN INTERVAL 1 MONTH"), "BadIntervalError",
         r"months and years have no fixed length", "INTERVAL 1 MONTH"),
    Case("slide-without-within", FROM.format(FUNNEL + " SLIDE INTERVAL 1 MINUTE"), "SlideWithoutWithinError",
         r"^SLIDE needs WITHIN", "INTERVAL 1 MINUTE", funnel(slide="1 minute"), "1 minute"),
    Case("slide-longer-than-within", FROM.format(FUNNEL + " WITHIN INTERVAL 1 MINUTE SLIDE INTERVAL 2 MINUTES"),
         "SlideLongerThanWithinError", r"^SLIDE INTERVAL '2' MINUTES is longer than WITHIN", "INTERVAL 2 MINUTES"),
    Case("number-on-timestamp", FROM.format(FUNNEL + " WITHIN 600"), "WindowTypeMismatchError",
         r"so WITHIN takes an interval", "600", funnel(within=600)),
    Case("order-by-string", FROM.replace("ORDER BY ts", "ORDER BY action").format(FUNNEL), "OrderByError",
         r"^ORDER BY column action is STRING", "action", {**FUNNEL_ARGS, "order_by": "action"}),
    Case("partition-by-expression", FROM.replace("customer_id", "customer_id % 10").format(FUNNEL),
         "PartitionByError", r"^PARTITION BY takes source columns", "customer_id % 10"),
    Case("unknown-measure-function", FROM.format(FUNNEL + " MEASURES STDDEV(BK.price) AS s"), "UnknownMeasureError",
         r"^measure s = STDDEV\(BK.price\) is not supported", "STDDEV(BK.price) AS s",
         funnel(measures={"s": "STDDEV(BK.price)"}), "STDDEV(BK.price)"),
    Case("missing-alias", FROM.format(FUNNEL + " MEASURES COUNT(*)"), "MissingMeasureAliasError",
         r"needs a name: write it as COUNT\(\*\) AS name", "COUNT(*)"),
    Case("sum-of-string", FROM.format(FUNNEL + " MEASURES SUM(BK.action) AS s"), "NonNumericMeasureError",
         r"column action is STRING, not numeric", "SUM(BK.action)", funnel(measures={"s": "SUM(BK.action)"})),
    Case("max-of-array", FROM.format(FUNNEL + " MEASURES MAX(BK.tags) AS t"), "UnsupportedMeasureTypeError",
         r"MAX over ARRAY<STRING> is not supported", "MAX(BK.tags)", funnel(measures={"t": "MAX(BK.tags)"})),
    Case("duplicate-output", FROM.format(FUNNEL + " MEASURES COUNT(*) AS customer_id"), "DuplicateOutputColumnError",
         r"would output two columns named customer_id", "MATCH_AGGREGATE"),
    Case("unknown-hierarchy", FROM.format("PATTERN SEQ(kindle) TYPE BY item HIERARCHY products"),
         "UnknownHierarchyError", r"^HIERARCHY products: no concept hierarchies are registered", "products",
         {"pattern": "SEQ(kindle)", "type_by": "item", "hierarchy": "products"}),
    Case("imprecise-time", FROM.format("UNCERTAIN BETWEEN ts AND ts PATTERN SEQ(A) DEFINE A AS action = 'view' "
                                       "MEASURES MAX(A.price) AS x"), "ImpreciseTimeError",
         r"with UNCERTAIN every measure is an expected value", "MAX(A.price) AS x"),
    Case("parameter-marker", FROM.format("PATTERN SEQ(A, B) DEFINE B AS action = ?, A AS action = ?"),
         "ParameterMarkerError", r"^positional parameter markers \(\?\) cannot be used here", "?",
         args=["buy", "view"], surfaces=("sparkseq.sql", "spark.sql", "connect", "connect-sparkseq")),
    Case("aggregate-placement", f"SELECT customer_id, seq_count(DISTINCT ts, action, 'SEQ(view)'), count(*) "
                                f"FROM {VIEW} GROUP BY customer_id", "AggregatePlacementError",
         r"^seq_count\(DISTINCT \.\.\.\) is not supported", "seq_count(DISTINCT ts, action, 'SEQ(view)')"),
    Case("seq-function-pattern", f"SELECT customer_id, seq_count(ts, action, 'SEQ(view,, buy)') FROM {VIEW} "
                                 "GROUP BY customer_id", "SqlParseError", r"^Expecting a symbol", ","),
    Case("seq-function-beside-aggregates", f"SELECT customer_id, count(*), seq_count(ts, action, 'SEQ(view,, buy)') "
                                           f"FROM {VIEW} GROUP BY customer_id", "SqlParseError", r"^Expecting a symbol",
         ","),
    Case("seq-function-symbol", f"SELECT customer_id, seq_sum(ts, action, 'SEQ(view, !rec, buy)', INTERVAL 10 MINUTES, "
                                f"'rec', price) FROM {VIEW} GROUP BY customer_id", "NegatedMeasureError",
         r"^seq_sum: symbol rec appears only negated", "'rec'"),
    Case("non-boolean-define", FROM.format("PATTERN SEQ(A) DEFINE A AS price + 1"), "SparkAnalysisError",
         r"^DEFINE of A: \[DATATYPE_MISMATCH\.UNEXPECTED_INPUT_TYPE\]", "price + 1",
         funnel(pattern="SEQ(A)", define={"A": "price + 1"})),
    Case("unknown-function", FROM.format("PATTERN SEQ(A) DEFINE A AS no_such_function(action)"), "SparkAnalysisError",
         r"^DEFINE of A: \[UNRESOLVED_ROUTINE\]", "no_such_function(action)",
         funnel(pattern="SEQ(A)", define={"A": "no_such_function(action)"})),
    Case("define-type-mismatch", FROM.format("PATTERN SEQ(A) DEFINE A AS tags = 'a'"), "SparkAnalysisError",
         r"^DEFINE of A: \[DATATYPE_MISMATCH\.BINARY_OP_DIFF_TYPES\]", "tags = 'a'",
         funnel(pattern="SEQ(A)", define={"A": "tags = 'a'"})),
    Case("unknown-column-around-the-operator", FROM.format(FUNNEL).replace("SELECT *", "SELECT m.nope"),
         "SparkAnalysisError", r"^\[UNRESOLVED_COLUMN\.WITH_SUGGESTION\] .*`m`\.`nope`", "m.nope"),
    Case("malformed-value-while-running", FROM.format("PATTERN SEQ(A) DEFINE A AS action = 1"), "CAST_INVALID_INPUT",
         r"^The value 'view' of the type \"STRING\" cannot be cast to \"BIGINT\"", "action = 1",
         funnel(pattern="SEQ(A)", define={"A": "action = 1"})),
    # the operator's name inside a string literal of the user's: the generated SQL carries it too,
    # and the parser extension must not take that SQL for an operator of the user's and drop the DEFINE's origins
    Case("operator-name-in-a-literal-while-running",
         FROM.format("PATTERN SEQ(A, B) DEFINE A AS action = 1, B AS action = 'MATCH_AGGREGATE ('"),
         "CAST_INVALID_INPUT", r"^The value '\w+' of the type \"STRING\" cannot be cast to \"BIGINT\"", "action = 1"),
    Case("division-by-zero-while-running", FROM.format("PATTERN SEQ(A) DEFINE A AS price / (price - price) > 1"),
         "DIVIDE_BY_ZERO", r"^Division by zero", "price / (price - price) > 1",
         funnel(pattern="SEQ(A)", define={"A": "price / (price - price) > 1"})),
]


def cases_on(surface: str) -> list[Any]:
    """The cases a surface can run, with their ids."""
    return [pytest.param(case, id=case.id) for case in CASES if case.on(surface)]


# --- what a surface shows, read back ------------------------------------------------------------

#: sparkseq's form: "ClassError: message at line L, column C" (or "at define['A'], column C"),
#: then the line of text and the underline.
SPARKSEQ_FORM = re.compile(r"(?P<kind>[A-Z]\w*Error): (?P<message>[^\n]*?) at (?:(?P<object>(?!line )[^\s,]+), )?"
                           r"(?:line (?P<line>\d+), )?column (?P<column>\d+)\n[^\n|]*\| (?P<text>[^\n]*)\n"
                           r"[^\n|]*\| (?P<marks>[ ^]*)")
#: Spark's form of an error raised while the job runs: "[CONDITION] message SQLSTATE: ..." and
#: "== SQL (line L, position P) ==" (or "== SQL of <object> (...) =="), the text, the underline.
RUNNING_FORM = re.compile(r"\[(?P<kind>[A-Z_]+)\] (?:[\w.]+: \[(?P=kind)\] )?(?P<message>[^\n]*?) SQLSTATE: \w+\n"
                          r"== SQL(?: of (?P<object>[^\n(]+))? \(line (?P<line>\d+), position (?P<column>\d+)\) ==\n"
                          r"(?P<text>[^\n]*)\n(?P<marks>[ ^]*)")


@dataclass(frozen=True)
class Seen:
    """An error as a surface shows it: kind, message, place and the underlined text."""

    kind: str
    message: str
    line: int | None
    column: int | None
    underlined: str
    object: str | None = field(default=None, compare=False)


def seen(text: str) -> Seen:
    """The first error of sparkseq's or Spark's form in ``text`` (a surface's whole error text)."""
    found = [m for m in (SPARKSEQ_FORM.search(text), RUNNING_FORM.search(text)) if m is not None]
    assert found, f"no error with a place in: {text[:2000]}"
    match = min(found, key=lambda m: m.start())
    marks = match["marks"]
    start = marks.index("^")
    underlined = match["text"][start:start + len(marks.strip())]
    line = int(match["line"]) if match["line"] else None
    return Seen(match["kind"], match["message"].removeprefix(f"[{match['kind']}] "), line,
                int(match["column"]), underlined, match["object"])


def shown(exc: BaseException) -> str:
    """An exception's text as the user reads it (a sparkseq error with its class, as the extension sends it)."""
    return f"{type(exc).__name__}: {exc}" if type(exc).__module__.startswith(("sql_rewrites", "sparkseq")) \
        else str(exc)


def in_user_words(text: str) -> None:
    for internal in INTERNALS:
        assert internal not in text, f"{internal!r} in: {text[:2000]}"


# --- the surfaces ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.Popen[str], int, IO[str]]]:
    folder = tmp_path_factory.mktemp("surfaces")
    (folder / "init.sql").write_text(CREATE_VIEW)
    port = free_port()
    stderr = (folder / "server.err").open("w+")
    process = subprocess.Popen([sys.executable, "-m", "sparkseq", "connect-server", "--port", str(port),
                                "--in-memory-catalog", "--init-file", str(folder / "init.sql")], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        yield process, port, stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        stderr.close()


@pytest.fixture(scope="module", autouse=True)
def start_connect_first(request: pytest.FixtureRequest) -> None:
    """Start the Connect server before the first test of the module when a Connect test will
    run: its start-up overlaps the in-process surfaces."""
    if any(item.module is request.module and "connect" in item.name for item in request.session.items):
        request.getfixturevalue("connect_server")


@pytest.fixture(scope="module")
def connect_port(connect_server: tuple[subprocess.Popen[str], int, IO[str]]) -> int:
    """The Connect server's port once it serves: its banner is read here, once (a second
    reader would wait for a banner the server never prints again)."""
    process, port, stderr = connect_server
    read_banner(process, stderr, timeout=START_TIMEOUT_S)
    return port


@pytest.fixture(scope="module")
def connect_errors(connect_port: int) -> dict[str, str]:
    """Every case run once by one Connect client: ``{case id: the error text}``."""
    port = connect_port
    statements = [[case.id, case.sql, case.args] for case in CASES if case.on("connect")]
    done = subprocess.run([sys.executable, "-m", "tests.servers.connect_clients", "errors", f"sc://127.0.0.1:{port}"],
                          input=json.dumps(statements), cwd=ROOT, capture_output=True, text=True,
                          timeout=CLIENT_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def connect_sparkseq_errors(connect_port: int) -> dict[str, str]:
    """Every case run once through ``sparkseq.sql`` (and, where it can be written so, through
    the DataFrame API: ``<id>#dataframe``) by one Connect client with sparkseq:
    ``{case id: the error text}``."""
    port = connect_port
    statements = [[case.id, case.sql, case.args] for case in CASES if case.on("connect-sparkseq")]
    statements += [[f"{case.id}#dataframe", None, None, {"table": VIEW, **frame_arguments(case)}]
                   for case in CASES if case.on("connect-dataframe")]
    done = subprocess.run([sys.executable, "-m", "tests.servers.connect_clients", "sparkseq-errors", f"sc://127.0.0.1:{port}"],
                          input=json.dumps(statements), cwd=ROOT, capture_output=True, text=True,
                          timeout=CLIENT_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def events(spark) -> str:
    spark.sql(CREATE_VIEW)
    return VIEW


@pytest.fixture(scope="module")
def dbapi(spark, events: str, thrift_server: Any) -> Iterator[Any]:
    impala = pytest.importorskip("impala.dbapi")
    drop_unservable_views(spark)
    connection = impala.connect(host=thrift_server.host, port=thrift_server.port, auth_mechanism="PLAIN",
                                user="test", password="unused", timeout=120)
    yield connection
    connection.close()


def failure(run: Any) -> str:
    """The text of the error ``run()`` raises."""
    with pytest.raises(Exception) as caught:  # noqa: PT011 - every surface raises its own kind
        run()
    return shown(caught.value)


_REFERENCE: dict[str, str] = {}


def reference_text(spark: Any, case: Case) -> str:
    """``sparkseq.sql``'s error for ``case`` (run once per case)."""
    if case.id not in _REFERENCE:
        _REFERENCE[case.id] = failure(lambda: sparkseq.sql(spark, case.sql, args=case.args).collect())
    return _REFERENCE[case.id]


def reference(spark: Any, case: Case) -> Seen:
    """``sparkseq.sql``'s error for ``case``, as the other surfaces must show it."""
    return seen(reference_text(spark, case))


pytestmark = pytest.mark.usefixtures("isolated_hierarchies", "events")


@pytest.mark.parametrize("case", cases_on("sparkseq.sql"))
def test_sparkseq_sql(spark, case: Case) -> None:
    text = reference_text(spark, case)
    in_user_words(text)
    error = seen(text)
    assert (error.kind, error.underlined) == (case.kind, case.underlined), text
    assert re.search(case.message, error.message), text
    assert error.object is None and error.line == 1 and case.sql[error.column - 1:].startswith(case.underlined)


@pytest.mark.parametrize("case", cases_on("spark.sql"))
def test_spark_sql(spark, case: Case) -> None:
    text = failure(lambda: (spark.sql(case.sql, args=case.args) if case.args else spark.sql(case.sql)).collect())
    in_user_words(text)
    assert seen(text) == reference(spark, case)


def frame_arguments(case: Case) -> dict[str, Any]:
    """The DataFrame API's arguments for ``case``."""
    return {"partition_by": "customer_id", "order_by": "ts", **(case.frame or {})}


@pytest.mark.parametrize("case", cases_on("dataframe"))
def test_dataframe_api(spark, case: Case) -> None:
    text = failure(lambda: sparkseq.match_aggregate(spark.table(VIEW), **frame_arguments(case)).collect())
    assert_as_dataframe_api_shows(spark, case, text)


@pytest.mark.parametrize("case", cases_on("connect-dataframe"))
def test_connect_dataframe_api(spark, connect_sparkseq_errors: dict[str, str], case: Case) -> None:
    """The DataFrame API on a Spark Connect session: as on a classic one (the places of an
    error while the job runs travel with the statement, in the argument's words)."""
    assert_as_dataframe_api_shows(spark, case, connect_sparkseq_errors[f"{case.id}#dataframe"])


def assert_as_dataframe_api_shows(spark: Any, case: Case, text: str) -> None:
    in_user_words(text)
    error, expected = seen(text), reference(spark, case)
    assert (error.kind, error.underlined) == (expected.kind, case.frame_underlined or expected.underlined), text
    assert error.message == expected.message.replace(f"columns of {VIEW}", "columns of the DataFrame"), text
    assert error.object is not None and error.object.endswith(tuple(_arguments(case.frame or {}))), text


def _arguments(frame: dict[str, Any]) -> list[str]:
    """The labels of the DataFrame API's arguments (``define['A']``, ``pattern``)."""
    labels = []
    for name, value in frame.items():
        labels += [f"{name}[{key!r}]" for key in value] if isinstance(value, dict) else [name]
    return labels


def assert_seen_in_another_session(text: str, expected: Seen, case: Case) -> None:
    """``text`` reads as ``expected``, where the error came from another session than the
    reference's (a JDBC session, which copied the temporary views there were when it opened; a
    Connect server's session): an unknown table's message is compared without its list of the
    session's tables and views."""
    if case.kind == "UnknownTableError":
        expected = Seen(expected.kind, expected.message.split("; tables and views")[0], expected.line,
                        expected.column, expected.underlined)
        text = re.sub(r"; tables and views: [^\n]*? at line", " at line", text)
    assert seen(text) == expected


@pytest.mark.parametrize("case", cases_on("thrift"))
def test_thrift_dbapi(spark, dbapi: Any, case: Case) -> None:
    from impala.error import Error

    cursor = dbapi.cursor()
    try:
        with pytest.raises(Error) as caught:
            cursor.execute(case.sql)
            cursor.fetchall()
    finally:
        cursor.close()
    text = str(caught.value)
    in_user_words(text)
    assert_seen_in_another_session(text, reference(spark, case), case)


@pytest.mark.parametrize("case", cases_on("connect"))
def test_connect_client(spark, connect_errors: dict[str, str], case: Case) -> None:
    text = connect_errors[case.id]
    in_user_words(text)
    assert_seen_in_another_session(text, reference(spark, case), case)


@pytest.mark.parametrize("case", cases_on("connect-sparkseq"))
def test_connect_client_with_sparkseq(spark, connect_sparkseq_errors: dict[str, str], case: Case) -> None:
    """``sparkseq.sql`` on a Spark Connect session: the statement is rewritten in the client, and
    an error while the job runs still points at the DEFINE (the places travel with the SQL)."""
    text = connect_sparkseq_errors[case.id]
    in_user_words(text)
    assert_seen_in_another_session(text, reference(spark, case), case)


@pytest.mark.parametrize("deliver", ["collect_workload", "workload"])
def test_an_error_while_a_workloads_shared_pass_runs_points_at_the_define(spark, deliver: str) -> None:
    """Two statements over one source share one pass (and its statistics job): a DEFINE that
    fails on the data points at itself in the script, as a statement alone does."""
    script = ";\n".join([FROM.format(FUNNEL), FROM.format("PATTERN SEQ(A, B) DEFINE A AS action = 'view', "
                                                            "B AS action = 1")])
    assert len(sparkseq.plan_workload(spark, script).groups) == 1
    try:
        if deliver == "collect_workload":
            text = failure(lambda: sparkseq.collect_workload(spark, script))
        else:
            text = failure(lambda: [frame.collect() for frame in sparkseq.workload(spark, script)])
    finally:
        sparkseq.release_workload(spark, script)
    in_user_words(text)
    error = seen(text)
    assert (error.kind, error.line, error.underlined) == ("CAST_INVALID_INPUT", 2, "action = 1"), text
    assert script.splitlines()[1][error.column - 1:].startswith("action = 1")


def test_an_error_while_running_points_at_the_define_in_the_script_as_written(spark) -> None:
    """In a script with a ``{name}`` placeholder the place is in the text the user wrote (not
    the text with the DataFrame's view name filled in): line 3, the condition's column there."""
    frame = spark.table(VIEW)
    script = ("SELECT 1 AS x;\n"
              "SELECT *\n"
              "  FROM {events} MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A AS action = 1) AS m")
    text = failure(lambda: sparkseq.sql(spark, script, events=frame).collect())
    in_user_words(text)
    error = seen(text)
    # the view name filled in for {events} is longer: the column tells which text the place is in
    assert (error.kind, error.line, error.column, error.underlined) == ("CAST_INVALID_INPUT", 3, 73, "action = 1")


def test_an_error_while_reading_a_view_points_at_the_define_that_created_it(spark, dbapi: Any) -> None:
    """A view keeps the SQL its statement became, which Spark parses again whenever the view
    is read: its errors still point at the DEFINE in the CREATE VIEW as written, naming the view."""
    statement = (f"CREATE OR REPLACE TEMP VIEW surface_view AS SELECT * FROM {VIEW} "
                 "MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A AS action = 1) AS m")
    spark.sql(statement)
    cursor = dbapi.cursor()
    try:
        texts = [failure(lambda: spark.table("surface_view").collect()),
                 failure(lambda: cursor.execute("SELECT * FROM surface_view"))]
    finally:
        cursor.close()
        spark.catalog.dropTempView("surface_view")
    for text in texts:
        in_user_words(text)
        error = seen(text)
        assert (error.kind, error.object, error.line, error.underlined) == \
            ("CAST_INVALID_INPUT", "VIEW surface_view", 1, "action = 1"), text
        assert statement[error.column - 1:].startswith("action = 1")
