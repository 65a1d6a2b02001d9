"""``python -m sparkseq stream``: a MATCH_AGGREGATE over a directory of files, live.

The files of ``--source-dir`` (``--format json|parquet|csv`` with ``--schema``) become
a streaming view (``--name``, default ``events``) with the watermark ``--watermark``
on the event-time column of the MATCH_AGGREGATE that reads it. The statement's
results go to ``--output``:

* with SLIDE (windows emitted once, append mode): Spark's parquet file sink — its
  metadata log and the checkpoint make a restarted query write every row exactly once;
* without SLIDE (running results, update mode; Spark's file sinks take append mode
  only): each micro-batch's rows as parquet under ``OUTPUT/batch_id=N/``, written with
  ``overwrite``, so a batch replayed after a crash replaces its own output.

One line per micro-batch reports input rows and rate, duration, watermark, rows
emitted, late rows dropped and the state's size. ``--available-now`` processes what
is in the directory and stops; otherwise the query runs until Ctrl-C or SIGTERM. A
query that fails (a DEFINE dividing by zero on a row, say) ends the command with
``query failed`` and, on stderr, the error once, in the user's words
(:func:`sparkseq.running.live.failure_message`: the condition's place in the statement, no
plan, no stack trace); exit code 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery, StreamingQueryListener
from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
)

from sparkseq.running import live

FORMATS = ("json", "parquet", "csv")
#: Seconds to wait, once the query has stopped, for Ctrl-C's stop to return and for the
#: listener's last line.
LAST_EVENT_WAIT_S = 10.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``stream`` command's arguments."""
    parser.add_argument("text", nargs="?", help="the SQL statement (or use --file)")
    parser.add_argument("--file", "-f", type=Path, help="read the statement from this file")
    parser.add_argument("--source-dir", required=True, type=Path, help="directory the event files arrive in")
    parser.add_argument("--format", choices=FORMATS, default="json", help="file format (default json; csv: header row)")
    parser.add_argument("--schema", required=True,
                        help="the files' schema as Spark DDL, e.g. 'k INT, ts TIMESTAMP, a STRING'")
    parser.add_argument("--name", default="events", help="view name the statement reads the stream by (default events)")
    parser.add_argument("--watermark", required=True, metavar="DELAY",
                        help="how late rows may arrive, e.g. '10 minutes'; rows at or before the watermark are dropped")
    parser.add_argument("--watermark-column", help="the event-time column (default: the ORDER BY column of the "
                                                   "MATCH_AGGREGATE reading the stream)")
    parser.add_argument("--checkpoint", required=True, type=Path, help="checkpoint directory (restart from it)")
    parser.add_argument("--output", required=True, type=Path, help="directory the results are written to (parquet)")
    parser.add_argument("--trigger", default="0 seconds", help="micro-batch interval (default: back to back)")
    parser.add_argument("--available-now", action="store_true", help="process the files there now, then stop")
    parser.add_argument("--max-files-per-trigger", type=int, help="files per micro-batch (default: all new files)")
    parser.add_argument("--master", help="Spark master URL (default: $SPARKSEQ_MASTER or local[2])")


def main(args: argparse.Namespace) -> int:
    """Run the ``stream`` command; returns the exit code."""
    import sparkseq
    from sparkseq.commands.console import Interruption, read_text, reporting

    text = read_text(args)
    spark = sparkseq.session(args.master, app_name="sparkseq-stream", progress=False)  # a line per micro-batch
    _quiet_failure_logs(spark)
    printer = ProgressPrinter()
    spark.streams.addListener(printer)
    with reporting():
        query = start(spark, text, args)
    with Interruption(spark, query.stop) as interruption:  # Ctrl-C, SIGTERM: stop the query, end as below
        try:
            query.awaitTermination()
        except Exception as exc:  # the query failed: its error in the user's words, not a Py4J trace
            print(live.failure_message(str(exc)), file=sys.stderr)
        finally:
            interruption.wait(LAST_EVENT_WAIT_S)
            printer.terminated.wait(LAST_EVENT_WAIT_S)
            spark.streams.removeListener(printer)  # no callback into a Python process that is leaving
            spark.stop()
    return 0 if query.exception() is None else 1


#: Spark's loggers that report a failed query's error once more, with stack traces (the
#: query's end; a sink's aborted write): the command reports it itself.
FAILURE_LOGGERS = ("org.apache.spark.sql.execution.streaming",
                   "org.apache.spark.sql.execution.datasources.FileFormatWriter")


def _quiet_failure_logs(spark: SparkSession) -> None:
    """Leave reporting a failed query to the command (:data:`FAILURE_LOGGERS` off; PySpark's
    JSON lines of SQL errors off, as the other commands do)."""
    from sparkseq.commands.console import quiet_error_loggers
    from sparkseq.spark.gateway import jvm

    quiet_error_loggers()
    log4j = jvm(spark).org.apache.logging.log4j
    try:
        for name in FAILURE_LOGGERS:
            log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)
    except Exception:  # noqa: BLE001 - another logging backend: Spark's lines stay, the report is the same
        pass


def start(spark: SparkSession, text: str, args: argparse.Namespace) -> StreamingQuery:
    """Register the source, run ``text`` through :func:`sparkseq.sql` and start writing."""
    import sparkseq

    reader = spark.readStream.format(args.format).schema(args.schema)
    if args.format == "csv":
        reader = reader.option("header", "true")
    if args.max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", args.max_files_per_trigger)
    source = reader.load(str(args.source_dir))
    source.createOrReplaceTempView(args.name)
    column, windowed, plans = _event_time(spark, text, args.name, args.watermark_column)
    live.check_checkpoint(spark, str(args.checkpoint), plans)
    source.withWatermark(column, args.watermark).createOrReplaceTempView(args.name)
    frame = sparkseq.sql(spark, text)
    if not frame.isStreaming:
        raise SystemExit(f"the statement does not read the stream {args.name}")
    writer = frame.writeStream.option("checkpointLocation", str(args.checkpoint))
    writer = writer.trigger(availableNow=True) if args.available_now else writer.trigger(processingTime=args.trigger)
    if windowed:
        return writer.format("parquet").outputMode("append").option("path", str(args.output)).start()
    return writer.outputMode("update").foreachBatch(_batch_writer(str(args.output))).start()


def _event_time(spark: SparkSession, text: str, name: str, column: str | None) -> tuple[str, bool, list[str]]:
    """The watermark column (the ORDER BY of the operators reading ``name``), whether
    every operator has SLIDE (results in append mode), and the plans of the operators
    reading ``name`` (as JSON)."""
    from sparkseq.spark.catalog import SessionSchemas
    from sql_rewrites import analyze_sql

    queries = analyze_sql(text, SessionSchemas(spark))
    reading = [q for q in queries if q.reads_table(name)]
    if not reading:
        raise SystemExit(f"the statement has no MATCH_AGGREGATE reading {name} (FROM {name} MATCH_AGGREGATE (...))")
    orders = sorted({q.order.column.name for q in reading})
    if column is None and len(orders) > 1:
        raise SystemExit(f"the operators over {name} order by {', '.join(orders)}; choose one with --watermark-column")
    return column or orders[0], all(q.plan.slide is not None for q in queries), [q.plan.to_json() for q in reading]


def _batch_writer(output: str):  # noqa: ANN202 - a foreachBatch function
    def write(frame: DataFrame, batch: int) -> None:
        frame.write.mode("overwrite").parquet(f"{output}/batch_id={batch}")

    return write


class ProgressPrinter(StreamingQueryListener):
    """Prints one line per micro-batch (see the module docstring); ``terminated`` is set
    once the query's end was printed."""

    def __init__(self) -> None:
        self.terminated = threading.Event()

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        print(f"started query {event.id} (run {event.runId}); one line per micro-batch", flush=True)

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        from sparkseq.running.live import progress

        print(describe(progress(json.loads(event.progress.json))), flush=True)

    def onQueryIdle(self, event: QueryIdleEvent) -> None:
        pass

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        # a failure's error is printed once, by main(), in the user's words
        print("query failed" if getattr(event, "exception", None) else "query stopped", flush=True)
        self.terminated.set()


def describe(p: dict[str, Any] | None) -> str:
    """One micro-batch's progress as a line of text."""
    if p is None:
        return "no micro-batch yet"
    seconds = int(p["duration_ms"]) / 1000
    emitted = f"emitted {p['output_rows']:,} rows; " if int(p["output_rows"]) >= 0 else ""  # file sinks: unknown
    return (f"batch {p['batch']}: {p['input_rows']:,} rows in {seconds:.1f} s ({p['rows_per_second']:,.0f} rows/s); "
            f"watermark {p['watermark']}; {emitted}late rows dropped {p['late_rows_dropped']:,}; "
            f"state {p['state_rows']:,} rows, {int(p['state_bytes']) / 1e6:.1f} MB")


__all__ = ["add_arguments", "main", "start", "describe", "ProgressPrinter"]
