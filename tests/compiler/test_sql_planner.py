"""The planner without Spark: each statement's, cuboid's and sharing group member's path."""

from __future__ import annotations

import pytest

from sql_rewrites.generation.jvm_path import JVM_REASON
from sql_rewrites.planning.planner import (
    JVM_COUNT_ROWS,
    MIN_ROW_BYTES,
    STREAM_ROWS,
    KeyStatistics,
    Path,
    PathChoice,
    PlanSettings,
    SourceSize,
    big_key_path,
    group_path,
    group_statistics,
    group_threshold,
    key_threshold,
    measured_path,
    sized_path,
    statement_path,
    statistics_threshold,
)
from sql_rewrites.planning.timesplit import CHUNK_ROWS, MAX_SPLIT_LITERALS, MIN_CHUNKS, SPLIT_ROWS, SplitKey
from udafs.plan import Element, Measure, MeasureKind, Plan, Strategy, ValueType

#: A MAX measure under WITHIN keeps these plans off the JVM path, whose choice is tested below.
#: Two value columns keep these plans off the JVM path (it reads one measure column).
KERNEL_ONLY = dict(measures=(Measure(MeasureKind.MAX, 1, 0, "x"), Measure(MeasureKind.MIN, 1, 1, "y")),
                   columns=(ValueType.INT, ValueType.INT))
PLAN = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=10, **KERNEL_ONLY)
NO_WINDOW = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), **KERNEL_ONLY)
COUNTED = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=10)
#: JVM shapes: counts without a window (not splittable: its big keys stream), and a SUM (a value column).
COUNTED_OPEN = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0))
SUMMED = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=10,
              measures=(Measure(MeasureKind.SUM, 1, 0, "s"),), columns=(ValueType.INT,))
BIG = KeyStatistics(rows=SPLIT_ROWS + 1, first=0, last=10_000)
HUGE = KeyStatistics(rows=STREAM_ROWS + 1, first=0, last=10_000)
CONTIGUOUS = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=10,
                  strategy=Strategy.STRICT_CONTIGUITY)
AUTO = PlanSettings()
#: A session whose JVM path loads, and one where it cannot.
SESSION = PlanSettings(session=True)
NO_JVM = PlanSettings(session=True, jvm_missing="no jar")
SMALL = PlanSettings(split_rows=50, chunk_rows=40, stream_rows=100, session=True)


def forced(path: Path, **kw: object) -> PlanSettings:
    return PlanSettings(forced=path, **kw)  # type: ignore[arg-type]


def test_no_big_key_stays_grouped() -> None:
    choice = measured_path(PLAN, [], AUTO)
    assert choice.path is Path.GROUPED and f"{SPLIT_ROWS:,}" in choice.reason


def test_a_big_key_is_split() -> None:
    choice = measured_path(PLAN, [BIG, KeyStatistics(SPLIT_ROWS + 5, 0, 100_000)], AUTO)
    assert choice.path is Path.TIME_SPLIT
    assert "2 partition key(s)" in choice.reason and f"{SPLIT_ROWS + 5:,}" in choice.reason
    assert (choice.split_rows, choice.chunk_rows) == (SPLIT_ROWS, CHUNK_ROWS)


def test_a_window_too_long_for_the_span_stays_grouped() -> None:
    short = KeyStatistics(SPLIT_ROWS + 1, 0, MIN_CHUNKS * 2 * PLAN.within - 1)
    assert measured_path(PLAN, [short], AUTO).path is Path.GROUPED


def test_unsplittable_plans_stay_grouped_and_cannot_be_forced() -> None:
    choice = measured_path(NO_WINDOW, [BIG], AUTO)
    assert choice.path is Path.GROUPED and "no WITHIN" in choice.reason
    with pytest.raises(ValueError, match="no WITHIN"):
        measured_path(NO_WINDOW, None, forced(Path.TIME_SPLIT))
    assert measured_path(PLAN, None, forced(Path.TIME_SPLIT)).path is Path.TIME_SPLIT
    assert measured_path(PLAN, [BIG], forced(Path.GROUPED)).path is Path.GROUPED


def test_a_job_only_when_a_big_key_is_possible() -> None:
    def job(plan: Plan, size_bytes: int | None, rows: int | None = None) -> bool:
        return group_statistics([plan], AUTO, SourceSize(size_bytes, rows)) is not None

    assert job(PLAN, None)
    assert not job(PLAN, SPLIT_ROWS * MIN_ROW_BYTES)
    assert job(PLAN, SPLIT_ROWS * MIN_ROW_BYTES + 1)
    assert statistics_threshold(NO_WINDOW) == STREAM_ROWS  # cannot split, can stream
    assert not job(NO_WINDOW, STREAM_ROWS * MIN_ROW_BYTES)
    assert job(NO_WINDOW, None)
    assert statistics_threshold(CONTIGUOUS) is None and not job(CONTIGUOUS, None)
    # a known row count decides: no key holds more rows than the source
    assert not job(PLAN, None, rows=SPLIT_ROWS)
    assert not job(PLAN, 10**12, rows=SPLIT_ROWS)
    assert job(PLAN, 1, rows=SPLIT_ROWS + 1)
    assert group_statistics([PLAN], forced(Path.TIME_SPLIT), SourceSize()) is None  # forced: nothing to measure
    assert group_statistics([PLAN, NO_WINDOW], AUTO, SourceSize()) == (
        SPLIT_ROWS, "Spark's size estimate of the source (unknown) leaves room for a key over 4,000,000 rows")


def test_a_huge_key_of_an_unsplittable_plan_streams() -> None:
    choice = measured_path(NO_WINDOW, [HUGE], AUTO)
    assert choice.path is Path.STREAMING and "no WITHIN" in choice.reason
    huge_short = KeyStatistics(STREAM_ROWS + 1, 0, 10)
    assert measured_path(PLAN, [huge_short], AUTO).path is Path.STREAMING  # a window too long for the span
    assert measured_path(PLAN, [KeyStatistics(STREAM_ROWS + 1, 0, 10**9)], AUTO).path is Path.TIME_SPLIT
    assert measured_path(NO_WINDOW, [KeyStatistics(STREAM_ROWS, 0, 10)], AUTO).path is Path.GROUPED
    assert measured_path(CONTIGUOUS, [HUGE], AUTO).path is Path.GROUPED  # the streaming evaluator refuses strategies
    with pytest.raises(ValueError, match="streaming path"):
        measured_path(CONTIGUOUS, None, forced(Path.STREAMING))
    assert measured_path(NO_WINDOW, None, forced(Path.STREAMING)).path is Path.STREAMING
    # a persistent view's query never streams: its huge keys stay grouped, and forcing it is an error
    assert measured_path(NO_WINDOW, [HUGE], PlanSettings(streaming=False)).path is Path.GROUPED
    with pytest.raises(ValueError, match="persistent view"):
        statement_path(NO_WINDOW, forced(Path.STREAMING, streaming=False))


def test_the_statistics_bound_the_chunks_as_literals() -> None:
    """The keys the statistics job measured reach the query as literals: no second read."""
    hashed = KeyStatistics(rows=3 * CHUNK_ROWS + 1, first=-50, last=10_000, key_hash=-7)
    choice = measured_path(PLAN, [hashed, KeyStatistics(SPLIT_ROWS + 1, 0, 10, key_hash=3)], AUTO)
    assert choice.split_keys == (SplitKey(-7, -50, 10_050 // 4 + 1, 4),)  # the short key stays whole
    assert measured_path(PLAN, [BIG], AUTO).split_keys == (SplitKey(None, 0, 10_000 // 3 + 1, 3),)  # no PARTITION BY
    four = PlanSettings(chunk_multiple=4)
    assert measured_path(PLAN, [BIG], four).split_keys == (SplitKey(None, 0, 10_000 // 4 + 1, 4),)
    many = [KeyStatistics(SPLIT_ROWS + 1, 0, 10_000, key_hash=h) for h in range(MAX_SPLIT_LITERALS + 1)]
    assert measured_path(PLAN, many, AUTO).split_keys is None  # more big keys than literals: the query finds them
    assert measured_path(PLAN, None, forced(Path.TIME_SPLIT)).split_keys is None


def test_keys_counted_as_the_statement_runs_take_the_big_key_path_and_explain_lists_both() -> None:
    """Without statistics: the keys over the plan's threshold take its big-key path, the
    others the grouped path; a plan that neither splits nor streams has no such choice."""
    split = sized_path(PLAN, SMALL, "an estimate")
    assert (split.path, split.by_key_size, split.split_keys) == (Path.TIME_SPLIT, 50, None)
    assert split.describe() == ("per key, counted when the statement runs: time-split for keys over 50 rows, grouped "
                                "for the others (cut into time chunks of about 40 rows; an estimate)")
    streamed = sized_path(NO_WINDOW, SMALL)
    assert (streamed.path, streamed.by_key_size) == (Path.STREAMING, 100)
    assert big_key_path(CONTIGUOUS).path is Path.GROUPED
    with pytest.raises(ValueError, match="no key size changes"):
        sized_path(CONTIGUOUS, AUTO)


def test_a_statement_alone_decides_from_the_estimate_and_without_a_session_says_both_paths() -> None:
    room = SourceSize(rows=51)
    assert statement_path(PLAN, SMALL, room).by_key_size == 50
    ruled_out = statement_path(PLAN, SMALL, SourceSize(rows=50))
    assert (ruled_out.path, ruled_out.by_key_size) == (Path.GROUPED, None)
    markers = statement_path(PLAN, SMALL, room, markers=True)
    assert markers.path is Path.GROUPED and "positional parameter markers" in markers.reason
    # no session: the estimate is asked when the statement runs; EXPLAIN names every path it may take
    planned = statement_path(PLAN, PlanSettings(split_rows=50, chunk_rows=40))
    assert (planned.path, planned.by_key_size, planned.pending) == (Path.TIME_SPLIT, 50, True)
    text = planned.describe()
    assert text.startswith("per key, counted when the statement runs: time-split for keys over 50 rows, grouped for "
                           "the others; only when Spark's size estimate of the source leaves room for such keys, "
                           "else every key grouped")
    counted = statement_path(COUNTED, PlanSettings(split_rows=50)).describe()
    assert "grouped, or jvm where the session loads the JVM path for the others" in counted
    assert statement_path(CONTIGUOUS, AUTO).describe().startswith("grouped (not splittable by time: contiguity")


def test_the_jvm_path_takes_what_would_run_grouped_where_it_loads() -> None:
    assert statement_path(COUNTED, SESSION).path is Path.JVM
    assert statement_path(COUNTED, SESSION, SourceSize(rows=JVM_COUNT_ROWS + 1)).small_path is Path.JVM
    missing = statement_path(COUNTED, NO_JVM)
    assert missing.path is Path.GROUPED and missing.reason.endswith("; not on the JVM path: no jar")
    assert missing.jvm_unavailable == "no jar"  # the Spark layer's one warning says why
    assert statement_path(PLAN, SESSION).path is Path.GROUPED  # two value columns: not a JVM shape
    assert statement_path(PLAN, NO_JVM).jvm_unavailable is None  # no shape of the JVM path: nothing to warn of
    assert statement_path(COUNTED, SESSION).jvm_unavailable is None
    assert statement_path(COUNTED, forced(Path.JVM, session=True)).path is Path.JVM
    fallback = statement_path(COUNTED, forced(Path.JVM, session=True, jvm_missing="no jar"))
    assert fallback.path is Path.GROUPED and "unavailable: no jar" in fallback.reason
    assert fallback.jvm_unavailable == "no jar"
    assert statement_path(COUNTED, forced(Path.GROUPED, session=True, jvm_missing="no jar")).jvm_unavailable is None
    with pytest.raises(ValueError, match="cannot run on the JVM path"):
        statement_path(CONTIGUOUS, forced(Path.JVM, session=True))
    assert statement_path(COUNTED, forced(Path.GROUPED, session=True)).path is Path.GROUPED
    assert statement_path(COUNTED, PlanSettings(session=True, streaming=False)).path is Path.GROUPED  # a view's query


def test_without_big_keys_every_member_shares_the_pass() -> None:
    paths = group_path([PLAN, NO_WINDOW, PLAN], AUTO, [])
    assert paths.shared == (0, 1, 2)
    assert all(c.path is Path.GROUPED for c in paths.choices)
    assert paths.describe(1).startswith("grouped, shared pass (")


def test_a_big_key_takes_splittable_members_out_of_the_pass() -> None:
    paths = group_path([PLAN, NO_WINDOW, PLAN, NO_WINDOW], AUTO, [BIG])
    assert [c.path for c in paths.choices] == [Path.TIME_SPLIT, Path.GROUPED, Path.TIME_SPLIT, Path.GROUPED]
    assert paths.shared == (1, 3)
    assert paths.describe(0).startswith("time-split, on its own (1 partition key(s) over")
    assert paths.choices[0].split_keys is not None  # chunks from the group's one statistics job


def test_a_huge_key_streams_what_cannot_be_split_and_one_member_left_runs_alone() -> None:
    paths = group_path([PLAN, NO_WINDOW, NO_WINDOW], AUTO, [HUGE])
    assert [c.path for c in paths.choices] == [Path.TIME_SPLIT, Path.STREAMING, Path.STREAMING]
    assert paths.shared == ()
    paths = group_path([PLAN, NO_WINDOW], AUTO, [BIG])  # one grouped member: a pass of one shares nothing
    assert paths.shared == () and paths.choices[1].path is Path.GROUPED
    assert paths.describe(1).startswith("grouped, on its own")


def test_a_forced_path_applies_to_every_member() -> None:
    paths = group_path([PLAN, NO_WINDOW], forced(Path.GROUPED), [BIG])
    assert paths.shared == (0, 1) and "forced by sparkseq.path" in paths.describe(0)
    assert group_path([PLAN, PLAN], forced(Path.TIME_SPLIT), None).shared == ()
    with pytest.raises(ValueError, match="no WITHIN"):
        group_path([PLAN, NO_WINDOW], forced(Path.TIME_SPLIT), None)
    jvm = group_path([PLAN, PLAN], forced(Path.JVM), [])  # the pass runs in Python: jvm means auto there
    assert jvm.shared == (0, 1)


def test_failed_statistics_keep_every_member_grouped() -> None:
    paths = group_path([PLAN, NO_WINDOW], AUTO, None, unmeasured="AnalysisException")
    assert paths.shared == (0, 1) and "statistics unavailable (AnalysisException)" in paths.describe(0)


def test_the_group_threshold_is_the_smallest_that_changes_a_member() -> None:
    assert group_threshold([NO_WINDOW], AUTO) == statistics_threshold(NO_WINDOW) == STREAM_ROWS
    assert group_threshold([NO_WINDOW, PLAN], AUTO) == SPLIT_ROWS
    assert group_threshold([], AUTO) is None


def test_a_choice_is_a_frozen_value() -> None:
    choice = measured_path(PLAN, [], AUTO)
    with pytest.raises(AttributeError):
        choice.path = Path.JVM  # type: ignore[misc]
    assert choice == PathChoice(Path.GROUPED, choice.reason)


def test_a_statement_that_only_counts_keeps_keys_up_to_the_jvm_bound_on_the_jvm_path() -> None:
    assert JVM_COUNT_ROWS > SPLIT_ROWS  # the JVM path ran a big key faster than the time split
    assert key_threshold(COUNTED, SESSION) == JVM_COUNT_ROWS
    assert key_threshold(COUNTED_OPEN, SESSION) == max(STREAM_ROWS, JVM_COUNT_ROWS)
    # a key the estimate leaves room for under the JVM bound: no keys counted as it runs
    between = statement_path(COUNTED, SESSION, SourceSize(rows=SPLIT_ROWS + 1))
    assert (between.path, between.by_key_size) == (Path.JVM, None)
    assert between.describe() == (f"jvm ({JVM_REASON}; Spark's size estimate of the source rules out a key over "
                                  f"{JVM_COUNT_ROWS:,} rows)")
    parquet = statement_path(COUNTED, SESSION, SourceSize(bytes=JVM_COUNT_ROWS * MIN_ROW_BYTES))
    assert (parquet.path, parquet.by_key_size) == (Path.JVM, None)
    # room for a key over the bound: counted as it runs, the big keys time-split, the others in the JVM
    room = statement_path(COUNTED, SESSION, SourceSize(rows=JVM_COUNT_ROWS + 1))
    assert (room.path, room.by_key_size, room.small_path) == (Path.TIME_SPLIT, JVM_COUNT_ROWS, Path.JVM)
    assert room.describe().startswith(f"per key, counted when the statement runs: time-split for keys over "
                                      f"{JVM_COUNT_ROWS:,} rows, jvm for the others (")
    open_room = statement_path(COUNTED_OPEN, SESSION, SourceSize(rows=max(STREAM_ROWS, JVM_COUNT_ROWS) + 1))
    assert (open_room.path, open_room.small_path) == (Path.STREAMING, Path.JVM)


def test_positional_markers_keep_every_key_on_the_jvm_path_saying_why() -> None:
    """Room for a big key whose keys cannot be counted as the statement runs (positional
    markers would be read twice): every key on the JVM path, and EXPLAIN says why none splits."""
    marked = statement_path(COUNTED, SESSION, SourceSize(rows=JVM_COUNT_ROWS + 1), markers=True)
    assert (marked.path, marked.by_key_size) == (Path.JVM, None)
    assert marked.describe() == (f"jvm ({JVM_REASON}; Spark's size estimate of the source ({JVM_COUNT_ROWS + 1:,} "
                                 f"rows) leaves room for a key over {JVM_COUNT_ROWS:,} rows, but the keys cannot be "
                                 "counted as the statement runs: its positional parameter markers (?) would be read "
                                 "twice (named markers, :name, can))")


def test_the_jvm_bound_is_a_setting_and_never_below_the_time_split() -> None:
    low = PlanSettings(session=True, jvm_rows=10)
    assert key_threshold(COUNTED, low) == SPLIT_ROWS
    small = PlanSettings(split_rows=50, chunk_rows=40, stream_rows=100, session=True, jvm_rows=70)
    assert key_threshold(COUNTED, small) == 70
    assert statement_path(COUNTED, small, SourceSize(rows=70)).path is Path.JVM
    assert statement_path(COUNTED, small, SourceSize(rows=71)).by_key_size == 70


@pytest.mark.parametrize("plan, settings", [
    pytest.param(SUMMED, SESSION, id="a value column: pair counts per row, the Python bound"),
    pytest.param(COUNTED, NO_JVM, id="the JVM path does not load"),
    pytest.param(COUNTED, PlanSettings(session=True, streaming=False), id="a persistent view's query"),
    pytest.param(COUNTED, forced(Path.GROUPED, session=True), id="the kernel path forced"),
    pytest.param(PLAN, SESSION, id="not a JVM shape"),
])
def test_every_other_statement_keeps_the_time_split_threshold(plan: Plan, settings: PlanSettings) -> None:
    assert key_threshold(plan, settings) == SPLIT_ROWS
    if settings.forced is None:
        choice = statement_path(plan, settings, SourceSize(rows=SPLIT_ROWS + 1))
        assert (choice.path, choice.by_key_size) == (Path.TIME_SPLIT, SPLIT_ROWS)
