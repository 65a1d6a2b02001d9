"""Cost-based multi-query sharing optimizer (Sharon, ICDE 2018; A-Seq thesis ch. 4).

Pure Python: workload and statistics in, :class:`SharingPlan` out. See docs/sharing.md.

Entry points: :func:`optimize`, :func:`explain`, :func:`sharon_graph_dot`; inputs
:class:`Query`, :class:`Window`, :class:`Workload`, :class:`Statistics`
(:func:`query_from_plan` converts a compiled ``udafs.plan.Plan``).
"""

from __future__ import annotations

from sql_rewrites.sharing.benefit import CostModel
from sql_rewrites.sharing.candidates import Candidate, Occurrence, find_candidates
from sql_rewrites.sharing.errors import SharingError
from sql_rewrites.sharing.explain import Units, explain, sharon_graph_dot
from sql_rewrites.sharing.graph import SharonGraph, Vertex, build_graph, conflict_queries
from sql_rewrites.sharing.optimizer import optimize
from sql_rewrites.sharing.plan import (
    ClassReport,
    PreTreeNode,
    QueryPlan,
    Segment,
    SharedPattern,
    SharingPlan,
)
from sql_rewrites.sharing.statistics import Statistics
from sql_rewrites.sharing.workload import Query, Window, Workload, query_from_plan

__all__ = [
    "Units",
    "Candidate",
    "ClassReport",
    "CostModel",
    "Occurrence",
    "PreTreeNode",
    "Query",
    "QueryPlan",
    "Segment",
    "SharedPattern",
    "SharingError",
    "SharingPlan",
    "SharonGraph",
    "Statistics",
    "Vertex",
    "Window",
    "Workload",
    "build_graph",
    "conflict_queries",
    "explain",
    "find_candidates",
    "optimize",
    "query_from_plan",
    "sharon_graph_dot",
]
