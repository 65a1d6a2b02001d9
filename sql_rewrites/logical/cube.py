"""E-Cube: the cuboids of one query and how coarse ones follow from finer ones.

An E-Cube query (E-Cube paper; SEMANTICS section 6) asks for one pattern at
several abstraction levels at once. Its *cuboids* are patterns over one symbol
table:

* the **roll-up** form starts from a base pattern and, per chosen position, offers
  the concept roll-ups (the position's node, its parent, ... up to a chosen
  ancestor) and the pattern roll-up (the position deleted); the cuboids are every
  combination (:func:`rollup_cuboids`), the base first;
* the **list** form names the cuboids one by one (workloads 7 and 8 of the paper).

:func:`add_derivations` then finds the cuboids whose matches are the disjoint union
of other cuboids' matches: when a positive, non-Kleene position holds a concept
``N`` and, for every child ``c`` of ``N``, the same pattern with ``c`` there is also a
cuboid, then every match of the coarse pattern binds that position to a row of
exactly one child's subtree, or to a row whose type is ``N`` itself (each row has one
type value). So its measures combine exactly from those cuboids plus one hidden
*self* cuboid (the position matching type ``N`` only), window by window, with
negation anywhere else, WITHIN and SLIDE alike. Negated, Kleene, quantified and optional
positions are never split this way (a negation forbids the union; a set of rows may mix
children; a match binding no row at an optional position would be counted once per child).

Pure: names in, names out; :mod:`sql_rewrites.analysis.analyzer` turns cuboids into plans.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from sql_rewrites.logical.hierarchy import ConceptHierarchy
from sql_rewrites.syntax.literals import string_sql
from udafs.plan import Element

#: More cuboids than this make the statement fail with a clear message.
MAX_CUBOIDS = 256


@dataclass(frozen=True)
class CubeElement:
    """One element of a cuboid's pattern.

    ``key`` identifies the symbol (:func:`sql_rewrites.clauses.symbols.symbol_key` of the
    written name; for a rolled-up position, of the ancestor's name); ``node`` is set
    when the symbol is a node of the hierarchy (``name`` is then the node value);
    ``exact`` marks the hidden self cuboids' "type is exactly this node" symbol;
    ``origin`` is the base position the element comes from (roll-up form).
    """

    name: str
    key: tuple[bool, str]
    negated: bool = False
    kleene: bool = False
    node: bool = False
    exact: bool = False
    origin: int | None = None
    quoted: bool = False
    min_rows: int = 1  # as udafs.plan.Element: 0 for X? and X*
    max_rows: int | None = None  # as udafs.plan.Element: the bound of X{n,m} (Kleene only)

    @property
    def rows(self) -> tuple[bool, int, int | None]:
        """How many rows the element binds, as the plan's element holds it (kleene, min_rows, max_rows)."""
        return self.kleene, self.min_rows, self.max_rows

    @property
    def symbol_id(self) -> tuple[bool, tuple[bool, str]]:
        """Identity in the cube's symbol table (an exact-type symbol differs from the node)."""
        return self.exact, self.key

    def text(self) -> str:
        """The element as written in a pattern string."""
        name = string_sql(self.name) if self.quoted else self.name
        name = f"={name}" if self.exact else name
        return ("!" if self.negated else "") + Element(0, *self.rows).describe(name)


@dataclass(frozen=True)
class Cuboid:
    """One pattern of the cube: its elements, and how its results are obtained."""

    elements: tuple[CubeElement, ...]
    hidden: bool = False
    derived_from: tuple[int, ...] | None = None

    @property
    def identity(self) -> tuple:
        """Equal for cuboids with the same pattern."""
        return tuple((e.symbol_id, e.negated, e.rows) for e in self.elements)

    @property
    def lineage(self) -> tuple:
        """The pattern and the base position of every element: equal lineage means equal
        measures too (a measure follows base positions)."""
        return tuple((e.symbol_id, e.negated, e.rows, e.origin) for e in self.elements)

    def text(self) -> str:
        """A readable pattern string, e.g. ``SEQ(DELL, !Education, Finance)``."""
        return f"SEQ({', '.join(e.text() for e in self.elements)})"

    def levels(self, hierarchy: ConceptHierarchy | None) -> tuple[int | None, ...]:
        """Per element, its node's depth in the hierarchy (root 0); None for other symbols."""
        return tuple(hierarchy.depth(e.name) if e.node and hierarchy is not None else None
                     for e in self.elements)

    @property
    def has_positive(self) -> bool:
        """True when some element is neither negated nor optional (a cuboid matches something)."""
        return any(not e.negated and e.min_rows > 0 for e in self.elements)


@dataclass(frozen=True)
class RollupChoice:
    """What a base position may become: ``concept_to`` (ancestor to roll up to, or
    ``""`` for the root) and/or ``delete`` (pattern roll-up)."""

    concept_to: str | None = None
    delete: bool = False


@dataclass(frozen=True)
class CubeSpec:
    """The cuboids of an E-Cube query, aligned with ``plan.plans`` of its MultiPlan."""

    cuboids: tuple[Cuboid, ...]
    texts: tuple[str, ...]
    levels: tuple[tuple[int | None, ...], ...]
    measure_positions: tuple[tuple[tuple[int, ...], ...], ...]  # per cuboid, per measure
    measure_symbols: tuple[str | None, ...] = ()  # per measure, the symbol it names

    @property
    def reported(self) -> tuple[int, ...]:
        """Indices of the cuboids that produce output rows."""
        return tuple(i for i, c in enumerate(self.cuboids) if not c.hidden)


def rollup_cuboids(base: Sequence[CubeElement], choices: Mapping[int, RollupChoice],
                   hierarchy: ConceptHierarchy | None) -> list[Cuboid]:
    """Every combination of the choices, the base pattern first.

    A cuboid without a required positive element is left out (it matches nothing, or
    would bind no row); two
    combinations giving the same pattern are kept once (the first, in position order).

    Raises
    ------
    ValueError
        A concept roll-up of a position that is not a hierarchy node, or to a node
        that is not its ancestor (callers turn it into a positioned error).
    """
    options: list[list[CubeElement | None]] = []
    for i, element in enumerate(base):
        element = replace(element, origin=i)
        choice = choices.get(i, RollupChoice())
        here: list[CubeElement | None] = [element]
        if choice.concept_to is not None:
            here += [_renamed(element, a) for a in concept_chain(element, choice.concept_to, hierarchy)]
        if choice.delete:
            here.append(None)
        options.append(here)
    out: list[Cuboid] = []
    seen: set[tuple] = set()
    for combo in itertools.product(*options):
        cuboid = Cuboid(tuple(e for e in combo if e is not None))
        if cuboid.has_positive and cuboid.identity not in seen:
            seen.add(cuboid.identity)
            out.append(cuboid)
    return out


def concept_chain(element: CubeElement, to: str, hierarchy: ConceptHierarchy | None) -> tuple[str, ...]:
    """The ancestors a position rolls up through, nearest first, ending at ``to``
    (``""``: at the root)."""
    if hierarchy is None or not element.node:
        raise ValueError(f"{element.name} is not a node of a concept hierarchy, so it cannot be rolled up; "
                         "CONCEPT ROLLUP needs TYPE BY <column> HIERARCHY <name> and a symbol that is a node")
    up = hierarchy.ancestors(element.name)
    if not to:
        if not up:
            raise ValueError(f"{element.name} is a root of hierarchy {hierarchy.name}: it has nothing to roll up to")
        return up
    if to not in up:
        above = ", ".join(up) if up else "none: it is a root"
        raise ValueError(f"{to!r} is not an ancestor of {element.name} in hierarchy {hierarchy.name} "
                         f"(its ancestors: {above})")
    return up[: up.index(to) + 1]


def _renamed(element: CubeElement, node: str) -> CubeElement:
    return replace(element, name=node, key=(element.key[0], node if element.key[0] else node.casefold()),
                   node=True)


def add_derivations(cuboids: Sequence[Cuboid], hierarchy: ConceptHierarchy | None,
                    consistent: Callable[[Cuboid, Sequence[Cuboid]], bool] = lambda c, parts: True,
                    ) -> list[Cuboid]:
    """The cuboids with ``derived_from`` set where a coarse one follows exactly from
    finer ones (module docstring), plus the hidden self cuboids that needs.

    ``consistent(coarse, parts)`` may veto a derivation (the analyser uses it to
    check that every measure lands on the same positions in all of them).
    """
    out = list(cuboids)
    if hierarchy is None:
        return out
    index = {c.lineage: i for i, c in enumerate(out)}
    for i, cuboid in enumerate(list(out)):
        for p, element in enumerate(cuboid.elements):
            if element.negated or element.rows != (False, 1, None) or not element.node or element.exact:
                continue
            children = hierarchy.children(element.name)
            finer = [_at(cuboid, p, _renamed(element, c)) for c in children]
            if not children or any(f.lineage not in index for f in finer):
                continue
            self_cuboid = Cuboid(_at(cuboid, p, replace(element, exact=True)).elements, hidden=True)
            if not consistent(cuboid, [*finer, self_cuboid]):
                continue
            if self_cuboid.lineage not in index:
                index[self_cuboid.lineage] = len(out)
                out.append(self_cuboid)
            parts = tuple(index[f.lineage] for f in finer) + (index[self_cuboid.lineage],)
            out[i] = replace(out[i], derived_from=parts)
            break
    return out


def _at(cuboid: Cuboid, position: int, element: CubeElement) -> Cuboid:
    elements = list(cuboid.elements)
    elements[position] = element
    return Cuboid(tuple(elements))


__all__ = ["CubeElement", "CubeSpec", "Cuboid", "RollupChoice", "rollup_cuboids", "add_derivations", "concept_chain",
           "MAX_CUBOIDS"]
