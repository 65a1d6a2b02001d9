"""Spark's Thrift (JDBC/ODBC) server, in-process, serving a sparkseq session to BI tools.

``python -m sparkseq thriftserver [--host H] [--port P] [--init-file F] [--master M]``
starts a SparkSession with sparkseq's functions registered, runs the init file
(:mod:`sparkseq.servers.initfile`), and serves that one session over the HiveServer2 protocol:
every JDBC/ODBC connection sees its temporary views, can call ``seq_count`` & co. and
send MATCH_AGGREGATE text itself (the parser extension of :mod:`sparkseq.spark.jvm_parser`,
which :func:`sparkseq.session` loads).

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
session and sees none of them. Any catalog serves: the command keeps a persistent one
(Spark's Hive catalog, :mod:`sparkseq.spark.warehouse`) unless ``--in-memory-catalog``. Two quirks of
that mode (Spark 4.x ``SparkSQLSessionManager``): each client disconnect uncaches every
temporary view of the session — cache global temporary views instead — and re-parses
their names unquoted, so :func:`start` refuses views whose names need backticks.
"""

from __future__ import annotations

import argparse
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from sparkseq.servers import auth as server_auth
from sparkseq.servers import lifecycle as servers
from sparkseq.servers.lifecycle import (
    DEFAULT_HOST,
    PortInUseError,
    ServerError,
    check_port,
    is_loopback,
    relation_names,
    wait_listening,
)
from sparkseq.spark import jvm_parser
from sparkseq.spark.gateway import jvm
from sparkseq.spark.registration import FUNCTIONS
from sparkseq.spark.session import scratch_dir

DEFAULT_PORT = 10000
SINGLE_SESSION = "spark.sql.hive.thriftServer.singleSession"
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


class ThriftServerError(ServerError):
    """The Thrift server cannot start (the message says why)."""


@dataclass
class ThriftServer:
    """A running in-process Thrift server; :meth:`stop` it (or use it as a context manager)."""

    spark: SparkSession
    host: str
    port: int
    #: Why JDBC clients cannot send MATCH_AGGREGATE text, or None when they can.
    sql_text_unavailable: str | None
    _jserver: object = field(repr=False)
    _restore: dict[str, str | None] = field(default_factory=dict, repr=False)
    _stopped: bool = field(default=False, repr=False)
    #: Authentication and TLS (:mod:`sparkseq.servers.auth`).
    security: server_auth.Security = field(default_factory=server_auth.Security)

    @property
    def url(self) -> str:
        """The JDBC URL of the server, e.g. ``jdbc:hive2://127.0.0.1:10000/default``
        (``;ssl=true`` added with TLS)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"jdbc:hive2://{host}:{self.port}/default" + (";ssl=true" if self.security.tls is not None else "")

    def stop(self) -> None:
        """Stop the server (no new connections). The SparkSession stays up, its
        ``spark.sql`` still taking MATCH_AGGREGATE. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._jserver.stop()  # type: ignore[attr-defined]
        for key, value in self._restore.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)

    def __enter__(self) -> ThriftServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(spark: SparkSession, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          security: server_auth.Security | None = None) -> ThriftServer:
    """Serve ``spark`` over JDBC/ODBC at ``host:port`` until :meth:`ThriftServer.stop`.

    ``security``: authentication (LDAP, a password file) and TLS
    (:class:`sparkseq.servers.auth.Security`); without it, no authentication, which only
    a loopback ``host`` gets unless ``security`` is :data:`sparkseq.servers.auth.NO_AUTH`.

    ``spark`` should have sparkseq's functions registered (:func:`sparkseq.session`).
    It is switched to single-session mode, so every connection shares it.
    MATCH_AGGREGATE text is accepted from clients when the session's JVM has sparkseq's
    parser extension, as a :func:`sparkseq.session` has (else see ``sql_text_unavailable``).

    Raises
    ------
    PortInUseError
        When ``host:port`` is taken.
    ThriftServerError
        When the server does not start listening.
    ServerSecurityError
        A non-loopback ``host`` without authentication; a keystore that cannot be opened.
    """
    server_auth.preflight(host, security, "thrift", warn=False)
    check_port(host, port)
    _check_view_names(spark)
    _share_session(spark)
    _configure(spark, host, port)
    server_auth.configure_thrift(spark, security)
    _quiet_logs(spark)
    unavailable = jvm_parser.try_install(spark)
    restore = {key: spark.conf.get(key) for key in CONNECTION_SETTINGS}
    thrift_servers = jvm(spark).org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
    _detach_hive_state(spark)
    started = thrift_servers.startWithContext(spark._jsparkSession.sqlContext())
    server_auth.forget_thrift_secrets(spark)
    server = ThriftServer(spark, host, port, unavailable, started, restore, security=security or server_auth.Security())
    try:
        wait_listening(host, port, "Thrift server")
    except ServerError:
        server.stop()
        raise
    return server


def _detach_hive_state(spark: SparkSession) -> None:
    """Let the server build its Hive settings from the Hadoop configuration as it is now.

    With Spark's Hive catalog (a persistent catalog, :mod:`sparkseq.spark.warehouse`), every
    metastore call leaves the catalog client's Hive ``SessionState`` in the calling JVM
    thread, and ``HiveThriftServer2.startWithContext`` — called from that same thread —
    reuses it as the server's configuration (Spark's ``HiveClientImpl`` takes
    ``SessionState.get`` when there is one): the Hive settings of the moment the catalog
    opened, without the address, port, scratch directories and authentication set
    above; the server then listened on 0.0.0.0:10000. Detached, the server's client
    starts a state of its own from the current settings, as without a Hive catalog; the
    catalog's client sets its own again at its next call.
    """
    jvm(spark).org.apache.hadoop.hive.ql.session.SessionState.detachSession()


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
    return [row["tableName"] for row in spark.sql("SHOW TABLES").collect()
            if row["isTemporary"] and not row["namespace"]]


def _share_session(spark: SparkSession) -> None:
    """Single-session mode. The setting is static (fixed when the JVM's first session is
    built), but the server reads it from the session's SQLConf when a client connects,
    so setting it there works for a session built without it."""
    if str(spark.conf.get(SINGLE_SESSION, "false")).lower() != "true":
        spark._jsparkSession.sessionState().conf().setConfString(SINGLE_SESSION, "true")


def _configure(spark: SparkSession, host: str, port: int) -> None:
    """Address and scratch directories (HiveServer2 writes into /tmp by default)."""
    base = scratch_dir() / "thrift"
    # operation logs: one folder per process, because HiveServer2 deletes the whole folder when it
    # stops (and when its JVM exits), which would break every other Thrift server using it
    dirs = {"hive.downloaded.resources.dir": base / "resources", "hive.exec.local.scratchdir": base / "local",
            "hive.exec.scratchdir": base / "scratch",
            "hive.server2.logging.operation.log.location": base / "oplogs" / str(os.getpid())}
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        hadoop.set(key, str(path))
    hadoop.set("hive.server2.thrift.bind.host", host)
    hadoop.set("hive.server2.thrift.port", str(port))


def _quiet_logs(spark: SparkSession) -> None:
    log4j = jvm(spark).org.apache.logging.log4j
    off = log4j.Level.OFF
    for name in QUIET_LOGGERS:
        log4j.core.config.Configurator.setLevel(name, off)


# --- the command line ----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``python -m sparkseq thriftserver``'s options."""
    servers.add_arguments(parser, DEFAULT_PORT)
    server_auth.add_arguments(parser, "thrift")


def main(args: argparse.Namespace) -> int:
    """Run the server until SIGTERM or Ctrl-C; the process exit code (see :func:`sparkseq.servers.lifecycle.run`;
    2 also for authentication or TLS options that cannot work, before Spark starts)."""
    return server_auth.run_server(
        args, "thrift", session=lambda security: _server_session(args.master, security, *servers.catalog_options(args)),
        start=lambda spark, security: start(spark, host=args.host, port=args.port, security=security),
        announce=_announce)


def _server_session(master: str | None, security: server_auth.Security | None = None, warehouse: str | None = None,
                    settings: Mapping[str, str] | None = None) -> SparkSession:
    """A sparkseq session for serving (with the parser extension when it can be loaded:
    the banner says whether), its catalog in ``warehouse`` (None: in memory), with the
    ``--conf`` ``settings``."""
    import sparkseq
    from sparkseq.spark.session import ParserExtensionWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParserExtensionWarning)
        conf = {**(settings or {}), SINGLE_SESSION: "true"}
        if server_auth.needs_jar(security, "thrift"):  # the password file's class, on the JVM's class path
            conf = server_auth.jvm_conf(conf)
        return sparkseq.session(master, app_name="sparkseq-thriftserver", conf=conf, warehouse=warehouse,
                                progress=False)  # clients' jobs: no progress bar on the server's console


def _announce(server: ThriftServer) -> None:
    functions = ", ".join(sorted(spec.name for spec in FUNCTIONS))
    views = ", ".join(relation_names(server.spark)) or "(none)"
    unavailable = server.sql_text_unavailable
    sql_text = "yes" if unavailable is None else f"no — {unavailable.splitlines()[0]}"
    print(f"sparkseq Thrift server listening on {server.host}:{server.port}\n"
          f"  JDBC URL   {server.url}\n"
          f"  security   {server.security.describe()}\n"
          f"  catalog    {servers.catalog_description(server.spark)}\n"
          f"  views      {views}\n"
          f"  functions  {functions}\n"
          f"  MATCH_AGGREGATE text from clients: {sql_text}\n"
          "Stop with Ctrl-C or SIGTERM.", flush=True)


__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "PortInUseError", "ThriftServer", "ThriftServerError", "add_arguments",
           "check_port", "is_loopback", "main", "relation_names", "start"]
