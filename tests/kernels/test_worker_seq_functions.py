"""The worker bodies of the ``seq_*`` functions, called as a Python worker calls them (Arrow
arrays of one group), without Spark: every function against the oracle, the arguments'
errors in the order the function checks them, and the layering (the bodies import nothing
of the compiler; the compiler's description travels inside each body)."""

from __future__ import annotations

import datetime
import decimal
import math
import re
import subprocess
import sys

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from sql_rewrites.analysis.seq_functions import BY_NAME, COUNT, SIGNATURES, SUM, FunctionArgumentError, Signature
from sql_rewrites.errors import NonNumericMeasureError, OrderByError, UnknownHierarchyError, WindowTypeMismatchError
from tests.conftest import run_property
from tests.spark.test_spark_sql_functions import MEASURES, cases, close
from tests.support import oracle
from udafs.plan import Plan
from udafs.workers.seq_functions import FunctionOverflowError, seq_body

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
ARROW_TIME = {"bigint": pa.int64(), "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us")}


def call(name: str, *args: object, rows: int | None = None) -> object:
    """``name``'s body over one group: array arguments as given, anything else repeated per row."""
    n = rows if rows is not None else next(len(a) for a in args if isinstance(a, pa.Array))
    arrays = [a if isinstance(a, pa.Array) else pa.array([a] * n) for a in args]
    return seq_body(BY_NAME[name])(*arrays)


def group_arguments(plan: Plan, ev: oracle.Events, time: str
                    ) -> tuple[pa.Array, pa.Array, tuple[pa.Array, pa.Array], object]:
    """(ts, type, value columns, within) of one group as Spark passes them: types are the
    symbols' names, within in ts's units, plus a row with a NULL time (it takes part in nothing;
    it also keeps the group from being empty, as a Spark group never is)."""
    ts = pa.array([*ev.ts, None], pa.int64()).cast(ARROW_TIME[time])
    types = pa.array([*(plan.symbols[m.bit_length() - 1] if m else None for m in ev.mask), plan.symbols[0]])
    values = (pa.array([*ev.values[0], 1], pa.int64()), pa.array([*ev.values[1], 1.0], pa.float64()))
    if plan.within is None:
        return ts, types, values, None
    return ts, types, values, plan.within if time == "bigint" else datetime.timedelta(microseconds=plan.within)


def within_array(within: object, rows: int) -> pa.Array:
    if isinstance(within, datetime.timedelta):
        return pa.array([within] * rows, pa.duration("us"))
    return pa.array([within] * rows, pa.int64())


@pytest.mark.parametrize("window", ["none", "within"])
def test_functions_match_oracle(window: str) -> None:
    @SETTINGS
    @given(cases(window))
    def check(case: tuple[Plan, list[oracle.Events], int, str]) -> None:
        plan, groups, symbol, time = case
        pattern, name = plan.describe(), plan.symbols[symbol]
        for ev in groups:
            [(_, _, want)] = oracle.evaluate(ev, plan)
            ts, types, values, within = group_arguments(plan, ev, time)
            length = within_array(within, len(ts))
            assert call("seq_count", ts, types, pattern, length) == want[0]
            for (kind, column, _), w in zip(MEASURES, want[1:]):
                have = call(f"seq_{kind.value}", ts, types, pattern, length, name, values[column])
                assert close(have, w), (kind, have, w)

    run_property(check)


def test_window_functions_match_oracle() -> None:
    @SETTINGS
    @given(cases("slide"))
    def check(case: tuple[Plan, list[oracle.Events], int, str]) -> None:
        plan, groups, symbol, _ = case
        pattern, name = plan.describe(), plan.symbols[symbol]
        for ev in groups:
            want = oracle.evaluate(ev, plan)
            ts, types, values, _ = group_arguments(plan, ev, "timestamp")
            within, slide = (within_array(datetime.timedelta(microseconds=n), len(ts))
                             for n in (plan.within, plan.slide))
            windows = call("seq_count_windows", ts, types, pattern, within, slide).as_py()
            bounds = [(w[0], w[1]) for w in want]
            micros = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
            assert [((r["window_start"] - micros) // datetime.timedelta(microseconds=1),
                     (r["window_end"] - micros) // datetime.timedelta(microseconds=1)) for r in windows] == bounds
            assert [r["count"] for r in windows] == [w[2][0] for w in want]
            for j, (kind, column, _) in enumerate(MEASURES, start=1):
                have = call(f"seq_{kind.value}_windows", ts, types, pattern, within, slide, name,
                            values[column]).as_py()
                assert all(close(h[kind.value], w[2][j]) for h, w in zip(have, want)), (kind, have, want)

    run_property(check)


def test_non_finite_nan_and_null_values() -> None:
    ts, types = pa.array([1, 2, 3, 4], pa.int64()), pa.array(["a", "b", "b", "b"])
    values = pa.array([0.0, math.inf, None, -math.inf], pa.float64())
    assert call("seq_max", ts, types, "SEQ(a, b)", None, "b", values) == math.inf
    assert call("seq_min", ts, types, "SEQ(a, b)", None, "b", values) == -math.inf
    assert math.isnan(call("seq_sum", ts, types, "SEQ(a, b)", None, "b", values))  # inf + -inf
    assert math.isnan(call("seq_avg", ts, types, "SEQ(a, b)", None, "b", pa.array([0.0, math.nan, 1.0, 2.0])))
    assert call("seq_sum", ts, types, "SEQ(a, b)", None, "b", pa.nulls(4, pa.float64())) is None
    assert call("seq_sum", ts, types, "SEQ(a, b)", None, "b", pa.nulls(4)) is None  # a NULL literal
    assert call("seq_count", pa.array([1, None, 3, None], pa.int64()), types, "SEQ(a, b)") == 1  # NULL ts: nothing


def test_decimals_are_summed_exactly_and_rounded_once() -> None:
    ts, types = pa.array([1, 2, 3], pa.int64()), pa.array(["a", "b", "b"])
    prices = pa.array([decimal.Decimal("0.10"), decimal.Decimal("0.10"), decimal.Decimal("0.20")], pa.decimal128(6, 2))
    assert call("seq_sum", ts, types, "SEQ(a, b)", None, "b", prices) == 0.3  # 0.1 + 0.2 in doubles is not
    assert call("seq_sum", pa.array([1, 2, 3], pa.decimal128(10, 0)), types, "SEQ(a, b)", None, "b", prices) == 0.3


@pytest.mark.parametrize(("name", "args", "error", "message"), [
    # ts first: a bad event time is named although the pattern also differs between rows
    ("seq_count", (pa.array([True, False]), pa.array(["a", "b"]), pa.array(["SEQ(a)", "SEQ(b)"])), OrderByError,
     "seq_count: ts is BOOLEAN; the event time must be TIMESTAMP, TIMESTAMP_NTZ, TINYINT"),
    ("seq_count", (pa.array([1, 2]), pa.array(["a", "b"]), pa.array(["SEQ(a)", "SEQ(b)"])), FunctionArgumentError,
     "seq_count(ts, type, pattern, within): pattern must be the same for every row of a group"),
    ("seq_count", (pa.array([1, 2]), pa.array(["a", "b"]), pa.array([1, 1])), FunctionArgumentError,
     "pattern must be a string such as 'SEQ(A, B)'"),
    ("seq_count", (pa.array([1, 2]), pa.array(["a", "b"]), "SEQ(a)", pa.array([True, True])), FunctionArgumentError,
     "within must be an INTERVAL, a string like '10 minutes' or a number, got bool"),
    ("seq_count", (pa.array([1, 2]), pa.array(["a", "b"]), "SEQ(a)", pa.array([decimal.Decimal("1.5")] * 2)),
     FunctionArgumentError, "seq_count: within must be a whole number, got 1.5"),
    ("seq_count", (pa.array([1, 2]), pa.array(["a", "b"]), "SEQ(a)", "10 minutes"), WindowTypeMismatchError,
     "seq_count: ts is numeric, so within takes a plain number, got '10 minutes'"),
    ("seq_count", (pa.array([1, 2]), pa.array(["a", "b"]), "SEQ(a)", pa.array([datetime.timedelta(1)] * 2)),
     WindowTypeMismatchError, "ts is numeric, so within takes a plain number in the same units, e.g. 600"),
    ("seq_count", (pa.array([1, 2], pa.timestamp("us")), pa.array(["a", "b"]), "SEQ(a)", 600),
     WindowTypeMismatchError, "ts is a timestamp, so within takes an interval, e.g. INTERVAL 10 MINUTES"),
    ("seq_count_windows", (pa.array([1, 2], pa.timestamp("us")), pa.array(["a", "b"]), "SEQ(a)", "1 minute",
                           "1 minute"), OrderByError, "needs a TIMESTAMP event time, got TIMESTAMP_NTZ"),
    ("seq_count_windows", (pa.array([1, 2], pa.timestamp("us", "UTC")), pa.array(["a", "b"]), "SEQ(a)", "1 minute",
                           pa.nulls(2)), FunctionArgumentError, "within and slide are required"),
    ("seq_sum", (pa.array([1, 2]), pa.array(["a", "b"]), "SEQ(a)", None, pa.nulls(2), pa.array([1, 2])),
     FunctionArgumentError, "symbol must name a symbol of the pattern"),
    ("seq_sum", (pa.array([1, 2]), pa.array(["a", "b"]), "SEQ(a)", None, "a", pa.array(["x", "y"])),
     NonNumericMeasureError, "seq_sum: the value column is STRING, not numeric; seq_sum accepts TINYINT"),
    ("seq_sum", (pa.array([1, 2]), pa.array(["a", "b"]), "SEQ(a)", None, "a"), FunctionArgumentError,
     "seq_sum(ts, type, pattern, within, symbol, value) takes 6 arguments, got 5"),
    ("seq_count", (pa.array([1, 2]), pa.array(["a", "b"]), "SEQ(a) HIERARCHY h"), UnknownHierarchyError,
     "seq_count: unknown concept hierarchy h"),
])
def test_argument_errors(name: str, args: tuple[object, ...], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        call(name, *args, rows=2)


def test_count_overflow_names_the_function() -> None:
    with pytest.raises(FunctionOverflowError, match="seq_count: .* does not fit BIGINT; use MATCH_AGGREGATE"):
        call("seq_count", pa.array(range(70)), pa.array(["A"] * 70), "SEQ(A+)")


def test_hierarchies_travel_inside_the_body() -> None:
    sectors = (("sectors", (("dell", "tech"), ("ibm", "tech"))),)
    ts, types = pa.array([1, 2, 3]), pa.array(["dell", "ibm", "x"])
    assert seq_body(COUNT, sectors)(ts, types, pa.array(["SEQ(tech, tech) HIERARCHY sectors"] * 3)) == 1
    with pytest.raises(UnknownHierarchyError):
        seq_body(COUNT)(ts, types, pa.array(["SEQ(tech, tech) HIERARCHY sectors"] * 3))


def test_one_body_per_signature_named_as_the_function() -> None:
    bodies = [seq_body(sig) for sig in SIGNATURES]
    assert [b.__name__ for b in bodies] == [sig.name for sig in SIGNATURES]
    assert isinstance(SUM, Signature)


def test_the_bodies_import_nothing_of_the_compiler() -> None:
    code = ("import sys, udafs.workers.seq_functions; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sql_rewrites', 'sparkseq', 'sqlglot')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
