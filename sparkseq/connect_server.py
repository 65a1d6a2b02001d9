"""A Spark Connect server whose clients can write MATCH_AGGREGATE in plain ``spark.sql``.

``python -m sparkseq connect-server [--host H] [--port P] [--init-file F] [--master M]``
starts a sparkseq session (:func:`sparkseq.session`: functions registered, parser
extension loaded) with Spark's Connect plugin in the same driver, runs the init file
(:mod:`sparkseq.initfile`) and serves Spark Connect at ``sc://H:P``. Any Connect client
— also one without sparkseq installed, only ``pyspark[connect]`` — then has:

* MATCH_AGGREGATE in ``spark.sql`` (named and positional ``args=`` included): the
  parser extension hands the text, with the client's server-side session, to the
  rewriter in this driver's Python process (:class:`sparkseq.jvm_parser.Rewriter`),
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
from dataclasses import dataclass

from pyspark.sql import SparkSession

from sparkseq import jvm_parser, servers
from sparkseq.registration import FUNCTIONS
from sparkseq.servers import ServerError

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

    @property
    def url(self) -> str:
        """The Spark Connect URL, e.g. ``sc://127.0.0.1:15002``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"sc://{host}:{self.port}"

    def stop(self) -> None:
        """Nothing to do: the Connect plugin stops with Spark (:func:`sparkseq.servers.shutdown`)."""


def server_conf(host: str, port: int) -> dict[str, str]:
    """Spark settings that start the Connect plugin on ``host:port`` with the driver."""
    return {"spark.plugins": PLUGIN, "spark.connect.grpc.binding.address": host,
            "spark.connect.grpc.binding.port": str(port),
            "spark.connect.grpc.port.maxRetries": "0"}  # a busy port fails instead of serving elsewhere


def start(spark: SparkSession, host: str, port: int) -> ConnectServer:
    """Share ``spark`` with Connect clients (see the module docstring) once its plugin listens.

    ``spark`` must have been built with :func:`server_conf` for ``host:port``.

    Raises
    ------
    ServerError
        When nothing listens on ``host:port`` within a minute.
    """
    unavailable = jvm_parser.try_install(spark, share_session=True)
    servers.wait_listening(host, port, "Spark Connect server")
    return ConnectServer(spark, host, port, unavailable)


# --- the command line ----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``python -m sparkseq connect-server``'s options."""
    servers.add_arguments(parser, DEFAULT_PORT)


def main(args: argparse.Namespace) -> int:
    """Run the server until SIGTERM or Ctrl-C; the process exit code (see :func:`sparkseq.servers.run`)."""
    return servers.run(args, session=lambda: _server_session(args.master, args.host, args.port),
                       start=lambda spark: start(spark, args.host, args.port),
                       announce=_announce)


def _server_session(master: str | None, host: str, port: int) -> SparkSession:
    import sparkseq
    from sparkseq.session import ParserExtensionWarning

    with warnings.catch_warnings():  # the banner says whether the extension is on
        warnings.simplefilter("ignore", ParserExtensionWarning)
        return sparkseq.session(master, app_name="sparkseq-connect-server", conf=server_conf(host, port),
                                progress=False)  # clients' jobs: no progress bar on the server's console


def _announce(server: ConnectServer) -> None:
    functions = ", ".join(sorted(spec.name for spec in FUNCTIONS))
    views = ", ".join(servers.relation_names(server.spark)) or "(none)"
    unavailable = server.sql_text_unavailable
    sql_text = "yes" if unavailable is None else f"no — {unavailable.splitlines()[0]}"
    print(f"sparkseq Spark Connect server listening on {server.host}:{server.port}\n"
          f"  URL        {server.url}\n"
          f"  views      {views}\n"
          f"  functions  {functions}\n"
          f"  MATCH_AGGREGATE in clients' spark.sql: {sql_text}\n"
          "Stop with Ctrl-C or SIGTERM.", flush=True)


__all__ = ["ConnectServer", "DEFAULT_PORT", "ServerError", "add_arguments", "main", "server_conf", "start"]
