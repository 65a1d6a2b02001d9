"""The ``seq_*`` functions as the compiler sees them: signatures, pattern arguments, checks.

A ``seq_*`` call's pattern argument (``'SEQ(A, B+) STRATEGY SKIP TILL NEXT MATCH
HIERARCHY h'``) is parsed by the dialect's own parser into a :class:`PatternArgument`
and compiled into an engine plan plus the type values each symbol covers
(:func:`compile_call`); :func:`check_calls` checks the literal arguments of a parsed
statement before any Spark job, with the errors the functions raise when they run.
The functions themselves (Arrow in, Arrow out) are :mod:`sparkseq.spark.functions`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from sql_rewrites.clauses.pattern import compile_type_pattern
from sql_rewrites.clauses.selection import check_quantified_strategy
from sql_rewrites.clauses.symbols import compile_pattern
from sql_rewrites.clauses.windows import WindowSpec, describe_length, window_length
from sql_rewrites.errors import (
    NegatedMeasureError,
    SqlRewriteError,
    UnknownHierarchyError,
    UnknownSymbolError,
    position_of,
)
from sql_rewrites.logical.hierarchy import ConceptHierarchy
from sql_rewrites.logical.sql_types import OrderKind
from sql_rewrites.syntax.dialect import SparkSeq, parse_into
from sql_rewrites.syntax.expressions import MatchPattern, PatternArgument, node_position
from udafs.errors import SparkSeqError
from udafs.plan import CountType, Measure, MeasureKind, Plan, Strategy, ValueType


class FunctionArgumentError(SparkSeqError, ValueError):
    """A BI function was called with unusable arguments (named in the message)."""


@dataclass(frozen=True)
class Signature:
    """One ``seq_*`` function: its measure and whether it returns sliding windows."""

    kind: MeasureKind
    windows: bool = False

    @property
    def measure(self) -> str:
        """``count``, ``sum``, ``avg``, ``min`` or ``max``: the result's name."""
        return "count" if self.kind is MeasureKind.COUNT_STAR else self.kind.value

    @property
    def name(self) -> str:
        """The SQL function name, e.g. ``seq_sum_windows``."""
        return f"seq_{self.measure}" + ("_windows" if self.windows else "")

    @property
    def counts(self) -> bool:
        """True for the functions that read no symbol's value: seq_count and the funnel's."""
        return self.kind is MeasureKind.COUNT_STAR or self.kind.funnel

    @property
    def params(self) -> tuple[str, ...]:
        """Parameter names, in order."""
        names = ("ts", "type", "pattern", "within") + (("slide",) if self.windows else ())
        return names if self.counts else names + ("symbol", "value")

    @property
    def usage(self) -> str:
        """``seq_sum(ts, type, pattern, within, symbol, value)``."""
        return f"{self.name}({', '.join(self.params)})"

    @property
    def value_type(self) -> str:
        """SQL type of the measure."""
        if self.kind is MeasureKind.STEPS:
            return "array<bigint>"
        return "bigint" if self.counts else "double"

    @property
    def return_type(self) -> str:
        """The function's SQL return type (DDL)."""
        if not self.windows:
            return self.value_type
        return f"array<struct<window_start:timestamp,window_end:timestamp,`{self.measure}`:{self.value_type}>>"

    def bind(self, args: Sequence[Any]) -> dict[str, Any]:
        """Arguments by parameter name; ``within`` of ``seq_count`` may be left out."""
        optional = self.counts and not self.windows
        if len(args) != len(self.params) and not (optional and len(args) == len(self.params) - 1):
            raise FunctionArgumentError(f"{self.usage} takes {len(self.params)} arguments"
                                        f"{' (within is optional)' if optional else ''}, got {len(args)}")
        return dict(zip(self.params, list(args) + [None]))


COUNT, SUM, AVG, MIN, MAX = (Signature(k) for k in (MeasureKind.COUNT_STAR, MeasureKind.SUM, MeasureKind.AVG,
                                                     MeasureKind.MIN, MeasureKind.MAX))
#: The funnel (SEMANTICS section 10): ``seq_steps`` (one count per prefix) and ``seq_max_step``.
STEPS, MAX_STEP = Signature(MeasureKind.STEPS), Signature(MeasureKind.MAX_STEP)
#: Every ``seq_*`` function: the five measures, their window variants, then the funnel's two.
SIGNATURES: tuple[Signature, ...] = (COUNT, SUM, AVG, MIN, MAX,
                                     *(dataclasses.replace(s, windows=True) for s in (COUNT, SUM, AVG, MIN, MAX)),
                                     STEPS, MAX_STEP)
BY_NAME: dict[str, Signature] = {sig.name: sig for sig in SIGNATURES}


# --- the compiled pattern of a call ------------------------------------------------------


@dataclass(frozen=True)
class Compiled:
    """A plan plus what turns a type column into the plan's symbol mask: a row whose type is
    ``values[i]`` is an instance of the symbols in the bitmask ``bits[i]``."""

    plan: Plan
    values: tuple[str, ...]  # distinct type values of the pattern
    bits: np.ndarray  # bits[i]: OR of the symbols whose type value is values[i]


#: The session's concept hierarchies as bound into the registered functions:
#: ``((casefolded name, ((child, parent), ...)), ...)`` (hashable, picklable).
Hierarchies = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]


def pattern_argument(text: str) -> PatternArgument:
    """``'SEQ(A, B) STRATEGY SKIP TILL NEXT MATCH HIERARCHY h'`` parsed by the dialect's parser
    (the two suffixes optional, in either order).

    >>> node = pattern_argument("SEQ(A, B+) hierarchy h strategy skip till next match")
    >>> strategy_of(node).name, hierarchy_name(node)
    ('SKIP_TILL_NEXT_MATCH', 'h')

    Raises
    ------
    SqlParseError
        With line, column (within ``text``) and the underlined offending text.
    """
    return parse_into(PatternArgument, text)  # type: ignore[return-value]


def strategy_of(node: PatternArgument) -> Strategy:
    """The pattern argument's ``STRATEGY`` (default skip-till-any-match)."""
    words = node.args.get("strategy")
    return Strategy.SKIP_TILL_ANY_MATCH if words is None else Strategy.from_sql(words.name)


def hierarchy_name(node: PatternArgument) -> str | None:
    """The pattern argument's ``HIERARCHY`` name, or None."""
    name = node.args.get("hierarchy")
    return None if name is None else str(name.name)


def hierarchy_of(sig: Signature, name: str, hierarchies: Hierarchies) -> ConceptHierarchy:
    """The bound hierarchy ``name`` (case-insensitive).

    Raises
    ------
    UnknownHierarchyError
    """
    for known, pairs in hierarchies:
        if known == name.casefold():
            return ConceptHierarchy.build(name, pairs)
    names = ", ".join(n for n, _ in hierarchies) or "none"
    raise UnknownHierarchyError(f"{sig.name}: unknown concept hierarchy {name} (this session's: {names}); register "
                                "it with CREATE CONCEPT HIERARCHY or sparkseq.register_hierarchy")


@functools.lru_cache(maxsize=512)
def compile_call(sig: Signature, pattern: str, within: int | None, slide: int | None,
                 symbol: str | None, value_type: ValueType | None, hierarchies: Hierarchies = ()) -> Compiled:
    """Parse and check ``pattern`` (the compiler's errors, positions within the string).

    A ``HIERARCHY name`` suffix makes every symbol a node of that bound hierarchy: it
    matches rows whose type is the node or any node below it. A ``STRATEGY ...`` suffix
    sets the event selection strategy; STRICT CONTIGUITY is refused (it needs the rank
    of each row in the whole input, which a grouped function cannot see).
    """
    node = pattern_argument(pattern)
    strategy = strategy_of(node)
    if strategy is Strategy.STRICT_CONTIGUITY:
        raise FunctionArgumentError(
            f"{sig.name}: STRATEGY STRICT CONTIGUITY needs each event's rank in the whole input, which a grouped "
            "function sees only for its own group; use PARTITION CONTIGUITY (contiguity within the group) or "
            "MATCH_AGGREGATE (... STRATEGY STRICT CONTIGUITY)")
    name = hierarchy_name(node)
    hierarchy = hierarchy_of(sig, name, hierarchies) if name else None
    typed = compile_type_pattern(pattern, within=within, slide=slide, parsed=node.this)
    plan = dataclasses.replace(typed.plan, strategy=strategy)
    check_quantified_strategy(plan, node_position(node.args.get("strategy"), pattern))
    if sig.counts:
        plan = dataclasses.replace(plan, measures=(Measure(sig.kind, name=sig.measure),))
    else:
        assert symbol is not None and value_type is not None
        index = measured_symbol(sig, typed.pattern, pattern, symbol)
        plan = dataclasses.replace(
            plan, measures=(Measure(sig.kind, index, 0, sig.measure),), columns=(value_type,),
            count_type=CountType.DECIMAL,  # exact sums of any size; rounded once to DOUBLE
        )
    covers: list[tuple[str, ...]] = [(v,) for v in typed.type_values]
    if hierarchy is not None:
        covers = [hierarchy.descendants_or_self(v) for v in typed.type_values]
    values = tuple(dict.fromkeys(v for cover in covers for v in cover))
    bits = np.array([sum(1 << k for k, cover in enumerate(covers) if value in cover) for value in values],
                    dtype=np.int64)
    return Compiled(plan, values, bits)


def measured_symbol(sig: Signature, parsed: MatchPattern, pattern: str, symbol: str) -> int:
    """The symbol index a measure's ``symbol`` argument names: its exact type value first,
    else a case-insensitive match of a symbol written as a name."""
    symbols = compile_pattern(parsed, pattern).symbols
    found = [s for s in symbols if s.name == symbol] or [
        s for s in symbols if not s.quoted and s.name.casefold() == symbol.casefold()]
    if len(found) != 1:
        names = ", ".join(s.name for s in symbols)
        why = "names several symbols" if found else "is not a symbol of the pattern"
        raise UnknownSymbolError(f"{sig.name}: symbol {symbol!r} {why} {pattern!r} (symbols: {names})")
    if not found[0].positive:
        raise NegatedMeasureError(
            f"{sig.name}: symbol {symbol} appears only negated (!{symbol}) in {pattern!r}; a measure needs a "
            "symbol that is bound to rows of the match")
    return found[0].index


# --- checks before any Spark job ---------------------------------------------------------

PLACEHOLDER_LENGTH = 1  # stands for a given WITHIN / SLIDE whose unit depends on ts's type
SEQ_CALL = re.compile(r"\bseq_\w+\s*\(", re.IGNORECASE)  # a call of a BI function (not sparkseq_agg_ names)


def check_statement_calls(spark_sql: str, resolve: Callable[[str], ConceptHierarchy] | None = None, *,
                          written: bool = False) -> None:
    """:func:`check_calls` on one statement of Spark SQL text; text sqlglot cannot parse is
    left to the functions, which check themselves when they run. With ``written`` (the
    text is the statement as the user wrote it), errors are placed in ``spark_sql``."""
    if not SEQ_CALL.search(spark_sql):
        return
    try:
        tree = sqlglot.parse_one(spark_sql, read=SparkSeq)
    except SqlglotError:
        return
    check_calls(tree, resolve, spark_sql if written else None)


def check_calls(tree: exp.Expr, resolve: Callable[[str], ConceptHierarchy] | None = None,
                sql: str | None = None) -> None:
    """Check the ``seq_*`` calls of a parsed statement whose arguments are literals.

    Catches wrong argument counts, pattern syntax, edge negations without ``within``
    and unknown or negated measure symbols while parsing — before any Spark job —
    with the same errors the functions raise at run time; ``resolve(name)`` looks up a
    pattern's ``HIERARCHY name`` (raising for unknown ones; without ``resolve``, a call
    naming a hierarchy is left to the function, which knows its session's). Window
    values are checked at run time, where the type of ``ts`` is known.

    An error is placed in ``sql``, the text ``tree`` was parsed from, when given (a
    mistake in a pattern at its place inside the pattern's literal); else a mistake in a
    pattern is placed in the pattern, labelled ``seq_count pattern``.
    """
    for call in tree.find_all(exp.Anonymous):
        sig = BY_NAME.get(str(call.name).lower())
        if sig is None:
            continue
        try:
            _check_call(sig, call, resolve)
        except SqlRewriteError as exc:
            raise _placed(exc, sig, call, sql) from None
        _check_window_arguments(sig, call, sql)


def _check_call(sig: Signature, call: exp.Anonymous, resolve: Callable[[str], ConceptHierarchy] | None) -> None:
    bound = sig.bind(call.expressions)
    pattern = _literal_text(bound["pattern"])
    if pattern is None:
        return
    within = None if _is_null(bound["within"]) else PLACEHOLDER_LENGTH
    slide = None if _is_null(bound.get("slide")) else PLACEHOLDER_LENGTH
    symbol = _literal_text(bound.get("symbol")) if not sig.counts else None
    node = pattern_argument(pattern)
    name = hierarchy_name(node)
    hierarchies: Hierarchies = ()
    if name:
        if resolve is None:
            return
        hierarchies = ((name.casefold(), tuple(sorted(resolve(name).parent_of.items()))),)
    if not sig.counts and symbol is None:
        compile_type_pattern(pattern, within=within, slide=slide, parsed=node.this)  # symbol not a literal
        if name:
            hierarchy_of(sig, name, hierarchies)
    else:
        compile_call(sig, pattern, within, slide, symbol, ValueType.FLOAT if symbol is not None else None,
                     hierarchies)


def _placed(exc: SqlRewriteError, sig: Signature, call: exp.Anonymous, sql: str | None) -> SqlRewriteError:
    """``exc`` — positioned in the call's pattern, if at all — placed in ``sql`` (in the
    pattern's literal; a measure symbol's error at its literal; else at the call's name),
    else in the pattern, labelled."""
    bound = sig.bind(call.expressions)
    pattern_node = bound["pattern"]
    pattern = _literal_text(pattern_node) or ""
    first = exc.position.start if exc.position is not None else None  # in the pattern
    last = exc.position.end if exc.position is not None and exc.position.end is not None else first
    if sql is None:
        if first is None or last is None:
            return exc
        return exc.relocated(position_of(pattern, first, last, f"{sig.name} pattern"))
    literal = pattern_node.meta if isinstance(pattern_node, exp.Literal) else {}
    if first is not None and last is not None and "start" in literal \
            and sql[literal["start"] + 1:literal["end"]] == pattern:
        start = literal["start"] + 1  # the pattern as written: no escapes, offsets carry over
        return exc.relocated(position_of(sql, start + first, start + last))
    symbol = bound.get("symbol")
    if isinstance(exc, (UnknownSymbolError, NegatedMeasureError)) and isinstance(symbol, exp.Literal):
        literal = symbol.meta
    where = literal if "start" in literal else call.meta
    if "start" not in where:
        return exc
    return exc.relocated(position_of(sql, where["start"], where["end"]))


def _check_window_arguments(sig: Signature, call: exp.Anonymous, sql: str | None) -> None:
    """The ``within`` / ``slide`` arguments written as intervals, each checked under its own
    name; both: the window they make. Placed in ``sql`` (when given) at the call's name:
    sqlglot keeps no position for an interval."""
    bound = sig.bind(call.expressions)
    try:
        within_us, slide_us = (_interval_micros(bound.get(name), name) for name in ("within", "slide"))
        if within_us is not None and slide_us is not None:  # both intervals: the event time is a timestamp
            WindowSpec.checked(within_us, slide_us,
                               shown=(describe_length(within_us, True), describe_length(slide_us, True)))
    except SqlRewriteError as exc:
        where = call.meta if sql is not None and "start" in call.meta else None
        raise exc.relocated(None if where is None else position_of(sql, where["start"], where["end"])) from None


def _interval_micros(node: exp.Expr | None, name: str) -> int | None:
    """An ``INTERVAL ...`` literal argument ``name`` in microseconds; None for anything else."""
    if not isinstance(node, exp.Interval):
        return None
    return window_length(node, name, "ts", OrderKind.TIMESTAMP)


def _literal_text(node: exp.Expr | None) -> str | None:
    return node.name if isinstance(node, exp.Literal) and node.is_string else None


def _is_null(node: exp.Expr | None) -> bool:
    return node is None or isinstance(node, exp.Null)


__all__ = ["BY_NAME", "COUNT", "SUM", "AVG", "MIN", "MAX", "STEPS", "MAX_STEP", "SIGNATURES", "Compiled",
           "FunctionArgumentError",
           "Hierarchies", "Signature", "check_calls", "check_statement_calls", "compile_call", "hierarchy_name",
           "hierarchy_of", "measured_symbol", "pattern_argument", "strategy_of"]
