"""MATCH_AGGREGATE and ``seq_*`` in SQL text sent to Spark directly: ``spark.sql``, JDBC, Spark Connect.

Spark's parser knows nothing of MATCH_AGGREGATE, Spark cannot run a ``seq_*`` function
beside its own aggregates (the compiler splits such a SELECT,
:mod:`sql_rewrites.aggregates`), and text given to ``spark.sql``, sent by a JDBC client
of the Thrift server or by a Spark Connect client never passes through
:func:`sparkseq.sql`. A small session extension closes the gap:
``sparkseq/jvm/SparkSeqExtension.java`` wraps Spark's parser of every session and hands
each statement containing ``MATCH_AGGREGATE (`` or a call of a grouped-aggregate Python
function (``seq_count(`` ... ``sparkseq_count_windows(``,
:data:`sparkseq.registration.PYTHON_AGGREGATES`) — with the session parsing it — to a
:class:`Rewriter` in this Python driver, over py4j's callback server. The rewriter is
:func:`sparkseq.sql_api.rewrite` for that session, and Spark parses the plain SQL it
returns (the statement itself when it needs no change). Servers started in the driver
(Thrift, Spark Connect) share its JVM, so the call back into Python is local.

The extension ships compiled, in ``sparkseq/jvm/sparkseq-extension.jar`` (Java 17
bytecode, built against the pinned pyspark's jars): no JDK is needed at run time. The
jar records the SHA-256 of the source it was built from; a jar that does not match
the shipped source is refused. Rebuild it after editing the Java source with::

    python -m sparkseq.jvm_parser --build     # needs a JDK 17+ (javac)

Three steps, because Spark reads ``spark.sql.extensions`` only when a JVM's first
session is built; :func:`sparkseq.session` does all three:

1. :func:`extension_conf` returns the Spark settings that load the extension; they
   must be given *before* the JVM starts;
2. :func:`install` points the extension at a :class:`Rewriter` for a session;
3. :func:`uninstall` removes it (MATCH_AGGREGATE text then fails with a message
   saying to use :func:`sparkseq.sql`).

When the extension cannot be used (a JVM started without it, a stale jar),
:func:`extension_conf` and :func:`install` raise :class:`JvmParserUnavailable`
saying why; :func:`sparkseq.sql` and the ``seq_*`` functions work regardless.
"""

from __future__ import annotations

import argparse
import collections
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyspark
from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

from sparkseq.gateway import jvm
from sql_rewrites.rewriter import OperatorExplanation, StatementExplanation
from sql_rewrites.user_text import condition_origins
from udafs.errors import SparkSeqError

CLASS_NAME = "sparkseq.jvm.SparkSeqExtension"
#: The interface the Python rewriter implements (a nested interface: ``$`` in its binary name).
REWRITER_INTERFACE = CLASS_NAME + "$SessionRewriter"
SOURCE = Path(__file__).resolve().parent / "jvm" / "SparkSeqExtension.java"
JAR = SOURCE.with_name("sparkseq-extension.jar")
#: Inside the jar: what it was built from (``key=value`` lines).
BUILD_INFO = "META-INF/sparkseq-extension.properties"
JAVA_RELEASE = "17"  # Spark 4 runs on Java 17 and later
#: Must equal ``SparkSeqExtension.ERROR_PREFIX``: a rewriter result that is an error message.
ERROR_PREFIX = "\x00sparkseq-error:"
#: Must equal ``SparkSeqExtension.ORIGINS_PREFIX``: a rewritten statement with its :func:`origins_spec`.
ORIGINS_PREFIX = "\x00sparkseq-origins:"
JAVAC_TIMEOUT_S = 180  # javac takes 2-3 s here; a loaded 2-core machine can take far longer
#: Sessions other than the installing one (Spark Connect clients, ``newSession()``) whose
#: Python wrappers the rewriter keeps; a wrapper keeps its JVM session alive.
KEPT_SESSIONS = 64
#: Rewritten statements the rewriter remembers until Spark analysed them (one per
#: statement being parsed at a time, in all sessions).
KEPT_EXPLANATIONS = 64


class JvmParserUnavailable(SparkSeqError):
    """The parser extension cannot be used; the message says why and what to do instead."""


# --- the shipped jar ---------------------------------------------------------------------


def source_digest(source: Path = SOURCE) -> str:
    """SHA-256 of the Java source, line endings normalised (a Windows checkout hashes alike)."""
    return hashlib.sha256(source.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def build_info(jar: Path = JAR) -> dict[str, str]:
    """What ``jar`` records about its build (``source_sha256``, ``pyspark``, ``javac``, ``release``)."""
    with zipfile.ZipFile(jar) as archive:
        text = archive.read(BUILD_INFO).decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def check_jar(jar: Path = JAR) -> Path:
    """``jar`` when it exists and was built from the shipped source.

    Raises
    ------
    JvmParserUnavailable
        Missing, unreadable, or built from another version of the source.
    """
    try:
        recorded = build_info(jar).get("source_sha256")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise JvmParserUnavailable(f"sparkseq's parser extension {jar} cannot be read ({exc}); reinstall sparkseq, "
                                   "or rebuild it: python -m sparkseq.jvm_parser --build (needs a JDK)") from None
    if recorded != source_digest():
        raise JvmParserUnavailable(f"{jar.name} was built from another version of {SOURCE.name}; rebuild it: "
                                   "python -m sparkseq.jvm_parser --build (needs a JDK)")
    return jar


def build(jar: Path = JAR) -> Path:
    """Compile the extension with ``javac --release 17`` against the installed pyspark's jars
    and write ``jar``. The jar's bytes depend only on the source and the javac version
    (fixed entry order and timestamps), so a rebuild with the same JDK changes nothing.

    Raises
    ------
    JvmParserUnavailable
        No ``javac``, or compiling failed.
    """
    return compile_jar((SOURCE,), jar, {"source_sha256": source_digest()})


def compile_jar(sources: tuple[Path, ...], jar: Path, info: dict[str, str] | None = None) -> Path:
    """Compile Java ``sources`` with ``javac --release 17`` against the installed pyspark's
    jars into ``jar``, recording ``info`` and the build's pyspark, javac and release in
    :data:`BUILD_INFO` (also what the benches use for their own Java).

    Raises
    ------
    JvmParserUnavailable
        No ``javac``, or compiling failed.
    """
    with tempfile.TemporaryDirectory(prefix="sparkseq-jvm-") as folder:
        classes = Path(folder)
        javac = _javac()
        _compile(javac, classes, sources)
        info = {**(info or {}), "pyspark": pyspark.__version__, "javac": _javac_version(javac),
                "release": JAVA_RELEASE}
        _write_jar(jar, classes, info)
    return jar


def _compile(javac: str, classes: Path, sources: tuple[Path, ...]) -> None:
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    names = ", ".join(source.name for source in sources)
    command = [javac, "--release", JAVA_RELEASE, "-nowarn", "-proc:none", "-encoding", "UTF-8",
               "-cp", str(jars / "*"), "-d", str(classes), *(str(source) for source in sources)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise JvmParserUnavailable(f"compiling {names} took over {JAVAC_TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise JvmParserUnavailable(f"javac could not compile {names} against pyspark "
                                   f"{pyspark.__version__}:\n{done.stderr.strip()}")


def _write_jar(jar: Path, classes: Path, info: dict[str, str]) -> None:
    manifest = "Manifest-Version: 1.0\r\nCreated-By: python -m sparkseq.jvm_parser --build\r\n\r\n"
    entries = {"META-INF/MANIFEST.MF": manifest.encode(),
               BUILD_INFO: "".join(f"{k}={v}\n" for k, v in info.items()).encode()}
    for path in sorted(classes.rglob("*.class")):
        entries[path.relative_to(classes).as_posix()] = path.read_bytes()
    partial = jar.with_name(jar.name + ".partial")
    with zipfile.ZipFile(partial, "w") as archive:
        for name, data in entries.items():
            entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, data)
    partial.replace(jar)


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(home) / "bin" / "javac")] if home else []
    candidates.append(shutil.which("javac") or "")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise JvmParserUnavailable("no javac found (a Java runtime without the JDK, or JAVA_HOME pointing at one); "
                               "building the parser extension needs a JDK 17+")


def _javac_version(javac: str) -> str:
    done = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    return (done.stdout or done.stderr).strip().removeprefix("javac ")


# --- loading it into a session -------------------------------------------------------------


def extension_conf(conf: dict[str, str] | None = None) -> dict[str, str]:
    """Spark settings that load the parser extension, merged into ``conf``'s own values.

    Pass the result to :func:`sparkseq.session` or a ``SparkSession.builder`` (only a
    JVM started with them has the extension); :func:`sparkseq.session` does so itself.

    Raises
    ------
    JvmParserUnavailable
        The shipped jar is missing or does not match the shipped source.
    """
    conf = dict(conf or {})
    jar = str(check_jar())
    extensions = [e for e in conf.get("spark.sql.extensions", "").split(",") if e.strip()]
    classpath = [p for p in conf.get("spark.driver.extraClassPath", "").split(os.pathsep) if p]
    conf["spark.sql.extensions"] = ",".join(dict.fromkeys([*extensions, CLASS_NAME]))
    conf["spark.driver.extraClassPath"] = os.pathsep.join(dict.fromkeys([*classpath, jar]))
    return conf


class Rewriter:
    """The py4j callback (``SparkSeqExtension.SessionRewriter``) the extension calls.

    ``home`` is the session it was installed for. Statements parsed by another session
    of the JVM — a Spark Connect client's, or one from ``newSession()`` — are rewritten
    against that session's catalog. With ``share_session`` (a Spark Connect server),
    such a session starts as a copy of ``home``'s temporary views and sparkseq
    functions and resolves ``HIERARCHY`` with ``home``'s concept hierarchies; without
    it, it gets sparkseq's functions and keeps its own hierarchies.

    The methods never raise: an exception escaping a py4j callback reaches the client
    as a Python traceback.
    """

    def __init__(self, home: SparkSession, *, share_session: bool = False) -> None:
        self.home = home
        self.share_session = share_session
        self._sessions: collections.OrderedDict[str, SparkSession] = collections.OrderedDict()
        self._explained: collections.OrderedDict[tuple[str, str], StatementExplanation] = collections.OrderedDict()
        self._lock = threading.Lock()

    def prepare(self, jsession: object) -> None:
        """Set up a session before its first statement or table name (called from the JVM)."""
        try:
            spark = self.session_for(jsession, keep=False)  # e.g. a streaming query's clone: not kept alive
            if spark is self.home:
                return
            if self.share_session:
                copy_session(self.home, spark)
            elif not spark.catalog.functionExists("seq_count"):  # a cloneSession() has them
                from sparkseq.registration import register

                register(spark)
        except Exception:  # noqa: BLE001 - the session still works; a missing function says so itself
            pass

    def rewrite(self, jsession: object, text: str) -> str:
        """Rewrite one statement of ``jsession`` (called from the JVM, on a py4j callback thread):
        the plain Spark SQL, with where the user's DEFINE conditions stand in it
        (:func:`origins_spec`) when it changed."""
        from sparkseq import hierarchies as registry
        from sparkseq.sql_api import rewrite_explained

        try:
            spark = self.session_for(jsession)
            shared = registry.resolver(self.home) if self.share_session and spark is not self.home else None
            # another session's seq_* functions may carry hierarchies its client registered
            statements = rewrite_explained(spark, text, hierarchies=shared, function_hierarchies=spark is self.home)
            if len(statements) != 1:
                return f"{ERROR_PREFIX}send one statement at a time (got {len(statements)})"
            explained = statements[0]
            if explained.rewritten == text:
                return text
            self._remember(jsession, text, explained)
            return f"{ORIGINS_PREFIX}{safe_origins_spec(explained.rewritten, explained.operators, text)}\x00" \
                   f"{explained.rewritten}"
        except SparkSeqError as exc:
            return f"{ERROR_PREFIX}{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a bug must reach the client as a message
            return f"{ERROR_PREFIX}sparkseq could not rewrite the statement: {type(exc).__name__}: {exc}"

    def place(self, jsession: object, text: str, error: Any) -> str | None:  # error: a py4j JavaObject
        """Spark's analysis ``error`` on the statement ``text`` rewrote to, placed in ``text``
        as :func:`sparkseq.sql` places it (called from the JVM); None to leave Spark's error."""
        from pyspark.errors.exceptions.captured import convert_exception

        from sparkseq.sql_api import placed_error

        try:
            explained = self._recalled(jsession, text)
            if explained is None:
                return None
            placed = placed_error(self.session_for(jsession), text, convert_exception(error), explained)
        except Exception:  # noqa: BLE001 - Spark's own error is still there to report
            return None
        return f"{ERROR_PREFIX}{type(placed).__name__}: {placed}"

    def _remember(self, jsession: Any, text: str, explained: StatementExplanation) -> None:
        """Keep what ``text`` became until the JVM has analysed it (:meth:`place` needs it)."""
        with self._lock:
            self._explained[(jsession.sessionUUID(), text)] = explained
            while len(self._explained) > KEPT_EXPLANATIONS:
                self._explained.popitem(last=False)

    def _recalled(self, jsession: Any, text: str) -> StatementExplanation | None:
        with self._lock:
            return self._explained.get((jsession.sessionUUID(), text))

    def session_for(self, jsession: Any, keep: bool = True) -> SparkSession:  # a py4j JavaObject
        """The Python SparkSession of a JVM session: ``home``, a session sparkseq already
        knows (so its concept hierarchies apply), or a new wrapper (kept for later calls:
        the functions registered through it are remembered with it)."""
        uuid = jsession.sessionUUID()
        for known in _known_sessions(self.home):
            if _uuid(known) == uuid:
                return known
        with self._lock:
            spark = self._sessions.get(uuid)
            if spark is None:
                spark = SparkSession(self.home.sparkContext, jsparkSession=jsession)
                if not keep:
                    return spark
            self._sessions[uuid] = spark
            self._sessions.move_to_end(uuid)
            while len(self._sessions) > KEPT_SESSIONS:
                self._sessions.popitem(last=False)
        return spark

    class Java:
        implements = [REWRITER_INTERFACE]


#: Where a span of the text a statement was compiled from lies in what the user wrote:
#: ``(start, stop) -> (text, start, stop, label)``, the label naming the text when it is
#: not a statement (a DataFrame API argument, ``define['A']``), else ``""``.
Place = Callable[[int, int], tuple[str, int, int, str]]


def origins_spec(rewritten: str, operators: Sequence[OperatorExplanation], text: str,
                 place: Place | None = None) -> str:
    """Where the user's DEFINE conditions stand in ``rewritten`` — the SQL ``operators`` of a
    statement of ``text`` became — as the extension reads it (``SparkSeqExtension.Origins``,
    JSON): the texts the user wrote, and per condition its span in ``rewritten`` and in its text.

    >>> from sql_rewrites.rewriter import explain_statement, split_statements
    >>> text = "SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A AS x = 1) m"
    >>> explained = explain_statement(split_statements(text)[0], text, {"t": {"ts": "int", "x": "int"}},
    ...                               lambda plan: "f")
    >>> spec = json.loads(origins_spec(explained.rewritten, explained.operators, text))
    >>> [(explained.rewritten[a:b + 1], spec["texts"][t]["text"][c:d + 1]) for a, b, t, c, d in spec["spans"]]
    [('`x` = 1', 'x = 1')]
    """
    texts: dict[tuple[str, str], int] = {}
    spans = []
    for start, stop, user_start, user_stop in condition_origins(rewritten, [op.query for op in operators]):
        where, first, last, label = place(user_start, user_stop) if place else (text, user_start, user_stop, "")
        spans.append([start, stop, texts.setdefault((where, label), len(texts)), first, last])
    shown = [{"text": where, **({"type": "argument", "name": label} if label else {})} for where, label in texts]
    return json.dumps({"texts": shown, "spans": spans})


def safe_origins_spec(rewritten: str, operators: Sequence[OperatorExplanation], text: str,
                      place: Place | None = None) -> str:
    """:func:`origins_spec`, or no places at all should finding them fail: the statement still
    runs, and its errors quote no generated SQL."""
    try:
        return origins_spec(rewritten, operators, text, place)
    except Exception:  # noqa: BLE001 - where errors point must never stop a statement
        return json.dumps({"texts": [], "spans": []})


def expect_origins(spark: SparkSession, sql: str, operators: Sequence[OperatorExplanation], text: str,
                   place: Place | None = None) -> None:
    """Tell the extension that the next ``spark.sql(sql)`` runs what ``operators`` of a
    statement of ``text`` became (rewritten in this process: :func:`sparkseq.sql`, the
    DataFrame API), so that an error Spark raises while the job runs points at the DEFINE
    condition the user wrote (see :func:`origins_spec`). Nothing happens without the
    extension (a Spark Connect session, a JVM started without it).
    """
    if not operators or getattr(spark, "_jsparkSession", None) is None:
        return
    extension = _extension_class(spark)
    if extension is None:
        return
    try:
        extension.expectOrigins(sql, safe_origins_spec(sql, operators, text, place))
    except Py4JError:
        pass  # errors keep the generated SQL's positions


_UUIDS: weakref.WeakKeyDictionary[SparkSession, str] = weakref.WeakKeyDictionary()


def _uuid(spark: SparkSession) -> str:
    if spark not in _UUIDS:
        _UUIDS[spark] = spark._jsparkSession.sessionUUID()
    return _UUIDS[spark]


def _known_sessions(home: SparkSession) -> list[SparkSession]:
    """``home`` and every session sparkseq registered functions or hierarchies in."""
    from sparkseq import hierarchies, registration

    return [home, *registration.sessions(), *hierarchies.sessions()]


def copy_session(home: SparkSession, spark: SparkSession) -> None:
    """Give ``spark`` the functions sparkseq registered in ``home`` (``seq_*`` with
    ``home``'s hierarchies bound in, the engine functions its views call) and ``home``'s
    temporary views, as Spark's ``cloneSession`` would.

    Views are copied through Spark's internal session catalog (no public API moves a
    view between sessions); where that API differs, views are not copied.
    """
    from sparkseq.registration import copy_functions

    copy_functions(home, spark)
    source, target = home._jsparkSession.sessionState().catalog(), spark._jsparkSession.sessionState().catalog()
    try:
        names = source.getTempViewNames()
        for i in range(names.length()):
            view = source.getRawTempView(names.apply(i))
            if view.isDefined():
                target.createTempView(names.apply(i), view.get(), True)
    except Py4JError:
        pass


_installed: Rewriter | None = None


def install(spark: SparkSession, *, share_session: bool = False) -> Rewriter:
    """Route MATCH_AGGREGATE statements of ``spark``'s JVM through a :class:`Rewriter` for ``spark``.

    Idempotent for the same session and ``share_session``; another session (or setting)
    replaces the rewriter of the JVM.

    Raises
    ------
    JvmParserUnavailable
        When ``spark``'s JVM was started without :func:`extension_conf`'s settings.
    """
    from pyspark.java_gateway import ensure_callback_server_started

    global _installed
    extension = _extension_class(spark)
    if extension is None or not extension.isInjected():
        check_jar()  # a stale or missing jar is the more precise reason
        raise JvmParserUnavailable("this SparkSession's JVM was started without sparkseq's parser extension "
                                   "(sparkseq.session() loads it, unless a Spark session was already running "
                                   "in this process); use sparkseq.sql(spark, text) for MATCH_AGGREGATE")
    if _installed is not None and _installed.home is spark and _installed.share_session == share_session:
        return _installed
    ensure_callback_server_started(spark.sparkContext._gateway)
    rewriter = Rewriter(spark, share_session=share_session)
    extension.setRewriter(rewriter)
    _installed = rewriter
    return rewriter


def try_install(spark: SparkSession, *, share_session: bool = False) -> str | None:
    """:func:`install`; why the extension is unavailable, or None when it is installed."""
    try:
        install(spark, share_session=share_session)
    except JvmParserUnavailable as exc:
        return str(exc)
    return None


def uninstall(spark: SparkSession) -> None:
    """Send statements to Spark's parser unchanged again (MATCH_AGGREGATE text then fails
    with a message pointing at :func:`sparkseq.sql`)."""
    global _installed
    extension = _extension_class(spark)
    if extension is not None and extension.isInjected():
        extension.setRewriter(None)
    _installed = None


def _extension_class(spark: SparkSession) -> Any | None:  # a py4j JavaClass
    """The extension's class in ``spark``'s JVM, or None when it is not on the classpath."""
    view = jvm(spark)
    try:
        view.java.lang.Class.forName(CLASS_NAME)
    except Exception:  # noqa: BLE001 - py4j reports ClassNotFoundException as a generic error
        return None
    return functools.reduce(getattr, CLASS_NAME.split("."), view)


# --- python -m sparkseq.jvm_parser --------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``--build`` writes the jar; ``--check`` says whether it matches the source (exit 1 if not)."""
    parser = argparse.ArgumentParser(prog="python -m sparkseq.jvm_parser",
                                     description="Build or check sparkseq's Spark parser extension jar.")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--build", action="store_true", help=f"compile {SOURCE.name} (needs a JDK) into {JAR}")
    action.add_argument("--check", action="store_true", help="check that the jar was built from the source")
    args = parser.parse_args(argv)
    try:
        if args.build:
            build()
        check_jar()
    except JvmParserUnavailable as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    info = build_info()
    print(f"{JAR}: built from {SOURCE.name} (sha256 {info['source_sha256'][:12]}...) by javac {info['javac']} "
          f"--release {info['release']} against pyspark {info['pyspark']}")
    return 0


__all__ = ["CLASS_NAME", "JAR", "JvmParserUnavailable", "Rewriter", "build", "build_info", "check_jar", "compile_jar",
           "copy_session", "expect_origins", "extension_conf", "install", "origins_spec", "Place", "source_digest",
           "try_install", "uninstall"]

if __name__ == "__main__":
    sys.exit(main())
