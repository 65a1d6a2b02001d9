"""The compiled pattern plan: the engine's whole input contract besides the events.

A plan is produced by ``sql_rewrites`` (or by hand in tests) and travels to the
Python workers as a compact, versioned JSON string literal in the generated SQL.

Events reach a kernel as
* ``ts``   -- int64 timestamps (any order; microseconds for TIMESTAMP columns),
* ``mask`` -- int64 per-row symbol bitmask: bit ``k`` set iff the row is an
  instance of ``plan.symbols[k]`` (a row may be an instance of several symbols),
* one value column per entry of ``plan.columns`` (for SUM/MIN/MAX/AVG).

Pattern ``SEQ(p1, ..., pm)`` is stored as its positive elements ``E1..En``
(``elements``) and, for every gap, the bitmask of negated symbols there:
``negations[0]`` is the leading gap (before E1), ``negations[i]`` the gap between
``E_i`` and ``E_{i+1}``, ``negations[n]`` the trailing gap (after En).
See docs/semantics.md sections 2-5 for what a match is.

Optional extensions (``docs/predicates-and-strategies.md`` is their contract):
``strategy`` (event selection strategy), ``predicates`` (cross-event comparisons
between two positive non-Kleene elements, by element *position*) and
``iterator_predicates`` (comparisons between consecutive rows of one Kleene set).
Plans that use none of them serialise exactly as before (version 1); plans that do
are written as version 2, so that an older engine refuses them instead of ignoring
the new keys.

``uncertain`` (imprecise timestamps, ``docs/sql-reference.md`` section 15): when set,
every event carries an interval of possible times ``lo, lo + uncertain, ...,  <= hi``
(uniform, independent between events) and every measure is an expectation over the
possible worlds. Such plans are written as version 3, which may carry the keys of
version 2 as well (one number per plan: 3 if imprecise, else 2 if extended, else 1).

Quantified and optional elements (``X{n,m}``, ``X{n}``, ``X{n,}``, ``X?``, ``X*``:
:class:`Element` ``min_rows`` / ``max_rows``, SEMANTICS section 10) are written as
``[symbol, kleene, min_rows, max_rows]`` in plans of version 4, which may carry the keys
of version 2 as well; such a plan is always version 4 (never imprecise).

The funnel measures ``STEPS(*)`` and ``MAX_STEP()`` (``MeasureKind.STEPS`` /
``MAX_STEP``, SEMANTICS section 10) need no new version: their measure codes
``"steps"`` / ``"max_step"`` are unknown to an older engine, which refuses the plan
("malformed plan field") rather than ignoring them.
"""

from __future__ import annotations

import enum
import functools
import json
import operator
from dataclasses import dataclass
from typing import SupportsInt, TypeGuard

from udafs.errors import PlanError

PLAN_VERSION = 1  # plans without the extensions (predicates, iterator predicates, strategies)
PLAN_VERSION_EXTENDED = 2  # plans with a strategy, predicates or iterator predicates
PLAN_VERSION_UNCERTAIN = 3  # plans over events with imprecise timestamps (expected aggregates)
PLAN_VERSION_QUANTIFIED = 4  # plans with a quantified or optional element (X{n,m}, X?, X*); may carry version 2 keys
#: Measures that are expectations (linear in the matches) and so defined under imprecise timestamps.
UNCERTAIN_MEASURES = frozenset({"count_star", "count", "sum"})
MAX_SYMBOLS = 63  # one int64 bitmask per row; bit 63 is the sign bit, left unused
MAX_DECIMAL_DIGITS = 38  # Spark's widest DECIMAL


class MeasureKind(str, enum.Enum):
    """Aggregates over the multiset of matches (SEMANTICS section 5)."""

    COUNT_STAR = "count_star"
    COUNT = "count"
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    AVG = "avg"
    STEPS = "steps"  # funnel: one count per prefix E1..Ei of the pattern (SEMANTICS section 10)
    MAX_STEP = "max_step"  # funnel: the largest i whose prefix has a match, 0 when none

    @property
    def funnel(self) -> bool:
        """True for STEPS and MAX_STEP: measures read from the prefix counts, over no symbol."""
        return self in (MeasureKind.STEPS, MeasureKind.MAX_STEP)


class CountType(str, enum.Enum):
    """SQL type of counts: BIGINT (overflow raises), DECIMAL(38,0), or DOUBLE."""

    BIGINT = "bigint"
    DECIMAL = "decimal"
    DOUBLE = "double"


class ValueType(str, enum.Enum):
    """How a value column is carried.

    ``INT``: exact int64 integers; ``FLOAT``: doubles; ``DECIMAL``: the exact unscaled
    integers of a DECIMAL column, of any size (a DECIMAL(38, s) value needs 127 bits):
    SUM, MIN and MAX of it are exact unscaled integers, AVG its exact sum and count, so
    that SQL can finish them with Spark's own decimal types and rounding.
    """

    INT = "int"
    FLOAT = "float"
    DECIMAL = "decimal"


class Strategy(str, enum.Enum):
    """Event selection strategy (SASE++ section 2.1); see docs/predicates-and-strategies.md.

    The value is the plan document's code; the SQL words (``STRATEGY <words>``) are the name
    with spaces.

    >>> Strategy.SKIP_TILL_NEXT_MATCH.sql
    'SKIP TILL NEXT MATCH'
    >>> Strategy.from_sql("strict   contiguity").name
    'STRICT_CONTIGUITY'
    """

    SKIP_TILL_ANY_MATCH = "any"
    SKIP_TILL_NEXT_MATCH = "next"
    STRICT_CONTIGUITY = "strict"
    PARTITION_CONTIGUITY = "partition"

    @property
    def contiguous(self) -> bool:
        """True for the two contiguity strategies."""
        return self in (Strategy.STRICT_CONTIGUITY, Strategy.PARTITION_CONTIGUITY)

    @property
    def sql(self) -> str:
        """The words after ``STRATEGY``, e.g. ``SKIP TILL ANY MATCH``."""
        return self.name.replace("_", " ")

    @classmethod
    def sql_choices(cls) -> tuple[str, ...]:
        """The SQL words of every strategy, default first."""
        return tuple(s.sql for s in cls)

    @classmethod
    def from_sql(cls, words: str) -> Strategy:
        """The strategy named by ``words`` (any case, any spacing).

        Raises
        ------
        PlanError
            For anything but the SQL words of a strategy; the message lists them.
        """
        try:
            return cls["_".join(words.upper().split())]
        except KeyError:
            raise PlanError(f"unknown strategy {words!r}; expected one of {', '.join(cls.sql_choices())}") from None


class CmpOp(str, enum.Enum):
    """Comparison operators of predicates."""

    EQ = "="
    NE = "<>"
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="

    def mirrored(self) -> CmpOp:
        """The operator with both sides swapped: ``a < b`` iff ``b > a``."""
        return _MIRROR[self]


_MIRROR = {CmpOp.EQ: CmpOp.EQ, CmpOp.NE: CmpOp.NE, CmpOp.LT: CmpOp.GT, CmpOp.LE: CmpOp.GE,
           CmpOp.GT: CmpOp.LT, CmpOp.GE: CmpOp.LE}


@dataclass(frozen=True)
class Predicate:
    """Cross-event predicate
    ``E[left].col[left_column] + left_offset OP E[right].col[right_column] + offset``.

    ``left`` / ``right`` are positions in ``Plan.elements`` (not symbols: a symbol may
    repeat); both must be non-Kleene and different. Columns index ``Plan.columns``.
    A NULL operand makes the predicate not TRUE (no match). In double arithmetic each
    side adds its own offset, as Spark evaluates ``a.f + 0.3 = b.f`` (moving the constant
    across would round differently); integer comparisons are exact either way, and the
    compiler gives them ``left_offset`` 0.
    """

    left: int
    left_column: int
    op: CmpOp
    right: int
    right_column: int
    offset: int | float = 0
    left_offset: int | float = 0


@dataclass(frozen=True)
class IteratorPredicate:
    """Kleene iterator predicate ``b[i].col + left_offset OP b[i-1].col + offset`` on
    element ``element`` (``left_offset`` as for :class:`Predicate`).

    ``b[i-1]``, ``b[i]`` are consecutive rows of the Kleene set in time order. With
    ``first`` the predicate is ``b[i].col + left_offset OP b[1].col + offset``: every row of the set
    after its first compares with the first (``docs/predicates-and-strategies.md``).
    """

    element: int
    column: int
    op: CmpOp
    offset: int | float = 0
    left_offset: int | float = 0
    first: bool = False


@dataclass(frozen=True)
class Element:
    """One positive pattern element: a symbol index, optionally Kleene, quantified or optional.

    ``kleene`` binds a *set* of rows (pairwise distinct timestamps) instead of one row;
    ``min_rows`` is the fewest rows bound (0: optional, the element may bind no row);
    ``max_rows`` (Kleene only) the most, None for no bound (SEMANTICS section 10)::

        X -> Element(s)   X+ -> Element(s, True)   X? -> Element(s, False, 0)   X* -> Element(s, True, 0)
        X{n} -> Element(s, True, n, n)   X{n,} -> Element(s, True, n)   X{n,m} -> Element(s, True, n, m)
    """

    symbol: int
    kleene: bool = False
    min_rows: int = 1
    max_rows: int | None = None

    @property
    def optional(self) -> bool:
        """True when a match may bind no row to this element (``X?``, ``X*``)."""
        return self.min_rows == 0

    @property
    def quantified(self) -> bool:
        """True for anything but plain ``X`` and ``X+`` (``min_rows != 1`` or a ``max_rows``)."""
        return self.min_rows != 1 or self.max_rows is not None

    def describe(self, name: str) -> str:
        """The element as pattern text: ``B``, ``B+``, ``B?``, ``B*``, ``B{2}``, ``B{2,}``, ``B{2,4}``."""
        if not self.kleene:
            return name + ("?" if self.optional else "")
        lo, hi = self.min_rows, self.max_rows
        if hi is None:
            return name + {0: "*", 1: "+"}.get(lo, f"{{{lo},}}")
        return name + (f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}")

    def to_list(self) -> list:
        """The JSON entry: ``[symbol, kleene]``, plus ``min_rows, max_rows`` when quantified."""
        return [self.symbol, int(self.kleene)] + ([self.min_rows, self.max_rows] if self.quantified else [])

    @staticmethod
    def from_list(entry: object) -> Element:
        """Inverse of :meth:`to_list`."""
        if not isinstance(entry, list) or len(entry) not in (2, 4) or any(
                isinstance(x, bool) or not isinstance(x, int) for x in entry[:1] + entry[2:3]) or (
                len(entry) == 4 and entry[3] is not None and (isinstance(entry[3], bool)
                                                             or not isinstance(entry[3], int))):
            raise PlanError(f"malformed plan field: element {entry!r} is not [symbol, kleene(, min_rows, max_rows)]")
        symbol, kleene, *rows = entry
        return Element(symbol, bool(kleene), *rows)


@dataclass(frozen=True)
class Measure:
    """One MEASURES entry.

    ``symbol`` is required for every kind but COUNT_STAR; ``column`` (an index into
    ``Plan.columns``) for SUM/MIN/MAX/AVG. ``name`` is the output column name.
    AVG over a DECIMAL column is Spark's ``avg``: the sum of the unscaled values must fit
    ``digits`` digits (Spark first sums into DECIMAL(min(38, p + 10), s)), and the average
    is the exact quotient rounded half up (away from zero) to ``places`` more decimal
    places (Spark's result has scale min(38, s + 4)). Both are 0 for every other measure.
    """

    kind: MeasureKind
    symbol: int | None = None
    column: int | None = None
    name: str = ""
    places: int = 0
    digits: int = 0

    def to_list(self) -> list:
        """The JSON entry: ``[kind, symbol, column, name]``, plus ``places, digits`` when set."""
        rounding = [self.places, self.digits] if self.places or self.digits else []
        return [self.kind.value, self.symbol, self.column, self.name, *rounding]

    @staticmethod
    def from_list(entry: list) -> Measure:
        """Inverse of :meth:`to_list`."""
        if not isinstance(entry, list) or len(entry) not in (4, 6):
            raise PlanError(f"malformed plan field: measure {entry!r} is not [kind, symbol, column, name"
                            "(, places, digits)]")
        kind, symbol, column, name, *rounding = entry
        return Measure(MeasureKind(kind), symbol, column, name, *rounding)


@dataclass(frozen=True)
class Plan:
    """A validated, immutable pattern plan (see module docstring)."""

    symbols: tuple[str, ...]
    elements: tuple[Element, ...]
    negations: tuple[int, ...]
    within: int | None = None
    slide: int | None = None
    measures: tuple[Measure, ...] = (Measure(MeasureKind.COUNT_STAR, name="count"),)
    columns: tuple[ValueType, ...] = ()
    count_type: CountType = CountType.BIGINT
    strategy: Strategy = Strategy.SKIP_TILL_ANY_MATCH
    predicates: tuple[Predicate, ...] = ()
    iterator_predicates: tuple[IteratorPredicate, ...] = ()
    uncertain: int | None = None

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def length(self) -> int:
        """Number of positive elements ``n``."""
        return len(self.elements)

    @property
    def extended(self) -> bool:
        """True when the plan uses a strategy, predicates or iterator predicates."""
        return (self.strategy is not Strategy.SKIP_TILL_ANY_MATCH or bool(self.predicates)
                or bool(self.iterator_predicates))

    @property
    def window(self) -> int:
        """``within`` on a path that runs only with a WITHIN (PlanError without one)."""
        if self.within is None:
            raise PlanError("this evaluation needs WITHIN and the plan has none")
        return self.within

    @property
    def sliding(self) -> tuple[int, int]:
        """``(within, slide)`` on a path that runs only with WITHIN ... SLIDE (PlanError without)."""
        if self.slide is None:
            raise PlanError("this evaluation needs WITHIN ... SLIDE and the plan has no SLIDE")
        return self.window, self.slide

    @property
    def quantified(self) -> bool:
        """True when an element is quantified or optional (``X{n,m}``, ``X{n}``, ``X{n,}``, ``X?``, ``X*``)."""
        return any(el.quantified for el in self.elements)

    @property
    def has_edge_negation(self) -> bool:
        """True when the leading or trailing gap negates something."""
        return bool(self.negations[0] or self.negations[-1])

    @functools.cached_property  # read per group and plan by the engine
    def pattern_symbols_mask(self) -> int:
        """Bitmask of every symbol the pattern mentions, positive or negated."""
        return self.positive_mask | self.negated_mask

    @functools.cached_property
    def positive_mask(self) -> int:
        """Bitmask of the symbols at positive positions."""
        return functools.reduce(operator.or_, (1 << el.symbol for el in self.elements), 0)

    @functools.cached_property
    def negated_mask(self) -> int:
        """Bitmask of the symbols negated in any gap."""
        return functools.reduce(operator.or_, self.negations, 0)

    @property
    def positive_and_negated(self) -> tuple[int, ...]:
        """Symbols that are a positive element and also negated in some gap (``SEQ(B, A, !A)``)."""
        both = self.positive_mask & self.negated_mask
        return tuple(s for s in range(len(self.symbols)) if both >> s & 1)

    def describe(self) -> str:
        """The pattern as text, e.g. ``SEQ(VK, BK, !REC, VC+)``."""
        parts: list[str] = []
        for gap, neg in enumerate(self.negations):
            parts += [f"!{self.symbols[k]}" for k in range(len(self.symbols)) if neg >> k & 1]
            if gap < self.length:
                el = self.elements[gap]
                parts.append(el.describe(self.symbols[el.symbol]))
        return f"SEQ({', '.join(parts)})"

    def describe_extensions(self) -> str:
        """The extensions (predicates, iterator predicates, strategies) as text (empty for plain plans), e.g.
        ``WHERE E0.c1 >= E1.c1 + 2 AND E1[i].c0 > E1[i-1].c0 STRATEGY skip-till-next-match``.
        ``Ek`` is element position k, ``cj`` column j."""
        conds = [f"E{p.left}.c{p.left_column}{_plus(p.left_offset)} {p.op.value} E{p.right}.c{p.right_column}"
                 f"{_plus(p.offset)}" for p in self.predicates]
        conds += [f"E{q.element}[i].c{q.column}{_plus(q.left_offset)} {q.op.value} "
                  f"E{q.element}[{1 if q.first else 'i-1'}].c{q.column}{_plus(q.offset)}"
                  for q in self.iterator_predicates]
        parts = [("WHERE " + " AND ".join(conds)) if conds else ""]
        if self.strategy is not Strategy.SKIP_TILL_ANY_MATCH:
            parts.append("STRATEGY " + self.strategy.name.lower().replace("_", "-"))
        return " ".join(x for x in parts if x)

    def to_json(self) -> str:
        """Compact, versioned JSON, safe to embed as a SQL string literal."""
        doc = {
            "v": PLAN_VERSION,
            "sym": list(self.symbols),
            "el": [e.to_list() for e in self.elements],
            "neg": list(self.negations),
            "w": self.within,
            "s": self.slide,
            "m": [m.to_list() for m in self.measures],
            "col": [c.value for c in self.columns],
            "ct": self.count_type.value,
        }
        if self.extended:  # new keys only when used, and then a version old engines refuse
            doc["v"] = PLAN_VERSION_EXTENDED
            if self.strategy is not Strategy.SKIP_TILL_ANY_MATCH:
                doc["st"] = self.strategy.value
            if self.predicates:  # a left offset only when there is one: older plans read as before
                doc["pr"] = [[p.left, p.left_column, p.op.value, p.right, p.right_column, p.offset]
                             + ([p.left_offset] if p.left_offset else []) for p in self.predicates]
            if self.iterator_predicates:
                doc["ip"] = [_iterator_entry(q) for q in self.iterator_predicates]
        if self.uncertain is not None:
            doc["v"] = PLAN_VERSION_UNCERTAIN
            doc["un"] = self.uncertain
        if self.quantified:  # never with "un" (validation refuses quantified imprecise plans)
            doc["v"] = PLAN_VERSION_QUANTIFIED
        return json.dumps(doc, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> Plan:
        """Parse and validate a plan produced by :meth:`to_json`."""
        try:
            doc = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise PlanError(f"plan is not valid JSON: {exc}") from None
        version = doc.get("v") if isinstance(doc, dict) else None
        versions = (PLAN_VERSION, PLAN_VERSION_EXTENDED, PLAN_VERSION_UNCERTAIN, PLAN_VERSION_QUANTIFIED)
        if version not in versions or isinstance(version, bool):
            raise PlanError(f"unsupported plan version {version!r}; "
                            f"this engine reads versions {', '.join(map(str, versions))}")
        new_keys = sorted(k for k in ("st", "pr", "ip") if k in doc)
        if version == PLAN_VERSION and new_keys:
            raise PlanError(f"plan version 1 cannot carry the keys {new_keys}; they need version 2")
        if ("un" in doc) != (version == PLAN_VERSION_UNCERTAIN):
            raise PlanError("the key 'un' (imprecise timestamps) is written exactly in plans of version 3")
        try:
            plan = Plan(
                symbols=tuple(doc["sym"]),
                elements=tuple(map(Element.from_list, doc["el"])),
                negations=tuple(int(x) for x in doc["neg"]),
                within=doc["w"],
                slide=doc["s"],
                measures=tuple(Measure.from_list(m) for m in doc["m"]),
                columns=tuple(ValueType(c) for c in doc["col"]),
                count_type=CountType(doc["ct"]),
                strategy=Strategy(doc.get("st", Strategy.SKIP_TILL_ANY_MATCH.value)),
                predicates=tuple(Predicate(int(ls), int(lc), CmpOp(op), int(rs), int(rc), _number(c),
                                           *(_number(x) for x in left))
                                 for ls, lc, op, rs, rc, c, *left in map(_at_most(7), doc.get("pr", ()))),
                iterator_predicates=tuple(_iterator_predicate(*q) for q in map(_at_most(6), doc.get("ip", ()))),
                uncertain=doc.get("un"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, PlanError):
                raise
            raise PlanError(f"malformed plan field: {exc}") from None
        if version == PLAN_VERSION_EXTENDED and (not plan.extended or plan.uncertain is not None):
            raise PlanError("plan version 2 without a strategy, predicate or iterator predicate; write version 1")
        if (version == PLAN_VERSION_QUANTIFIED) != plan.quantified:
            raise PlanError("plans with a quantified or optional element are written exactly as version 4, got "
                            f"version {version} {'with' if plan.quantified else 'without'} one")
        return plan


def funnel_measures(plan: Plan) -> bool:
    """True when ``plan`` measures STEPS(*) or MAX_STEP() (prefix counts, SEMANTICS section 10)."""
    return any(m.kind.funnel for m in plan.measures)


def splittable(plan: Plan) -> str | None:
    """None when ``plan`` can be evaluated by time split (:mod:`udafs.kernels.incremental.timesplit`),
    else the reason it cannot (docs/engine.md, "What stays single-task, and why")."""
    if plan.within is None:
        return "the pattern has no WITHIN window: a match may span the whole partition"
    if plan.strategy.contiguous:
        return "contiguity strategies rank rows over the whole partition"
    if plan.uncertain is not None:
        return "imprecise timestamps spread a row over a range of possible times"
    if funnel_measures(plan):
        return "STEPS(*) and MAX_STEP() are evaluated on the grouped path only"
    if len(plan.symbols) + len(plan.positive_and_negated) > MAX_SYMBOLS:  # each needs a shadow bit
        return f"the pattern needs more than {MAX_SYMBOLS} symbol bits with its negated symbols doubled"
    return None


def streamable(plan: Plan) -> str | None:
    """None when the streaming evaluator (:mod:`udafs.kernels.incremental.streaming`) takes ``plan``,
    else the reason it refuses it."""
    if funnel_measures(plan):
        return "STEPS(*) and MAX_STEP() are not supported on the streaming path; use the batch path (evaluate_group)"
    if plan.uncertain is not None:
        return "imprecise timestamps (expected aggregates) are not supported on the streaming path; " \
               "use the batch path (evaluate_group)"
    if plan.extended:
        used = [name for name, on in (("a selection strategy other than skip-till-any-match",
                                       plan.strategy is not Strategy.SKIP_TILL_ANY_MATCH),
                                      ("cross-event predicates", bool(plan.predicates)),
                                      ("Kleene iterator predicates", bool(plan.iterator_predicates))) if on]
        return (f"{' and '.join(used)} {'is' if len(used) == 1 else 'are'} not supported on the "
                "streaming path; use the batch path (evaluate_group)")
    if ValueType.DECIMAL in plan.columns:
        return ("DECIMAL value columns are not supported on the streaming path; carry them as INT "
                "(unscaled, up to 18 digits) or FLOAT, or use the batch path (evaluate_group)")
    return None


def _iterator_entry(q: IteratorPredicate) -> list:
    """One ``ip`` entry: ``[element, column, op, offset]``, then ``left_offset`` when set or
    when ``first`` is, then ``1`` for a first-element form (plans without either read as before)."""
    tail = [q.left_offset, 1] if q.first else [q.left_offset] if q.left_offset else []
    return [q.element, q.column, q.op.value, q.offset, *tail]


def _iterator_predicate(e: SupportsInt, c: SupportsInt, op: str, off: object, *tail: object) -> IteratorPredicate:
    """Inverse of :func:`_iterator_entry`."""
    if len(tail) == 2 and (isinstance(tail[1], bool) or tail[1] != 1):
        raise PlanError(f"malformed plan field: iterator predicate {[e, c, op, off, *tail]!r} ends with "
                        f"{tail[1]!r}; the sixth entry is 1 (a first-element form) or absent")
    left = _number(tail[0]) if tail else 0
    return IteratorPredicate(int(e), int(c), CmpOp(op), _number(off), left, len(tail) == 2)


def _plus(offset: int | float) -> str:
    return f" {'+' if offset >= 0 else '-'} {abs(offset)}" if offset else ""


def _at_most(n: int):  # noqa: ANN202 - a checker for map()
    def check(entry: list) -> list:
        if not isinstance(entry, list) or len(entry) > n:
            raise PlanError(f"malformed plan field: {entry!r} has more than {n} entries")
        return entry
    return check


def _number(x: object) -> int | float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise PlanError(f"predicate offset must be a number, got {x!r}")
    return x


def _validate(p: Plan) -> None:
    n_sym = len(p.symbols)
    if not 0 < n_sym <= MAX_SYMBOLS:
        raise PlanError(f"a plan needs 1..{MAX_SYMBOLS} symbols, got {n_sym}")
    if not p.elements:
        raise PlanError("a pattern needs at least one positive element")
    for el in p.elements:
        if not 0 <= el.symbol < n_sym:
            raise PlanError(f"element symbol index {el.symbol} out of range 0..{n_sym - 1}")
    if len(p.negations) != len(p.elements) + 1:
        raise PlanError(f"negations must have {len(p.elements) + 1} gaps, got {len(p.negations)}")
    for g in p.negations:
        if g < 0 or g >> n_sym:
            raise PlanError(f"negation mask {g} names symbols beyond the {n_sym} declared")
    _validate_quantifiers(p)
    _validate_window(p)
    _validate_measures(p)
    _validate_extensions(p)
    _validate_uncertain(p)


def _validate_quantifiers(p: Plan) -> None:
    """Row counts of quantified and optional elements (SEMANTICS section 10)."""
    for k, el in enumerate(p.elements):
        lo, hi = el.min_rows, el.max_rows
        what = f"element {k} ({p.symbols[el.symbol]})"
        if not _is_int(lo) or lo < 0 or (hi is not None and not _is_int(hi)):
            raise PlanError(f"{what}: min_rows must be an integer >= 0 and max_rows an integer or None, "
                            f"got {lo!r} and {hi!r}")
        if not el.kleene and (lo > 1 or hi is not None):
            raise PlanError(f"{what}: a non-Kleene element binds one row (min_rows 1) or is optional (min_rows 0), "
                            f"with max_rows None; got min_rows={lo}, max_rows={hi}; a row count needs kleene=True")
        if hi is not None and hi < max(lo, 1):
            raise PlanError(f"{what}: max_rows {hi} is below {'min_rows ' + str(lo) if lo else '1'}; "
                            "a Kleene element binds between min_rows and max_rows rows, at least one when bound")
    if all(el.optional for el in p.elements):
        raise PlanError("every element of the pattern is optional; at least one must bind a row in every match")
    if p.uncertain is not None and p.quantified:
        raise PlanError("quantified and optional elements are not supported with imprecise timestamps")
    for pr in p.predicates:
        for pos in (pr.left, pr.right):
            if _is_int(pos) and 0 <= pos < len(p.elements) and p.elements[pos].optional:
                raise PlanError(f"a cross-event predicate compares element {pos} "
                                f"({p.elements[pos].describe(p.symbols[p.elements[pos].symbol])}), which is optional "
                                "and may bind no row")


def _validate_window(p: Plan) -> None:
    for name, val in (("WITHIN", p.within), ("SLIDE", p.slide)):
        if val is not None and (not isinstance(val, int) or isinstance(val, bool) or val <= 0):
            raise PlanError(f"{name} must be a positive integer, got {val!r}")
    if p.slide is not None and p.within is None:
        raise PlanError("SLIDE needs WITHIN")
    if p.has_edge_negation and p.within is None:
        raise PlanError("a leading or trailing negation needs WITHIN")


def _validate_measures(p: Plan) -> None:
    positive = {el.symbol for el in p.elements}
    for m in p.measures:
        if m.kind is MeasureKind.COUNT_STAR or m.kind.funnel:
            if m.kind.funnel and (m.symbol is not None or m.column is not None):
                raise PlanError(f"measure {m.kind.value.upper()} counts prefixes of the whole pattern: it takes no "
                                f"symbol and no column, got symbol={m.symbol!r}, column={m.column!r}")
            if m.kind.funnel and p.elements[0].optional:
                raise PlanError(f"measure {m.kind.value.upper()} needs a first element that binds a row: the first "
                                "prefix of a pattern starting with an optional element (X?, X*) alone could match "
                                "no row")
            continue
        if m.symbol is None or m.symbol not in positive:
            raise PlanError(f"measure {m.kind.value.upper()} must reference a positive symbol of the pattern")
        needs_col = m.kind not in (MeasureKind.COUNT,)
        if needs_col and (m.column is None or not 0 <= m.column < len(p.columns)):
            raise PlanError(f"measure {m.kind.value.upper()} needs a value column index in 0..{len(p.columns) - 1}")
        decimal = needs_col and p.columns[m.column] is ValueType.DECIMAL  # type: ignore[index]
        decimal_avg = decimal and m.kind is MeasureKind.AVG
        if not (_is_int(m.places) and _is_int(m.digits) and 0 <= m.places <= MAX_DECIMAL_DIGITS
                and (0 < m.digits <= MAX_DECIMAL_DIGITS if decimal_avg else m.places == m.digits == 0)):
            raise PlanError(f"measure {m.kind.value.upper()}: places={m.places!r}, digits={m.digits!r}; AVG over a "
                            f"DECIMAL column takes places 0..{MAX_DECIMAL_DIGITS} and digits 1..{MAX_DECIMAL_DIGITS}, "
                            "every other measure 0 and 0")
        if m.kind in (MeasureKind.SUM, MeasureKind.AVG) and decimal and p.count_type is CountType.DOUBLE:
            raise PlanError(f"measure {m.kind.value.upper()} over a DECIMAL column is exact and needs an exact count "
                            "type (BIGINT or DECIMAL); with count_type DOUBLE carry the column as FLOAT")


def _validate_extensions(p: Plan) -> None:
    if not isinstance(p.strategy, Strategy):
        raise PlanError(f"strategy must be a Strategy, got {p.strategy!r}")
    n, n_col = len(p.elements), len(p.columns)
    compared = [c for pr in p.predicates for c in (pr.left_column, pr.right_column)]
    compared += [ip.column for ip in p.iterator_predicates]
    if any(_is_int(c) and 0 <= c < n_col and p.columns[c] is ValueType.DECIMAL for c in compared):
        raise PlanError("predicates compare INT or FLOAT columns; carry a DECIMAL column as INT (scaled) to compare it")
    for k, pr in enumerate(p.predicates):
        what = f"predicate {k}"
        if not isinstance(pr, Predicate) or not isinstance(pr.op, CmpOp):
            raise PlanError(f"{what} must be a Predicate with a CmpOp operator, got {pr!r}")
        for side, pos, col in (("left", pr.left, pr.left_column), ("right", pr.right, pr.right_column)):
            if not _is_int(pos) or not 0 <= pos < n:
                raise PlanError(f"{what}: {side} element position {pos!r} out of range 0..{n - 1}")
            if p.elements[pos].kleene:
                raise PlanError(f"{what}: element {pos} ({p.symbols[p.elements[pos].symbol]}+) is Kleene; "
                                "a Kleene element takes part only in iterator predicates (b[i] OP b[i-1])")
            _check_column(what, side, col, n_col)
        if pr.left == pr.right:
            raise PlanError(f"{what} compares element {pr.left} with itself; that is a local condition (DEFINE)")
        for offset in (pr.offset, pr.left_offset):
            _check_offset(what, offset, (p.columns[pr.left_column], p.columns[pr.right_column]))
    for k, ip in enumerate(p.iterator_predicates):
        what = f"iterator predicate {k}"
        if not isinstance(ip, IteratorPredicate) or not isinstance(ip.op, CmpOp):
            raise PlanError(f"{what} must be an IteratorPredicate with a CmpOp operator, got {ip!r}")
        if not _is_int(ip.element) or not 0 <= ip.element < n:
            raise PlanError(f"{what}: element position {ip.element!r} out of range 0..{n - 1}")
        if not p.elements[ip.element].kleene:
            raise PlanError(f"{what}: element {ip.element} ({p.symbols[p.elements[ip.element].symbol]}) is not "
                            "Kleene; b[i] OP b[i-1] needs a Kleene element X+")
        _check_column(what, "", ip.column, n_col)
        if not isinstance(ip.first, bool):
            raise PlanError(f"{what}: first must be a bool, got {ip.first!r}")
        for offset in (ip.offset, ip.left_offset):
            _check_offset(what, offset, (p.columns[ip.column],))


def _validate_uncertain(p: Plan) -> None:
    """Imprecise timestamps: expectations of linear measures, skip-till-any-match only."""
    if p.uncertain is None:
        return
    if not _is_int(p.uncertain) or p.uncertain <= 0:
        raise PlanError(f"uncertain (the step between possible times) must be a positive integer, got {p.uncertain!r}")
    if p.count_type is not CountType.DOUBLE:
        raise PlanError("a plan over imprecise timestamps computes expected values: its count type must be DOUBLE")
    for m in p.measures:
        if m.kind.value not in UNCERTAIN_MEASURES:
            raise PlanError(f"measure {m.kind.value.upper()} is not an expectation over possible worlds; "
                            "imprecise timestamps support COUNT(*), COUNT(X) and SUM(X.col)")
    if p.strategy is not Strategy.SKIP_TILL_ANY_MATCH:
        raise PlanError("imprecise timestamps are evaluated under skip-till-any-match only")
    if p.predicates:
        raise PlanError("cross-event predicates are not supported with imprecise timestamps")
    elements = [q.element for q in p.iterator_predicates]
    if len(set(elements)) < len(elements):
        raise PlanError("with imprecise timestamps a Kleene element takes one iterator predicate at most")
    if any(q.first for q in p.iterator_predicates):
        raise PlanError("first-element iterator predicates (b[i] OP b[1]) are not supported with imprecise "
                        "timestamps")


def _is_int(x: object) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_column(what: str, side: str, col: object, n_col: int) -> None:
    if not _is_int(col) or not 0 <= col < n_col:
        where = f" {side}" if side else ""
        raise PlanError(f"{what}:{where} column index {col!r} out of range 0..{n_col - 1}")


def _check_offset(what: str, c: object, types: tuple[ValueType, ...]) -> None:
    import math

    if isinstance(c, bool) or not isinstance(c, (int, float)):
        raise PlanError(f"{what}: offset must be an int or a float, got {c!r}")
    if isinstance(c, float) and not math.isfinite(c):
        raise PlanError(f"{what}: offset must be finite, got {c!r}")
    if isinstance(c, int) and abs(c) >= 2**62:
        raise PlanError(f"{what}: offset {c} out of range (|offset| < 2**62)")
    if isinstance(c, float) and all(t is ValueType.INT for t in types) and c != int(c):
        raise PlanError(f"{what}: offset {c!r} is fractional but compares INT columns; use an integer offset "
                        "or declare a column FLOAT")
