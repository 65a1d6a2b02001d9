"""MATCH_AGGREGATE and ``seq_*`` in SQL text sent to Spark directly (JDBC clients of the Thrift server).

Spark's parser knows nothing of MATCH_AGGREGATE, Spark cannot run a ``seq_*`` function
beside its own aggregates (the compiler splits such a SELECT,
:mod:`sql_rewrites.aggregates`), and a JDBC client's statement never passes through
:func:`sparkseq.sql`. A small session extension closes the gap:
``sparkseq/jvm/SparkSeqExtension.java`` wraps Spark's parser and hands every
statement containing ``MATCH_AGGREGATE (`` or a call of a grouped-aggregate Python
function (``seq_count(`` ... ``sparkseq_count_windows(``,
:data:`sparkseq.registration.PYTHON_AGGREGATES`) to a rewriter in this Python driver, over
py4j's callback server; the rewriter (:class:`Rewriter`) is :func:`sparkseq.sql_api.rewrite`,
and Spark parses the plain SQL it returns (the statement itself when it needs no change). The in-process Thrift server shares the
driver's JVM, so the call back into Python is local.

Three steps, because Spark reads ``spark.sql.extensions`` only when a session is built:

1. :func:`extension_conf` compiles the extension once (the JDK's ``javac`` against the
   installed pyspark jars, cached under the scratch directory) and returns the Spark
   settings that load it; pass them to :func:`sparkseq.session` *before* the JVM starts;
2. :func:`install` points the extension at a :class:`Rewriter` for a session;
3. :func:`uninstall` removes it (statements then reach Spark's parser unchanged).

Without a JDK, or for a session built without the settings, :func:`extension_conf`
and :func:`install` raise :class:`JvmParserUnavailable` saying why; MATCH_AGGREGATE then
still works in views created by :func:`sparkseq.sql` (e.g. from a Thrift init file)
and the ``seq_*`` functions need no rewriting at all.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from sparkseq.session import scratch_dir
from udafs.errors import SparkSeqError

CLASS_NAME = "sparkseq.jvm.SparkSeqExtension"
SOURCE = Path(__file__).resolve().parent / "jvm" / "SparkSeqExtension.java"
#: Must equal ``SparkSeqExtension.ERROR_PREFIX``: a rewriter result that is an error message.
ERROR_PREFIX = "\x00sparkseq-error:"
JAVAC_TIMEOUT_S = 180  # javac takes 2-3 s here; a loaded 2-core machine can take far longer


class JvmParserUnavailable(SparkSeqError):
    """The parser extension cannot be used; the message says why and what to do instead."""


def extension_conf(conf: dict[str, str] | None = None) -> dict[str, str]:
    """Spark settings that load the parser extension, merged into ``conf``'s own values.

    Compiles the extension on first use. Pass the result to :func:`sparkseq.session`
    (only a session built with it, in a JVM started with it, has the extension).

    Raises
    ------
    JvmParserUnavailable
        No ``javac`` (a JRE without JDK), or compiling failed.
    """
    conf = dict(conf or {})
    classes = str(compiled_classes())
    extensions = [e for e in conf.get("spark.sql.extensions", "").split(",") if e.strip()]
    classpath = [p for p in conf.get("spark.driver.extraClassPath", "").split(os.pathsep) if p]
    conf["spark.sql.extensions"] = ",".join(dict.fromkeys([*extensions, CLASS_NAME]))
    conf["spark.driver.extraClassPath"] = os.pathsep.join(dict.fromkeys([*classpath, classes]))
    return conf


def compiled_classes() -> Path:
    """The directory holding the compiled extension, compiling it if needed.

    Cached per source text and pyspark version under ``<scratch>/jvm/``; a concurrent
    first use by two processes compiles twice and keeps one result.
    """
    key = hashlib.sha1(SOURCE.read_bytes() + pyspark.__version__.encode()).hexdigest()[:12]
    target = scratch_dir() / "jvm" / key
    if (target / "sparkseq" / "jvm" / "SparkSeqExtension.class").is_file():
        return target
    javac = _javac()
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=target.parent))
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    command = [javac, "-nowarn", "-proc:none", "-encoding", "UTF-8", "-cp", str(jars / "*"),
               "-d", str(building), str(SOURCE)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        shutil.rmtree(building, ignore_errors=True)
        raise JvmParserUnavailable(f"compiling {SOURCE.name} took over {JAVAC_TIMEOUT_S} s") from None
    if done.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        raise JvmParserUnavailable(f"javac could not compile {SOURCE.name} against pyspark "
                                   f"{pyspark.__version__}:\n{done.stderr.strip()}")
    try:
        building.rename(target)
    except OSError:  # another process finished first
        shutil.rmtree(building, ignore_errors=True)
    return target


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(home) / "bin" / "javac")] if home else []
    candidates.append(shutil.which("javac") or "")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise JvmParserUnavailable("no javac found (a Java runtime without the JDK, or JAVA_HOME "
                               "pointing at one); install a JDK 17+ to send MATCH_AGGREGATE text over JDBC")


class Rewriter:
    """The py4j callback (``java.util.function.Function<String, String>``) the extension calls.

    Returns the statement as plain Spark SQL, or :data:`ERROR_PREFIX` followed by the
    message the client should see. It never raises: an exception escaping a py4j
    callback reaches the client as a Python traceback.
    """

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def apply(self, text: str) -> str:
        """Rewrite one statement (called from the JVM, on a py4j callback thread)."""
        from sparkseq.sql_api import rewrite

        try:
            statements = rewrite(self.spark, text)
        except SparkSeqError as exc:
            return f"{ERROR_PREFIX}{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a bug must reach the client as a message
            return f"{ERROR_PREFIX}sparkseq could not rewrite the statement: {type(exc).__name__}: {exc}"
        if len(statements) != 1:
            return f"{ERROR_PREFIX}send one statement at a time (got {len(statements)})"
        return statements[0]

    class Java:
        implements = ["java.util.function.Function"]


def install(spark: SparkSession) -> Rewriter:
    """Route MATCH_AGGREGATE statements of ``spark``'s JVM through a :class:`Rewriter` for ``spark``.

    Raises
    ------
    JvmParserUnavailable
        When ``spark`` was not built with :func:`extension_conf`'s settings.
    """
    from pyspark.java_gateway import ensure_callback_server_started

    extension = _extension_class(spark)
    if extension is None or not extension.isInjected():
        raise JvmParserUnavailable("this SparkSession was built without sparkseq's parser extension "
                                   "(sparkseq.jvm_parser.extension_conf() settings, given before the JVM starts)")
    ensure_callback_server_started(spark.sparkContext._gateway)
    rewriter = Rewriter(spark)
    extension.setRewriter(rewriter)
    return rewriter


def uninstall(spark: SparkSession) -> None:
    """Send statements to Spark's parser unchanged again."""
    extension = _extension_class(spark)
    if extension is not None and extension.isInjected():
        extension.setRewriter(None)


def _extension_class(spark: SparkSession) -> object | None:
    """The extension's class in ``spark``'s JVM, or None when it is not on the classpath."""
    jvm = spark.sparkContext._jvm
    try:
        jvm.java.lang.Class.forName(CLASS_NAME)
    except Exception:  # noqa: BLE001 - py4j reports ClassNotFoundException as a generic error
        return None
    return functools.reduce(getattr, CLASS_NAME.split("."), jvm)


__all__ = ["CLASS_NAME", "JvmParserUnavailable", "Rewriter", "compiled_classes", "extension_conf", "install",
           "uninstall"]
