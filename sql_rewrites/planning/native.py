"""The native path: MATCH_AGGREGATE as plain Spark SQL window functions, no Python UDF.

For the shapes :func:`native_shape` accepts (positive non-Kleene elements, no negation,
no SLIDE, COUNT measures, skip-till-any-match) the A-Seq prefix counts are running
sums over the rows of a partition in time order, which Spark's window operators
compute in the JVM after one shuffle and one sort. The engine time is an integer, so
``RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING`` is exactly "every row with a
smaller time": rows with equal times never follow each other.

Counts. For positions ``a <= b`` of the pattern ``S_1 .. S_k`` let ``c[a,b](r)`` be the
number of chains ``S_a .. S_b`` (strictly increasing times, no window) whose last row
is ``r``::

    c[a,a](r) = [r is an S_a]
    c[a,b](r) = [r is an S_b] * SUM(c[a,b-1]) over the rows before r

Without WITHIN the count of a partition is ``SUM over r of [r is an S_k] *
SUM(c[1,k-1]) before r``: ``k - 1`` nested windows of one specification.

WITHIN w (a match spans less than w: first time > t - w for the last row's time t).
Let ``G[a](r)`` count the chains ``S_a .. S_{k-1}`` lying in ``[L, t)``, ``L = t - w
+ 1``, ``t`` the time of ``r``. Every chain ``S_a .. S_{k-1}`` before ``t`` either lies
in ``[L, t)`` or splits uniquely at ``L``: elements ``a .. i`` before ``L`` (``P[a,i]``,
a ``RANGE ... AND w PRECEDING`` sum of ``c[a,i]``) and ``i+1 .. k-1`` in ``[L, t)``.
So, with ``G[k] = 1``::

    G[a](r) = SUM(c[a,k-1]) before t  -  sum_{i=a}^{k-1} P[a,i](r) * G[i+1](r)

and the count is ``SUM over r of [r is an S_k] * G[1](r)``. All sums are of the
current row's frames, so one sort serves them all: ``k - 1`` window operators holding
``O(k^2)`` running sums.

Arithmetic (:func:`arithmetic`). The sums start at the partition's first row, so a
row's values grow like ``C(rows, k - 1)`` even when the windowed counts are small. Up
to length :data:`BIGINT_LENGTH` every per-row value is at most ``C(rows, 2)``, below
2^63 for any partition under 4e9 rows, so the rows are computed in BIGINT (2-3x faster
than DECIMAL in Spark, measured) and only the partition's total is summed in DECIMAL(38,
0). Longer patterns, and COUNT TYPE DECIMAL / DOUBLE, compute in DECIMAL(38, 0), exact
while no value reaches 10^38. Past either bound Spark's ANSI arithmetic raises (never a
wrapped value), which is why the path requires ANSI mode
(:mod:`sparkseq.running.execution_paths`).

The total is cast to the COUNT TYPE at the end; a count over the BIGINT range raises
the kernel path's own overflow message, naming the partition.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sql_rewrites import engine_contract
from sql_rewrites.generation.generate import EngineInput, Roles, engine_events, engine_roles, output_projections
from sql_rewrites.syntax.dialect import sanitize
from udafs.errors import OverflowSlot, measure_words, overflow_template
from udafs.multiplan import MultiPlan
from udafs.plan import CountType, MeasureKind, Plan

#: SQL type of a partition's total, and of every per-row value where BIGINT could
#: overflow on running sums of long partitions (module docstring).
DECIMAL = "DECIMAL(38, 0)"
#: Longest pattern whose per-row values are computed in BIGINT (module docstring).
BIGINT_LENGTH = 3
#: Longest pattern the native path evaluates (its window operators grow with the length).
MAX_LENGTH = 8
_BIGINT_MAX = 2**63 - 1
_COUNTS = (MeasureKind.COUNT_STAR, MeasureKind.COUNT)


def native_shape(plan: Plan | MultiPlan) -> str | None:
    """None when the native path evaluates ``plan`` exactly, else why it cannot."""
    if not isinstance(plan, Plan):
        return "several patterns in one statement (E-Cube) run on the kernel path"
    checks: tuple[tuple[bool, str], ...] = (
        (plan.slide is not None, "SLIDE windows"),
        (plan.quantified, "a quantified or optional element (X{n,m}, X?, X*)"),
        (any(e.kleene for e in plan.elements), "a Kleene element"),
        (any(plan.negations), "a negated element"),
        (bool(plan.predicates or plan.iterator_predicates), "cross-event predicates"),
        (plan.extended, f"the selection strategy {plan.strategy.name.lower().replace('_', '-')}"),
        (plan.uncertain is not None, "imprecise timestamps"),
        (plan.length > MAX_LENGTH, f"a pattern longer than {MAX_LENGTH} elements"),
    )
    for failed, what in checks:
        if failed:
            return f"the native path does not evaluate {what}"
    for m in plan.measures:
        if m.kind not in _COUNTS:
            return f"the native path evaluates COUNT measures only, not {m.kind.value.upper()}"
    return None


def arithmetic(plan: Plan) -> str:
    """SQL type of the per-row counts of ``plan`` (module docstring)."""
    if plan.count_type is CountType.BIGINT and plan.length <= BIGINT_LENGTH:
        return "BIGINT"
    return DECIMAL


class _Names:
    """Internal column names of the native query (fresh against the partition keys)."""

    def __init__(self, roles: Roles, length: int) -> None:
        fresh = roles.fresh
        self.flag = {i: fresh(f"is{i}") for i in range(length)}
        self.chain = {(a, b): fresh(f"c{a}_{b}") for a in range(length) for b in range(a + 1, length)}
        self.before = {a: fresh(f"p{a}") for a in range(length)}
        self.early = {(a, b): fresh(f"q{a}_{b}") for a in range(length) for b in range(a, length)}
        self.rest = {a: fresh(f"g{a}") for a in range(length)}
        self.count, self.level = fresh("count"), fresh("level")

    def chain_column(self, a: int, b: int) -> str:
        """``c[a,b]``: the flag of ``S_a`` itself when ``a == b``."""
        return self.flag[a] if a == b else self.chain[(a, b)]


def native_query(spec: EngineInput, source: exp.Expr) -> exp.Select:
    """The native statement of ``spec`` over ``source``: the same columns, names and
    types as :func:`sql_rewrites.generation.generate.engine_query` (module docstring).

    Raises
    ------
    ValueError
        When :func:`native_shape` refuses the plan.
    """
    reason = native_shape(spec.plan)
    if reason is not None:
        raise ValueError(reason)
    plan = spec.plan
    assert isinstance(plan, Plan)
    roles = engine_roles(spec)
    names = _Names(roles, plan.length)
    events, _ = engine_events(spec, source)
    keys: list[exp.Expr] = [exp.column(n) for n, _ in spec.keys] or [exp.column(roles.all_rows)]
    over = _Frames(keys, roles.ts, arithmetic(plan))
    layer = _flags(plan, events, roles, names, over.arithmetic)
    for depth in range(1, plan.length - 1):
        layer = _chains(plan, layer, names, over, depth)
    rows = _last_row_counts(plan, layer, names, over)
    total = partition_total(exp.column(names.count), over.arithmetic)
    groups = exp.select(*keys, *(exp.alias_(_measure(spec, j, total, keys), field)
                                 for j, field in enumerate(roles.measures)))
    groups = groups.from_(rows.subquery(names.count + "_rows")).group_by(*(k.copy() for k in keys))
    output = exp.select(*output_projections(spec, roles, roles.groups, roles.groups)).from_(
        groups.subquery(roles.groups))
    return sanitize(output)  # type: ignore[return-value]


#: A BIGINT row count splits at this bit into two halves that are summed in BIGINT.
_HALF_BITS = 32


def partition_total(count: exp.Expr, arithmetic: str) -> exp.Expr:
    """The exact DECIMAL(38, 0) sum of a partition's per-row ``count`` (of type ``arithmetic``).

    A DECIMAL(38, 0) sum is a Java BigDecimal per row, and Spark aggregates it by sorting
    (its buffer is no fixed-width value). BIGINT counts are therefore summed as two BIGINT
    halves, ``count >> 32`` and ``count & (2^32 - 1)``, joined in DECIMAL once per
    partition: neither sum can overflow below 2^31 rows in one partition (and past it
    ANSI arithmetic raises).
    """
    if arithmetic == DECIMAL:
        return exp.Sum(this=count)
    high = exp.Sum(this=exp.BitwiseRightShift(this=count.copy(), expression=exp.Literal.number(_HALF_BITS)))
    low = exp.Sum(this=exp.BitwiseAnd(this=count.copy(), expression=exp.Literal.number((1 << _HALF_BITS) - 1)))
    joined = exp.Add(this=exp.Mul(this=exp.cast(high, DECIMAL), expression=exp.Literal.number(1 << _HALF_BITS)),
                     expression=exp.cast(low, DECIMAL))
    return exp.cast(joined, DECIMAL)


class _Frames:
    """``SUM(x) OVER (PARTITION BY keys ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND
    n PRECEDING)`` for the frames the recurrences use, as zero when the frame is empty."""

    def __init__(self, keys: list[exp.Expr], ts: str, arithmetic: str) -> None:
        self.keys, self.ts, self.arithmetic = keys, ts, arithmetic

    def sum_before(self, column: str, offset: int = 1) -> exp.Expr:
        spec = exp.WindowSpec(kind="RANGE", start="UNBOUNDED", start_side="PRECEDING",
                              end=exp.Literal.number(offset), end_side="PRECEDING")
        window = exp.Window(this=exp.Sum(this=exp.column(column)), partition_by=[k.copy() for k in self.keys],
                            order=exp.Order(expressions=[exp.Ordered(this=exp.column(self.ts))]), spec=spec)
        return exp.Coalesce(this=window, expressions=[_zero(self.arithmetic)])


def _zero(arithmetic: str) -> exp.Expr:
    return exp.cast(exp.Literal.number(0), arithmetic)


def _times(a: exp.Expr, b: exp.Expr) -> exp.Expr:
    return exp.Mul(this=exp.paren(a), expression=exp.paren(b))


def _flags(plan: Plan, events: exp.Select, roles: Roles, names: _Names, arithmetic: str) -> exp.Select:
    """The events with ``[row is an S_i]`` for every position ``i``, typed ``arithmetic``."""
    flags = []
    for i, element in enumerate(plan.elements):
        bit = exp.BitwiseAnd(this=exp.column(roles.mask), expression=exp.Literal.number(1 << element.symbol))
        flag = exp.case().when(exp.NEQ(this=exp.paren(bit), expression=exp.Literal.number(0)),
                               exp.Literal.number(1)).else_(exp.Literal.number(0))
        flags.append(exp.alias_(exp.cast(flag, arithmetic), names.flag[i]))
    return exp.select("*", *flags).from_(events.subquery(names.level + "0"))


def _chains(plan: Plan, layer: exp.Select, names: _Names, over: _Frames, depth: int) -> exp.Select:
    """``c[a,a+depth]`` for every ``a`` the final layer needs (all ``a`` with WITHIN, else 1)."""
    last = plan.length - 2  # chains end at S_{k-1}; the last row is S_k
    starts = range(last - depth + 1) if plan.within is not None else range(1)
    columns = [exp.alias_(_times(exp.column(names.flag[a + depth]),
                                 over.sum_before(names.chain_column(a, a + depth - 1))),
                          names.chain[(a, a + depth)]) for a in starts]
    return exp.select("*", *columns).from_(layer.subquery(f"{names.level}{depth}"))


def _last_row_counts(plan: Plan, layer: exp.Select, names: _Names, over: _Frames) -> exp.Select:
    """Per row: the matches it ends (``[row is an S_k] * G[1]``), as column ``names.count``."""
    k = plan.length
    last = exp.column(names.flag[k - 1])
    if k == 1:
        return exp.select("*", exp.alias_(last, names.count)).from_(layer.subquery(names.level + "_last"))
    if plan.within is None:
        count = _times(last, over.sum_before(names.chain_column(0, k - 2)))
        return exp.select("*", exp.alias_(count, names.count)).from_(layer.subquery(names.level + "_last"))
    sums = [exp.alias_(over.sum_before(names.chain_column(a, k - 2)), names.before[a]) for a in range(k - 1)]
    sums += [exp.alias_(over.sum_before(names.chain_column(a, b), plan.within), names.early[(a, b)])
             for a in range(k - 1) for b in range(a, k - 1)]
    current = exp.select("*", *sums).from_(layer.subquery(names.level + "_frames"))
    rest: dict[int, Callable[[], exp.Expr]] = {k - 1: lambda: exp.Literal.number(1)}
    for a in range(k - 2, -1, -1):  # G[a] from G[a+1 ..]: one projection each
        g: exp.Expr = exp.column(names.before[a])
        for b in range(a, k - 1):
            g = exp.Sub(this=g, expression=_times(exp.column(names.early[(a, b)]), rest[b + 1]()))
        current = exp.select("*", exp.alias_(g, names.rest[a])).from_(current.subquery(f"{names.level}_g{a}"))
        rest[a] = (lambda name: lambda: exp.column(name))(names.rest[a])
    count = _times(last, exp.column(names.rest[0]))
    return exp.select("*", exp.alias_(count, names.count)).from_(current.subquery(names.level + "_last"))


def _measure(spec: EngineInput, j: int, total: exp.Expr, keys: list[exp.Expr]) -> exp.Expr:
    """Measure ``j`` in the engine's type (:func:`udafs.contract.engine_type`) from the
    partition's match count; COUNT(X) counts every position of X in each match."""
    plan = spec.plan
    assert isinstance(plan, Plan)
    m = plan.measures[j]
    value: exp.Expr = total.copy()
    if m.kind is MeasureKind.COUNT:
        positions = sum(e.symbol == m.symbol for e in plan.elements)
        value = _times(value, exp.cast(exp.Literal.number(positions), DECIMAL))
    value = exp.Coalesce(this=value, expressions=[_zero(DECIMAL)])
    if plan.count_type is CountType.DOUBLE:
        return exp.cast(value, "DOUBLE")
    if plan.count_type is CountType.DECIMAL:
        return exp.cast(value, engine_contract.COUNT_TYPE_SQL[CountType.DECIMAL])
    return exp.case().when(exp.GT(this=value.copy(), expression=exp.Literal.number(_BIGINT_MAX)),
                           _overflow(spec, m.kind.value, m.name, value, keys)
                           ).else_(exp.cast(value, "BIGINT"))


def _overflow(spec: EngineInput, kind: str, name: str, value: exp.Expr, keys: list[exp.Expr]) -> exp.Expr:
    """``raise_error`` with the kernel path's message for a count over BIGINT."""
    what = measure_words(kind, name)
    if spec.keys:
        pairs: list[exp.Expr] = []
        for (key, _), column in zip(spec.keys, keys):
            pairs += [exp.Literal.string(key), column.copy()]
        partition: exp.Expr = exp.Anonymous(this="to_json", expressions=[
            exp.Anonymous(this="named_struct", expressions=pairs)])
    else:
        partition = exp.Literal.string(engine_contract.ALL_ROWS)
    digits = exp.cast(exp.Length(this=exp.cast(value.copy(), "STRING")), "STRING")
    slots = {OverflowSlot.PARTITION: partition, OverflowSlot.DIGITS: digits}
    message = exp.Concat(expressions=[slots[piece] if isinstance(piece, OverflowSlot) else exp.Literal.string(piece)
                                      for piece in overflow_template(what, "BIGINT", names_partition=True)])
    return exp.cast(exp.Anonymous(this="raise_error", expressions=[message]), "BIGINT")


__all__ = ["BIGINT_LENGTH", "DECIMAL", "MAX_LENGTH", "arithmetic", "native_query", "native_shape"]
