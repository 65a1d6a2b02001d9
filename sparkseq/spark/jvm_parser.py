"""MATCH_AGGREGATE and ``seq_*`` in SQL text sent to Spark directly: ``spark.sql``, JDBC, Spark Connect.

Spark's parser knows nothing of MATCH_AGGREGATE, Spark cannot run a ``seq_*`` function
beside its own aggregates (the compiler splits such a SELECT,
:mod:`sql_rewrites.generation.aggregates`), and text given to ``spark.sql``, sent by a JDBC client
of the Thrift server or by a Spark Connect client never passes through
:func:`sparkseq.sql`. A small session extension closes the gap:
``sparkseq/jvm/SparkSeqExtension.java`` wraps Spark's parser of every session and hands
each statement containing ``MATCH_AGGREGATE (`` or a call of a grouped-aggregate Python
function (``seq_count(`` ... ``sparkseq_count_windows(``,
:data:`sparkseq.spark.registration.PYTHON_AGGREGATES`) — with the session parsing it — to a
:class:`Rewriter` in this Python driver, over py4j's callback server. The rewriter is
:func:`sparkseq.statements.sql_api.rewrite` for that session, and Spark parses the plain SQL it
returns (the statement itself when it needs no change). Servers started in the driver
(Thrift, Spark Connect) share its JVM, so the call back into Python is local.

The extension ships compiled, in ``sparkseq/jvm/sparkseq-extension.jar`` (Java 17
bytecode, built against the pinned pyspark's jars): no JDK is needed at run time. The
jar records the SHA-256 of the source it was built from; a jar that does not match
the shipped source is refused. Rebuild it after editing the Java source with::

    python -m sparkseq.spark.jars --build     # needs a JDK 17+ (javac)

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

import base64
import collections
import functools
import json
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

from sparkseq.spark.gateway import jvm
from sparkseq.spark.jars import CLASS_NAME, JvmParserUnavailable, check_jar
from sql_rewrites.analysis.user_text import condition_origins
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.rewriter import StatementExplanation
from sql_rewrites.statement_effects import view_query_span
from sql_rewrites.syntax.statements import split_statements
from udafs.errors import SparkSeqError

#: The interface the Python rewriter implements (a nested interface: ``$`` in its binary name).
REWRITER_INTERFACE = CLASS_NAME + "$SessionRewriter"
#: Must equal ``SparkSeqExtension.ERROR_PREFIX``: a rewriter result that is an error message.
ERROR_PREFIX = "\x00sparkseq-error:"
#: Must equal ``SparkSeqExtension.ORIGINS_PREFIX``: a rewritten statement with its :func:`origins_spec`.
ORIGINS_PREFIX = "\x00sparkseq-origins:"
#: Must equal ``SparkSeqExtension.ORIGINS_COMMENT``: a statement text opening with its own
#: :func:`origins_spec` (:func:`with_origins`, for Spark Connect sessions).
ORIGINS_COMMENT = "/*sparkseq-origins:"
#: Sessions other than the installing one (Spark Connect clients, ``newSession()``) whose
#: Python wrappers the rewriter keeps; a wrapper keeps its JVM session alive.
KEPT_SESSIONS = 64
#: Rewritten statements the rewriter remembers until Spark analysed them (one per
#: statement being parsed at a time, in all sessions).
KEPT_EXPLANATIONS = 64


# --- loading it into a session -------------------------------------------------------------



class FrontDoor(Protocol):
    """What the :class:`Rewriter` hands a statement to: the compiler's front door of
    :func:`sparkseq.sql` (:mod:`sparkseq.statements.sql_api`). The Spark wiring stands below
    it and does not import it; the package connects the two (:func:`connect_front_door`, in
    ``sparkseq/__init__.py``)."""

    def rewrite_explained(self, spark: SparkSession, text: str, *, hierarchies: Any = None,
                          function_hierarchies: bool = True, streaming: bool = True) -> list[StatementExplanation]: ...

    def placed_error(self, spark: SparkSession, text: str, error: Any,
                     explained: StatementExplanation) -> Exception: ...


_front_door: FrontDoor | None = None


def connect_front_door(door: FrontDoor) -> None:
    """Send the statements the extension hands over to ``door`` (done once, by ``import sparkseq``)."""
    global _front_door
    _front_door = door


def front_door() -> FrontDoor:
    """The connected :class:`FrontDoor`."""
    if _front_door is None:
        raise RuntimeError("sparkseq's SQL front door is not connected: import sparkseq first")
    return _front_door


class Rewriter:
    """The py4j callback (``SparkSeqExtension.SessionRewriter``) the extension calls.

    ``home`` is the session it was installed for. Statements parsed by another session
    of the JVM — a Spark Connect client's, or one from ``newSession()`` — are rewritten
    against that session's catalog. With ``share_session`` (a Spark Connect server),
    such a session starts as a copy of ``home``'s temporary views and sparkseq
    functions and resolves ``HIERARCHY`` with ``home``'s concept hierarchies; without
    it, it gets sparkseq's functions and keeps its own hierarchies.

    A persistent view's stored query (:meth:`rewriteView`) is compiled in a session of
    its own per catalog and namespace (:meth:`view_session`): names resolve where the view
    was created, and no temporary view of the reader stands in for a table, as Spark
    resolves the view's text; the functions it calls are then registered in the reader.

    The methods never raise: an exception escaping a py4j callback reaches the client
    as a Python traceback.
    """

    def __init__(self, home: SparkSession, *, share_session: bool = False) -> None:
        self.home = home
        self.share_session = share_session
        self._sessions: collections.OrderedDict[str, SparkSession] = collections.OrderedDict()
        self._explained: collections.OrderedDict[tuple[str, str], StatementExplanation] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._views: dict[tuple[str, ...], SparkSession] = {}
        self._view_uuids: set[str] = set()
        self._views_lock = threading.Lock()  # never held while a callback may need self._lock

    def prepare(self, jsession: object) -> None:
        """Set up a session before its first statement or table name (called from the JVM)."""
        try:
            if jsession.sessionUUID() in self._view_uuids:  # type: ignore[attr-defined]
                return  # set up by view_session
            spark = self.session_for(jsession, keep=False)  # e.g. a streaming query's clone: not kept alive
            if spark is self.home:
                return
            if self.share_session:
                copy_session(self.home, spark)
            elif not spark.catalog.functionExists("seq_count"):  # a cloneSession() has them
                from sparkseq.spark.registration import register

                register(spark)
            from sparkseq.spark.jvm_path import share_jvm_function

            share_jvm_function(self.home, spark)  # a Connect client's sparkseq.sql looks for it
        except Exception:  # noqa: BLE001 - the session still works; a missing function says so itself
            pass

    def rewrite(self, jsession: object, text: str) -> str:
        """Rewrite one statement of ``jsession`` (called from the JVM, on a py4j callback thread):
        the plain Spark SQL, with where the user's DEFINE conditions stand in it
        (:func:`origins_spec`) when it changed."""
        from sparkseq.spark import hierarchies as registry
        rewrite_explained = front_door().rewrite_explained

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
            spec = safe_origins_spec(explained.rewritten, explained.operators, text)
            span = view_query_span(split_statements(text)[0])
            if span is not None:  # a persistent view: the extension stores this query, as written
                spec = json.dumps({**json.loads(spec), "view_query": list(span)})
            return f"{ORIGINS_PREFIX}{spec}\x00{explained.rewritten}"
        except SparkSeqError as exc:
            return f"{ERROR_PREFIX}{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a bug must reach the client as a message
            return f"{ERROR_PREFIX}sparkseq could not rewrite the statement: {type(exc).__name__}: {exc}"

    def rewriteView(self, jsession: object, text: str, view: str) -> str:  # noqa: N802 - the Java interface's name
        """Rewrite the stored query ``text`` of a persistent view that ``jsession`` reads (called
        from the JVM), as :meth:`rewrite` does a statement; ``view`` (JSON) names the view and
        the catalog and namespace it was created in. The query is compiled in that namespace
        (:meth:`view_session`), never on the streaming path (a table function, which Spark
        resolves by name in a view), and the functions it calls are registered in the reader."""
        from sparkseq.spark.registration import copy_named
        rewrite_explained = front_door().rewrite_explained

        name = ""
        try:
            context = json.loads(view or "{}")
            name = str(context.get("view") or "")
            reader = self.session_for(jsession)
            namespace = tuple(str(part) for part in context.get("namespace") or ())
            compiling = self.view_session(reader, namespace) if namespace else reader
            statements = rewrite_explained(compiling, text, function_hierarchies=compiling is self.home,
                                           streaming=False)
            if len(statements) != 1:
                return f"{ERROR_PREFIX}the view {name} holds {len(statements)} statements, not one query"
            explained = statements[0]
            if compiling is not reader:
                copy_named(compiling, reader, re.findall(r"\bsparkseq_[A-Za-z0-9_]+", explained.rewritten))
            if explained.rewritten == text:
                return text
            return f"{ORIGINS_PREFIX}{safe_origins_spec(explained.rewritten, explained.operators, text)}\x00" \
                   f"{explained.rewritten}"
        except SparkSeqError as exc:
            return f"{ERROR_PREFIX}{type(exc).__name__}: in the query of view {name}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a bug must reach the client as a message
            return f"{ERROR_PREFIX}sparkseq could not compile the query of view {name}: {type(exc).__name__}: {exc}"

    def view_session(self, reader: SparkSession, namespace: tuple[str, ...]) -> SparkSession:
        """The session a view created in ``namespace`` (catalog, then namespace parts) is
        compiled in: one per namespace, a new session of ``home`` (no temporary views, its own
        current namespace) with sparkseq's functions, taking ``reader``'s sparkseq settings
        (:data:`VIEW_SETTINGS`) before each compile."""
        from sparkseq.spark.registration import register

        with self._views_lock:
            spark = self._views.get(namespace)
            if spark is None:
                spark = self.home.newSession()
                self._view_uuids.add(spark._jsparkSession.sessionUUID())
                register(spark)
                catalog, *parts = namespace
                spark.catalog.setCurrentCatalog(catalog)
                if parts:
                    spark._jsparkSession.sql("USE " + ".".join(_quoted(p) for p in namespace))
                self._views[namespace] = spark
        for key in VIEW_SETTINGS:  # a setting races with another reader's: it chooses a path, never the rows
            value = reader.conf.get(key, None)
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        return spark

    def place(self, jsession: object, text: str, error: Any) -> str | None:  # error: a py4j JavaObject
        """Spark's analysis ``error`` on the statement ``text`` rewrote to, placed in ``text``
        as :func:`sparkseq.sql` places it (called from the JVM); None to leave Spark's error."""
        from pyspark.errors.exceptions.captured import convert_exception

        placed_error = front_door().placed_error

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


#: The reader's settings a view's query is compiled with (they choose its execution path).
VIEW_SETTINGS = ("sparkseq.path", "sparkseq.streaming.rows", "sparkseq.timeSplit.splitRows",
                 "sparkseq.timeSplit.chunkRows")


def _quoted(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def view_extension_missing(spark: Any) -> str | None:
    """Why ``spark.sql`` of ``spark`` does not go through sparkseq's parser extension with its
    rewriter, which a persistent view over MATCH_AGGREGATE or ``seq_*`` is created through;
    None when it does. A Spark Connect session asks its server's settings."""
    from sparkseq.spark.gateway import is_connect_session

    if is_connect_session(spark):
        extensions = spark.conf.get("spark.sql.extensions", "") or ""
        return None if CLASS_NAME in extensions else \
            "the Spark Connect server was started without it (python -m sparkseq connect-server starts one with it)"
    extension = _extension_class(spark)
    if extension is None or not extension.isInjected():
        return "this session's JVM was started without it (sparkseq.session() loads it)"
    if _installed is None:
        return "its rewriter is not installed (sparkseq.spark.jvm_parser.install(spark))"
    return None


class HasQuery(Protocol):
    """What the places of DEFINE conditions are found from: an operator of a statement
    (:class:`~sql_rewrites.rewriter.OperatorExplanation`), or a member of a workload's
    sharing group (:class:`~sql_rewrites.generation.shared.Member`)."""

    @property
    def query(self) -> MatchAggregateQuery: ...


#: Where a span of the text a statement was compiled from lies in what the user wrote:
#: ``(start, stop) -> (text, start, stop, label)``, the label naming the text when it is
#: not a statement (a DataFrame API argument, ``define['A']``), else ``""``.
Place = Callable[[int, int], tuple[str, int, int, str]]


def origins_spec(rewritten: str, operators: Sequence[HasQuery], text: str,
                 place: Place | None = None) -> str:
    """Where the user's DEFINE conditions stand in ``rewritten`` — the SQL ``operators`` of a
    statement of ``text`` became — as the extension reads it (``SparkSeqExtension.Origins``,
    JSON): the texts the user wrote, and per condition its span in ``rewritten`` and in its text.

    >>> from sql_rewrites.rewriter import explain_statement
    >>> from sql_rewrites.syntax.statements import split_statements
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


def safe_origins_spec(rewritten: str, operators: Sequence[HasQuery], text: str,
                      place: Place | None = None) -> str:
    """:func:`origins_spec`, or no places at all should finding them fail: the statement still
    runs, and its errors quote no generated SQL."""
    try:
        return origins_spec(rewritten, operators, text, place)
    except Exception:  # noqa: BLE001 - where errors point must never stop a statement
        return json.dumps({"texts": [], "spans": []})


def with_origins(spark: Any, sql: str, operators: Sequence[HasQuery], text: str,
                 place: Place | None = None) -> str:
    """The text to hand to ``spark.sql`` to run ``sql`` — what ``operators`` of a statement of
    ``text`` became, rewritten in this process — so that an error Spark raises while the job
    runs points at the DEFINE condition the user wrote (see :func:`origins_spec`): on a
    classic session ``sql`` itself, announced to the extension (:func:`expect_origins`); on a
    Spark Connect session, whose server this process cannot call, ``sql`` behind a comment
    holding the places (:data:`ORIGINS_COMMENT`, the spec in URL-safe base64), which the
    server's extension reads and removes (a server without it reads a comment).

    >>> from sql_rewrites.rewriter import explain_statement
    >>> from sql_rewrites.syntax.statements import split_statements
    >>> text = "SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A AS x = 1) m"
    >>> explained = explain_statement(split_statements(text)[0], text, {"t": {"ts": "int", "x": "int"}},
    ...                               lambda plan: "f")
    >>> sent = with_origins(None, explained.rewritten, explained.operators, text)  # neither: unchanged
    >>> sent == explained.rewritten
    True
    """
    if not operators:
        return sql
    if getattr(spark, "_jsparkSession", None) is not None:
        expect_origins(spark, sql, operators, text, place)
        return sql
    from sparkseq.spark.gateway import is_connect_session

    if not is_connect_session(spark):
        return sql
    return origins_comment(sql, operators, text, place) + sql


def origins_comment(sql: str, operators: Sequence[HasQuery], text: str, place: Place | None = None) -> str:
    """The comment that, put before ``sql``, tells a Spark Connect server's extension where the
    DEFINE conditions of ``operators`` stand in it (:func:`with_origins`)."""
    spec = base64.urlsafe_b64encode(safe_origins_spec(sql, operators, text, place).encode()).decode()
    return f"{ORIGINS_COMMENT}{spec}*/"


def expect_origins(spark: SparkSession, sql: str, operators: Sequence[HasQuery], text: str,
                   place: Place | None = None) -> None:
    """Tell the extension that the next ``spark.sql(sql)`` runs what ``operators`` of a
    statement of ``text`` became (rewritten in this process: :func:`sparkseq.sql`, the
    DataFrame API), so that an error Spark raises while the job runs points at the DEFINE
    condition the user wrote (see :func:`origins_spec`). Nothing happens without the
    extension (a JVM started without it) or without a JVM in this process (a Spark Connect
    session: :func:`with_origins` sends the places with the statement).
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
    from sparkseq.spark import hierarchies, registration

    return [home, *registration.sessions(), *hierarchies.sessions()]


def copy_session(home: SparkSession, spark: SparkSession) -> None:
    """Give ``spark`` the functions sparkseq registered in ``home`` (``seq_*`` with
    ``home``'s hierarchies bound in, the engine functions its views call) and ``home``'s
    temporary views, as Spark's ``cloneSession`` would.

    Views are copied through Spark's internal session catalog (no public API moves a
    view between sessions); where that API differs, views are not copied.
    """
    from sparkseq.spark.registration import copy_functions

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


__all__ = ["connect_front_door", "copy_session", "expect_origins", "FrontDoor", "front_door", "HasQuery",
           "install", "origins_comment", "origins_spec", "Place", "Rewriter", "try_install", "uninstall",
           "VIEW_SETTINGS", "view_extension_missing", "with_origins"]

