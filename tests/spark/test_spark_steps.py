"""The funnel on local Spark: STEPS(*) and MAX_STEP() in MATCH_AGGREGATE, ``seq_steps`` /
``seq_max_step``, the DataFrame API and streams, against the brute-force oracle."""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import sys
from decimal import Decimal
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

import sparkseq
from sql_rewrites.errors import StreamingError
from tests.conftest import run_property
from tests.kernels.test_kernel_oracle import events, plans
from tests.spark.test_spark_live import SETTINGS as LIVE_SETTINGS
from tests.spark.test_spark_live import cases as live_cases_of
from tests.spark.test_spark_live import plain_text, run_case
from tests.support import oracle, sql_cases
from tests.support.spark_cases import events_frame, expected, got
from udafs.plan import CountType, Measure, MeasureKind, Plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
FUNNEL = (Measure(MeasureKind.STEPS, name="steps"), Measure(MeasureKind.MAX_STEP, name="max_step"),
          Measure(MeasureKind.COUNT_STAR, name="n"))


def with_funnel(plan: Plan) -> Plan:
    return dataclasses.replace(plan, measures=FUNNEL)


def as_exact(value: object, count_type: CountType) -> object:
    """A Spark value as the oracle's: STEPS' elements are int (BIGINT), Decimal or float."""
    if isinstance(value, list):
        want = {CountType.BIGINT: int, CountType.DECIMAL: Decimal, CountType.DOUBLE: float}[count_type]
        assert all(type(x) is want for x in value), value
        return [int(x) for x in value]
    return value


def assert_funnel_rows(plan: Plan, rows: list, groups: list[oracle.Events]) -> None:
    have = {k: [as_exact(v, plan.count_type) for v in vals] for k, vals in got(plan, rows).items()}
    want = expected(plan, groups)
    assert have == want


@st.composite
def funnel_cases(draw: st.DrawFn, **options: object) -> tuple[Plan, list[oracle.Events]]:
    plan = with_funnel(draw(plans(**options, sql=True)))
    groups = draw(st.lists(events(plan), min_size=1, max_size=20))
    return plan, [ev for ev in groups if oracle.cheap(plan, ev)]


@pytest.mark.parametrize("window", ["none", "within", "slide"])
def test_match_aggregate_funnel_matches_oracle(spark: SparkSession, window: str) -> None:
    """Random patterns (Kleene, negation in any gap, ties), every count type, many partitions."""
    @SETTINGS
    @given(funnel_cases(window=window, middle_negation=True, edges=window != "none"))
    def check(case: tuple[Plan, list[oracle.Events]]) -> None:
        plan, groups = case
        events_frame(spark, groups).createOrReplaceTempView("cases")
        rows = sparkseq.sql(spark, sql_cases.select_sql(plan)).collect()
        assert_funnel_rows(plan, rows, groups)

    run_property(check)


# -- the Kindle funnel on hand-made clicks --------------------------------------------------

CLICKS = [  # (customer, minute, action)
    (1, 0, "view"), (1, 1, "cart"), (1, 2, "buy"),           # all three steps
    (2, 0, "view"), (2, 1, "view"), (2, 3, "cart"),          # two views, then the cart: steps [2, 2, 0]
    (3, 0, "view"),                                          # one step
    (4, 0, "cart"), (4, 1, "buy"),                           # no view: step 0
    (5, 0, "view"), (5, 30, "cart"),                         # the cart comes too late for WITHIN 10 minutes
]
PATTERN = "SEQ(view, cart, buy)"
WANT_STEPS = {1: [1, 1, 1], 2: [2, 2, 0], 3: [1, 0, 0], 4: [0, 0, 0], 5: [1, 0, 0]}
WANT_MAX = {1: 3, 2: 2, 3: 1, 4: 0, 5: 1}


@pytest.fixture()
def clicks(spark: SparkSession) -> str:
    rows = [(c, m * 60, a) for c, m, a in CLICKS]
    spark.createDataFrame(rows, "customer int, secs bigint, action string").selectExpr(
        "customer", "timestamp_seconds(secs) AS ts", "action").createOrReplaceTempView("funnel_clicks")
    return "funnel_clicks"


def test_match_aggregate_on_clicks(spark: SparkSession, clicks: str) -> None:
    text = f"""SELECT customer, steps, max_step FROM {clicks} MATCH_AGGREGATE (
        PARTITION BY customer ORDER BY ts PATTERN {PATTERN} TYPE BY action
        MEASURES STEPS(*) AS steps, MAX_STEP() AS max_step WITHIN INTERVAL 10 MINUTES) AS m"""
    frame = sparkseq.sql(spark, text)
    rows = frame.collect()
    assert {r.customer: r.steps for r in rows} == WANT_STEPS
    assert {r.customer: r.max_step for r in rows} == WANT_MAX
    assert dict(frame.dtypes)["steps"] == "array<bigint>"


def test_seq_functions_and_the_drop_off_table(spark: SparkSession, clicks: str) -> None:
    """The BI functions in plain GROUP BY, through spark.sql (the parser extension) and
    sparkseq.sql; the drop-off table counts customers by the step they reached."""
    per_customer = (f"SELECT customer, seq_steps(ts, action, '{PATTERN}', INTERVAL 10 MINUTES) AS steps, "
                    f"seq_max_step(ts, action, '{PATTERN}', INTERVAL 10 MINUTES) AS max_step "
                    f"FROM {clicks} GROUP BY customer")
    for run in (spark.sql, lambda text: sparkseq.sql(spark, text)):
        rows = run(per_customer).collect()
        assert {r.customer: r.steps for r in rows} == WANT_STEPS
        assert {r.customer: r.max_step for r in rows} == WANT_MAX
    drop_off = spark.sql(f"SELECT max_step, count(*) AS customers FROM ({per_customer}) GROUP BY max_step "
                         "ORDER BY max_step").collect()
    assert [(r.max_step, r.customers) for r in drop_off] == [(0, 1), (1, 2), (2, 1), (3, 1)]
    no_window = spark.sql(f"SELECT customer, seq_steps(ts, action, '{PATTERN}') AS s FROM {clicks} "
                          "WHERE customer = 5 GROUP BY customer").collect()
    assert no_window[0].s == [1, 1, 0]  # without WITHIN the late cart counts


def test_seq_function_errors_before_any_job(spark: SparkSession, clicks: str) -> None:
    with pytest.raises(Exception, match="seq_steps.*takes 4 arguments"):
        sparkseq.sql(spark, f"SELECT seq_steps(ts, action, '{PATTERN}', NULL, 'view') FROM {clicks}").collect()
    with pytest.raises(Exception, match="line 1"):
        sparkseq.sql(spark, f"SELECT seq_max_step(ts, action, 'SEQ(view,, cart)') FROM {clicks}").collect()


def test_dataframe_api(spark: SparkSession, clicks: str) -> None:
    out = sparkseq.match_aggregate(spark.table(clicks), order_by="ts", partition_by="customer", pattern=PATTERN,
                                   type_by="action", measures={"steps": "STEPS(*)", "max_step": "MAX_STEP()"},
                                   within="10 minutes", count_type="DECIMAL")
    rows = out.collect()
    assert {r.customer: [int(x) for x in r.steps] for r in rows} == WANT_STEPS
    assert all(isinstance(x, Decimal) for r in rows for x in r.steps)
    assert {r.customer: r.max_step for r in rows} == WANT_MAX


def test_sliding_windows(spark: SparkSession, clicks: str) -> None:
    """Windows of 10 minutes every 5: customer 5's cart (minute 30) is its own window, step 0."""
    text = f"""SELECT customer, window_start, steps, max_step FROM {clicks} MATCH_AGGREGATE (
        PARTITION BY customer ORDER BY ts PATTERN {PATTERN} TYPE BY action
        MEASURES STEPS(*) AS steps, MAX_STEP() AS max_step
        WITHIN INTERVAL 10 MINUTES SLIDE INTERVAL 5 MINUTES) AS m WHERE customer = 5 ORDER BY window_start"""
    rows = sparkseq.sql(spark, text).collect()
    assert [(r.steps, r.max_step) for r in rows] == [([1, 0, 0], 1), ([1, 0, 0], 1), ([0, 0, 0], 0), ([0, 0, 0], 0)]


def test_step_overflow_names_the_partition(spark: SparkSession) -> None:
    """SEQ(A+, B) over 70 A rows: the prefix (A+) has 2**70 - 1 matches, more than BIGINT holds."""
    spark.range(70).selectExpr("'big one' AS k", "id AS ts", "'A' AS t").createOrReplaceTempView("many_a")
    text = """SELECT * FROM many_a MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A+, B) TYPE BY t
              MEASURES STEPS(*) AS steps) AS m"""
    overflow = r"measure .steps. \(STEPS\) in partition {\"k\":\"big one\"}.*does not fit BIGINT"
    with pytest.raises(PySparkException, match=overflow):
        sparkseq.sql(spark, text).collect()
    rows = sparkseq.sql(spark, text.replace("AS steps)", "AS steps COUNT TYPE DECIMAL)")).collect()
    assert rows[0].steps == [Decimal(2**70 - 1), Decimal(0)]


def test_stream_equals_batch(spark: SparkSession, tmp_path: Path) -> None:
    """Over a stream each final SLIDE window's funnel equals the batch window's."""
    @LIVE_SETTINGS
    @given(live_cases_of(window="slide", middle_negation=True, edges=True))
    def check(case: tuple[Plan, list[oracle.Events], int]) -> None:
        plan, groups, seed = case
        plan = with_funnel(plan)
        run_case(spark, tmp_path, plan, groups, seed, plain_text(plan))

    run_property(check)


def test_stream_without_slide_is_refused(spark: SparkSession) -> None:
    stream = spark.readStream.format("rate").load().selectExpr("value % 3 AS customer", "timestamp AS ts",
                                                              "'view' AS action").withWatermark("ts", "1 second")
    stream.createOrReplaceTempView("funnel_stream")
    text = f"""SELECT * FROM funnel_stream MATCH_AGGREGATE (PARTITION BY customer ORDER BY ts
        PATTERN {PATTERN} TYPE BY action MEASURES STEPS(*) AS steps WITHIN INTERVAL 10 MINUTES) AS m"""
    with pytest.raises(StreamingError, match="STEPS.*needs WITHIN ... SLIDE"):
        sparkseq.sql(spark, text)


# -- the Kindle funnel example ----------------------------------------------------------------

def test_kindle_funnel_example(spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The example's tables add up, its BI-function table is the same, the top customer's
    STEPS equal the oracle's on that customer's clicks, and the chart is a PNG."""
    funnel = example("kindle_funnel_steps")
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        chart = tmp_path / "funnel.png"
        results = funnel.main(["--chart", str(chart)], spark=spark)
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    steps, drop_off = results["steps"], results["drop_off"]
    assert results["bi_drop_off"].equals(drop_off)
    assert int(drop_off.customers.sum()) == len(steps) and sorted(drop_off.max_step) == [0, 1, 2, 3, 4]
    assert all(m == max((i + 1 for i, c in enumerate(s) if c), default=0) for s, m in zip(steps.steps, steps.max_step))
    top = steps.iloc[0]
    assert list(top.steps) == _oracle_steps(top.customer_id)
    out = capsys.readouterr().out
    assert "Drop-off table" in out and "4. bought a case" in out
    counts = funnel.reached(drop_off)
    assert counts == [int((steps.max_step >= i).sum()) for i in range(1, 5)]
    if importlib.util.find_spec("matplotlib") is None:
        assert not chart.exists() and funnel.CHART_HELP in capsys.readouterr().err
    else:
        assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"written to {chart}" in out


def test_chart_without_matplotlib_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    funnel = example("kindle_funnel_steps")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    assert funnel.write_chart([3, 2, 1, 0], tmp_path / "f.png") is False
    assert "pip install 'sparkseq[chart]'" in capsys.readouterr().err and not (tmp_path / "f.png").exists()


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _oracle_steps(customer: int) -> list[int]:
    """STEPS(*) of SEQ(VK, BK, !REC, VC, BC) WITHIN 10 minutes over one customer's sample clicks."""
    from datetime import datetime, timezone

    from sparkseq.demo import CLICKS
    from udafs.plan import Element

    symbols = {("view", "kindle"): 0, ("buy", "kindle"): 1, ("recommendation", None): 2, ("view", "case"): 3,
               ("buy", "case"): 4}
    with CLICKS.open() as f:
        clicks = [r for r in csv.DictReader(f) if r["customer_id"] == str(customer)]
    masks = [sum(1 << k for (action, item), k in symbols.items() if r["action"] == action and item in (None, r["item"]))
             for r in clicks]
    micros = [int(datetime.fromisoformat(r["ts"]).replace(tzinfo=timezone.utc).timestamp()) * 1_000_000
              for r in clicks]
    plan = Plan(symbols=("VK", "BK", "REC", "VC", "BC"), elements=(Element(0), Element(1), Element(3), Element(4)),
                negations=(0, 0, 1 << 2, 0, 0), within=600 * 1_000_000, measures=(FUNNEL[0],))
    return oracle.step_counts(oracle.Events(micros, masks), plan)


def test_optional_step_end_to_end(spark: SparkSession, clicks: str) -> None:
    """SEQ(view, cart?, buy): an optional step counts both ways, as the oracle says, in
    MATCH_AGGREGATE and in seq_steps."""
    from udafs.plan import Element

    plan = Plan(("view", "cart", "buy"), (Element(0), Element(1, False, 0), Element(2)), (0, 0, 0, 0),
                within=600 * 1_000_000, measures=(FUNNEL[0],))
    bits = {"view": 1, "cart": 2, "buy": 4}
    want = {c: oracle.step_counts(oracle.Events([m * 60_000_000 for cc, m, _ in CLICKS if cc == c],
                                                [bits[a] for cc, _, a in CLICKS if cc == c]), plan)
            for c in WANT_STEPS}
    assert want[2] == [2, 4, 0] and want[1] == [1, 2, 2]  # two views: alone, or each with the cart
    text = f"""SELECT customer, steps FROM {clicks} MATCH_AGGREGATE (PARTITION BY customer ORDER BY ts
        PATTERN SEQ(view, cart?, buy) TYPE BY action MEASURES STEPS(*) AS steps WITHIN INTERVAL 10 MINUTES) AS m"""
    assert {r.customer: r.steps for r in sparkseq.sql(spark, text).collect()} == want
    rows = spark.sql(f"SELECT customer, seq_steps(ts, action, 'SEQ(view, cart?, buy)', INTERVAL 10 MINUTES) AS s "
                     f"FROM {clicks} GROUP BY customer").collect()
    assert {r.customer: r.s for r in rows} == want
