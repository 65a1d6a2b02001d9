"""Several plans evaluated over one group in one pass: the engine input of an E-Cube query.

A :class:`MultiPlan` holds plans that share one symbol table and one set of value
columns, so one ``(ts, mask, v0, ...)`` input serves them all: the cuboids of an
E-Cube query, or the statements of a workload (each with its own windows, count
type and measures).
The engine sorts the group once and evaluates each plan on its own rows
(:func:`udafs.kernels.multiplan.many.evaluate_many`).

Results are reported in *fields*: every plan maps each of its measures to one output
field (``slots``); a field a plan does not map is NULL in that plan's rows. All plans
mapping to a field agree on its SQL type (one representative measure per field in
``fields``).

A plan may be *derived* rather than evaluated: ``derived[i] = (j, k, ...)`` says that
the matches of plan ``i`` are the disjoint union of the matches of plans ``j, k, ...``
(the compiler proves this: a positive non-Kleene position at concept ``N`` binds rows
of exactly one of N's children's subtrees, or of N itself). Its counts and sums are
then the sums of theirs, its MIN/MAX their MIN/MAX, its AVG the quotient of the summed
sums and non-NULL pair counts, window by window. Plans that only
serve such a derivation are ``hidden``: evaluated, never reported.

``timelines`` is the decision of which COUNT(*) plans are evaluated together on one
timeline, prefixes and suffixes counted once (:mod:`udafs.timelines`), made before the
pass from the data's statistics (a workload group's, :mod:`sql_rewrites.planning.timeline_plan`);
the engine obeys it exactly. None (an E-Cube's plans): the engine decides per
partition, by the same cost model over the partition's rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from udafs.errors import PlanError
from udafs.plan import CountType, Measure, Plan, ValueType
from udafs.timelines import SharedTimeline

#: 2 added ``timelines`` (``"t"``); version 1 documents (without it) are still read.
MULTI_VERSION = 2


@dataclass(frozen=True)
class MultiPlan:
    """Plans over one shared input (see module docstring)."""

    plans: tuple[Plan, ...]
    fields: tuple[Measure, ...]
    slots: tuple[tuple[int, ...], ...]
    derived: tuple[tuple[int, ...] | None, ...]
    hidden: tuple[bool, ...]
    timelines: tuple[SharedTimeline, ...] | None = None

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def symbols(self) -> tuple[str, ...]:
        """The shared symbol table (mask bit k = ``symbols[k]``)."""
        return self.plans[0].symbols

    @property
    def columns(self) -> tuple[ValueType, ...]:
        """The shared value columns."""
        return self.plans[0].columns

    @property
    def count_type(self) -> CountType:
        """The first plan's count type (an E-Cube's plans share it)."""
        return self.plans[0].count_type

    @property
    def within(self) -> int | None:
        """The first plan's WITHIN (an E-Cube's plans share it)."""
        return self.plans[0].within

    @property
    def slide(self) -> int | None:
        """The first plan's SLIDE (an E-Cube's plans share it)."""
        return self.plans[0].slide

    def field_owner(self, field: int) -> tuple[int, int]:
        """``(plan, measure)`` of the first plan mapping a measure to ``field``."""
        for i, slots in enumerate(self.slots):
            if field in slots:
                return i, slots.index(field)
        raise PlanError(f"no plan maps a measure to field {field}")

    @property
    def reported(self) -> tuple[int, ...]:
        """Indices of the plans whose rows are output."""
        return tuple(i for i, h in enumerate(self.hidden) if not h)

    def describe(self) -> str:
        """Every reported plan's pattern, one per line."""
        return "\n".join(self.plans[i].describe() for i in self.reported)

    def to_json(self) -> str:
        """Compact, versioned JSON (the plans' own JSON documents inside)."""
        doc = {
            "v": MULTI_VERSION,
            "multi": [json.loads(p.to_json()) for p in self.plans],
            "f": [m.to_list() for m in self.fields],
            "slots": [list(s) for s in self.slots],
            "d": [None if d is None else list(d) for d in self.derived],
            "h": [int(h) for h in self.hidden],
            "t": None if self.timelines is None else [t.to_list() for t in self.timelines],
        }
        return json.dumps(doc, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> MultiPlan:
        """Parse and validate :meth:`to_json` output."""
        try:
            doc = json.loads(text)
            if doc.get("v") not in (1, MULTI_VERSION) or "multi" not in doc:
                raise PlanError(f"not a multi-plan of version 1 or {MULTI_VERSION}")
            timelines = doc.get("t")
            return MultiPlan(
                plans=tuple(Plan.from_json(json.dumps(p)) for p in doc["multi"]),
                fields=tuple(Measure.from_list(f) for f in doc["f"]),
                slots=tuple(tuple(int(x) for x in s) for s in doc["slots"]),
                derived=tuple(None if d is None else tuple(int(x) for x in d) for d in doc["d"]),
                hidden=tuple(bool(h) for h in doc["h"]),
                timelines=None if timelines is None else tuple(SharedTimeline.from_list(t) for t in timelines),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, PlanError):
                raise
            raise PlanError(f"malformed multi-plan: {exc}") from None


def _validate(mp: MultiPlan) -> None:
    n = len(mp.plans)
    if n == 0:
        raise PlanError("a multi-plan needs at least one plan")
    if not (len(mp.slots) == len(mp.derived) == len(mp.hidden) == n):
        raise PlanError(f"slots, derived and hidden need one entry per plan ({n})")
    first = mp.plans[0]
    owner: dict[int, tuple] = {}
    for i, p in enumerate(mp.plans):
        if (p.symbols, p.columns) != (first.symbols, first.columns):
            raise PlanError(f"plan {i} does not share symbols and value columns with plan 0")
        if len(mp.slots[i]) != len(p.measures):
            raise PlanError(f"plan {i} has {len(p.measures)} measures but {len(mp.slots[i])} slots")
        for m, f in zip(p.measures, mp.slots[i]):
            if not 0 <= f < len(mp.fields):
                raise PlanError(f"plan {i} maps a measure to field {f}; there are {len(mp.fields)} fields")
            typed = (m.kind, None if m.column is None else p.columns[m.column], p.count_type, m.places, m.digits)
            if owner.setdefault(f, typed) != typed:
                raise PlanError(f"plan {i} maps a {m.kind.value} measure to field {f}, which another plan "
                                "fills with a value of another kind or type")
        if len(set(mp.slots[i])) != len(mp.slots[i]):
            raise PlanError(f"plan {i} maps two measures to one field")
    _validate_derivations(mp)
    _validate_timelines(mp)


def _validate_derivations(mp: MultiPlan) -> None:
    for i, parts in enumerate(mp.derived):
        if parts is None:
            continue
        if not parts or any(not 0 <= j < len(mp.plans) or j == i for j in parts):
            raise PlanError(f"plan {i} is derived from invalid parts {parts}")
        for j in parts:
            if sorted(mp.slots[j]) != sorted(mp.slots[i]):
                raise PlanError(f"plan {i} and its part {j} must report the same fields")
            a, b = mp.plans[i], mp.plans[j]
            if (a.within, a.slide, a.count_type) != (b.within, b.slide, b.count_type):
                raise PlanError(f"plan {i} and its part {j} must share windows and count type")
    state: dict[int, int] = {}

    def visit(i: int) -> None:  # depth-first cycle check
        if state.get(i) == 2:
            return
        if state.get(i) == 1:
            raise PlanError(f"derivations form a cycle through plan {i}")
        state[i] = 1
        for j in mp.derived[i] or ():
            visit(j)
        state[i] = 2

    for i in range(len(mp.plans)):
        visit(i)


def _validate_timelines(mp: MultiPlan) -> None:
    if mp.timelines is None:
        return
    seen: set[int] = set()
    for timeline in mp.timelines:
        if len(timeline.members) < 2:
            raise PlanError(f"a shared timeline needs two or more plans, got {timeline.members}")
        timeline.check(mp.plans)
        for i in timeline.members:
            if i in seen:
                raise PlanError(f"plan {i} is in two shared timelines")
            if mp.derived[i] is not None:
                raise PlanError(f"plan {i} is derived from its parts; it cannot share a timeline")
            seen.add(i)


__all__ = ["MultiPlan"]
