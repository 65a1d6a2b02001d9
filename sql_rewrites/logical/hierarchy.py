"""Concept hierarchies for ``HIERARCHY <name>`` (SEMANTICS section 6).

A hierarchy is a set of ``(child, parent)`` pairs over type values. The caller passes
a *hierarchy resolver*: a mapping ``{name: [(child, parent), ...]}`` or a callable
``resolver(name) -> pairs | None``. A symbol naming node ``N`` then matches every row
whose TYPE BY value is ``N`` or a descendant of ``N``.

Names of hierarchies are matched case-insensitively; node values exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Union

from sql_rewrites.errors import HierarchyError, SourcePosition, UnknownHierarchyError

Pairs = Iterable[tuple[object, object]]  # (child, parent) values, read as text
HierarchyResolver = Union[Mapping[str, Pairs], Callable[[str], Union[Pairs, None]]]


@dataclass(frozen=True)
class ConceptHierarchy:
    """A validated forest: ``parent_of`` maps each child to its one parent."""

    name: str
    parent_of: Mapping[str, str]

    @staticmethod
    def build(name: str, pairs: Pairs) -> ConceptHierarchy:
        """Validate ``(child, parent)`` pairs: not empty, no NULLs, one parent per child, no cycles.

        Raises
        ------
        HierarchyError
        """
        parent_of: dict[str, str] = {}
        for pair in pairs:
            child, parent = _pair(name, pair)
            if parent_of.get(child, parent) != parent:
                raise HierarchyError(
                    f"hierarchy {name}: {child!r} has two parents, {parent_of[child]!r} and {parent!r}; "
                    "each node has at most one parent"
                )
            parent_of[child] = parent
        if not parent_of:
            raise HierarchyError(f"hierarchy {name} is empty: it needs at least one (child, parent) pair")
        hierarchy = ConceptHierarchy(name, parent_of)
        hierarchy._check_acyclic()
        return hierarchy

    def _check_acyclic(self) -> None:
        for start in self.parent_of:
            seen = [start]
            node = start
            while node in self.parent_of:
                node = self.parent_of[node]
                if node in seen:
                    cycle = " -> ".join([*seen[seen.index(node):], node])
                    raise HierarchyError(f"hierarchy {self.name} has a cycle: {cycle}")
                seen.append(node)

    @property
    def nodes(self) -> frozenset[str]:
        """Every node named as a child or a parent."""
        return frozenset(self.parent_of) | frozenset(self.parent_of.values())

    def descendants_or_self(self, node: str, where: SourcePosition | None = None) -> tuple[str, ...]:
        """``node`` and every node below it, sorted (``node`` first).

        Raises
        ------
        HierarchyError
            When ``node`` is not in the hierarchy.
        """
        if node not in self.nodes:
            raise HierarchyError(f"{node!r} is not a node of hierarchy {self.name}", where)
        below = sorted(child for child in self.parent_of if self._is_below(child, node))
        return (node, *below)

    def ancestors(self, node: str) -> tuple[str, ...]:
        """The parent of ``node``, its parent, ... up to the root (empty for a root)."""
        chain = []
        while node in self.parent_of:
            node = self.parent_of[node]
            chain.append(node)
        return tuple(chain)

    def children(self, node: str) -> tuple[str, ...]:
        """The nodes whose parent is ``node``, sorted."""
        return tuple(sorted(child for child, parent in self.parent_of.items() if parent == node))

    def depth(self, node: str) -> int:
        """The level of ``node``: 0 for a root, 1 for its children, ..."""
        return len(self.ancestors(node))

    def _is_below(self, child: str, ancestor: str) -> bool:
        node = child
        while node in self.parent_of:
            node = self.parent_of[node]
            if node == ancestor:
                return True
        return False


def _pair(name: str, pair: object) -> tuple[str, str]:
    if isinstance(pair, (str, bytes)) or not isinstance(pair, Collection) or len(pair) != 2:
        raise HierarchyError(f"hierarchy {name}: {pair!r} is not a (child, parent) pair")
    child, parent = pair
    if child is None or parent is None:
        which = "child" if child is None else "parent"
        raise HierarchyError(f"hierarchy {name}: the pair ({child!r}, {parent!r}) has a NULL {which}; "
                             "every child and parent must be a value")
    return str(child), str(parent)


def resolve_hierarchy(
    resolver: HierarchyResolver | None, name: str, where: SourcePosition | None = None
) -> ConceptHierarchy:
    """Look ``name`` up and validate it.

    Raises
    ------
    UnknownHierarchyError
        No resolver was given, or it does not know ``name``.
    """
    if resolver is None:
        raise UnknownHierarchyError(
            f"HIERARCHY {name}: no concept hierarchies are registered in this session; register "
            "one (pairs of child, parent type values) before using HIERARCHY: CREATE CONCEPT HIERARCHY "
            f"{name} FROM <table of child, parent>, or sparkseq.register_hierarchy",
            where,
        )
    if isinstance(resolver, Mapping):
        folded = {str(k).casefold(): k for k in resolver}
        key = folded.get(name.casefold())
        pairs = None if key is None else resolver[key]
        known = f"; known hierarchies: {', '.join(sorted(map(str, resolver)))}" if resolver else ""
    else:
        pairs, known = resolver(name), ""
    if pairs is None:
        raise UnknownHierarchyError(f"unknown hierarchy {name}{known}", where)
    return ConceptHierarchy.build(name, pairs)
