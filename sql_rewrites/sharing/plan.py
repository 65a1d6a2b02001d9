"""The optimizer's output: a :class:`SharingPlan` and the report EXPLAIN renders."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from sql_rewrites.sharing.candidates import Candidate, Occurrence
from sql_rewrites.sharing.graph import SharonGraph
from sql_rewrites.sharing.pruning import Reduction
from sql_rewrites.sharing.workload import Window


@dataclass(frozen=True)
class SharedPattern:
    """A pattern computed once and read by several queries.

    ``occurrences`` gives each query and the pattern's 0-based start in it.
    """

    pattern: tuple[str, ...]
    occurrences: tuple[Occurrence, ...]
    benefit: float

    @property
    def queries(self) -> tuple[str, ...]:
        """Ids of the queries reading this pattern."""
        return tuple(o.query for o in self.occurrences)


@dataclass(frozen=True)
class Segment:
    """Elements ``[start, end)`` of a query: read from ``plan.shared[shared]``, or own."""

    start: int
    end: int
    pattern: tuple[str, ...]
    shared: int | None = None


@dataclass(frozen=True)
class QueryPlan:
    """How one query is evaluated: its segments in order (shared and own)."""

    query: str
    pattern: tuple[str, ...]
    segments: tuple[Segment, ...]

    @property
    def is_shared(self) -> bool:
        """True when the query reads at least one shared pattern."""
        return any(s.shared is not None for s in self.segments)


@dataclass(frozen=True)
class PreTreeNode:
    """Counts of a prefix maintained once for several queries (A-Seq PreTree).

    ``depth`` is the 0-based element the node counts; the node extends the shared
    pattern ``plan.shared[root]`` (which starts these queries) or, with ``root`` None,
    the queries' own start. ``saving`` is the estimated cost it saves.
    """

    prefix: tuple[str, ...]
    depth: int
    root: int | None
    queries: tuple[str, ...]
    saving: float


@dataclass(frozen=True)
class ClassReport:
    """What the optimizer saw and decided for one sharing class (for EXPLAIN).

    Vertex indices refer to ``graph.vertices``; ``candidates`` are Sharon's full
    candidates ``(p, Q_p)`` with their ``BValue`` in ``full_benefits``.
    ``score_bound`` is an upper bound on the best score over the options kept (equal
    to ``score`` when the plan finder finished).
    """

    group: Hashable
    window: Window
    queries: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    full_benefits: tuple[float, ...]
    non_beneficial: tuple[Candidate, ...]
    options_exhaustive: bool
    subsets_considered: int
    graph: SharonGraph
    reduction: Reduction
    chosen: tuple[int, ...]
    method: str
    score_bound: float
    cost_unshared: float
    cost: float
    score: float
    pretree_saving: float


@dataclass(frozen=True)
class SharingPlan:
    """The plan the executor runs.

    Attributes
    ----------
    shared : tuple of SharedPattern
        Patterns computed once, with the queries reading them and their positions.
    queries : tuple of QueryPlan
        Per query (workload order), its decomposition into shared and own segments.
    pretree : tuple of PreTreeNode
        Prefix counts shared for free (no conflict with ``shared``).
    cost_unshared, cost : float
        Estimated cost of evaluating every query alone, and of this plan
        (``cost <= cost_unshared`` always).
    score : float
        Sum of the benefits of ``shared`` (Sharon eq. 9).
    score_bound : float
        Upper bound on the best score over the options considered (= ``score`` when
        ``method`` is exact): how far a budget-limited plan can be from optimal.
    pretree_saving : float
        Estimated saving of ``pretree``.
    method : str
        ``"exact"`` (branch and bound finished in every class), ``"greedy"`` (the
        time budget ran out and some class kept GWMIN's plan improved by local swaps),
        ``"greedy+search"`` (the budget ran out but branch and bound had improved on
        the greedy plan), or ``"none"`` (no beneficial candidate). With several classes
        the weakest applies.
    exact : bool
        True when the plan is optimal over the whole candidate space (``method`` is
        exact and every candidate's query-subset options were enumerated).
    classes : tuple of ClassReport
        Per sharing class: candidates, benefits, conflicts, pruned sets (EXPLAIN).
    timings : tuple of (phase, seconds)
        Wall time per optimizer phase (excluded from equality).
    """

    shared: tuple[SharedPattern, ...]
    queries: tuple[QueryPlan, ...]
    pretree: tuple[PreTreeNode, ...]
    cost_unshared: float
    cost: float
    score: float
    score_bound: float
    pretree_saving: float
    method: str
    exact: bool
    classes: tuple[ClassReport, ...]
    timings: tuple[tuple[str, float], ...] = field(default=(), compare=False)

