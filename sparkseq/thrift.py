"""Spark's Thrift (JDBC/ODBC) server, in-process, serving a sparkseq session to BI tools.

``python -m sparkseq thriftserver [--host H] [--port P] [--init-file F] [--master M]``
starts a SparkSession with sparkseq's functions registered, runs the init file
(:mod:`sparkseq.initfile`), and serves that one session over the HiveServer2 protocol:
every JDBC/ODBC connection sees its temporary views and can call ``seq_count`` & co.
With a JDK present, connections may also send MATCH_AGGREGATE text itself
(:mod:`sparkseq.jvm_parser`).

From Python, :func:`start` serves a session you already have::

    from sparkseq import thrift

    spark = sparkseq.session()
    with thrift.start(spark, port=10001) as server:
        print(server.url)        # jdbc:hive2://127.0.0.1:10001/default
        ...

Facts this rests on (pyspark 4.x): ``HiveThriftServer2.startWithContext`` runs the
server inside the driver JVM; with ``spark.sql.hive.thriftServer.singleSession`` every
connection shares the driver's session — its temporary views, Python UDFs and settings
(a ``SET`` by one client is seen by all); without it each connection gets a fresh
session and sees none of them. No Hive support or metastore is needed. Two quirks of
that mode (Spark 4.x ``SparkSQLSessionManager``): each client disconnect uncaches every
temporary view of the session — cache global temporary views instead — and re-parses
their names unquoted, so :func:`start` refuses views whose names need backticks.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from pyspark.sql import SparkSession

from sparkseq.registration import FUNCTIONS
from sparkseq.session import scratch_dir
from udafs.errors import SparkSeqError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 10000
SINGLE_SESSION = "spark.sql.hive.thriftServer.singleSession"
READY_TIMEOUT_S = 60.0  # the listener thread binds within a second; a loaded machine is slower
#: Loggers of the embedded HiveServer2 whose messages are noise for a sparkseq server:
#: the throw-away Derby metastore of the Hive execution client, and a full stack trace
#: per failed client query or failed handshake (the client receives the error itself).
QUIET_LOGGERS = ("org.datanucleus", "DataNucleus", "org.apache.hadoop.hive", "org.apache.hive", "org.apache.thrift",
                 "org.apache.spark.sql.hive.thriftserver.SparkExecuteStatementOperation")
#: Settings every new client connection changes in the shared session (Spark's
#: ``SparkSQLSessionManager.openSession``); :meth:`ThriftServer.stop` restores them.
CONNECTION_SETTINGS = ("spark.sql.datetime.java8API.enabled",)
#: Temporary view names the server can live with (see :func:`start`).
PLAIN_NAME = re.compile(r"[A-Za-z0-9_]+")


class ThriftServerError(SparkSeqError):
    """The Thrift server cannot start (the message says why)."""


class PortInUseError(ThriftServerError):
    """Something already listens on the requested address and port."""


@dataclass
class ThriftServer:
    """A running in-process Thrift server; :meth:`stop` it (or use it as a context manager)."""

    spark: SparkSession
    host: str
    port: int
    #: Why JDBC clients cannot send MATCH_AGGREGATE text, or None when they can.
    sql_text_unavailable: str | None
    _jserver: object = field(repr=False)
    _restore: dict[str, str] = field(default_factory=dict, repr=False)
    _stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        """The JDBC URL of the server, e.g. ``jdbc:hive2://127.0.0.1:10000/default``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"jdbc:hive2://{host}:{self.port}/default"

    def stop(self) -> None:
        """Stop the server (no new connections; MATCH_AGGREGATE text is no longer rewritten).
        The SparkSession stays up. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        from sparkseq import jvm_parser

        jvm_parser.uninstall(self.spark)
        self._jserver.stop()  # type: ignore[attr-defined]
        for key, value in self._restore.items():
            self.spark.conf.set(key, value)

    def __enter__(self) -> ThriftServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(spark: SparkSession, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> ThriftServer:
    """Serve ``spark`` over JDBC/ODBC at ``host:port`` until :meth:`ThriftServer.stop`.

    ``spark`` should have sparkseq's functions registered (:func:`sparkseq.session`).
    It is switched to single-session mode, so every connection shares it.
    MATCH_AGGREGATE text is accepted from clients when the session was built with
    :func:`sparkseq.jvm_parser.extension_conf` (else see ``sql_text_unavailable``).

    Raises
    ------
    PortInUseError
        When ``host:port`` is taken.
    ThriftServerError
        When the server does not start listening.
    """
    check_port(host, port)
    _check_view_names(spark)
    _share_session(spark)
    _configure(spark, host, port)
    _quiet_logs(spark)
    unavailable = _enable_sql_text(spark)
    restore = {key: spark.conf.get(key) for key in CONNECTION_SETTINGS}
    servers = spark.sparkContext._jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
    server = ThriftServer(spark, host, port, unavailable, servers.startWithContext(spark._jsparkSession.sqlContext()),
                          restore)
    try:
        _wait_listening(host, port)
    except ThriftServerError:
        server.stop()
        raise
    return server


def check_port(host: str, port: int) -> None:
    """Raise :class:`PortInUseError` when ``host:port`` cannot be bound; cheap, no Spark.

    Binds with ``SO_REUSEADDR`` as the JVM's server socket does, so a port that only
    has connections in TIME_WAIT counts as free.
    """
    if not 0 < port < 65536:
        raise ThriftServerError(f"port must be between 1 and 65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ThriftServerError(f"cannot resolve host {host!r}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise PortInUseError(f"cannot listen on {host}:{port}: {exc.strerror}; another server (another "
                                 f"Thrift server?) uses it — choose a free port with --port") from None


def is_loopback(host: str) -> bool:
    """True when ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback
                   for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM))
    except (socket.gaierror, ValueError):
        return False


def _check_view_names(spark: SparkSession) -> None:
    """Refuse temporary views the server cannot live with.

    When a client disconnects, Spark's Thrift server uncaches every temporary view of
    its session by name, re-parsing the name unquoted (``SparkSQLSessionManager.closeSession``
    in Spark 4.x): a name that needs backticks makes every disconnect fail.
    """
    odd = [name for name in temporary_view_names(spark) if not PLAIN_NAME.fullmatch(name)]
    if odd:
        raise ThriftServerError(f"temporary view {', '.join(repr(n) for n in odd)}: Spark's Thrift server cannot "
                                "serve a session whose temporary views need backticks (every client disconnect "
                                "would fail); rename or drop it, e.g. DROP VIEW `" + odd[0].replace("`", "``") + "`")


def temporary_view_names(spark: SparkSession) -> list[str]:
    """Names of the session's (local) temporary views; no Spark job."""
    return [row["tableName"] for row in spark.sql("SHOW TABLES").collect() if row["isTemporary"] and not row["namespace"]]


def _share_session(spark: SparkSession) -> None:
    """Single-session mode. The setting is static (fixed when the JVM's first session is
    built), but the server reads it from the session's SQLConf when a client connects,
    so setting it there works for a session built without it."""
    if spark.conf.get(SINGLE_SESSION, "false").lower() != "true":
        spark._jsparkSession.sessionState().conf().setConfString(SINGLE_SESSION, "true")


def _configure(spark: SparkSession, host: str, port: int) -> None:
    """Address and scratch directories (HiveServer2 writes into /tmp by default)."""
    base = scratch_dir() / "thrift"
    dirs = {"hive.downloaded.resources.dir": base / "resources", "hive.exec.local.scratchdir": base / "local",
            "hive.exec.scratchdir": base / "scratch", "hive.server2.logging.operation.log.location": base / "oplogs"}
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        hadoop.set(key, str(path))
    hadoop.set("hive.server2.thrift.bind.host", host)
    hadoop.set("hive.server2.thrift.port", str(port))


def _quiet_logs(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    off = jvm.org.apache.logging.log4j.Level.OFF
    for name in QUIET_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, off)


def _enable_sql_text(spark: SparkSession) -> str | None:
    """Install the MATCH_AGGREGATE rewriter; the reason it is unavailable, or None."""
    from sparkseq import jvm_parser

    try:
        jvm_parser.install(spark)
    except jvm_parser.JvmParserUnavailable as exc:
        return str(exc)
    return None


def _wait_listening(host: str, port: int, timeout: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise ThriftServerError(f"the Thrift server did not listen on {host}:{port} "
                                        f"within {timeout:.0f} s") from None
            time.sleep(0.1)


def relation_names(spark: SparkSession) -> list[str]:
    """Temporary and global temporary views of ``spark`` (what clients can query by name)."""
    names = [row["tableName"] for row in spark.sql("SHOW TABLES").collect()]
    names += [f"global_temp.{row['tableName']}" for row in spark.sql("SHOW TABLES IN global_temp").collect()
              if row["namespace"]]
    return sorted(set(names))


# --- the command line ----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``python -m sparkseq thriftserver``'s options."""
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; the server has "
                             "no authentication)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    parser.add_argument("--init-file", "-i", type=Path, metavar="FILE",
                        help="SQL statements (';'-separated; MATCH_AGGREGATE allowed) run before serving, "
                             "e.g. CREATE TEMP VIEW ...; every statement is checked first")
    parser.add_argument("--master", help="Spark master URL (default: $SPARKSEQ_MASTER or local[2])")


def main(args: argparse.Namespace) -> int:
    """Run the server until SIGTERM or Ctrl-C; the process exit code.

    Exit codes: 0 after a clean shutdown, 1 for a bad init file or a server that does
    not start, 2 for a busy port or a bad address (found before Spark starts).
    """
    from sparkseq import initfile

    try:
        check_port(args.host, args.port)
        init = initfile.read(args.init_file) if args.init_file is not None else None
    except ThriftServerError as exc:  # a busy port, a bad host
        return _fail(exc, 2)
    except initfile.InitFileError as exc:
        return _fail(exc, 1)
    if not is_loopback(args.host):
        print(f"warning: listening on {args.host}: anyone who can reach it can run SQL (and read files) as this "
              "user; the server has no authentication", file=sys.stderr)
    spark, note = _server_session(args.master)
    try:
        if init is not None:
            initfile.run(spark, init)  # checks every statement before the first runs
        server = start(spark, host=args.host, port=args.port)
    except (initfile.InitFileError, ThriftServerError) as exc:
        _stop_spark(spark)
        return _fail(exc, 1)
    except KeyboardInterrupt:  # Ctrl-C while starting: PySpark's own SIGINT handler raised it
        _stop_spark(spark)
        return 130
    stop = _stop_on_signals()  # after the session: PySpark installs a SIGINT handler of its own
    try:
        _announce(server, note)
        while not stop.wait(1.0):
            pass
        print("stopping the Thrift server", file=sys.stderr, flush=True)
    finally:
        _shutdown(server, spark)
    return 0


def _shutdown(server: ThriftServer, spark: SparkSession) -> None:
    """Stop serving, then Spark. A signal sent to the whole process group (a service
    manager, ``timeout``) also stops the JVM, on its own shutdown hooks: nothing is left to stop."""
    from py4j.protocol import Py4JError

    try:
        server.stop()
    except Py4JError:
        pass
    _stop_spark(spark)


def _stop_spark(spark: SparkSession) -> None:
    from py4j.protocol import Py4JError

    try:
        spark.stop()
    except Py4JError:
        pass


def _server_session(master: str | None) -> tuple[SparkSession, str | None]:
    """A sparkseq session for serving, with the parser extension when it can be built."""
    import sparkseq
    from sparkseq import jvm_parser

    conf: dict[str, str] = {SINGLE_SESSION: "true"}
    note = None
    try:
        conf = jvm_parser.extension_conf(conf)
    except jvm_parser.JvmParserUnavailable as exc:
        note = str(exc)
    return sparkseq.session(master, app_name="sparkseq-thriftserver", conf=conf), note


def _stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (Ctrl-C). PySpark starts its JVM ignoring SIGINT,
    so Ctrl-C in a terminal reaches only this process, which then stops Spark cleanly."""
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop


def _announce(server: ThriftServer, note: str | None) -> None:
    functions = ", ".join(sorted(spec.name for spec in FUNCTIONS))
    views = ", ".join(relation_names(server.spark)) or "(none)"
    unavailable = server.sql_text_unavailable or note
    sql_text = "yes" if unavailable is None else f"no — {unavailable.splitlines()[0]}"
    print(f"sparkseq Thrift server listening on {server.host}:{server.port}\n"
          f"  JDBC URL   {server.url}\n"
          f"  views      {views}\n"
          f"  functions  {functions}\n"
          f"  MATCH_AGGREGATE text from clients: {sql_text}\n"
          "Stop with Ctrl-C or SIGTERM.", flush=True)


def _fail(exc: Exception, code: int) -> int:
    print(f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    return code


__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "PortInUseError", "ThriftServer", "ThriftServerError", "add_arguments",
           "check_port", "is_loopback", "main", "relation_names", "start"]
