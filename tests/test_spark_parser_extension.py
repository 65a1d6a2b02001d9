"""MATCH_AGGREGATE in plain ``spark.sql``: the shipped parser extension, loaded by
``sparkseq.session()`` (the suite's shared session is one), without a JDK at run time.

The jar's recorded source digest must equal the shipped source's; with a JDK present
the jar is rebuilt, compared class by class and linked in the running JVM. A session
whose JVM started without the extension is tested in a subprocess
(``test_connect_server.py``, the plain server).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pyspark
import pytest
from pyspark.errors import AnalysisException, PySparkException

import sparkseq
from sparkseq.spark import jars, jvm_parser
from sql_rewrites.errors import ParameterMarkerError

ROOT = Path(__file__).resolve().parent.parent
EVENTS = [(1, 1, "view"), (1, 2, "buy"), (1, 3, "buy"), (2, 1, "view"), (2, 5, "view"), (2, 6, "buy"), (3, 1, "buy"),
          (3, 2, "view")]
#: SEQ(view, buy) per k, without a window: (1: 1 view x 2 buys) (2: 2 views x 1 buy) (3: no view before a buy)
EXPECTED = [(1, 2), (2, 2), (3, 0)]
QUERY = ("SELECT k, n FROM {src} MATCH_AGGREGATE (PARTITION BY k ORDER BY t PATTERN SEQ(A, B) "
         "DEFINE A AS action = {a}, B AS action = {b} MEASURES COUNT(*) AS n) AS m ORDER BY k")


def query(src: str = "ext_events", a: str = "'view'", b: str = "'buy'") -> str:
    return QUERY.replace("{src}", src).replace("{a}", a).replace("{b}", b)


@pytest.fixture(scope="module")
def events(spark) -> str:
    spark.createDataFrame(EVENTS, "k int, t int, action string").createOrReplaceTempView("ext_events")
    return "ext_events"


# --- the shipped jar -------------------------------------------------------------------------


def test_shipped_jar_was_built_from_the_shipped_source() -> None:
    info = jars.build_info()
    assert info["source_sha256"] == jars.source_digest(), (
        "sparkseq/jvm/sparkseq-extension.jar is stale: run python -m sparkseq.spark.jars --build")
    assert info["release"] == "17"
    assert jars.check_jar() == jars.JAR


def test_a_jar_from_another_source_is_refused(tmp_path: Path) -> None:
    edited = tmp_path / "SparkSeqExtension.java"
    edited.write_bytes(jars.SOURCE.read_bytes() + b"// edited\n")
    assert jars.source_digest(edited) != jars.source_digest()
    stale = tmp_path / "stale.jar"
    with zipfile.ZipFile(jars.JAR) as shipped, zipfile.ZipFile(stale, "w") as copy:
        for entry in shipped.infolist():
            data = shipped.read(entry)
            if entry.filename == jars.BUILD_INFO:
                data = data.replace(jars.source_digest().encode(), jars.source_digest(edited).encode())
            copy.writestr(entry, data)
    with pytest.raises(jars.JvmParserUnavailable,
                       match="built from another version of SparkSeqExtension.java; "
                             "rebuild it: python -m sparkseq.spark.jars --build"):
        jars.check_jar(stale)


@pytest.mark.skipif(not shutil.which("javac"), reason="needs a JDK's javac")
def test_rebuilt_jar_equals_the_shipped_one_and_links_against_spark(spark, tmp_path: Path) -> None:
    rebuilt = jars.build(tmp_path / "rebuilt.jar")
    with zipfile.ZipFile(rebuilt) as new, zipfile.ZipFile(jars.JAR) as shipped:
        assert new.namelist() == shipped.namelist()
    if jars.build_info(rebuilt)["javac"] == jars.build_info()["javac"]:  # same compiler: same bytes
        assert rebuilt.read_bytes() == jars.JAR.read_bytes()
    # Load the rebuilt classes beside a private copy of pyspark's jars (the session's own
    # class loader already holds the shipped ones) and apply the extension to a
    # SparkSessionExtensions: linking fails there if the jar does not fit this Spark.
    gateway, jvm = spark.sparkContext._gateway, spark.sparkContext._jvm
    paths = [rebuilt, *sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))]
    urls = gateway.new_array(jvm.java.net.URL, len(paths))
    for i, path in enumerate(paths):
        urls[i] = jvm.java.io.File(str(path)).toURI().toURL()
    loader = jvm.java.net.URLClassLoader(urls, None)
    extension = jvm.java.lang.Class.forName(jars.CLASS_NAME, True, loader)
    extensions = jvm.java.lang.Class.forName("org.apache.spark.sql.SparkSessionExtensions", True, loader)
    apply = extension.getMethod("apply", java_array(gateway, jvm.java.lang.Class, [extensions]))
    apply.invoke(new_instance(gateway, extension), java_array(gateway, jvm.java.lang.Object,
                                                              [new_instance(gateway, extensions)]))
    assert extension.getMethod("isInjected", java_array(gateway, jvm.java.lang.Class, [])).invoke(
        None, java_array(gateway, jvm.java.lang.Object, []))
    loader.close()


def java_array(gateway: object, element: object, values: list[object]) -> object:
    array = gateway.new_array(element, len(values))  # type: ignore[attr-defined]
    for i, value in enumerate(values):
        array[i] = value
    return array


def new_instance(gateway: object, cls: object) -> object:
    jvm = gateway.jvm  # type: ignore[attr-defined]
    constructor = cls.getConstructor(java_array(gateway, jvm.java.lang.Class, []))  # type: ignore[attr-defined]
    return constructor.newInstance(java_array(gateway, jvm.java.lang.Object, []))


def test_build_command_checks_the_jar() -> None:
    done = subprocess.run([sys.executable, "-m", "sparkseq.spark.jars", "--check"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "built from SparkSeqExtension.java" in done.stdout


# --- spark.sql ---------------------------------------------------------------------------------


def test_spark_sql_takes_match_aggregate(spark, events: str) -> None:
    assert [tuple(r) for r in spark.sql(query()).collect()] == EXPECTED
    assert [tuple(r) for r in sparkseq.sql(spark, query()).collect()] == EXPECTED
    # a view over MATCH_AGGREGATE created through spark.sql, read by name
    spark.sql(f"CREATE OR REPLACE TEMP VIEW ext_funnels AS {query()}")
    assert [tuple(r) for r in spark.table("ext_funnels").orderBy("k").collect()] == EXPECTED


def test_dataframe_arguments_and_parameter_markers(spark, events: str) -> None:
    frame = spark.table(events).where("k < 3")
    assert [tuple(r) for r in spark.sql(query("{c}"), c=frame).collect()] == EXPECTED[:2]
    named = spark.sql(query(a=":first", b=":second") + " LIMIT :rows",
                      args={"first": "view", "second": "buy", "rows": 2})
    assert [tuple(r) for r in named.collect()] == EXPECTED[:2]
    positional = spark.sql("SELECT ? AS tag, * FROM (" + query(a="?", b="?") + ") WHERE k < ?",
                           args=["x", "view", "buy", 3])
    assert [tuple(r) for r in positional.collect()] == [("x", *row) for row in EXPECTED[:2]]
    swapped = spark.sql(query(a="?", b="?"), args=["buy", "view"])  # A = buy, B = view
    assert [tuple(r) for r in swapped.collect()] == [(1, 0), (2, 0), (3, 1)]


def test_positional_markers_the_rewrite_would_reorder_are_refused(spark, events: str) -> None:
    # DEFINE lists B first, but the row mask is built in pattern order (A, then B)
    text = query(a="?", b="?").replace("DEFINE A AS action = ?, B AS action = ?",
                                       "DEFINE B AS action = ?, A AS action = ?")
    with pytest.raises(PySparkException, match=r"ParameterMarkerError: positional parameter markers \(\?\) cannot "
                                               r"be used here.*use named markers \(:name\).* column 111"):
        spark.sql(text, args=["buy", "view"]).collect()
    with pytest.raises(ParameterMarkerError, match="column 111"):
        sparkseq.sql(spark, text, args=["buy", "view"])
    named = text.replace("B AS action = ?", "B AS action = :b").replace("A AS action = ?", "A AS action = :a")
    assert [tuple(r) for r in spark.sql(named, args={"a": "view", "b": "buy"}).collect()] == EXPECTED


def test_compile_errors_name_line_and_column(spark, events: str) -> None:
    with pytest.raises(PySparkException, match=r"USER_RAISED_EXCEPTION\] UnknownColumnError: unknown column 'actoin' "
                                               r"in DEFINE of A; did you mean 'action'.* at line 1, column 102"):
        spark.sql(query().replace("A AS action", "A AS actoin"))


def test_another_session_of_the_jvm_rewrites_against_its_own_catalog(spark) -> None:
    other = spark.newSession()
    other.createDataFrame([(9, 1, "view"), (9, 2, "buy")], "k int, t int, action string") \
        .createOrReplaceTempView("ext_own")
    assert [tuple(r) for r in other.sql(query("ext_own")).collect()] == [(9, 1)]
    # sparkseq's functions are registered in it before its first statement
    assert other.sql("SELECT seq_count(t, action, 'SEQ(view, buy)') FROM ext_own").collect()[0][0] == 1
    with pytest.raises(AnalysisException):
        other.table("ext_events")  # temporary views stay per session


def test_without_the_rewriter_the_error_says_what_to_do(spark, events: str) -> None:
    jvm_parser.uninstall(spark)
    try:
        with pytest.raises(PySparkException, match=r"MATCH_AGGREGATE needs sparkseq's rewriter.* none is installed "
                                                   r"in this Spark driver.*sparkseq.sql\(spark, text\)"):
            spark.sql(query())
        assert [tuple(r) for r in sparkseq.sql(spark, query()).collect()] == EXPECTED
    finally:
        jvm_parser.install(spark)
    assert [tuple(r) for r in spark.sql(query()).collect()] == EXPECTED


def test_session_again_reuses_the_rewriter_without_warning(spark, recwarn: pytest.WarningsRecorder) -> None:
    again = sparkseq.session("local[2]", conf={"spark.sql.shuffle.partitions": "2"})  # the fixture's settings
    assert again._jsparkSession.equals(spark._jsparkSession)
    assert not [w for w in recwarn if issubclass(w.category, sparkseq.ParserExtensionWarning)]
    inline = "(SELECT * FROM VALUES (1, 1, 'view'), (1, 2, 'buy') AS v(k, t, action))"
    assert [tuple(r) for r in again.sql(query(inline)).collect()] == [(1, 1)]
