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
See ../shared/SEMANTICS.md sections 2-5 for what a match is.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field

from udafs.errors import PlanError

PLAN_VERSION = 1
MAX_SYMBOLS = 63  # one int64 bitmask per row; bit 63 is the sign bit, left unused


class MeasureKind(str, enum.Enum):
    """Aggregates over the multiset of matches (SEMANTICS section 5)."""

    COUNT_STAR = "count_star"
    COUNT = "count"
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


class CountType(str, enum.Enum):
    """SQL type of counts: BIGINT (overflow raises), DECIMAL(38,0), or DOUBLE."""

    BIGINT = "bigint"
    DECIMAL = "decimal"
    DOUBLE = "double"


class ValueType(str, enum.Enum):
    """How a measure column is carried: exact integers or floating point."""

    INT = "int"
    FLOAT = "float"


@dataclass(frozen=True)
class Element:
    """One positive pattern element: a symbol index, optionally Kleene plus."""

    symbol: int
    kleene: bool = False


@dataclass(frozen=True)
class Measure:
    """One MEASURES entry.

    ``symbol`` is required for every kind but COUNT_STAR; ``column`` (an index into
    ``Plan.columns``) for SUM/MIN/MAX/AVG. ``name`` is the output column name.
    """

    kind: MeasureKind
    symbol: int | None = None
    column: int | None = None
    name: str = ""


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
    positions_of: dict[int, tuple[int, ...]] = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        _validate(self)
        positions: dict[int, list[int]] = {}
        for i, el in enumerate(self.elements):
            positions.setdefault(el.symbol, []).append(i)
        object.__setattr__(self, "positions_of", {k: tuple(v) for k, v in positions.items()})

    @property
    def length(self) -> int:
        """Number of positive elements ``n``."""
        return len(self.elements)

    @property
    def has_edge_negation(self) -> bool:
        """True when the leading or trailing gap negates something."""
        return bool(self.negations[0] or self.negations[-1])

    @property
    def pattern_symbols_mask(self) -> int:
        """Bitmask of every symbol the pattern mentions, positive or negated."""
        m = 0
        for el in self.elements:
            m |= 1 << el.symbol
        for g in self.negations:
            m |= g
        return m

    def describe(self) -> str:
        """The pattern as text, e.g. ``SEQ(VK, BK, !REC, VC+)``."""
        parts: list[str] = []
        for gap, neg in enumerate(self.negations):
            parts += [f"!{self.symbols[k]}" for k in range(len(self.symbols)) if neg >> k & 1]
            if gap < self.length:
                el = self.elements[gap]
                parts.append(self.symbols[el.symbol] + ("+" if el.kleene else ""))
        return f"SEQ({', '.join(parts)})"

    def to_json(self) -> str:
        """Compact, versioned JSON, safe to embed as a SQL string literal."""
        doc = {
            "v": PLAN_VERSION,
            "sym": list(self.symbols),
            "el": [[e.symbol, int(e.kleene)] for e in self.elements],
            "neg": list(self.negations),
            "w": self.within,
            "s": self.slide,
            "m": [[m.kind.value, m.symbol, m.column, m.name] for m in self.measures],
            "col": [c.value for c in self.columns],
            "ct": self.count_type.value,
        }
        return json.dumps(doc, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> Plan:
        """Parse and validate a plan produced by :meth:`to_json`."""
        try:
            doc = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise PlanError(f"plan is not valid JSON: {exc}") from None
        if not isinstance(doc, dict) or doc.get("v") != PLAN_VERSION:
            raise PlanError(f"unsupported plan version {doc.get('v') if isinstance(doc, dict) else None!r}; "
                            f"this engine reads version {PLAN_VERSION}")
        try:
            return Plan(
                symbols=tuple(doc["sym"]),
                elements=tuple(Element(int(s), bool(k)) for s, k in doc["el"]),
                negations=tuple(int(x) for x in doc["neg"]),
                within=doc["w"],
                slide=doc["s"],
                measures=tuple(Measure(MeasureKind(k), s, c, n) for k, s, c, n in doc["m"]),
                columns=tuple(ValueType(c) for c in doc["col"]),
                count_type=CountType(doc["ct"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, PlanError):
                raise
            raise PlanError(f"malformed plan field: {exc}") from None


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
    _validate_window(p)
    _validate_measures(p)


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
        if m.kind is MeasureKind.COUNT_STAR:
            continue
        if m.symbol is None or m.symbol not in positive:
            raise PlanError(f"measure {m.kind.value.upper()} must reference a positive symbol of the pattern")
        needs_col = m.kind not in (MeasureKind.COUNT,)
        if needs_col and (m.column is None or not 0 <= m.column < len(p.columns)):
            raise PlanError(f"measure {m.kind.value.upper()} needs a value column index in 0..{len(p.columns) - 1}")
