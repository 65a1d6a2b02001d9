"""A DEFINE condition that fails while a live stream runs points at the DEFINE as written.

The live operator's events (:mod:`sparkseq.running.live`) are generated SQL; the places of the
user's DEFINE conditions travel with them (:func:`sparkseq.spark.jvm_parser.with_origins`), so
an error Spark raises on a row of a running stream — a malformed cast, an ANSI division
by zero, an overflow — quotes the user's statement (line 2 here) or the DataFrame API's
argument, never the generated SQL. Each case is a real file-source stream with a
checkpoint (:mod:`tests.live_cases`): ``processAllAvailable()`` and then
``awaitTermination()`` raise it; the ``stream`` command ends with ``query failed`` and
the error once on stderr, no traceback. Spark's text of a failed query goes on to
describe the query (``=== Streaming Query ===``: its plan, in the generated names); the
error before it is what the messages are checked on (the sweep of
:func:`tests.test_spark_error_surfaces.in_user_words`).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import StreamingQueryException

import sparkseq
from sparkseq.running import live
from tests import live_cases
from tests.test_spark_error_surfaces import in_user_words, seen

ROOT = Path(__file__).resolve().parent.parent
CLI_TIMEOUT_S = 600  # a loaded 2-core machine: a JVM start and a few micro-batches
TEXT = ("SELECT * FROM {source} MATCH_AGGREGATE (PARTITION BY g ORDER BY ts\n"
        "  PATTERN SEQ(A, B) DEFINE A AS {condition}, B AS mask = 2 WITHIN INTERVAL 5 MINUTES) AS m")
#: A DEFINE failing on every row, and the condition Spark raises.
CASES = [pytest.param("CAST(CONCAT('n', i) AS INT) > 0", "CAST_INVALID_INPUT", id="malformed-cast"),
         pytest.param("i / (i - i) > 1", "DIVIDE_BY_ZERO", id="division-by-zero"),
         pytest.param("i * 9223372036854775807 > 0", "ARITHMETIC_OVERFLOW", id="overflow")]
CLI_CONDITION, CLI_KIND = "i / (i - i) > 1", "DIVIDE_BY_ZERO"


def write_source(folder: Path) -> Path:
    """A source directory holding one parquet file of two rows of partition 1 (``i`` = 2)."""
    source, staging = folder / "src", folder / "staging"
    source.mkdir(parents=True)
    staging.mkdir()
    path = staging / "part-000.parquet"
    pq.write_table(pa.table({
        "g": pa.array([1, 1], pa.int32()),
        "ts": pa.array([live_cases.T0, live_cases.T0 + 60 * live_cases.SECOND], pa.timestamp("us", tz="UTC")),
        "mask": pa.array([1, 2], pa.int64()), "i": pa.array([2, 2], pa.int64()),
        "f": pa.array([1.0, 1.0]), "s": pa.array([0.0, 0.0])}), path)
    live_cases.release(path, source)
    return source


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[str]]:
    """The ``stream`` command over a stream whose DEFINE fails, started when the module starts
    (its JVM start overlaps the in-process cases)."""
    folder = tmp_path_factory.mktemp("live_errors_cli")
    source = write_source(folder)
    command = [sys.executable, "-m", "sparkseq", "stream", TEXT.format(source="events", condition=CLI_CONDITION),
               "--source-dir", str(source), "--format", "parquet", "--schema", live_cases.SCHEMA,
               "--watermark", "1 minute", "--checkpoint", str(folder / "ck"), "--output", str(folder / "out"),
               "--available-now", "--master", "local[1]"]
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()


@pytest.fixture(scope="module", autouse=True)
def start_cli_first(request: pytest.FixtureRequest) -> None:
    if any(item.module is request.module and "command" in item.name for item in request.session.items):
        request.getfixturevalue("cli_run")


def stream_of(spark: Any, folder: Path, name: str) -> None:
    """The file source in ``folder`` as the streaming view ``name``, with a watermark on ``ts``."""
    spark.readStream.schema(live_cases.SCHEMA).parquet(str(write_source(folder))).withWatermark(
        "ts", "1 minute").createOrReplaceTempView(name)


def failures(frame: Any, checkpoint: Path) -> tuple[str, str]:
    """Start ``frame`` (a memory sink, a checkpoint): the texts of what ``processAllAvailable()``
    and then ``awaitTermination()`` raise."""
    query = (frame.writeStream.format("memory").queryName(f"live_error_{uuid.uuid4().hex[:8]}")
             .outputMode("update").option("checkpointLocation", str(checkpoint)).start())
    try:
        with pytest.raises(StreamingQueryException) as processed:
            query.processAllAvailable()
        with pytest.raises(StreamingQueryException) as awaited:
            query.awaitTermination()
    finally:
        query.stop()
    return str(processed.value), str(awaited.value)


def error_before_the_query_description(text: str) -> str:
    """Spark's text of a failed query up to where it describes the query (its plan)."""
    head = text.split("\n=== Streaming Query ===")[0]
    in_user_words(head)
    return head


@pytest.mark.parametrize(("condition", "kind"), CASES)
def test_a_live_streams_define_error_points_at_the_define(spark, tmp_path: Path, condition: str, kind: str) -> None:
    stream_of(spark, tmp_path, "live_error_events")
    statement = TEXT.format(source="live_error_events", condition=condition)
    frame = sparkseq.sql(spark, statement)
    assert frame.isStreaming
    for text in failures(frame, tmp_path / "ck"):
        head = error_before_the_query_description(text)
        assert f"terminated with exception: [{kind}]" in head, text[:3000]
        error = seen(live.failure_message(text))
        assert (error.kind, error.object, error.line, error.underlined) == (kind, None, 2, condition), text[:3000]
        assert statement.splitlines()[1][error.column - 1:].startswith(condition)


def test_a_live_streams_define_error_points_at_the_dataframe_apis_argument(spark, tmp_path: Path) -> None:
    stream_of(spark, tmp_path, "live_error_frame")
    frame = sparkseq.match_aggregate(spark.table("live_error_frame"), partition_by="g", order_by="ts",
                                     pattern="SEQ(A, B)", define={"A": "i / (i - i) > 1", "B": "mask = 2"},
                                     within="5 minutes")
    assert frame.isStreaming
    for text in failures(frame, tmp_path / "ck"):
        error_before_the_query_description(text)
        error = seen(live.failure_message(text))
        assert (error.kind, error.line, error.column, error.underlined) == \
            ("DIVIDE_BY_ZERO", 1, 1, "i / (i - i) > 1"), text[:3000]
        assert error.object is not None and error.object.endswith("define['A']"), text[:3000]


def test_the_stream_command_reports_a_define_error_once_in_the_users_words(cli_run: subprocess.Popen[str]) -> None:
    stdout, stderr = cli_run.communicate(timeout=CLI_TIMEOUT_S)
    assert cli_run.returncode == 1, stderr[-3000:]
    assert stdout.splitlines()[-1] == "query failed", stdout
    for noise in ("Traceback", "\tat ", "=== Streaming Query ===", "STREAM_FAILED", "SQLQueryContextLogger"):
        assert noise not in stderr, stderr[-3000:]
    in_user_words(stderr)
    assert stderr.count(f"[{CLI_KIND}]") == 1, stderr
    error = seen(stderr)
    assert (error.kind, error.line, error.underlined) == (CLI_KIND, 2, CLI_CONDITION), stderr
