"""The compiler's view of the engine function agrees with the Spark layer's.

``sql_rewrites`` may not import ``udafs.spark_udfs`` (it needs pyarrow); this test
pins the two descriptions of the same contract together.
"""

from __future__ import annotations

import re

import pytest

from sql_rewrites import engine_contract
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, ValueType

spark_udfs = pytest.importorskip("udafs.spark_udfs")


def normalize(ddl: str) -> str:
    return re.sub(r"\s+", "", ddl).lower()


@pytest.mark.parametrize("count_type", list(CountType))
def test_result_type_matches_the_registered_udf(count_type: CountType) -> None:
    plan = Plan(
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
    assert normalize(engine_contract.engine_result_type(plan)) == normalize(spark_udfs.output_ddl(plan))


def test_partition_slot_matches() -> None:
    assert engine_contract.PARTITION_SLOT == spark_udfs.PARTITION_SLOT
