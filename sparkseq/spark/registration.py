"""Registering sparkseq's SQL functions in a SparkSession.

Two kinds of functions exist:

* fixed-signature functions (:data:`FUNCTIONS`), one SQL signature for every plan,
  registered by :func:`register` so that any SQL client of the session can call them
  with a plan literal (``sparkseq_count(plan, ts, mask)``) or a pattern string
  (``seq_count(ts, type, 'SEQ(A, B)')``, :mod:`sparkseq.spark.functions`);
* per-plan functions: :func:`engine_function` registers, once per distinct plan and
  named by a digest of it, the grouped-aggregate function that MATCH_AGGREGATE calls;
  the plan is bound into the function, so it is not shipped with every row.
  :func:`stream_function` registers the streaming UDTF once per output schema
  (measures and partition key types); the plan travels as its literal argument.

Registration is idempotent and remembered per SparkSession object.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard, cast

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.functions import arrow_udf, arrow_udtf
from pyspark.sql.types import DataType, _parse_datatype_json_string
from pyspark.sql.udtf import UserDefinedTableFunction

if TYPE_CHECKING:
    from pyspark.sql._typing import UserDefinedFunctionLike

from sparkseq.spark import functions
from sql_rewrites.analysis.seq_functions import Hierarchies, Signature
from sql_rewrites.generation.aggregates import OnEmpty, PythonAggregate
from sql_rewrites.logical.sql_types import spark_json_type
from udafs import contract
from udafs.multiplan import MultiPlan
from udafs.plan import MeasureKind, Plan
from udafs.workers import grouped as spark_udfs
from udafs.workers import streaming as spark_udtf
from udafs.workers import timesplit as spark_timesplit


@dataclass(frozen=True)
class FunctionSpec:
    """A grouped-aggregate SQL function with one signature for every plan."""

    name: str
    func: Callable[..., object]
    return_type: str


#: pyspark's ``arrow_udf`` in the one form sparkseq calls it: a grouped-aggregate body
#: (``pa.Array`` arguments to one value; pyspark infers the kind from the type hints)
#: and a result type. pyspark's type stubs (4.x) have no overload for the inferred
#: kinds, only for an explicit ``functionType``.
_arrow_aggregate = cast("Callable[[Callable[..., object], DataType | str], UserDefinedFunctionLike]", arrow_udf)


def grouped_aggregate(func: Callable[..., object], ddl: str) -> UserDefinedFunctionLike:
    """A grouped-aggregate Arrow UDF of ``func`` returning the type ``ddl`` (:func:`return_type`)."""
    return _arrow_aggregate(func, return_type(ddl))


@functools.lru_cache(maxsize=256)
def return_type(ddl: str) -> DataType | str:
    """The type ``ddl`` as PySpark's type object, built in Python; ``ddl`` itself when it has
    no JSON form here (:func:`sql_rewrites.logical.sql_types.spark_json_type`; PySpark then parses it).

    PySpark parses a type string in the JVM, and the first parses of a JVM (its SQL parser,
    its JSON writer) took about a second of :func:`sparkseq.session`, which registers twelve
    functions (``bench/session_start.py``).
    """
    try:
        return _parse_datatype_json_string(json.dumps(spark_json_type(ddl)))
    except ValueError:
        return ddl


#: Registered by :func:`register`: the plan-literal functions and the BI functions
#: taking pattern strings (``seq_count(ts, type, 'SEQ(A, B)', INTERVAL 10 MINUTES)``,
#: see :mod:`sparkseq.spark.functions`).
FUNCTIONS: list[FunctionSpec] = [
    FunctionSpec("sparkseq_count", spark_udfs.count_matches, "bigint"),
    FunctionSpec("sparkseq_count_windows", spark_udfs.count_windows, spark_udfs.COUNT_WINDOWS_DDL),
    *(FunctionSpec(sig.name, body, sig.return_type) for sig, body in functions.FUNCTIONS),
]


def _on_empty(sig: Signature) -> OnEmpty:
    if sig.windows:
        return OnEmpty.EMPTY
    # seq_steps over no rows: NULL (an array of zeros would need the pattern's length)
    return OnEmpty.ZERO if sig.counts and sig.kind is not MeasureKind.STEPS else OnEmpty.NULL


#: The grouped-aggregate Python functions of :data:`FUNCTIONS` as the compiler sees them
#: (:mod:`sql_rewrites.generation.aggregates`): a SELECT calling them beside Spark's own aggregates,
#: with FILTER, in HAVING / ORDER BY or without GROUP BY is split before it runs.
PYTHON_AGGREGATES: dict[str, PythonAggregate] = {
    "sparkseq_count": PythonAggregate("sparkseq_count", 1, OnEmpty.ZERO),
    "sparkseq_count_windows": PythonAggregate("sparkseq_count_windows", 1, OnEmpty.EMPTY),
    **{sig.name: PythonAggregate(sig.name, sig.params.index("ts"), _on_empty(sig)) for sig, _ in functions.FUNCTIONS},
}


@dataclass(frozen=True)
class Registered:
    """A function sparkseq registered in a session: the UDF (or UDTF) object, reusable in another."""

    function: UserDefinedFunctionLike | UserDefinedTableFunction


#: Per session, what sparkseq registered there by name (the latest registration).
_registered: weakref.WeakKeyDictionary[SparkSession, dict[str, Registered]] = weakref.WeakKeyDictionary()


def register(spark: SparkSession) -> None:
    """Register every fixed-signature sparkseq function (:data:`FUNCTIONS`) in ``spark``.

    Examples
    --------
    >>> from udafs.plan import Element, Plan
    >>> register(spark)
    >>> p = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0)).to_json()
    >>> spark.sql("SELECT k, sparkseq_count(:plan, ts, mask) AS n FROM VALUES ('u', 1L, 1L), ('u', 2L, 1L), "
    ...           "('u', 3L, 2L) AS t(k, ts, mask) GROUP BY k", args={"plan": p}).collect()
    [Row(k='u', n=2)]
    """
    for spec in FUNCTIONS:
        _once(spark, spec.name, functools.partial(grouped_aggregate, spec.func, spec.return_type))


def register_hierarchy_functions(spark: SparkSession, hierarchies: Hierarchies) -> None:
    """Register the ``seq_*`` functions again with ``hierarchies`` bound in, so patterns
    such as ``'SEQ(DELL, Finance) HIERARCHY sectors'`` resolve in the Python workers.
    Called whenever the session's concept hierarchies change."""
    for sig, body in functions.bodies(hierarchies):
        _register(spark, sig.name, Registered(grouped_aggregate(body, sig.return_type)))


def engine_function(spark: SparkSession, plan: Plan | MultiPlan) -> str:
    """Name of the grouped-aggregate function computing ``plan``'s measures.

    Called as ``inline(<name>(ts, mask, v0, …))`` in a ``GROUP BY`` query; returns
    ``array<struct<window_start, window_end, m0, …, error>>`` (the contract in
    :mod:`udafs.contract`). :func:`sparkseq.running.queries.udaf_query` and the MATCH_AGGREGATE
    compiler write such a query, including the check that raises ``error`` naming the
    partition.
    """
    name = engine_function_name(plan)
    if isinstance(plan, MultiPlan):  # an E-Cube: every cuboid in one call
        body, ddl = spark_udfs.multi_aggregate(plan.to_json()), contract.multi_result_type(plan)
    else:
        body, ddl = spark_udfs.plan_aggregate(plan.to_json()), spark_udfs.output_ddl(plan)
    _once(spark, name, lambda: grouped_aggregate(body, ddl))
    return name


def time_split_functions(spark: SparkSession, plan: Plan) -> tuple[str, str]:
    """Names of the chunk and combine functions of ``plan``'s time-split path
    (:mod:`udafs.workers.timesplit`), registered in ``spark`` on first use."""
    chunk, combine = time_split_function_names(plan)
    _once(spark, chunk, lambda: grouped_aggregate(spark_timesplit.chunk_aggregate(plan.to_json()),
                                                             spark_timesplit.STATE_DDL))
    _once(spark, combine, lambda: grouped_aggregate(spark_timesplit.combine_aggregate(plan.to_json()),
                                            spark_udfs.output_ddl(plan)))
    return chunk, combine


def time_split_function_names(plan: Plan) -> tuple[str, str]:
    """The names :func:`time_split_functions` registers ``plan``'s functions under, without registering."""
    base = engine_function_name(plan)
    return base + "_chunk", base + "_combine"


def stand_in_function(spark: SparkSession, plan: Plan | MultiPlan) -> str:
    """Name of a function with the result type of ``plan``'s engine function that is never
    called, registered in ``spark`` (once per result type): what a statement is analysed
    with when it must not run (:mod:`sparkseq.statements.scripts` checks in a scratch session), so
    that checking registers no engine function per plan."""
    ddl = contract.multi_result_type(plan) if isinstance(plan, MultiPlan) else spark_udfs.output_ddl(plan)
    name = "sparkseq_check_" + _digest(ddl)
    registered = _stand_ins_registered.setdefault(spark, set())
    if name not in registered:
        _register_stand_in(spark, name, ddl)
        registered.add(name)
    return name


#: The JVM function object of each stand-in, per SparkContext: every check uses a fresh
#: scratch session, and building the object (pickling, a JVM call) costs more than the check
#: of a small statement; registering a built one is one JVM call.
_stand_ins: weakref.WeakKeyDictionary[object, dict[str, object]] = weakref.WeakKeyDictionary()
#: Per session, the stand-ins registered there (kept apart from :data:`_registered`: a
#: stand-in is never copied into another session).
_stand_ins_registered: weakref.WeakKeyDictionary[SparkSession, set[str]] = weakref.WeakKeyDictionary()


def _register_stand_in(spark: SparkSession, name: str, ddl: str) -> None:
    built = _stand_ins.setdefault(spark.sparkContext, {})
    if name in built:
        spark._jsparkSession.udf().registerPython(name, built[name])
    else:
        function = spark.udf.register(name, grouped_aggregate(_never_called, ddl))
        built[name] = function._judf  # type: ignore[attr-defined]  # pyspark's own py4j handle


def _never_called(ts: pa.Array, mask: pa.Array, *values: pa.Array) -> pa.Scalar:
    raise AssertionError("a stand-in engine function is analysed, never called")


def engine_function_name(plan: Plan | MultiPlan) -> str:
    """The name :func:`engine_function` registers ``plan``'s function under, without registering."""
    return "sparkseq_agg_" + _digest(plan.to_json())


def stream_function(spark: SparkSession, plan: Plan, key_types: Sequence[str]) -> str:
    """Name of the streaming Arrow UDTF for ``plan`` and partition keys of ``key_types``.

    See :mod:`udafs.workers.streaming` for its input layout and
    :func:`sparkseq.running.queries.stream_query` for a query that feeds it.
    """
    ddl = spark_udtf.stream_ddl(plan, key_types)
    name = stream_function_name(plan, key_types)
    _once(spark, name, lambda: cast(UserDefinedTableFunction, arrow_udtf(spark_udtf.MatchStream, returnType=ddl)))
    return name


def stream_function_name(plan: Plan, key_types: Sequence[str]) -> str:
    """The name :func:`stream_function` registers the UDTF under, without registering."""
    return "sparkseq_stream_" + _digest(spark_udtf.stream_ddl(plan, key_types))


def sessions() -> list[SparkSession]:
    """The sessions sparkseq registered functions in (still alive)."""
    return [spark for spark in (ref() for ref in _registered.keyrefs()) if spark is not None]


def copy_functions(source: SparkSession, target: SparkSession) -> None:
    """Register in ``target`` every function sparkseq registered in ``source``, as it is
    there now (``seq_*`` with ``source``'s concept hierarchies bound in)."""
    for name, registered in list(_registered.get(source, {}).items()):
        _register(target, name, registered)


def copy_named(source: SparkSession, target: SparkSession, names: Sequence[str]) -> None:
    """Register in ``target`` the functions of ``names`` that sparkseq registered in ``source``
    and not yet in ``target`` (the engine functions a view's query, compiled in another
    session, calls: :meth:`sparkseq.spark.jvm_parser.Rewriter.rewriteView`)."""
    known, have = _registered.get(source, {}), _registered.get(target, {})
    for name in dict.fromkeys(names):
        if name in known and name not in have:
            _register(target, name, known[name])


def _once(spark: SparkSession, name: str, make: Callable[[], UserDefinedFunctionLike | UserDefinedTableFunction]
          ) -> None:
    if name not in _registered.get(spark, {}):
        _register(spark, name, Registered(make()))


def _register(spark: SparkSession, name: str, registered: Registered) -> None:
    if _table_function(registered.function):
        spark.udtf.register(name, registered.function)
    else:
        spark.udf.register(name, registered.function)
    _registered.setdefault(spark, {})[name] = registered


def _table_function(function: object) -> TypeGuard[UserDefinedTableFunction]:
    """Whether ``function`` is a UDTF: PySpark's, or Spark Connect's (a class of its own,
    which ``arrow_udtf`` returns once the process speaks Connect)."""
    connect = sys.modules.get("pyspark.sql.connect.udtf")  # imported once a Connect session exists
    return isinstance(function, UserDefinedTableFunction) or (
        connect is not None and isinstance(function, connect.UserDefinedTableFunction))


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]
