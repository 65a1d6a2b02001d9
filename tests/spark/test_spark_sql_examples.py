"""The examples' queries run (so they cannot rot), and agree with the oracle on samples."""

from __future__ import annotations

import csv
import importlib.util
import math
from pathlib import Path
from types import ModuleType

import pytest

import sparkseq
from tests.support import oracle
from udafs.plan import Element, Measure, MeasureKind, Plan, ValueType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SECOND = 1_000_000


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def epoch_micros(text: str) -> int:
    from datetime import datetime, timezone

    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()) * SECOND


def rows_of(path: Path, key: str, value: str) -> list[dict[str, str]]:
    with path.open() as f:
        return [r for r in csv.DictReader(f) if r[key] == value]


@pytest.fixture(scope="module")
def utc(spark):
    """Read the CSV timestamps as UTC, so that the oracle's times agree with Spark's."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    yield spark
    spark.conf.set("spark.sql.session.timeZone", before)


def test_ecommerce_funnel(utc) -> None:
    funnel = example("ecommerce_funnel")
    assert funnel.load(utc) == 30_812
    results = funnel.run(utc)
    customers, windows = results["funnels per customer"], results["busiest 10-minute windows"]
    assert list(customers.columns) == ["customer_id", "funnels", "revenue"] and len(customers) > 100
    assert list(windows.columns) == ["window_start", "window_end", "funnels", "customers", "revenue"]
    assert len(windows) == 5 and (windows.funnels > 0).all()
    top = customers.iloc[0]
    symbols = {("view", "kindle"): 0, ("buy", "kindle"): 1, ("recommendation", None): 2, ("view", "case"): 3,
               ("buy", "case"): 4}
    clicks = rows_of(funnel.CLICKS, "customer_id", str(top.customer_id))
    masks = [sum(1 << k for (action, item), k in symbols.items()
                 if r["action"] == action and item in (None, r["item"])) for r in clicks]
    cents = [round(float(r["price"]) * 100) for r in clicks]
    plan = Plan(symbols=("VK", "BK", "REC", "VC", "BC"), elements=(Element(0), Element(1), Element(3), Element(4)),
                negations=(0, 0, 1 << 2, 0, 0), within=600 * SECOND, columns=(ValueType.INT,),
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 4, 0, "s")))
    [(_, _, (n, revenue))] = oracle.evaluate(oracle.Events([epoch_micros(r["ts"]) for r in clicks], masks,
                                                           (cents,)), plan)
    assert (top.funnels, top.revenue * 100) == (n, revenue)


def test_traffic_routes(utc) -> None:
    traffic = example("traffic_routes")
    assert traffic.load(utc) == 18_930
    results = traffic.run(utc)
    routes, speed = results["routes"], results["speed"]
    assert list(routes["query"]) == [f"q{i}" for i in range(1, 8)]
    assert (routes["busy windows"] > 0).all() and (routes["peak trips"] >= routes["vehicles then"]).all()
    top = speed.iloc[0]
    reports = rows_of(traffic.DATA, "vehicle_id", top.vehicle_id)
    streets = ("LindenSt", "ParkAve", "OakSt", "MainSt")
    plan = Plan(symbols=streets, elements=tuple(Element(k) for k in range(4)), negations=(0,) * 5,
                within=600 * SECOND, columns=(ValueType.FLOAT,),
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.AVG, 3, 0, "v")))
    ev = oracle.Events([epoch_micros(r["ts"]) for r in reports],
                       [1 << streets.index(r["street"]) if r["street"] in streets else 0 for r in reports],
                       ([float(r["speed"]) if r["speed"] else None for r in reports],))
    [(_, _, (n, mean))] = oracle.evaluate(ev, plan)
    assert top.trips == n and math.isclose(top.avg_main_speed, round(mean, 1))


def test_stock_sectors(spark) -> None:
    """Both E-Cube workloads in one statement each equal their patterns run one by one."""
    stocks = example("stock_sectors")
    results = stocks.run(spark, 20_000)
    for name, workload in (("workload 7", stocks.WORKLOAD_7), ("workload 8", stocks.WORKLOAD_8)):
        cube = dict(results[name])
        assert set(cube) == set(workload)
        for pattern in workload[:4]:
            alone = dict(stocks.totals(sparkseq.sql(spark, stocks.patterns_statement([pattern]))))
            assert alone == {pattern: cube[pattern]}
    assert results["cuboids"] == 36
    assert [(p, f) for _, p, _, f in results["navigation"]] == [
        ("SEQ(Computer, QQQ, ANAT)", True), ("SEQ(Computer, Services, ANAT)", True), ("SEQ(Computer, ANAT)", True),
        ("SEQ(INTC, ANAT)", False)]
    assert all(total > 0 for _, _, total, _ in results["navigation"])


def test_streaming_funnel(utc, tmp_path: Path) -> None:
    """The live funnel over replayed JSON files: every window the watermark passed, those
    without a funnel (COUNT 0) included, streamed once and equal to the batch answer."""
    streamed, wrong = example("streaming_funnel").run(utc, tmp_path, files=3, pause=0.2)
    assert streamed.where("funnels = 0").count() > 0 and streamed.where("funnels > 0").count() > 0 and wrong == 0
    assert streamed.columns == ["customer_id", "window_start", "window_end", "funnels", "revenue"]
