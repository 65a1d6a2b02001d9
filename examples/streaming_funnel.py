"""The Kindle funnel on a live stream: JSON files arrive in a directory while a query reads them.

The demo's sample clicks (``sparkseq/data/clicks.csv``, a week, 30,812 clicks) are
replayed as a stream: a writer thread drops one JSON file per ``--pause`` seconds into
a directory, each holding the next six hours of clicks, a little out of order. A
Structured Streaming query reads the directory with a 2-minute watermark and runs the
funnel

    SEQ(VK, BK, !REC, VC, BC) WITHIN 10 MINUTES SLIDE 1 MINUTE   per customer

through ``sparkseq.sql`` — the same statement as over a table — into a parquet sink.
Each (customer, window) row is written once, when the watermark passes the window's
end. At the end the example reads the sink, shows the busiest windows, and checks
every streamed row against the batch MATCH_AGGREGATE over the same clicks.

Run: ``python examples/streaming_funnel.py [--files N] [--pause SECONDS]`` (session time
zone UTC, as the sample's times are).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a source checkout

from pyspark.sql import DataFrame, SparkSession  # noqa: E402

import sparkseq  # noqa: E402
from sparkseq.demo import CLICKS as DATA  # noqa: E402  (the demo's sample clicks: package data)
from sparkseq.demo import SCHEMA  # noqa: E402

FILE_SPAN = pd.Timedelta(hours=6)

FUNNELS = """
SELECT customer_id, window_start, window_end, funnels, revenue
FROM {source} MATCH_AGGREGATE (
  PARTITION BY customer_id
  ORDER BY ts
  PATTERN SEQ(VK, BK, !REC, VC, BC)
  DEFINE VK  AS action = 'view' AND item = 'kindle',
         BK  AS action = 'buy'  AND item = 'kindle',
         REC AS action = 'recommendation',
         VC  AS action = 'view' AND item = 'case',
         BC  AS action = 'buy'  AND item = 'case'
  MEASURES COUNT(*) AS funnels, SUM(BC.price) AS revenue
  WITHIN INTERVAL 10 MINUTES
  SLIDE INTERVAL 1 MINUTE
) AS m"""


def clicks() -> pd.DataFrame:
    """The sample clicks, in time order, times as UTC."""
    frame = pd.read_csv(DATA)
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
    return frame.sort_values("ts", kind="stable")


def replay(frame: pd.DataFrame, directory: Path, files: int, pause: float) -> threading.Thread:
    """A thread writing ``files`` JSON files of six hours of clicks each into ``directory``,
    one per ``pause`` seconds; within a file the rows are shuffled (arrival order is not
    time order, but no click is later than the watermark allows)."""
    rng = np.random.default_rng(1)
    start = frame["ts"].min().floor("h")

    def write() -> None:
        for n in range(files):
            part = frame[(frame["ts"] >= start + n * FILE_SPAN) & (frame["ts"] < start + (n + 1) * FILE_SPAN)]
            part = part.iloc[rng.permutation(len(part))].assign(ts=lambda p: p["ts"].dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
            staging = directory.parent / f"clicks-{n:03d}.json"
            part.to_json(staging, orient="records", lines=True)
            staging.replace(directory / staging.name)  # a file source must see whole files only
            time.sleep(pause)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def start(spark: SparkSession, source: Path, out: Path, checkpoint: Path) -> object:
    """The live funnel: ``sparkseq.sql`` over the stream, started into a parquet sink."""
    stream = spark.readStream.schema(SCHEMA).json(str(source)).withWatermark("ts", "2 minutes")
    stream.createOrReplaceTempView("live_clicks")
    funnels = sparkseq.sql(spark, FUNNELS.format(source="live_clicks"))  # a streaming DataFrame
    return (funnels.writeStream.format("parquet").option("path", str(out))
            .option("checkpointLocation", str(checkpoint)).trigger(processingTime="1 second").start())


def run(spark: SparkSession, workdir: Path, files: int, pause: float) -> tuple[DataFrame, int]:
    """Replay ``files`` files while the query runs; return the streamed rows and how many
    rows differ between the stream and the batch answer over the windows the final
    watermark has passed, zero-count windows included (0: the stream is exact; later
    windows are not final yet and are not emitted)."""
    source, out = workdir / "incoming", workdir / "funnels"
    source.mkdir(parents=True)
    frame = clicks()
    query = start(spark, source, out, workdir / "checkpoint")
    replay(frame, source, files, pause).join()
    query.processAllAvailable()  # type: ignore[attr-defined]
    watermark = query.lastProgress["eventTime"]["watermark"]  # type: ignore[attr-defined]
    query.stop()  # type: ignore[attr-defined]
    streamed = spark.read.parquet(str(out))
    end = (frame["ts"].min().floor("h") + files * FILE_SPAN).tz_localize(None)
    spark.read.csv(str(DATA), header=True, schema=SCHEMA).where(f"ts < TIMESTAMP '{end}'").createOrReplaceTempView(
        "clicks_at_rest")  # the same clicks, at rest (times in the session's time zone, UTC)
    # every window the watermark has passed, zero-count ones included, in both directions
    batch = sparkseq.sql(spark, FUNNELS.format(source="clicks_at_rest")).where(
        f"window_end <= to_timestamp('{watermark}')")
    wrong = streamed.alias("s").join(batch.alias("b"), ["customer_id", "window_start"], "full").where(
        "s.funnels IS NULL OR b.funnels IS NULL OR s.funnels <> b.funnels OR NOT (s.revenue <=> b.revenue)").count()
    return streamed, wrong


def main(master: str | None = None, files: int = 28, pause: float = 1.0) -> None:
    """Replay the week of clicks as a stream and report what the live funnel wrote."""
    spark = sparkseq.session(master, app_name="sparkseq-streaming-funnel",
                             conf={"spark.sql.session.timeZone": "UTC"})
    workdir = Path(tempfile.mkdtemp(prefix="sparkseq-stream-"))
    try:
        print(f"{FUNNELS.format(source='live_clicks').strip()}\n")
        print(f"replaying {files} files of six hours of clicks into {workdir / 'incoming'} ...")
        started = time.perf_counter()
        streamed, wrong = run(spark, workdir, files, pause)
        busiest = (streamed.groupBy("window_start", "window_end")
                   .agg({"funnels": "sum", "customer_id": "count"})
                   .withColumnsRenamed({"sum(funnels)": "funnels", "count(customer_id)": "customers"})
                   .orderBy("funnels", ascending=False).limit(5).toPandas())
        print(f"\n{streamed.count():,} (customer, window) rows streamed in {time.perf_counter() - started:.0f} s; "
              f"rows differing from the batch MATCH_AGGREGATE: {wrong}")
        print("busiest 10-minute windows, all customers:")
        print(busiest.to_string(index=False))
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The Kindle funnel over a live stream of JSON files.")
    parser.add_argument("--files", type=int, default=28, help="files to replay (six hours of clicks each; 28 = a week)")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between two files")
    parser.add_argument("--master", help="Spark master URL (default: $SPARKSEQ_MASTER or local[2])")
    options = parser.parse_args()
    main(options.master, options.files, options.pause)
