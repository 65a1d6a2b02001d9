"""The compiler and the Spark layer read the engine contract from one place: ``udafs.contract``."""

from __future__ import annotations

import pytest

from sql_rewrites import engine_contract
from udafs import contract
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, ValueType

spark_udfs = pytest.importorskip("udafs.workers.grouped")


def plan_with_every_measure(count_type: CountType) -> Plan:
    return Plan(
        symbols=("A", "B"),
        elements=(Element(0), Element(1, kleene=True)),
        negations=(0, 0, 0),
        within=10,
        slide=5,
        measures=(
            Measure(MeasureKind.COUNT_STAR, name="n"),
            Measure(MeasureKind.COUNT, 1, name="nb"),
            Measure(MeasureKind.SUM, 1, 0, "si"),
            Measure(MeasureKind.SUM, 1, 1, "sf"),
            Measure(MeasureKind.MIN, 0, 0, "mi"),
            Measure(MeasureKind.MAX, 0, 1, "mf"),
            Measure(MeasureKind.AVG, 1, 0, "ai"),
        ),
        columns=(ValueType.INT, ValueType.FLOAT),
        count_type=count_type,
    )


@pytest.mark.parametrize(("count_type", "count_sql"), [
    (CountType.BIGINT, "BIGINT"), (CountType.DECIMAL, "DECIMAL(38, 0)"), (CountType.DOUBLE, "DOUBLE")])
def test_one_result_type_for_compiler_and_udf(count_type: CountType, count_sql: str) -> None:
    plan = plan_with_every_measure(count_type)
    want = (f"ARRAY<STRUCT<window_start: BIGINT, window_end: BIGINT, m0: {count_sql}, m1: {count_sql}, "
            f"m2: {count_sql}, m3: DOUBLE, m4: BIGINT, m5: DOUBLE, m6: DOUBLE, error: STRING>>")
    assert engine_contract.engine_result_type(plan) == spark_udfs.output_ddl(plan) == want


def test_the_spark_layer_uses_the_contract_itself() -> None:
    assert spark_udfs.output_ddl is contract.result_type
    assert spark_udfs.result_fields is contract.result_fields
    assert engine_contract.PARTITION_SLOT == spark_udfs.PARTITION_SLOT == contract.PARTITION_SLOT
