"""The optimizer's input: queries of one multi-statement workload.

A :class:`Query` is what the optimizer needs of one MATCH_AGGREGATE statement: an id,
its positive pattern as a tuple of *event-type keys*, its window, and a *sharing group*
key. Two elements may share computation only when they test the very same thing, so
the caller (the SQL layer) must make a type key canonical: e.g. the normalised DEFINE
condition, not the user's alias. The group key stands for "same source, same PARTITION
BY, same ORDER BY" (and anything else that must agree, such as the count type); the
caller computes it. Queries share only within one group and one window (see
docs/sharing.md, "Windows").

Negation and Kleene plus are not modelled by the cost formulas. They are handled by
marking elements *not sharable*: no shared pattern and no PreTree prefix may contain
such an element. :func:`query_from_plan` marks every Kleene element and both elements
around a negated gap (the first / last element for a leading / trailing negation), so
shared segments never have a negation inside or at their cut points; and all elements
of a plan with a selection strategy other than skip-till-any-match or with cross-event
predicates.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from sql_rewrites.sharing.errors import SharingError
from udafs.plan import Strategy


@dataclass(frozen=True)
class Window:
    """``WITHIN within [SLIDE slide]`` in the ORDER BY column's units (None: absent)."""

    within: float | None = None
    slide: float | None = None

    def __post_init__(self) -> None:
        for name, value in (("within", self.within), ("slide", self.slide)):
            if value is not None and not value > 0:
                raise SharingError(f"window {name} must be positive, got {value!r}")
        if self.slide is not None and self.within is None:
            raise SharingError("a window with SLIDE needs WITHIN")

    def describe(self, length: Callable[[float], str] | None = None) -> str:
        """The window as text, e.g. ``WITHIN 600 SLIDE 60`` or ``no window``; ``length``
        formats the lengths (e.g. ``10 minutes``)."""
        show = length or _num
        if self.within is None:
            return "no window"
        text = f"WITHIN {show(self.within)}"
        return text + (f" SLIDE {show(self.slide)}" if self.slide is not None else "")


@dataclass(frozen=True)
class Query:
    """One statement as the optimizer sees it.

    Parameters
    ----------
    id : str
        Unique within the workload.
    pattern : tuple of str
        Event-type keys of the positive elements, in order (length >= 1).
    window : Window
        The statement's WITHIN / SLIDE.
    group : hashable
        Sharing-group key computed by the caller (same source, PARTITION BY, ORDER BY).
    sharable : tuple of bool, optional
        Per element; False keeps the element out of every shared pattern and PreTree
        prefix. Default: all True.
    """

    id: str
    pattern: tuple[str, ...]
    window: Window = field(default_factory=Window)
    group: Hashable = ""
    sharable: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", tuple(self.pattern))
        if not self.pattern:
            raise SharingError(f"query {self.id!r} has an empty pattern")
        if not self.sharable:
            object.__setattr__(self, "sharable", (True,) * len(self.pattern))
        object.__setattr__(self, "sharable", tuple(bool(s) for s in self.sharable))
        if len(self.sharable) != len(self.pattern):
            raise SharingError(f"query {self.id!r}: {len(self.sharable)} sharable flags for "
                               f"{len(self.pattern)} pattern elements")

    @property
    def length(self) -> int:
        """Number of positive elements."""
        return len(self.pattern)

    @property
    def sharing_class(self) -> tuple[Hashable, Window]:
        """Queries may share only with queries of the same class: (group, window)."""
        return (self.group, self.window)


@dataclass(frozen=True)
class Workload:
    """An ordered collection of queries with unique ids."""

    queries: tuple[Query, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "queries", tuple(self.queries))
        seen: set[str] = set()
        for q in self.queries:
            if q.id in seen:
                raise SharingError(f"duplicate query id {q.id!r} in the workload")
            seen.add(q.id)

    def classes(self) -> tuple[tuple[tuple[Hashable, Window], tuple[Query, ...]], ...]:
        """Sharing classes in order of first appearance, each with its queries in order."""
        out: dict[tuple[Hashable, Window], list[Query]] = {}
        for q in self.queries:
            out.setdefault(q.sharing_class, []).append(q)
        return tuple((k, tuple(v)) for k, v in out.items())


def workload(queries: Sequence[Query]) -> Workload:
    """Build a :class:`Workload` from any sequence of queries."""
    return Workload(tuple(queries))


def query_from_plan(query_id: str, plan: object, type_keys: Sequence[str] | None = None,
                    group: Hashable = "") -> Query:
    """The optimizer's view of a compiled :class:`udafs.plan.Plan`.

    Parameters
    ----------
    query_id : str
        Id for the query.
    plan : udafs.plan.Plan
        The compiled pattern plan.
    type_keys : sequence of str, optional
        Canonical key per plan symbol (e.g. the normalised DEFINE condition); defaults
        to the symbol names, which is right only under ``TYPE BY``.
    group : hashable
        Sharing-group key.

    Returns
    -------
    Query
        Kleene elements and the elements around negated gaps are marked not sharable;
        every element is, when the plan uses another selection strategy than
        skip-till-any-match or cross-event / iterator predicates, since the
        counts of a shared segment do not combine under those.
    """
    symbols = tuple(type_keys) if type_keys is not None else tuple(plan.symbols)  # type: ignore[attr-defined]
    elements = plan.elements  # type: ignore[attr-defined]
    negations = plan.negations  # type: ignore[attr-defined]
    n = len(elements)
    sharable = [not el.kleene for el in elements]
    strategy = getattr(plan, "strategy", None)
    if getattr(plan, "predicates", ()) or getattr(plan, "iterator_predicates", ()) or (
            strategy is not None and strategy is not Strategy.SKIP_TILL_ANY_MATCH):
        sharable = [False] * n  # Chop-Connect holds for skip-till-any-match without cross-event predicates
    for gap, mask in enumerate(negations):
        if mask:
            for i in (gap - 1, gap):
                if 0 <= i < n:
                    sharable[i] = False
    within = plan.within  # type: ignore[attr-defined]
    slide = plan.slide  # type: ignore[attr-defined]
    return Query(query_id, tuple(symbols[el.symbol] for el in elements), Window(within, slide), group,
                 tuple(sharable))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)
