"""A Spark Connect server whose clients can write MATCH_AGGREGATE in plain ``spark.sql``.

``python -m sparkseq connect-server [--host H] [--port P] [--init-file F] [--master M]``
starts a sparkseq session (:func:`sparkseq.session`: functions registered, parser
extension loaded) with Spark's Connect plugin in the same driver, runs the init file
(:mod:`sparkseq.servers.initfile`) and serves Spark Connect at ``sc://H:P``. Any Connect client
— also one without sparkseq installed, only ``pyspark[connect]`` — then has:

* MATCH_AGGREGATE in ``spark.sql`` (named and positional ``args=`` included): the
  parser extension hands the text, with the client's server-side session, to the
  rewriter in this driver's Python process (:class:`sparkseq.spark.jvm_parser.Rewriter`),
  which reads schemas from that session (the client's own temporary views too) and
  registers the engine functions there;
* the ``seq_*`` functions, the init file's temporary views and the functions its
  views call: Spark Connect gives every client a fresh session (``newSession()``), so
  the rewriter copies the server session's temporary views and sparkseq functions into
  it before its first statement — as the Thrift server's single session shares them;
* the init file's concept hierarchies, for ``HIERARCHY`` in MATCH_AGGREGATE text and
  in ``seq_*`` patterns.

Only a server started this way rewrites MATCH_AGGREGATE for ``spark.sql``: the rewriter
is Python code in the driver, so a client of another Connect server can run it only
through ``sparkseq.sql(spark, text)``, which rewrites on the client.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from sparkseq.servers import auth as server_auth
from sparkseq.servers import lifecycle as servers
from sparkseq.servers.lifecycle import ServerError
from sparkseq.spark import jvm_parser
from sparkseq.spark.gateway import jvm
from sparkseq.spark.registration import FUNCTIONS

DEFAULT_PORT = 15002  # Spark Connect's own default
PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"


@dataclass
class ConnectServer:
    """A running Spark Connect server in this driver; it stops with its SparkSession."""

    spark: SparkSession
    host: str
    port: int
    #: Why clients cannot send MATCH_AGGREGATE through ``spark.sql``, or None when they can.
    sql_text_unavailable: str | None
    #: Authentication and TLS (:mod:`sparkseq.servers.auth`).
    security: server_auth.Security = field(default_factory=server_auth.Security)
    #: With TLS: the loopback port of the Connect plugin behind the TLS relay.
    backend_port: int | None = None
    _tunnel: object = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """The Spark Connect URL without the token, e.g. ``sc://127.0.0.1:15002``;
        ``sc://host:port/;use_ssl=true`` with TLS; ``sc://localhost:port`` for a token
        without TLS on loopback (PySpark sends a token without TLS only to ``localhost``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.security.tls is not None:
            return f"sc://{host}:{self.port}/;use_ssl=true"
        if isinstance(self.security.auth, server_auth.Token) and servers.is_loopback(self.host):
            return f"sc://localhost:{self.port}"
        return f"sc://{host}:{self.port}"

    def stop(self) -> None:
        """Stop the TLS relay, if any; the Connect plugin stops with Spark
        (:func:`sparkseq.servers.lifecycle.shutdown`)."""
        if self._tunnel is not None:
            self._tunnel.close()  # type: ignore[attr-defined]


def server_conf(host: str, port: int, security: server_auth.Security | None = None) -> dict[str, str]:
    """Spark settings that start the Connect plugin on ``host:port`` with the driver; with
    TLS in ``security``, on a free loopback port behind :func:`start`'s TLS relay. No
    secret: a token goes through :func:`sparkseq.servers.auth.connect_environment`."""
    if security is not None and security.tls is not None:
        host, port = "127.0.0.1", 0
    conf = {"spark.plugins": PLUGIN, "spark.connect.grpc.binding.address": host,
            "spark.connect.grpc.binding.port": str(port),
            "spark.connect.grpc.port.maxRetries": "0"}  # a busy port fails instead of serving elsewhere
    return server_auth.jvm_conf(conf) if server_auth.needs_jar(security, "connect") else conf


def start(spark: SparkSession, host: str, port: int, security: server_auth.Security | None = None) -> ConnectServer:
    """Share ``spark`` with Connect clients (see the module docstring) once its plugin listens.

    ``spark`` must have been built with :func:`server_conf` for ``host:port`` and
    ``security`` (a token: with :func:`sparkseq.servers.auth.connect_environment` called
    before the JVM started). With TLS, a relay in the driver JVM serves ``host:port``.

    Raises
    ------
    ServerError
        When nothing listens on ``host:port`` within a minute; a non-loopback ``host``
        without authentication (:class:`sparkseq.servers.auth.ServerSecurityError`).
    """
    server_auth.preflight(host, security, "connect", warn=False)
    security = security or server_auth.Security()
    unavailable = jvm_parser.try_install(spark, share_session=True)
    if security.tls is None:
        servers.wait_listening(host, port, "Spark Connect server")
        return ConnectServer(spark, host, port, unavailable, security)
    service = getattr(jvm(spark).org.apache.spark.sql.connect.service, "SparkConnectService$")
    backend = int(getattr(service, "MODULE$").localPort())
    tunnel = server_auth.start_tunnel(spark, host, port, security.tls, backend)
    servers.wait_listening(host, port, "Spark Connect TLS relay")
    return ConnectServer(spark, host, port, unavailable, security, backend, tunnel)


# --- the command line ----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``python -m sparkseq connect-server``'s options."""
    servers.add_arguments(parser, DEFAULT_PORT)
    server_auth.add_arguments(parser, "connect")


def main(args: argparse.Namespace) -> int:
    """Run the server until SIGTERM or Ctrl-C; the process exit code (see :func:`sparkseq.servers.lifecycle.run`;
    2 also for authentication or TLS options that cannot work, before Spark starts)."""
    return server_auth.run_server(
        args, "connect", session=lambda security: _server_session(args.master, args.host, args.port, security,
                                                                  *servers.catalog_options(args)),
        start=lambda spark, security: start(spark, args.host, args.port, security), announce=_announce)


def _server_session(master: str | None, host: str, port: int, security: server_auth.Security | None = None,
                    warehouse: str | None = None, settings: Mapping[str, str] | None = None) -> SparkSession:
    """A sparkseq session with the Connect plugin, its catalog in ``warehouse`` (None: in
    memory), with the ``--conf`` ``settings``."""
    import sparkseq
    from sparkseq.spark.session import ParserExtensionWarning

    server_auth.connect_environment(security)  # the token, for the JVM about to start
    with warnings.catch_warnings():  # the banner says whether the extension is on
        warnings.simplefilter("ignore", ParserExtensionWarning)
        return sparkseq.session(master, app_name="sparkseq-connect-server",
                                conf={**(settings or {}), **server_conf(host, port, security)}, warehouse=warehouse,
                                progress=False)  # clients' jobs: no progress bar on the server's console


def _announce(server: ConnectServer) -> None:
    functions = ", ".join(sorted(spec.name for spec in FUNCTIONS))
    views = ", ".join(servers.relation_names(server.spark)) or "(none)"
    unavailable = server.sql_text_unavailable
    sql_text = "yes" if unavailable is None else f"no — {unavailable.splitlines()[0]}"
    print(f"sparkseq Spark Connect server listening on {server.host}:{server.port}\n"
          f"  URL        {server.url}\n"
          f"  security   {_security_line(server)}\n"
          f"  catalog    {servers.catalog_description(server.spark)}\n"
          f"  views      {views}\n"
          f"  functions  {functions}\n"
          f"  MATCH_AGGREGATE in clients' spark.sql: {sql_text}\n"
          "Stop with Ctrl-C or SIGTERM.", flush=True)


def _security_line(server: ConnectServer) -> str:
    line = server.security.describe()
    if isinstance(server.security.auth, server_auth.Token):
        line += "; clients add ;token=... to the URL"
    if server.backend_port is not None:
        line += f"; relayed to the Connect plugin on 127.0.0.1:{server.backend_port}"
    return line


__all__ = ["ConnectServer", "DEFAULT_PORT", "ServerError", "add_arguments", "main", "server_conf", "start"]
