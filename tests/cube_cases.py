"""Random E-Cube statements over random concept hierarchies, shared by the pure and Spark tests.

A case is a hierarchy, a stream of typed events, and an E-Cube MATCH_AGGREGATE text.
:func:`expected_cuboids` enumerates the cuboids the statement asks for independently
of the compiler (plain name products), and :func:`masks` evaluates each symbol's
condition (a type ``IN (...)`` or ``= ...``) on the events, so the tests can check
the compiler's cuboids and the engine's numbers against the brute-force oracle.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import strategies as st
from sqlglot import exp

from sql_rewrites.logical.hierarchy import ConceptHierarchy

LEAVES = ("a", "b", "c", "d")
INNER = ("X", "Y", "R")


@dataclass(frozen=True)
class CubeCase:
    """One generated statement and its data."""

    pairs: tuple[tuple[str, str], ...]
    ts: tuple[int, ...]
    types: tuple[str, ...]
    values: tuple[int | None, ...]
    base: tuple[tuple[str, bool, bool], ...]  # (name, negated, kleene); empty in the list form
    rollups: tuple[tuple[int, str | None, bool], ...]  # (position, concept_to or None, delete)
    listed: tuple[tuple[tuple[str, bool, bool], ...], ...]  # PATTERNS form
    within: int | None
    slide: int | None
    measures: tuple[str, ...]

    @property
    def hierarchy(self) -> ConceptHierarchy:
        return ConceptHierarchy.build("h", self.pairs)

    def sql(self, source: str = "ev") -> str:
        def pattern(elements: tuple[tuple[str, bool, bool], ...]) -> str:
            return "SEQ(" + ", ".join(("!" if n else "") + s + ("+" if k else "") for s, n, k in elements) + ")"

        if self.listed:
            shape = "PATTERNS (" + ", ".join(pattern(p) for p in self.listed) + ")"
        else:
            items = []
            for position, to, delete in self.rollups:
                if to is not None:
                    items.append(f"CONCEPT ROLLUP {position + 1}" + (f" TO {to}" if to else ""))
                if delete:
                    items.append(f"PATTERN ROLLUP {position + 1}")
            shape = f"PATTERN {pattern(self.base)} CUBE ({', '.join(items)})"
        window = "" if self.within is None else f" WITHIN {self.within}"
        window += "" if self.slide is None else f" SLIDE {self.slide}"
        return (f"SELECT * FROM {source} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts {shape} "
                f"TYPE BY tp HIERARCHY h MEASURES {', '.join(self.measures)}{window}) AS m")


def expected_cuboids(case: CubeCase) -> set[str]:
    """The cuboid texts the statement asks for, by plain enumeration."""
    def text(elements: list[tuple[str, bool, bool]]) -> str:
        return "SEQ(" + ", ".join(("!" if n else "") + s + ("+" if k else "") for s, n, k in elements) + ")"

    if case.listed:
        return {text(list(p)) for p in case.listed}
    h = case.hierarchy
    options = []
    for i, (name, negated, kleene) in enumerate(case.base):
        here: list[tuple[str, bool, bool] | None] = [(name, negated, kleene)]
        for position, to, delete in case.rollups:
            if position != i:
                continue
            if to is not None:
                up = h.ancestors(name)
                chain = up if not to else up[: up.index(to) + 1]
                here += [(a, negated, kleene) for a in chain]
            if delete:
                here.append(None)
        options.append(here)
    out = set()
    for combo in itertools.product(*options):
        kept = [e for e in combo if e is not None]
        if any(not n for _, n, _ in kept):
            out.add(text(kept))
    return out


def masks(symbols: tuple, types: tuple[str, ...]) -> list[int]:
    """Per event, the bitmask of the symbols whose condition (type IN/= literals) holds."""
    out = []
    for t in types:
        m = 0
        for s in symbols:
            cond = s.condition
            values = [v.name for v in cond.expressions] if isinstance(cond, exp.In) else [cond.expression.name]
            if t in values:
                m |= 1 << s.index
        out.append(m)
    return out


@st.composite
def hierarchies(draw: st.DrawFn) -> tuple[tuple[str, str], ...]:
    """A forest: X and Y under R (or roots themselves), every leaf under X, Y or R."""
    pairs = [(inner, "R") for inner in ("X", "Y") if draw(st.booleans())]
    pairs += [(leaf, draw(st.sampled_from(INNER))) for leaf in LEAVES]
    return tuple(pairs)


@st.composite
def cube_cases(draw: st.DrawFn, listed: bool = False, max_events: int = 8) -> CubeCase:
    """A random E-Cube statement (roll-up or list form) with data."""
    pairs = draw(hierarchies())
    h = ConceptHierarchy.build("h", pairs)
    n = draw(st.integers(0, max_events))
    ts = tuple(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)))
    types = tuple(draw(st.lists(st.sampled_from(LEAVES + INNER), min_size=n, max_size=n)))
    values = tuple(draw(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=n, max_size=n)))
    within = draw(st.one_of(st.none(), st.integers(1, 6)))
    # SLIDE <= WITHIN
    slide = draw(st.one_of(st.none(), st.integers(1, min(4, within)))) if within is not None else None
    element = st.tuples(st.sampled_from(sorted(h.nodes)), st.booleans(), st.booleans())
    length = draw(st.integers(1, 3))
    base = [(s, neg and draw(st.integers(0, 2)) == 0, kl and not neg and draw(st.integers(0, 3)) == 0)
            for s, neg, kl in draw(st.lists(element, min_size=length, max_size=length))]
    if all(neg for _, neg, _ in base):
        base[0] = (base[0][0], False, base[0][2])
    if within is None:  # no edge negation without WITHIN in the base
        while base and base[0][1]:
            base.pop(0)
        while base and base[-1][1]:
            base.pop()
    base_t = tuple(base)
    names = [s for s, _, _ in base_t]
    positive = [s for s, neg, _ in base_t if not neg and names.count(s) == 1]  # see test_cube errors
    measures = ["COUNT(*) AS n"]
    if positive and draw(st.booleans()):
        x = draw(st.sampled_from(positive))
        measures += [f"COUNT({x}) AS c", f"SUM({x}.v) AS s", f"MIN({x}.v) AS lo", f"AVG({x}.v) AS av"]
    rollups: list[tuple[int, str | None, bool]] = []
    patterns: tuple = ()
    if listed:
        # a coarse pattern with all of its position's children: derivations kick in
        coarse = draw(st.sampled_from([node for node in INNER if h.children(node)]))
        kids = h.children(coarse)
        tail = tuple(e for e in base_t if not e[1] or within is not None)[:2]
        patterns = ((coarse, False, False), *tail), *(((k, False, False), *tail) for k in kids)
        patterns = tuple(dict.fromkeys(patterns))
        base_t = ()
        measured = [s for s, neg, _ in tail if not neg]
        measures = ["COUNT(*) AS n"]
        if measured and draw(st.booleans()):
            x = draw(st.sampled_from(measured))
            measures += [f"COUNT({x}) AS c", f"SUM({x}.v) AS s", f"MAX({x}.v) AS hi", f"AVG({x}.v) AS av"]
    else:
        for i, (name, _, _) in enumerate(base_t):
            up = h.ancestors(name)
            to = None
            if up and draw(st.booleans()):
                to = draw(st.sampled_from(("", *up)))
            rollups.append((i, to, draw(st.integers(0, 3)) == 0))
        if rollups and not any(to is not None or delete for _, to, delete in rollups):
            rollups[-1] = (rollups[-1][0], None, True)  # CUBE () is a parse error
    return CubeCase(pairs, ts, types, values, base_t, tuple(rollups), patterns, within, slide, tuple(measures))
