"""A workload group's paths without Spark: who leaves the shared pass, and why."""

from __future__ import annotations

import pytest

from sql_rewrites.planning.timesplit import SPLIT_ROWS, STREAM_ROWS, KeyStatistics, Path, statistics_threshold
from sql_rewrites.planning.workload_paths import group_paths, group_threshold
from tests.compiler.test_sql_timesplit import BIG, NO_WINDOW, PLAN

HUGE = KeyStatistics(rows=STREAM_ROWS + 1, first=0, last=10_000)


def test_without_big_keys_every_member_shares_the_pass() -> None:
    paths = group_paths([PLAN, NO_WINDOW, PLAN], [])
    assert paths.shared == (0, 1, 2)
    assert all(c.path is Path.GROUPED for c in paths.choices)
    assert paths.describe(1).startswith("grouped, shared pass (")


def test_a_big_key_takes_splittable_members_out_of_the_pass() -> None:
    paths = group_paths([PLAN, NO_WINDOW, PLAN, NO_WINDOW], [BIG])
    assert [c.path for c in paths.choices] == [Path.TIME_SPLIT, Path.GROUPED, Path.TIME_SPLIT, Path.GROUPED]
    assert paths.shared == (1, 3)
    assert paths.describe(0).startswith("time-split, on its own (1 partition key(s) over")
    assert paths.choices[0].split_keys is not None  # chunks from the group's one statistics job


def test_a_huge_key_streams_what_cannot_be_split_and_one_member_left_runs_alone() -> None:
    paths = group_paths([PLAN, NO_WINDOW, NO_WINDOW], [HUGE])
    assert [c.path for c in paths.choices] == [Path.TIME_SPLIT, Path.STREAMING, Path.STREAMING]
    assert paths.shared == ()
    paths = group_paths([PLAN, NO_WINDOW], [BIG])  # one grouped member: a pass of one shares nothing
    assert paths.shared == () and paths.choices[1].path is Path.GROUPED
    assert paths.describe(1).startswith("grouped, on its own")


def test_a_forced_path_applies_to_every_member() -> None:
    paths = group_paths([PLAN, NO_WINDOW], [BIG], Path.GROUPED)
    assert paths.shared == (0, 1) and "forced by sparkseq.path" in paths.describe(0)
    assert group_paths([PLAN, PLAN], None, Path.TIME_SPLIT).shared == ()
    with pytest.raises(ValueError, match="no WITHIN"):
        group_paths([PLAN, NO_WINDOW], None, Path.TIME_SPLIT)


def test_failed_statistics_keep_every_member_grouped() -> None:
    paths = group_paths([PLAN, NO_WINDOW], None, unmeasured="AnalysisException")
    assert paths.shared == (0, 1) and "statistics unavailable (AnalysisException)" in paths.describe(0)


def test_the_group_threshold_is_the_smallest_that_changes_a_member() -> None:
    assert group_threshold([NO_WINDOW]) == statistics_threshold(NO_WINDOW) == STREAM_ROWS
    assert group_threshold([NO_WINDOW, PLAN]) == SPLIT_ROWS
    assert group_threshold([]) is None
