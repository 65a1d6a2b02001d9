"""A Spark session whose JVM lacks sparkseq's jar (a real one, in a subprocess: the tests'
session has the jar): MATCH_AGGREGATE runs on the Python path, and live MATCH_AGGREGATE on
the Python operator, each after one :class:`~sparkseq.spark.jvm_path.JvmPathUnavailable`
warning, with the same rows.

One subprocess, one JVM, runs both: the batch statements, then the stream, with the
once-per-process warning armed again in between, so that each part starts as a process
of its own would (the JVM path: tests/spark/test_spark_jvm_path.py; the live operator:
tests/spark/test_spark_jvm_live.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.live_cases import json_time

ROOT = Path(__file__).resolve().parents[2]

WITHOUT_JAR = textwrap.dedent("""
    import json, sys, warnings
    from pyspark.sql import SparkSession
    import sparkseq
    from sparkseq.spark import jvm_path
    from sparkseq.spark.jvm_path import JvmPathUnavailable
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1").getOrCreate())  # no sparkseq jar on the class path
    sparkseq.register(spark)

    def warned(caught):
        return [str(w.message) for w in caught if issubclass(w.category, JvmPathUnavailable)]

    # batch: the JVM path
    spark.sql("CREATE TEMP VIEW ev AS SELECT * FROM VALUES ('u', 1, 'A'), ('u', 2, 'B'), ('u', 2, 'A'), "
              "('u', 3, 'B') AS t(k, ts, type)")
    text = ("SELECT k, n FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B) TYPE BY type "
            "MEASURES COUNT(*) AS n) AS m")
    out = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for path in ("auto", "jvm", "auto"):
            spark.conf.set("sparkseq.path", path)
            out.setdefault(path, []).append([tuple(r) for r in sparkseq.sql(spark, text).collect()])
        explained = sparkseq.explain(spark, text)
    report = {"batch": {"rows": out, "explained": explained, "warnings": warned(caught)}}
    spark.conf.unset("sparkseq.path")
    spark.catalog.dropTempView("ev")

    # live: the operator, as in a process of its own (the warning comes once per process)
    jvm_path._warned = False
    spark.readStream.schema("k STRING, ts TIMESTAMP, type STRING").json(sys.argv[1]) \\
        .withWatermark("ts", "1 second").createOrReplaceTempView("ev")
    text = ("SELECT k, n FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B) "
            "TYPE BY type MEASURES COUNT(*) AS n WITHIN INTERVAL 10 SECONDS SLIDE INTERVAL 10 SECONDS) AS m")
    rows = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = sparkseq.sql(spark, text)
        query = (frame.writeStream.foreachBatch(lambda f, b: rows.extend(tuple(r) for r in f.collect()))
                 .option("checkpointLocation", sys.argv[2]).trigger(availableNow=True).start())
        query.awaitTermination()
        explained = sparkseq.explain(spark, text)
    report["live"] = {"rows": sorted(rows), "explained": explained, "warnings": warned(caught)}
    print(json.dumps(report))
""")


@pytest.fixture(scope="module")
def without_jar(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """What :data:`WITHOUT_JAR` reports: per part (``batch``, ``live``) its rows, EXPLAIN and warnings."""
    folder = tmp_path_factory.mktemp("without_jar")
    (folder / "src").mkdir()
    rows = [("u", 1, "A"), ("u", 2, "B"), ("u", 2, "A"), ("u", 3, "B"), ("v", 100, "A")]
    (folder / "src" / "e.json").write_text("".join(
        json.dumps({"k": k, "ts": json_time(s), "type": t}) + "\n" for k, s, t in rows))
    # the workers' Python is this one, as sparkseq.session() would have it (without a session
    # of the tests started before, PYSPARK_PYTHON is unset and the workers would run `python3`)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", WITHOUT_JAR, str(folder / "src"), str(folder / "ck")],
                          capture_output=True, text=True, timeout=900, env=env, cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_jvm_without_the_jar_runs_the_python_path_with_one_warning(without_jar: dict[str, dict]) -> None:
    report = without_jar["batch"]
    assert report["rows"] == {"auto": [[["u", 3]], [["u", 3]]], "jvm": [[["u", 3]]]}
    assert len(report["warnings"]) == 1
    assert "sparkseq.jvm.SparkSeqAggregates is not on this JVM's class path" in report["warnings"][0]
    assert "not on the JVM path: the class" in report["explained"]


def test_a_jvm_without_the_jar_runs_the_python_operator_with_one_warning(without_jar: dict[str, dict]) -> None:
    report = without_jar["live"]
    assert report["rows"] == [["u", 3]]
    assert len(report["warnings"]) == 1
    assert "sparkseq.jvm.SparkSeqAggregates is not on this JVM's class path" in report["warnings"][0]
    assert "applyInPandasWithState per bucket of keys" in report["explained"]
