"""Load test of ``python -m sparkseq thriftserver``: concurrent JDBC-protocol clients on loopback.

Starts the server in a subprocess on 127.0.0.1 (a free port) with an init file over the
bundled sample clicks (30,812 rows, 2,977 customers), computes every query's answer
once with a single client, then runs ``--clients`` concurrent clients for
``--seconds``, each with its own connection, cycling through the queries: views with
MATCH_AGGREGATE and with the ``seq_*`` functions, direct function calls, sliding
windows and MATCH_AGGREGATE text (when the banner says the server accepts it).
Every result is compared with the single-client answer.

The clients speak HiveServer2's Thrift protocol through impyla (the protocol the Hive
JDBC driver speaks; the test suite covers beeline itself). Bounded and self-stopping:
no query starts after the deadline, a query still running ``--grace`` seconds after it
counts as an error, and the server is stopped with SIGTERM (killed if it does not exit).

Run: ``.venv/bin/python bench/thrift_load.py [--clients 8] [--seconds 60]``.
Exit code 0 only when there were no errors and no wrong results.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CLICKS = ROOT / "sparkseq" / "data" / "clicks.csv"  # the demo's sample clicks (sparkseq.demo)
HOST = "127.0.0.1"  # loopback only, always

INIT = """
-- cached as a global temporary view: a client's disconnect uncaches temporary views (docs/bi.md)
CREATE GLOBAL TEMP VIEW clicks (customer_id INT, ts TIMESTAMP, action STRING, item STRING, price DECIMAL(10,2))
  USING csv OPTIONS (path '{csv}', header 'true');
CACHE TABLE global_temp.clicks;

-- the A-Seq Kindle funnel, per customer
CREATE TEMP VIEW kindle_funnels AS
SELECT customer_id, funnels, revenue FROM global_temp.clicks MATCH_AGGREGATE (
  PARTITION BY customer_id ORDER BY ts
  PATTERN SEQ(VK, BK, !REC, VC, BC)
  DEFINE VK  AS action = 'view' AND item = 'kindle', BK AS action = 'buy' AND item = 'kindle',
         REC AS action = 'recommendation',
         VC  AS action = 'view' AND item = 'case',   BC AS action = 'buy' AND item = 'case'
  MEASURES COUNT(*) AS funnels, SUM(BC.price) AS revenue
  WITHIN INTERVAL 10 MINUTES) AS m;

-- view-then-buy per item with the BI functions
CREATE TEMP VIEW item_conversions AS
SELECT item, seq_count(ts, action, 'SEQ(view, buy)', INTERVAL 30 MINUTES) AS conversions,
       seq_sum(ts, action, 'SEQ(view, buy)', INTERVAL 30 MINUTES, 'buy', price) AS revenue
FROM global_temp.clicks GROUP BY item
"""

QUERIES = {
    "view:match_aggregate": "SELECT customer_id, funnels, revenue FROM kindle_funnels WHERE funnels > 0 "
                            "ORDER BY customer_id",
    "view:seq_functions": "SELECT item, conversions, revenue FROM item_conversions ORDER BY item",
    "call:seq_count": "SELECT customer_id % 10 AS bucket, "
                      "seq_count(ts, action, 'SEQ(view, view, buy)', INTERVAL 20 MINUTES) AS n "
                      "FROM global_temp.clicks GROUP BY customer_id % 10 ORDER BY bucket",
    "call:windows": "SELECT w.window_start, SUM(w.count) AS n FROM (SELECT customer_id, "
                    "seq_count_windows(ts, action, 'SEQ(view, buy)', INTERVAL 1 HOUR, INTERVAL 1 HOUR) AS ws "
                    "FROM global_temp.clicks GROUP BY customer_id) LATERAL VIEW inline(ws) w "
                    "GROUP BY w.window_start ORDER BY w.window_start",
}
MATCH_AGGREGATE_TEXT = {
    "text:match_aggregate": "SELECT item, n FROM (SELECT item, customer_id, ts, action FROM global_temp.clicks) "
                            "MATCH_AGGREGATE (PARTITION BY item ORDER BY ts PATTERN SEQ(view, !recommendation, buy) "
                            "TYPE BY action MEASURES COUNT(*) AS n WITHIN INTERVAL 5 MINUTES) AS m ORDER BY item",
}


@dataclass
class Tally:
    """What the clients did; shared by the client threads under ``lock``."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long clients start new queries (default 60)")
    parser.add_argument("--grace", type=float, default=180.0, help="how long running queries may finish after that")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sparkseq-thrift-load-") as folder:
        init = Path(folder) / "views.sql"
        init.write_text(INIT.format(csv=CLICKS))
        port = _free_port()
        with (Path(folder) / "server.log").open("w+") as log:
            server = subprocess.Popen([sys.executable, "-m", "sparkseq", "thriftserver", "--host", HOST,
                                       "--port", str(port), "--init-file", str(init), "--in-memory-catalog"],
                                      cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
            try:
                return _bench(args, port, server, log)
            finally:
                _stop(server)


def _bench(args: argparse.Namespace, port: int, server: subprocess.Popen[str], log: object) -> int:
    started = time.monotonic()
    banner = _banner(server, log)
    print(f"server up in {time.monotonic() - started:.1f} s on {HOST}:{port}")
    queries = dict(QUERIES)
    if "MATCH_AGGREGATE text from clients: yes" in banner:
        queries.update(MATCH_AGGREGATE_TEXT)
    else:
        print("(the server does not accept MATCH_AGGREGATE text; that query is left out)")
    reference, cold = _single_client(port, queries)
    again, warm = _single_client(port, queries)  # the first run of each query starts Python workers
    print(f"{'single client':<24}{'rows':>6}{'cold s':>9}{'warm s':>9}")
    for name in queries:
        same = "" if again[name] == reference[name] else "  (second run differs!)"
        print(f"{name:<24}{len(reference[name]):>6}{cold[name]:>9.2f}{warm[name]:>9.2f}{same}")
    tally = Tally()
    tally.errors += [f"single client {n}: the second run differs from the first" for n in queries
                     if again[n] != reference[n]]
    deadline = time.monotonic() + args.seconds
    threads = [threading.Thread(target=_client, args=(i, port, queries, reference, deadline, tally), daemon=True)
               for i in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(0.0, deadline + args.grace - time.monotonic()))
    stuck = sum(thread.is_alive() for thread in threads)
    if stuck:
        tally.errors.append(f"{stuck} client(s) still waiting {args.grace:.0f} s after the deadline")
    _report(args, queries, tally, time.monotonic() - deadline + args.seconds)
    return 0 if not tally.errors and not tally.mismatches else 1


def _connect(port: int) -> object:
    from impala.dbapi import connect

    return connect(host=HOST, port=port, auth_mechanism="PLAIN", user="bench", password="-", timeout=600)


def _run(connection: object, sql: str) -> list[tuple]:
    cursor = connection.cursor()  # type: ignore[attr-defined]
    try:
        cursor.execute(sql)
        return [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in cursor.fetchall()]
    finally:
        cursor.close()


def _single_client(port: int, queries: dict[str, str]) -> tuple[dict[str, list[tuple]], dict[str, float]]:
    connection = _connect(port)
    answers, seconds = {}, {}
    try:
        for name, sql in queries.items():
            started = time.monotonic()
            answers[name] = _run(connection, sql)
            seconds[name] = time.monotonic() - started
    finally:
        connection.close()  # type: ignore[attr-defined]
    return answers, seconds


def _client(number: int, port: int, queries: dict[str, str], reference: dict[str, list[tuple]],
            deadline: float, tally: Tally) -> None:
    names = list(queries)
    try:
        connection = _connect(port)
    except Exception as exc:  # noqa: BLE001 - reported, not raised in a thread
        with tally.lock:
            tally.errors.append(f"client {number}: cannot connect: {exc}")
        return
    try:
        turn = number
        while time.monotonic() < deadline:
            name = names[turn % len(names)]
            turn += 1
            started = time.monotonic()
            try:
                rows = _run(connection, queries[name])
            except Exception as exc:  # noqa: BLE001
                with tally.lock:
                    tally.errors.append(f"client {number} {name}: {str(exc).splitlines()[0][:300]}")
                continue
            with tally.lock:
                tally.latencies[name].append(time.monotonic() - started)
                if rows != reference[name]:
                    tally.mismatches.append(f"client {number} {name}: {len(rows)} rows differ from the single client's")
    finally:
        connection.close()  # type: ignore[attr-defined]


def _report(args: argparse.Namespace, queries: dict[str, str], tally: Tally, elapsed: float) -> None:
    every = [s for name in queries for s in tally.latencies[name]]
    print(f"\n{args.clients} concurrent clients, {args.seconds:.0f} s of new queries, "
          f"{elapsed:.1f} s until the last finished")
    print(f"{'query':<24}{'done':>6}{'p50 s':>9}{'p95 s':>9}")
    for name in queries:
        done = tally.latencies[name]
        if done:
            print(f"{name:<24}{len(done):>6}{np.percentile(done, 50):>9.2f}{np.percentile(done, 95):>9.2f}")
        else:
            print(f"{name:<24}{0:>6}")
    if every:
        print(f"{'all':<24}{len(every):>6}{np.percentile(every, 50):>9.2f}{np.percentile(every, 95):>9.2f}")
    print(f"queries completed: {len(every)}  ({len(every) / elapsed * 60:.1f} per minute; machine load average "
          f"{os.getloadavg()[1]:.1f} over the last 5 min, {os.cpu_count()} cores)")
    print(f"errors: {len(tally.errors)}")
    for error in tally.errors[:10]:
        print(f"  {error}")
    print(f"results equal to the single-client answer: {len(every) - len(tally.mismatches)} of {len(every)}")
    for mismatch in tally.mismatches[:10]:
        print(f"  {mismatch}")


def _banner(server: subprocess.Popen[str], log: object, timeout: float = 300.0) -> str:
    """The server's start-up text (it ends with "Stop with ..."); fails if the server exits."""
    assert server.stdout is not None
    lines: list[str] = []
    timer = threading.Timer(timeout, server.kill)  # readline has no timeout of its own
    timer.start()
    try:
        for line in server.stdout:
            lines.append(line)
            if line.startswith("Stop with"):
                return "".join(lines)
    finally:
        timer.cancel()
    log.seek(0)  # type: ignore[attr-defined]
    raise SystemExit(f"the server did not start (exit code {server.wait()}):\n{log.read()[-3000:]}")  # type: ignore[attr-defined]


def _stop(server: subprocess.Popen[str]) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=60)
            print(f"server stopped on SIGTERM, exit code {code}")
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            print("server did not stop within 60 s of SIGTERM; killed")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
