"""Concept hierarchies registered in a SparkSession (SEMANTICS section 6).

>>> import sparkseq
>>> spark = sparkseq.session()  # doctest: +SKIP
>>> sparkseq.register_hierarchy(spark, "sectors", [("DELL", "Computer"), ("IBM", "Computer"),
...                                                ("GS", "Finance"), ("JPM", "Finance")])
ConceptHierarchy(name='sectors',
                 parent_of={'DELL': 'Computer', 'IBM': 'Computer', 'GS': 'Finance', 'JPM': 'Finance'})
>>> spark.sql("SELECT * FROM VALUES ('DELL', 'Computer'), ('GS', 'Finance') AS t(company, sector)"
...           ).createOrReplaceTempView("company_sector")
>>> sparkseq.sql(spark, "CREATE OR REPLACE CONCEPT HIERARCHY sectors FROM company_sector")
DataFrame[]
>>> spark.sql("SELECT * FROM VALUES (1, 'DELL'), (2, 'GS'), (3, 'IBM') AS t(ts, company)"
...           ).createOrReplaceTempView("ticks")
>>> sparkseq.sql(spark, "SELECT n FROM ticks MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(Computer, Finance) "
...              "TYPE BY company HIERARCHY sectors MEASURES COUNT(*) AS n) AS m").collect()
[Row(n=1)]
>>> sparkseq.drop_hierarchy(spark, "sectors")

Each session (each :class:`~pyspark.sql.SparkSession` object) has its own hierarchies,
held in a weak-keyed registry, so they go away with the session. :func:`sparkseq.sql`,
:func:`sparkseq.explain` and :func:`sparkseq.statements.sql_api.rewrite` use them as the resolver
of ``HIERARCHY <name>``; a ``hierarchies=`` argument to those functions is consulted
first. Names are matched case-insensitively.

A source relation gives its pairs by columns named ``child`` and ``parent`` (any case)
when it has both, otherwise by its first two columns (child first). Values are
compared with the TYPE BY column as strings. Every hierarchy is validated when it is
registered: not empty, no NULL child or parent, one parent per child, no cycles.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Mapping
from typing import Union, cast

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from sparkseq.spark.catalog import PendingRelation, SessionSchemas
from sql_rewrites.errors import HierarchyError, SourcePosition, UnknownHierarchyError, UnknownTableError
from sql_rewrites.logical.hierarchy import ConceptHierarchy, HierarchyResolver, Pairs

_REGISTRY: weakref.WeakKeyDictionary[SparkSession, dict[str, ConceptHierarchy]] = weakref.WeakKeyDictionary()
PENDING = "pending"  # created by an earlier statement of a script from a relation that statement creates
DROPPED = "dropped"  # dropped by an earlier statement of a script
Entry = Union[ConceptHierarchy, str]  # a hierarchy, PENDING or DROPPED
Overlay = dict[str, Entry]  # case-folded name -> entry: what earlier statements of a script will do


def register_hierarchy(spark: SparkSession, name: str, source: str | Iterable[tuple[object, object]]
                       ) -> ConceptHierarchy:
    """Register (or replace) the concept hierarchy ``name`` in ``spark``.

    Parameters
    ----------
    spark : SparkSession
    name : str
        Used as ``HIERARCHY <name>`` (case-insensitive).
    source : str or iterable of (child, parent)
        A table or view of the session (columns ``child`` and ``parent``, else its
        first two columns), read once now; or the pairs themselves.

    Raises
    ------
    HierarchyError
        Empty, a NULL value, a child with two parents, or a cycle.
    UnknownTableError
        ``source`` names no table or view of the session.
    """
    pairs = load_pairs(spark, name, source) if isinstance(source, str) else source
    hierarchy = ConceptHierarchy.build(name, pairs)
    _REGISTRY.setdefault(spark, {})[name.casefold()] = hierarchy
    _bind_into_functions(spark)
    return hierarchy


def drop_hierarchy(spark: SparkSession, name: str, *, if_exists: bool = False) -> None:
    """Forget the hierarchy ``name`` of ``spark``.

    Raises
    ------
    UnknownHierarchyError
        When it does not exist and ``if_exists`` is false.
    """
    registered = _REGISTRY.get(spark, {})
    if name.casefold() not in registered:
        if if_exists:
            return
        known = _known(h.name for h in registered.values())
        raise UnknownHierarchyError(f"concept hierarchy {name} does not exist{known}")
    del registered[name.casefold()]
    _bind_into_functions(spark)


def snapshot(spark: SparkSession | None) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """The session's hierarchies as the ``seq_*`` functions carry them (see
    :data:`sql_rewrites.analysis.seq_functions.Hierarchies`)."""
    registered = _REGISTRY.get(spark, {}) if spark is not None else {}
    return tuple(sorted((key, tuple(sorted(h.parent_of.items()))) for key, h in registered.items()))


def _bind_into_functions(spark: SparkSession) -> None:
    from sparkseq.spark.registration import register_hierarchy_functions  # registration imports the functions

    register_hierarchy_functions(spark, snapshot(spark))


def registered_hierarchies(spark: SparkSession) -> dict[str, ConceptHierarchy]:
    """The hierarchies of ``spark`` by name (a copy)."""
    return {h.name: h for h in _REGISTRY.get(spark, {}).values()}


def sessions() -> list[SparkSession]:
    """The sessions with concept hierarchies registered (still alive)."""
    return [spark for spark in (ref() for ref in _REGISTRY.keyrefs()) if spark is not None]


def load_pairs(spark: SparkSession, name: str, source: str, where: SourcePosition | None = None
               ) -> list[tuple[object, object]]:
    """The ``(child, parent)`` rows of relation ``source`` (one Spark job)."""
    try:
        frame = spark.table(source)
    except AnalysisException:
        known = SessionSchemas(spark).known_relations()
        hint = f"; tables and views: {', '.join(known)}" if known else "; the session has no tables or views"
        raise UnknownTableError(f"concept hierarchy {name}: relation '{source}' is not a table or view of this "
                                f"Spark session{hint}", where) from None
    columns = frame.columns
    folded = {c.casefold(): c for c in columns}
    if "child" in folded and "parent" in folded:
        chosen = [folded["child"], folded["parent"]]
    elif len(columns) >= 2:
        chosen = columns[:2]
    else:
        raise HierarchyError(f"concept hierarchy {name}: relation '{source}' has {len(columns)} column; it needs "
                             "(child, parent) columns", where)
    return [(row[0], row[1]) for row in frame.select(*chosen).collect()]


def build_at(name: str, pairs: Iterable[tuple[object, object]], where: SourcePosition | None) -> ConceptHierarchy:
    """:meth:`ConceptHierarchy.build`, errors pointing at ``where``."""
    try:
        return ConceptHierarchy.build(name, pairs)
    except HierarchyError as exc:
        raise HierarchyError(exc.message, where) from None


class _Hierarchies(Mapping[str, Iterable[tuple[object, object]]]):
    """A resolver mapping: display name -> pairs; a PENDING entry raises :class:`PendingRelation`."""

    def __init__(self, entries: dict[str, tuple[str, object]]) -> None:
        self.entries = entries  # case-folded name -> (display name, hierarchy | pairs | PENDING)

    def __getitem__(self, key: str) -> Iterable[tuple[object, object]]:
        _, value = self.entries[key.casefold()]
        if value == PENDING:
            raise PendingRelation(key)
        return list(value.parent_of.items()) if isinstance(value, ConceptHierarchy) else cast(Pairs, value)

    def __iter__(self) -> Iterator[str]:
        return iter([display for display, _ in self.entries.values()])

    def __len__(self) -> int:
        return len(self.entries)


def resolver(spark: SparkSession | None, explicit: HierarchyResolver | None = None,
             overlay: Overlay | None = None) -> HierarchyResolver | None:
    """The resolver for ``HIERARCHY``: ``explicit`` first, then ``overlay``, then the session's."""
    entries: dict[str, tuple[str, object]] = {}
    if spark is not None:
        entries.update({k: (h.name, h) for k, h in _REGISTRY.get(spark, {}).items()})
    for key, entry in (overlay or {}).items():
        if entry == DROPPED:
            entries.pop(key, None)
        else:
            entries[key] = (entry.name if isinstance(entry, ConceptHierarchy) else key, entry)
    if explicit is None:
        return _Hierarchies(entries) if entries else None
    if isinstance(explicit, Mapping):
        entries.update({str(k).casefold(): (str(k), v) for k, v in explicit.items()})
        return _Hierarchies(entries)
    session = _Hierarchies(entries)
    call = explicit

    def chained(name: str) -> Iterable[tuple[object, object]] | None:
        found = call(name)
        if found is None and name.casefold() in session.entries:
            return session[name]
        return found

    return chained


def exists(spark: SparkSession | None, overlay: Overlay, name: str) -> bool:
    """Whether ``name`` exists in the session once the statements recorded in ``overlay`` ran."""
    entry = overlay.get(name.casefold())
    if entry is not None:
        return entry != DROPPED
    return spark is not None and name.casefold() in _REGISTRY.get(spark, {})


def known_names(spark: SparkSession | None, overlay: Overlay) -> str:
    """``"; known hierarchies: a, b"`` (or ``""``) after ``overlay``."""
    found = resolver(spark, None, overlay)
    return _known(list(found) if isinstance(found, Mapping) else [])


def _known(names: Iterable[str]) -> str:
    names = sorted(names)
    return f"; known hierarchies: {', '.join(names)}" if names else "; no concept hierarchies are registered"


__all__ = ["register_hierarchy", "drop_hierarchy", "registered_hierarchies", "resolver", "load_pairs"]
