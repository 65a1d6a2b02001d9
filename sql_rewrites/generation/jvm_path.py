"""The JVM path: the common pattern shapes counted by a Catalyst aggregate, no Python worker.

``sparkseq/jvm/SparkSeqAggregates.java`` (shipped compiled, :mod:`sparkseq.spark.jvm_path`
registers it) is an engine function in the JVM with the contract of
:mod:`udafs.contract`, except that the plan is its first argument, a string literal::

    sparkseq_jvm_aggregate('<plan>', ts, mask[, v0])

so :func:`jvm_query` is :func:`sql_rewrites.generation.generate.engine_query` with that call: the
same events, the same GROUP BY, the same typed output and the same overflow error
naming the partition. :func:`jvm_shape` says which plans it computes exactly
(:data:`MAX_LENGTH` positive elements, one row each; negations between two of them, and
leading and trailing ones; with or without WITHIN and SLIDE; no strategy, predicate or
imprecise time; COUNT(*), COUNT(X), SUM, AVG, MIN and MAX of one column; any count type);
:func:`plan_literal` writes the plan as the Java side reads it, with the words of each
measure's overflow error (:func:`udafs.errors.overflow_template`) so that both paths
raise the same text.
"""

from __future__ import annotations

import json

from sqlglot import exp

from sql_rewrites.generation.generate import EngineInput, engine_query
from udafs.contract import PARTITION_SLOT
from udafs.errors import DECIMAL_SUM_OVERFLOW, OverflowSlot, measure_words, overflow_template
from udafs.plan import CountType, Element, MeasureKind, Plan, ValueType

#: The session function ``SparkSeqAggregates.register`` creates (``SparkSeqAggregates.FUNCTION``).
JVM_FUNCTION = "sparkseq_jvm_aggregate"
#: The longest pattern the JVM path takes (positive elements): the WITHIN recurrence keeps
#: k(k-1)/2 counts per row.
MAX_LENGTH = 6
#: The SQL type a count overflows, per count type, as the Python engine names it
#: (:func:`udafs.kernels.values.measures._to_count_type`); a DOUBLE count never overflows.
_TARGETS = {CountType.BIGINT: "BIGINT", CountType.DECIMAL: "DECIMAL(38,0)", CountType.DOUBLE: "DOUBLE"}
#: "(" in the plan literal (:func:`plan_literal`): a JSON escape, which the Java side's JSON reader decodes.
OPEN_PARENTHESIS = "\\u0028"
_KINDS = (MeasureKind.COUNT_STAR, MeasureKind.COUNT, MeasureKind.SUM, MeasureKind.AVG, MeasureKind.MIN,
          MeasureKind.MAX)
#: Why the planner picks the JVM path for a covered plan (the cost rule: bench/jvm_path.py, bench/peers.py).
JVM_REASON = ("counted in the JVM by a Catalyst aggregate: no rows travel to Python workers "
              "(measured faster than the kernel path over many keys, docs/engine.md \"The cost rule\")")


def jvm_shape(plan: Plan) -> str | None:
    """None when the JVM path computes ``plan`` exactly, else why not (in SQL words)."""
    if not isinstance(plan, Plan):
        return "an E-Cube runs all its cuboids in one Python pass"
    if plan.extended or plan.uncertain is not None:
        return "a STRATEGY, WHERE predicate or UNCERTAIN time needs the Python engine"
    if not 1 <= plan.length <= MAX_LENGTH:
        return f"the JVM path counts patterns of 1 to {MAX_LENGTH} positive elements, this one has {plan.length}"
    if any(element != Element(element.symbol) for element in plan.elements):
        return "a Kleene, quantified or optional element is counted by the Python engine"
    if any(m.kind not in _KINDS for m in plan.measures):
        return "the JVM path computes COUNT, SUM, AVG, MIN and MAX measures"
    if len(plan.columns) > 1:
        return "the JVM path reads one measure column, this plan reads several"
    return None


def plan_literal(plan: Plan) -> str:
    """``plan`` as ``SparkSeqAggregates.Plan`` reads it (JSON): the bit of each element's
    symbol, the negated symbols before each element (the gap after the previous one; before
    the first: the leading negation) and after the last, every symbol of the pattern, the
    window and slide, the count type, the value column's type and, per measure, its kind, factor
    (COUNT(X): X's positions), the positions of X, the text of its overflow error around
    the number of digits, and for AVG of a DECIMAL Spark's rounding and the words of its sum's overflow.

    Raises
    ------
    ValueError
        ``plan`` is not a JVM shape (:func:`jvm_shape`).
    """
    reason = jvm_shape(plan)
    if reason is not None:
        raise ValueError(f"this plan cannot run on the JVM path: {reason}")
    column = plan.columns[0] if plan.columns else None
    measures = []
    for m in plan.measures:
        positions = [i for i, e in enumerate(plan.elements) if e.symbol == m.symbol]
        what = measure_words(m.kind.value, m.name)
        decimal = column is ValueType.DECIMAL and m.kind in (MeasureKind.SUM, MeasureKind.AVG)
        overflow = (_words(what, "DECIMAL(38, 0)", DECIMAL_SUM_OVERFLOW) if decimal
                    else _words(what, _TARGETS[plan.count_type]))
        measures.append({"kind": m.kind.value, "factor": 1 if m.kind is MeasureKind.COUNT_STAR else len(positions),
                         "positions": positions, "overflow": overflow, "places": m.places, "digits": m.digits,
                         "sum_overflow": _words(f"the sum of {what}", f"DECIMAL({m.digits}, s)", DECIMAL_SUM_OVERFLOW)})
    text = json.dumps({"elements": [1 << e.symbol for e in plan.elements],
                       "negations": list(plan.negations[:-1]), "trailing": plan.negations[-1],
                       "pattern_mask": plan.pattern_symbols_mask, "within": plan.within, "slide": plan.slide,
                       "count_type": plan.count_type.value, "column": None if column is None else column.value,
                       "measures": measures}, separators=(",", ":"))
    # Parentheses only stand in JSON strings (the error words): written as JSON escapes, the
    # generated SQL holds no "MATCH_AGGREGATE (" (the words name the clause), which the parser
    # extension would take for the operator: it would call the rewriter, dropping the DEFINE
    # conditions' origins, or without one refuse the statement.
    return text.replace("(", OPEN_PARENTHESIS)


def _words(what: str, target: str, advice: str | None = None) -> list[str]:
    """The overflow message of the Python engine (:func:`udafs.errors.overflow_template`)
    naming the partition as :data:`PARTITION_SLOT`: the text before and after the digits."""
    pieces = overflow_template(what, target, True, advice)
    cut = pieces.index(OverflowSlot.DIGITS)
    return ["".join(PARTITION_SLOT if p is OverflowSlot.PARTITION else str(p) for p in part)
            for part in (pieces[:cut], pieces[cut + 1:])]


def jvm_query(spec: EngineInput, source: exp.Expr) -> exp.Select:
    """The typed output of ``spec`` over ``source`` on the JVM path: the grouped path's
    query (:func:`sql_rewrites.generation.generate.engine_query`) calling :data:`JVM_FUNCTION` with
    the plan literal first.

    Raises
    ------
    ValueError
        The plan is not a JVM shape.
    """
    if not isinstance(spec.plan, Plan):
        raise ValueError("an E-Cube cannot run on the JVM path")
    literal = exp.Literal.string(plan_literal(spec.plan))
    select = engine_query(spec, JVM_FUNCTION, source)
    calls = [c for c in select.find_all(exp.Anonymous) if c.name == JVM_FUNCTION]
    if len(calls) != 1:
        raise AssertionError(f"the grouped query calls {JVM_FUNCTION} {len(calls)} times")
    calls[0].set("expressions", [literal, *calls[0].expressions])
    return select


__all__ = ["JVM_FUNCTION", "JVM_REASON", "MAX_LENGTH", "jvm_query", "jvm_shape", "plan_literal"]
