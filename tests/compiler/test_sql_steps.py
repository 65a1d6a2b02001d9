"""The funnel measures in the compiler: STEPS(*) and MAX_STEP() typed, planned and generated."""

from __future__ import annotations

import pytest

from sql_rewrites import errors as E
from sql_rewrites.generation.shared import sharing_key
from sql_rewrites.planning.planner import Path, PlanSettings, measured_path, statistics_threshold
from tests.compiler.test_sql_analysis import SCHEMA, clause, expect, one, outputs
from udafs.plan import MeasureKind

BODY = """PARTITION BY customer_id ORDER BY ts PATTERN SEQ(VK, BK, !REC, VC+, BC) TYPE BY action
  MEASURES {measures} {count_type} WITHIN INTERVAL 10 MINUTES {slide}"""


def funnel(measures: str = "STEPS(*) AS steps, MAX_STEP() AS max_step", count_type: str = "",
           slide: str = "") -> str:
    return clause(BODY.format(measures=measures, count_type=count_type, slide=slide))


@pytest.mark.parametrize(("count_type", "steps"), [("", "ARRAY<BIGINT>"),
                                                  ("COUNT TYPE DECIMAL", "ARRAY<DECIMAL(38, 0)>"),
                                                  ("COUNT TYPE DOUBLE", "ARRAY<DOUBLE>")])
def test_steps_is_an_array_of_counts_and_max_step_a_bigint(count_type: str, steps: str) -> None:
    query = one(funnel(count_type=count_type, slide="SLIDE INTERVAL 1 MINUTE"))
    assert outputs(query)[-2:] == [("steps", steps), ("max_step", "BIGINT")]
    assert [m.kind for m in query.plan.measures] == [MeasureKind.STEPS, MeasureKind.MAX_STEP]
    assert [(m.symbol, m.column) for m in query.plan.measures] == [(None, None), (None, None)]


def test_funnel_measures_mix_with_the_others_and_any_case() -> None:
    query = one(funnel("count(*) AS n, steps(*) AS s, Max_Step() AS ms, SUM(BC.price) AS revenue"))
    assert [o for o, _ in outputs(query)][-4:] == ["n", "s", "ms", "revenue"]


@pytest.mark.parametrize(("measures", "phrases"), [
    ("STEPS() AS s", ["STEPS takes *", "STEPS(*)"]),
    ("STEPS(VK) AS s", ["STEPS takes *", "got STEPS(VK)"]),
    ("MAX_STEP(*) AS m", ["MAX_STEP takes no argument", "MAX_STEP()"]),
    ("MAX_STEP(BK) AS m", ["MAX_STEP takes no argument"]),
    ("STEPS(*)", ["needs a name", "STEPS(*) AS name"]),
])
def test_funnel_measure_errors_point_at_the_call(measures: str, phrases: list[str]) -> None:
    error = expect(E.SqlRewriteError, funnel(measures), *phrases)
    assert "line 2" in str(error), str(error)


def test_unknown_measure_lists_the_funnel_measures() -> None:
    expect(E.UnknownMeasureError, funnel("STEP(*) AS s"), "STEPS(*)", "MAX_STEP()")


def test_funnel_plans_run_grouped_whatever_the_key_size() -> None:
    """Time split and the streaming UDTF count the whole pattern only; a huge key stays grouped."""
    plan = one(funnel()).plan
    assert statistics_threshold(plan) is None  # no key size changes its path
    choice = measured_path(plan, None, PlanSettings())
    assert choice.path is Path.GROUPED and "STEPS(*)" in choice.reason
    with pytest.raises(ValueError, match="grouped path only"):
        measured_path(plan, None, PlanSettings(forced=Path.TIME_SPLIT))


def test_generated_sql_casts_the_array() -> None:
    from sql_rewrites.rewriter import rewrite

    sql = rewrite(funnel(), SCHEMA, lambda plan: "engine_fn")  # type: ignore[arg-type]
    assert "ARRAY<BIGINT>" in sql.upper() and "`steps`" in sql and "`max_step`" in sql


def test_e_cube_refuses_the_funnel_measures_at_the_cube() -> None:
    sql = clause("""PARTITION BY customer_id ORDER BY ts TYPE BY action
  PATTERNS (SEQ(view, buy), SEQ(view, cart, buy)) MEASURES STEPS(*) AS s WITHIN INTERVAL 10 MINUTES""")
    error = expect(E.CubeError, sql, "measure s: STEPS(*) counts the prefixes of one pattern", "E-Cube")
    assert "line 2" in str(error)


def test_funnel_statements_do_not_share_a_workload_pass() -> None:
    """The shared pass evaluates many plans with the multi-plan engine, which counts whole patterns."""
    assert sharing_key(one(funnel())) is None
    assert sharing_key(one(funnel("COUNT(*) AS n"))) is not None


def test_an_optional_first_element_is_refused_at_the_measure() -> None:
    sql = clause("""PARTITION BY customer_id ORDER BY ts PATTERN SEQ(VK?, BK) TYPE BY action
  MEASURES STEPS(*) AS s WITHIN INTERVAL 10 MINUTES""")
    error = expect(E.QuantifierCombinationError, sql, "measure s: STEPS(*) counts the prefixes", "VK? is optional")
    assert "line 2" in str(error)


def test_quantified_elements_take_the_funnel() -> None:
    plan = one(funnel().replace("SEQ(VK, BK, !REC, VC+, BC)", "SEQ(VK, BK?, !REC, VC{2,3}, BC)")).plan
    assert plan.quantified and [m.kind for m in plan.measures] == [MeasureKind.STEPS, MeasureKind.MAX_STEP]
