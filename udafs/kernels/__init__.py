"""Exact aggregates over all event-sequence pattern matches, in pure numpy.

The public contract is :func:`evaluate_group` returning a :class:`GroupResult`;
``docs/engine.md`` explains the algorithms. Nothing here imports pyspark.
"""

from __future__ import annotations

from udafs.kernels.evaluate import GroupResult, evaluate_group, evaluate_rows

__all__ = ["GroupResult", "evaluate_group", "evaluate_rows"]
