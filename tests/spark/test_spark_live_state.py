"""Live MATCH_AGGREGATE: state stays bounded, restarts lose and double nothing, errors.

* State: on a long stream the checkpointed state (read back with Spark's ``statestore``
  source) holds, per partition, only the rows of windows still open; once the
  watermark passes every window, only the bucket of the row that moved it remains.
* kill -9: ``python -m sparkseq stream`` in a child process is killed with SIGKILL
  mid-stream (process group: the Python driver and its JVM) and started again from
  its checkpoint; its parquet output equals that of an uninterrupted run.
* A checkpoint written by a different MATCH_AGGREGATE is refused with a clear error.
* Mistakes a stream cannot run are errors before the query starts.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from argparse import Namespace
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import sparkseq
from sparkseq.commands import live_cli
from sparkseq.running import live
from sql_rewrites.errors import StreamingError
from tests.support.live_cases import json_time
from udafs import state_codec

SCHEMA = "k INT, ts TIMESTAMP, action STRING, price DECIMAL(10,2)"
FUNNEL = """SELECT k, window_start, window_end, funnels, revenue FROM {source} MATCH_AGGREGATE (
  PARTITION BY k ORDER BY ts
  PATTERN SEQ(view, cart, !rec, buy) TYPE BY action
  MEASURES COUNT(*) AS funnels, SUM(buy.price) AS revenue
  WITHIN INTERVAL 30 SECONDS SLIDE INTERVAL 10 SECONDS) AS m"""
ACTIONS = ("view", "cart", "rec", "buy", "other")


def write_json_files(directory: Path, files: int, keys: int, seconds_per_file: int, seed: int = 7) -> None:
    """Files of click events, file f covering seconds [f·n, (f+1)·n) with a little disorder
    (under 3 s); modification times in file order, so a file source takes them in order."""
    import random

    rnd = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        rows = []
        for k in range(keys):
            for s in range(f * seconds_per_file, (f + 1) * seconds_per_file):
                if rnd.random() < 0.5:
                    t = max(f * seconds_per_file, s - rnd.choice((0, 0, 1, 2)))
                    rows.append({"k": k, "ts": json_time(t),
                                 "action": rnd.choice(ACTIONS), "price": round(rnd.uniform(1, 99), 2)})
        rnd.shuffle(rows)
        path = directory / f"clicks-{f:03d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(path, (1_000_000 + f, 1_000_000 + f))


def stream_args(tmp: Path, name: str, **extra: object) -> Namespace:
    values = dict(source_dir=tmp / "src", format="json", schema=SCHEMA, name="events", watermark="3 seconds",
                  watermark_column=None, checkpoint=tmp / f"ck_{name}", output=tmp / f"out_{name}", trigger="0 seconds",
                  available_now=True, max_files_per_trigger=1, master=None, text=None, file=None)
    values.update(extra)
    return Namespace(**values)


def cli_command(args: Namespace, text: str) -> list[str]:
    command = [sys.executable, "-m", "sparkseq", "stream", text, "--source-dir", str(args.source_dir), "--format",
               args.format, "--schema", args.schema, "--watermark", args.watermark,
               "--checkpoint", str(args.checkpoint), "--output", str(args.output),
               "--max-files-per-trigger", str(args.max_files_per_trigger),
               "--trigger", args.trigger, "--master", "local[2]"]
    return command + (["--available-now"] if args.available_now else [])


def commits(checkpoint: Path) -> int:
    folder = checkpoint / "commits"
    return len([p for p in folder.iterdir() if p.name.isdigit()]) if folder.is_dir() else 0


def sorted_rows(spark, path: Path) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.parquet(str(path)).collect())


def kill_after_two_commits(child: subprocess.Popen[bytes], checkpoint: Path, stop: threading.Event) -> int:
    """SIGKILL to ``child``'s process group (the driver: Python and its JVM) once its stream has
    committed two micro-batches (or ``stop`` is set); the micro-batches it committed."""
    try:
        deadline = time.monotonic() + 600
        while commits(checkpoint) < 2 and child.poll() is None and time.monotonic() < deadline and not stop.is_set():
            time.sleep(0.2)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    return commits(checkpoint)


def test_kill_and_restart_loses_and_doubles_nothing(spark, tmp_path: Path) -> None:
    write_json_files(tmp_path / "src", files=6, keys=12, seconds_per_file=15)
    text = FUNNEL.format(source="events")
    # the stream to kill runs in its own process while this one computes the uninterrupted run's rows
    killed = stream_args(tmp_path, "killed", available_now=False)
    log = open(tmp_path / "first.log", "w")
    child = subprocess.Popen(cli_command(killed, text), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    stop = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        killing = pool.submit(kill_after_two_commits, child, killed.checkpoint, stop)
        try:
            ref = stream_args(tmp_path, "ref")
            query = live_cli.start(spark, text, ref)
            query.awaitTermination()
            want = sorted_rows(spark, ref.output)
            # the stream's rows are the batch rows of every window the watermark passed
            spark.read.schema(SCHEMA).json(str(tmp_path / "src")).createOrReplaceTempView("clicks_rest")
            final = query.lastProgress["eventTime"]["watermark"]
            batch = sparkseq.sql(spark, FUNNEL.format(source="clicks_rest")).where(
                f"window_end <= to_timestamp('{final}')")
            batch_rows = sorted(tuple(r) for r in batch.collect())
        except BaseException:
            stop.set()  # kill the child now
            raise
        done = killing.result()
    assert len(want) > 50
    assert want == batch_rows and any(r[3] == 0 for r in want)  # zero-count windows included
    assert 2 <= done < 6, (done, (tmp_path / "first.log").read_text()[-3000:])

    restarted = subprocess.run(cli_command(stream_args(tmp_path, "killed"), text), capture_output=True, text=True,
                               timeout=900)
    assert restarted.returncode == 0, restarted.stdout[-3000:] + restarted.stderr[-3000:]
    assert "batch" in restarted.stdout
    assert sorted_rows(spark, killed.output) == want


def held_rows(spark, checkpoint: Path, path: str) -> tuple[list[str], list[np.ndarray]]:
    """The keys with stored state and the times of the rows each holds: per bucket of keys
    (the Python operator) or per key (the JVM operator, :func:`sparkseq.running.live.jvm_state`)."""
    rows = spark.read.format("statestore").load(str(checkpoint)).collect()
    if path == "jvm":
        states = [live.jvm_state(bytes(r.value.groupState.state)) for r in rows]
        return [r.key[0] for r in rows], [np.array(s.ts if s else (), dtype=np.int64) for s in states]
    blobs = [state_codec.decode(r.value.groupState.state) for r in rows]
    return ([k for b in blobs for k in b["keys"]],
            [np.concatenate([st["mode"]["buf"][0], st["pending"][0]]) for b in blobs for st in b["states"]])


@pytest.mark.parametrize("path", ["jvm", "grouped"])
def test_state_holds_only_open_windows(spark, tmp_path: Path, path: str) -> None:
    """After 8 files (120 s of events, 20 partitions), each partition keeps the rows of the
    windows the watermark has not passed — not the stream; after a far-future row, only
    its own key (or bucket) has state. On both live operators (``sparkseq.path``)."""
    write_json_files(tmp_path / "src", files=8, keys=20, seconds_per_file=15)
    args = stream_args(tmp_path, "state", max_files_per_trigger=None)
    spark.conf.set("sparkseq.path", path)
    try:
        check_open_windows(spark, tmp_path, args, path)
    finally:
        spark.conf.unset("sparkseq.path")


def check_open_windows(spark, tmp_path: Path, args: Namespace, path: str) -> None:
    live_cli.start(spark, FUNNEL.format(source="events"), args).awaitTermination()
    keys, held = held_rows(spark, args.checkpoint, path)
    assert len(keys) == 20
    # open windows: those ending after the watermark (max 119 s - 3 s): rows from 90 s on
    assert all(len(h) == 0 or h.min() >= (1704067200 + 90) * 10**6 for h in held)
    assert max(len(h) for h in held) < 60  # of about 60 rows per partition and 15 s

    flush = tmp_path / "src" / "clicks-999.json"
    flush.write_text(json.dumps({"k": 999, "ts": "2024-01-02T00:00:00Z", "action": "view", "price": 1}) + "\n")
    os.utime(flush, (2_000_000, 2_000_000))
    query = live_cli.start(spark, FUNNEL.format(source="events"), Namespace(**{**vars(args), "available_now": False}))
    try:
        query.processAllAvailable()
        time.sleep(1)
        query.processAllAvailable()  # the no-data batch that times the buckets out
        assert live.progress(query.lastProgress)["state_rows"] == 1
    finally:
        query.stop()
    assert held_rows(spark, args.checkpoint, path)[0] == ["[\"999\"]"]


def test_changed_statement_on_a_checkpoint_is_refused(spark, tmp_path: Path) -> None:
    write_json_files(tmp_path / "src", files=2, keys=3, seconds_per_file=15)
    args = stream_args(tmp_path, "changed", max_files_per_trigger=None)
    live_cli.start(spark, FUNNEL.format(source="events"), args).awaitTermination()
    changed = FUNNEL.format(source="events").replace("SEQ(view, cart, !rec, buy)", "SEQ(view, buy)")
    with pytest.raises(StreamingError, match="written by a different MATCH_AGGREGATE"):
        live_cli.start(spark, changed, args)
    (tmp_path / "src" / "clicks-100.json").write_text(
        json.dumps({"k": 1, "ts": "2024-01-01T00:10:00Z", "action": "view", "price": 1}) + "\n")
    spark.readStream.schema(SCHEMA).json(str(args.source_dir)).withWatermark("ts", "3 seconds").createOrReplaceTempView(
        "events")
    query = sparkseq.sql(spark, changed).writeStream.format("noop").option(
        "checkpointLocation", str(args.checkpoint)).start()  # not through the CLI: the worker refuses
    # the JVM operator's state (auto) is refused by its function in the JVM, as the Python operator's by its worker
    refused = "the checkpoint holds state of a different MATCH_AGGREGATE, or of an earlier sparkseq"
    with pytest.raises(Exception, match=refused):
        query.awaitTermination(600)


@pytest.mark.parametrize("statement, message", [
    ("SELECT * FROM nowm MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(a, b) TYPE BY action "
     "WITHIN INTERVAL 10 SECONDS SLIDE INTERVAL 5 SECONDS) m", "no watermark on the ORDER BY column ts"),
    ("SELECT * FROM wm MATCH_AGGREGATE (PARTITION BY k ORDER BY n PATTERN SEQ(a, b) TYPE BY action) m",
     "ORDER BY n is numeric"),
    ("SELECT * FROM wm MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(a, b) TYPE BY action "
     "STRATEGY SKIP TILL NEXT MATCH) m", "STRATEGY SKIP TILL NEXT MATCH over a streaming source needs WITHIN"),
    ("SELECT * FROM wm MATCH_AGGREGATE (PARTITION BY tags ORDER BY ts PATTERN SEQ(a, b) TYPE BY action "
     "WITHIN INTERVAL 10 SECONDS SLIDE INTERVAL 5 SECONDS) m", "PARTITION BY tags is ARRAY<STRING>"),
    ("SELECT * FROM wm MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(a, b) TYPE BY action CUBE (PATTERN ROLLUP 2) "
     "WITHIN INTERVAL 10 SECONDS) m", "CUBE / PATTERNS (E-Cube) is not supported over a streaming source"),
    ("SELECT * FROM wm MATCH_AGGREGATE (PARTITION BY k ORDER BY ts UNCERTAIN BETWEEN ts AND ts STEP INTERVAL 1 SECOND "
     "PATTERN SEQ(a, b) TYPE BY action WITHIN INTERVAL 10 SECONDS SLIDE INTERVAL 5 SECONDS COUNT TYPE DOUBLE) m",
     "UNCERTAIN BETWEEN (imprecise timestamps) is not supported over a streaming source"),
])
def test_streaming_mistakes_are_errors_before_any_job(spark, tmp_path: Path, statement: str, message: str) -> None:
    (tmp_path / "e").mkdir()
    frame = spark.readStream.schema("k INT, ts TIMESTAMP, n BIGINT, action STRING, tags ARRAY<STRING>").json(
        str(tmp_path / "e"))
    frame.createOrReplaceTempView("nowm")
    frame.withWatermark("ts", "1 minute").createOrReplaceTempView("wm")
    with pytest.raises(StreamingError, match=re.escape(message)) as info:
        sparkseq.sql(spark, f"SELECT 1; {statement}")
    assert "line 1" in str(info.value)


def test_explain_and_workload_over_a_stream(spark, tmp_path: Path) -> None:
    """EXPLAIN names the live operator; a workload runs statements over a stream as live
    operators of their own, not in a shared, cached pass."""
    write_json_files(tmp_path / "src", files=1, keys=2, seconds_per_file=5)
    spark.readStream.schema(SCHEMA).json(str(tmp_path / "src")).withWatermark("ts", "3 seconds") \
        .createOrReplaceTempView("clicks_live")
    spark.read.schema(SCHEMA).json(str(tmp_path / "src")).createOrReplaceTempView("clicks_rest")
    text = FUNNEL.format(source="clicks_live")
    shown = sparkseq.explain(spark, text)
    assert "streaming source: state per partition key" in shown and "append mode" in shown
    batch = FUNNEL.format(source="clicks_rest")
    script = f"{batch}; {text}; {text.replace('funnels, revenue', 'funnels')}"
    assert sparkseq.plan_workload(spark, script).groups == ()  # the two live ones do not share a cached pass
    frames = sparkseq.workload(spark, script)
    assert [f.isStreaming for f in frames] == [False, True, True]
