"""The execution paths of a workload's sharing group: who stays in the shared pass.

A sharing group (:mod:`sql_rewrites.shared`) runs its members in one engine call per
partition key. A key too big for one worker's memory would sit in that one call for
every member at once, so the group's members take the same path choice a statement
alone takes (:func:`sql_rewrites.timesplit.choose_path`), from ONE statistics job over
the group's source (the members share source, PARTITION BY and ORDER BY, so the keys
and their sizes are the same for all):

* a member whose path is **grouped** stays in the shared pass (the pass then holds only
  such members);
* a member whose path is **time-split** or **streaming** leaves the pass
  and runs on its own, on that path, with the group's statistics (no second job);
* when fewer than two members stay, the one left runs alone grouped (a pass of one
  member shares nothing).

Why members leave whole instead of only their big keys (the pass over the small keys,
the big keys per member, UNION ALL): the big key alone is what costs — a key over the
split threshold holds millions of rows, next to which the second scan of the source a
member alone pays is small — and every path is already exact, so the rule adds no new
evaluation to check. Sharing the small keys of such a source would save that scan only.

Pure: plans and statistics in, a :class:`GroupPaths` out; ``sparkseq.workloads`` runs it
as given and ``explain_workload`` prints it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sql_rewrites.timesplit import (
    CHUNK_ROWS,
    SPLIT_ROWS,
    STREAM_ROWS,
    KeyStatistics,
    Path,
    PathChoice,
    choose_path,
    statistics_threshold,
)
from udafs.plan import Plan


@dataclass(frozen=True)
class GroupPaths:
    """Each member's path (by member index) and the members that run in the shared pass."""

    choices: tuple[PathChoice, ...]
    shared: tuple[int, ...]

    def is_shared(self, member: int) -> bool:
        """Whether member ``member`` reads its rows from the group's shared pass."""
        return member in self.shared

    def describe(self, member: int) -> str:
        """Member ``member``'s path as EXPLAIN WORKLOAD prints it."""
        choice = self.choices[member]
        where = "shared pass" if self.is_shared(member) else "on its own"
        return f"{choice.path.value}, {where} ({choice.reason})"


def group_threshold(plans: Sequence[Plan], split_rows: int = SPLIT_ROWS, stream_rows: int = STREAM_ROWS) -> int | None:
    """The row count above which a key changes some member's path (what the group's
    statistics job looks for); None when no count changes any member's path."""
    found = [t for t in (statistics_threshold(p, split_rows, stream_rows) for p in plans) if t is not None]
    return min(found) if found else None


def group_paths(plans: Sequence[Plan], big_keys: list[KeyStatistics] | None, forced: Path | None = None,
                split_rows: int = SPLIT_ROWS, chunk_rows: int = CHUNK_ROWS, stream_rows: int = STREAM_ROWS, *,
                ansi: bool = True, chunk_multiple: int = 1, unmeasured: str | None = None) -> GroupPaths:
    """The path of every member of a group (module docstring) from the statistics of the
    group's keys over :func:`group_threshold` rows (``big_keys``; None: none collected,
    none needed). ``forced`` (``sparkseq.path``) applies to every member: ``grouped``
    keeps them all in the shared pass, another path takes them all out of it (an error,
    as for a statement alone, when a member cannot take it). ``unmeasured``: why the
    statistics job failed (every member then stays grouped, as a statement alone does).

    Raises
    ------
    ValueError
        A forced path some member cannot take.
    """
    if unmeasured is not None and forced is None:
        choices = tuple(PathChoice(Path.GROUPED, f"statistics unavailable ({unmeasured}): grouped", split_rows,
                                   chunk_rows) for _ in plans)
    else:
        choices = tuple(choose_path(p, big_keys, forced, split_rows, chunk_rows, stream_rows, ansi=ansi,
                                    chunk_multiple=chunk_multiple) for p in plans)
    shared = tuple(i for i, c in enumerate(choices) if c.path is Path.GROUPED)
    return GroupPaths(choices, shared if len(shared) > 1 else ())


__all__ = ["GroupPaths", "group_paths", "group_threshold"]
