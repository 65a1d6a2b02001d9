"""Spark Connect clients of a server with a token and TLS, for ``test_server_security.py``.

A Connect client cannot share a Python process with the suite's classic SparkSession,
so they run here: ``python -m tests.servers.security_clients OUT_DIR`` reads ``[[name, url],
...]`` (JSON) from stdin and, for each, connects a new Connect session to ``url`` and
runs ``INSERT OVERWRITE DIRECTORY 'OUT_DIR/<name>'`` — a statement whose effect the
test can see on disk — then prints one JSON object: ``{name: "ok" or "error: ..."}``.
The client retries a failed connection once (PySpark's default keeps retrying an
unreachable server for ten minutes). Run it with ``SPARK_CONNECT_AUTHENTICATE_TOKEN``
unset: PySpark would send that token to every URL without one of its own.
"""

from __future__ import annotations

import json
import sys


def attempt(url: str, folder: str) -> str:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.client.retries import DefaultPolicy

    try:
        spark = SparkSession.builder.remote(url).create()
        spark.client.set_retry_policies([DefaultPolicy(max_retries=1)])  # type: ignore[attr-defined]
        spark.sql(f"INSERT OVERWRITE DIRECTORY '{folder}' USING csv SELECT 1 AS x")
        spark.stop()
        return "ok"
    except Exception as exc:  # noqa: BLE001 - the test asserts on the message
        return f"error: {type(exc).__name__}: {' '.join(str(exc).split())[:600]}"


if __name__ == "__main__":
    out = sys.argv[1]
    cases = json.loads(sys.stdin.read())
    print(json.dumps({name: attempt(url, f"{out}/{name}") for name, url in cases}), flush=True)
