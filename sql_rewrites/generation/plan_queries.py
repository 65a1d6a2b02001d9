"""SQL that runs a caller's compiled plan over a relation: batch and streaming forms.

The compiler side of the Plan-level entry points (:mod:`sparkseq.running.queries`): the relation
supplies, per row, the partition key columns, an int64 event time, the symbol bitmask
and one expression per ``plan.columns`` entry, each given as SQL text. Every text is
parsed as exactly one SQL expression (anything else is a :class:`QueryError`), every
identifier is quoted and the plan is a string literal: no input can change the shape
of the query. The engine function's name is the caller's (the Spark layer registers it).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from sql_rewrites.generation.generate import EngineInput, InternalNames, contiguity_rank, engine_query
from sql_rewrites.syntax.dialect import SparkSeq
from udafs.contract import result_fields, value_type
from udafs.errors import SparkSeqError
from udafs.plan import Plan, ValueType

MIN_BUCKET_BITS = 16  # a packed sort key needs room for at least 65,536 hash buckets


class QueryError(SparkSeqError, ValueError):
    """The arguments describing a query's input are unusable (named in the message)."""


def udaf_query_sql(plan: Plan, source: str, function: str, *, keys: Sequence[str], ts: str, mask: str,
                   values: Sequence[str]) -> str:
    """The grouped-aggregate query of ``plan`` over ``source`` calling ``function``
    (the shape the compiler gives MATCH_AGGREGATE, :func:`sql_rewrites.generation.generate.engine_query`)."""
    spec = _engine_input(plan, keys, ts, mask, values)
    return _print(engine_query(spec, function, _table(source)))


def key_types_sql(source: str, keys: Sequence[str]) -> str:
    """A query whose schema gives the types of ``source``'s key columns."""
    return _print(exp.select(*map(_column, keys)).from_(_table(source)))


def stream_query_sql(plan: Plan, source: str, function: str, *, keys: Sequence[str], ts: str, mask: str,
                     values: Sequence[str], ts_bounds: tuple[int, int] | None) -> str:
    """The streaming UDTF query of ``plan`` over ``source`` calling ``function``: rows distributed
    by a hash of the keys and sorted by (hash, time), or by one packed key within ``ts_bounds``."""
    spec = _engine_input(plan, keys, ts, mask, values)
    names = InternalNames(keys)
    bucket, time, bits = names("b"), names("ts"), names("mask")
    value_names = [names(f"v{j}") for j in range(len(spec.values))]
    events = exp.select(
        *(exp.alias_(expression, name) for name, expression in spec.keys),
        exp.alias_(spec.time, time), exp.alias_(spec.mask, bits),
        *(exp.alias_(value, name) for value, name in zip(spec.values, value_names)),
    ).from_(_table(source))
    hashed, sort, check = _stream_order(keys, bucket, time, ts_bounds)
    inner = (
        exp.select(exp.alias_(hashed, bucket), *map(_column, [*keys, time, bits, *value_names]))
        .from_(events.subquery(names("events")))
        .where(exp.and_(_instances(plan, time, bits), *check))
    )
    inner.set("distribute", exp.Distribute(expressions=[_column(bucket)]))
    inner.set("sort", exp.Sort(expressions=[exp.Ordered(this=s, nulls_first=True) for s in sort]))  # Spark's default
    call = exp.Anonymous(this=function, expressions=[exp.Anonymous(this="TABLE", expressions=[inner]),
                                                     exp.Literal.string(plan.to_json())])
    outputs = [exp.alias_(_column(f"k{i}"), key) for i, key in enumerate(keys)]
    outputs += [exp.alias_(_column(field), name) for field, name in _result_names(plan)]
    return _print(exp.select(*outputs).from_(exp.Table(this=call)))


def _engine_input(plan: Plan, keys: Sequence[str], ts: str, mask: str, values: Sequence[str]) -> EngineInput:
    """The engine call: keys, ``CAST(ts AS BIGINT)``, ``CAST(mask AS BIGINT)``, cast values, measure names."""
    if plan.uncertain is not None:
        raise QueryError("a plan over imprecise timestamps needs each row's possible times: write MATCH_AGGREGATE "
                         "with ORDER BY ts UNCERTAIN BETWEEN lo AND hi and run it with sparkseq.sql")
    if len(values) != len(plan.columns):
        raise QueryError(f"the plan declares {len(plan.columns)} value columns "
                         f"({', '.join(c.value for c in plan.columns) or 'none'}), got {len(values)} values")
    measure_names = [m.name or f"m{j}" for j, m in enumerate(plan.measures)]
    if len(set(measure_names)) < len(measure_names):
        raise QueryError(f"measure names must be distinct, got {measure_names}")
    return EngineInput(
        plan=plan,
        keys=tuple((key, _column(key)) for key in keys),
        time=exp.cast(_expr(ts, "ts"), exp.DType.BIGINT),
        mask=exp.cast(_expr(mask, "mask"), exp.DType.BIGINT),
        values=tuple(exp.cast(_expr(v, f"value {j}"), _VALUE_TYPES[vt]) for j, (v, vt) in
                     enumerate(zip(values, plan.columns))),
        measures=tuple((name, _same) for name in measure_names),
        instances=plan.pattern_symbols_mask,  # a caller's mask may carry bits of other symbols
        # contiguity: the rank of every source row (also rows of no symbol) by time
        seq=contiguity_rank(plan, [_column(key) for key in keys], _expr(ts, "ts")),
    )


_VALUE_TYPES = {vt: exp.DataType.build(value_type(vt), dialect="spark") for vt in ValueType}


def _same(value: exp.Expr) -> exp.Expr:
    return value


def _instances(plan: Plan, time: str, mask: str) -> exp.Expr:
    """Rows that take part in something: a time, and an instance of a pattern symbol."""
    symbols = exp.paren(exp.BitwiseAnd(this=_column(mask), expression=exp.Literal.number(plan.pattern_symbols_mask)))
    return exp.and_(_column(time).is_(exp.null()).not_(), exp.NEQ(this=symbols, expression=exp.Literal.number(0)))


def _result_names(plan: Plan) -> list[tuple[str, str]]:
    """(UDTF result column, output name): window bounds with SLIDE, then the measures."""
    fields = [name for name, _ in result_fields(plan)]
    outputs = ["window_start", "window_end", *(m.name or f"m{j}" for j, m in enumerate(plan.measures))]
    pairs = list(zip(fields, outputs))
    return pairs if plan.slide is not None else pairs[2:]


def _stream_order(keys: Sequence[str], bucket: str, time: str,
                  ts_bounds: tuple[int, int] | None) -> tuple[exp.Expr, list[exp.Expr], list[exp.Expr]]:
    """(bucket expression, SORT BY list, extra WHERE conditions) of the streaming input."""
    key_hash: exp.Expr = (exp.Anonymous(this="xxhash64", expressions=list(map(_column, keys))) if keys
                          else exp.cast(exp.Literal.number(0), exp.DType.BIGINT))
    if ts_bounds is not None:
        lo, hi = (int(x) for x in ts_bounds)
        if hi < lo:
            raise QueryError(f"ts_bounds must be (low, high) with low <= high, got {ts_bounds}")
        ts_bits = max(hi - lo, 1).bit_length()
        bucket_bits = 62 - ts_bits  # keep the packed key below 2**62: non-negative
        if bucket_bits >= MIN_BUCKET_BITS:
            inside = exp.Between(this=_column(time), low=exp.Literal.number(lo), high=exp.Literal.number(hi))
            message = exp.Literal.string(f"event time outside the declared ts_bounds [{lo}, {hi}]")
            check = exp.case().when(inside, exp.true()).else_(exp.Anonymous(this="raise_error", expressions=[message]))
            shifted = exp.Anonymous(this="shiftleft", expressions=[_column(bucket), exp.Literal.number(ts_bits)])
            offset = exp.paren(exp.Sub(this=_column(time), expression=exp.Literal.number(lo)))
            hashed = exp.Anonymous(this="pmod", expressions=[key_hash, exp.Literal.number(1 << bucket_bits)])
            return hashed, [exp.BitwiseOr(this=shifted, expression=offset)], [check]
    return key_hash, [_column(bucket), _column(time)], []


def _column(name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True))


def _table(name: str) -> exp.Table:
    return exp.to_table(name, dialect="spark")


def _expr(text: str, what: str) -> exp.Expr:
    """One SQL expression as a tree; anything else is refused."""
    try:
        node = sqlglot.parse_one(text, read=SparkSeq)
    except ParseError as exc:
        raise QueryError(f"the {what} expression {text!r} is not valid SQL: {exc}") from None
    if not isinstance(node, exp.Condition):
        raise QueryError(f"the {what} expression {text!r} must be a single SQL expression")
    return node


def _print(tree: exp.Expr) -> str:
    """Spark SQL text, identifiers quoted; function names keep their case (registered case-exactly)."""
    return tree.sql(dialect=SparkSeq, identify=True, normalize_functions=False)


__all__ = ["MIN_BUCKET_BITS", "QueryError", "key_types_sql", "stream_query_sql", "udaf_query_sql"]
