"""What sparkseq's servers share: the command's options and life cycle, port checks.

``python -m sparkseq thriftserver`` (:mod:`sparkseq.servers.thrift`) and ``python -m sparkseq
connect-server`` (:mod:`sparkseq.servers.connect`) both run one Spark driver serving
clients: check the address before Spark starts, run a checked init file
(:mod:`sparkseq.servers.initfile`), start serving, print a banner, and stop cleanly on SIGTERM
or Ctrl-C. :func:`run` is that life cycle; each server supplies how to build its
session, start serving and describe itself.
"""

from __future__ import annotations

import argparse
import ipaddress
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Protocol, TypeVar

from pyspark.sql import SparkSession

from sparkseq.spark.warehouse import (
    CATALOG_IMPLEMENTATION,
    CONNECTION_URL,
    DEFAULT_DIRECTORY,
    METASTORE_URIS,
    WAREHOUSE_DIR,
    CatalogError,
    CatalogInUseError,
    add_catalog_arguments,
    conf_settings,
    local_path,
)
from udafs.errors import SparkSeqError

DEFAULT_HOST = "127.0.0.1"
READY_TIMEOUT_S = 60.0  # a server binds within a second or two; a loaded machine is slower


class ServerError(SparkSeqError):
    """A server cannot start (the message says why)."""


class PortInUseError(ServerError):
    """Something already listens on the requested address and port."""


class Server(Protocol):
    """A running server: :func:`run` stops it before stopping Spark."""

    def stop(self) -> None: ...


#: The kind of server :func:`run` starts and announces.
S = TypeVar("S", bound=Server)


def check_port(host: str, port: int) -> None:
    """Raise :class:`PortInUseError` when ``host:port`` cannot be bound; cheap, no Spark.

    Binds with ``SO_REUSEADDR`` as the JVM's server socket does, so a port that only
    has connections in TIME_WAIT counts as free.
    """
    if not 0 < port < 65536:
        raise ServerError(f"port must be between 1 and 65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ServerError(f"cannot resolve host {host!r}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise PortInUseError(f"cannot listen on {host}:{port}: {exc.strerror}; another server uses it — "
                                 "choose a free port with --port") from None


def is_loopback(host: str) -> bool:
    """True when ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback
                   for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM))
    except (socket.gaierror, ValueError):
        return False


def wait_listening(host: str, port: int, what: str, timeout: float = READY_TIMEOUT_S) -> None:
    """Return once ``host:port`` accepts connections; :class:`ServerError` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise ServerError(f"the {what} did not listen on {host}:{port} within {timeout:.0f} s") from None
            time.sleep(0.1)


def relation_names(spark: SparkSession) -> list[str]:
    """Temporary and global temporary views of ``spark`` (what clients can query by name)."""
    names = [row["tableName"] for row in spark.sql("SHOW TABLES").collect()]
    names += [f"global_temp.{row['tableName']}" for row in spark.sql("SHOW TABLES IN global_temp").collect()
              if row["namespace"]]
    return sorted(set(names))


# --- the command line ----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser, default_port: int) -> None:
    """Declare the options every server command takes."""
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; any other address "
                             "needs authentication, or --no-auth)")
    parser.add_argument("--port", type=int, default=default_port, help=f"TCP port (default {default_port})")
    parser.add_argument("--init-file", "-i", type=Path, metavar="FILE",
                        help="SQL statements (';'-separated; MATCH_AGGREGATE allowed) run before serving, "
                             "e.g. CREATE TEMP VIEW ...; every statement is checked first")
    parser.add_argument("--master", help="Spark master URL (default: $SPARKSEQ_MASTER or local[2])")
    add_catalog_arguments(parser, default=DEFAULT_DIRECTORY)
    parser.add_argument("--in-memory-catalog", action="store_true",
                        help="keep the catalog in memory instead: tables, databases and views created while serving "
                             "vanish when the server stops")


def catalog_options(args: argparse.Namespace) -> tuple[str | None, dict[str, str]]:
    """A server command's ``warehouse=`` for :func:`sparkseq.session` (None: in memory) and its ``--conf`` settings."""
    return (None if args.in_memory_catalog else args.warehouse), conf_settings(args.conf)


def catalog_description(spark: SparkSession) -> str:
    """Where the session's catalog lives, for a server's banner."""
    conf = spark.sparkContext.getConf()
    if conf.get(CATALOG_IMPLEMENTATION, "in-memory") != "hive":
        return "in memory: tables and views created while serving vanish when the server stops"
    location = conf.get(WAREHOUSE_DIR, "?")
    tables = str(local_path(location) or location)  # Spark qualifies it: file:/...
    uris, url = conf.get(METASTORE_URIS, None), conf.get(CONNECTION_URL, None)
    if uris:
        return f"Hive metastore {uris}; new databases in {tables}"
    if url and url.startswith("jdbc:derby:;databaseName="):
        folder = Path(url.removeprefix("jdbc:derby:;databaseName=").split(";")[0]).parent
        if tables == str(folder / "warehouse"):
            return f"{folder} (Hive metastore in Derby); persists across restarts"
        return f"{folder} (Hive metastore in Derby; tables in {tables}); persists across restarts"
    return f"Hive metastore {url or '(hive-site.xml)'}; new databases in {tables}"


def run(args: argparse.Namespace, *, session: Callable[[], SparkSession], start: Callable[[SparkSession], S],
        announce: Callable[[S], None]) -> int:
    """Serve until SIGTERM or Ctrl-C; the process exit code.

    Exit codes: 0 after a clean shutdown, 1 for a bad init file, a catalog that cannot be
    opened or a server that does not start, 2 for a busy port, a bad address or a catalog
    another process has open (found before Spark starts).
    """
    from sparkseq.servers import initfile

    try:
        check_port(args.host, args.port)
        conf_settings(args.conf)
        init = initfile.read(args.init_file) if args.init_file is not None else None
    except (ServerError, ValueError) as exc:  # a busy port, a bad host, a --conf without '='
        return fail(exc, 2)
    except initfile.InitFileError as exc:
        return fail(exc, 1)
    # a non-loopback address without authentication is refused before this (sparkseq.servers.auth.preflight)
    try:
        spark = session()
    except CatalogInUseError as exc:  # found before Spark starts, like a busy port
        return fail(exc, 2)
    except CatalogError as exc:
        return fail(exc, 1)
    try:
        if init is not None:
            initfile.run(spark, init)  # checks every statement before the first runs
        server = start(spark)
    except (initfile.InitFileError, ServerError) as exc:
        stop_spark(spark)
        return fail(exc, 1)
    except KeyboardInterrupt:  # Ctrl-C while starting: PySpark's own SIGINT handler raised it
        stop_spark(spark)
        return 130
    stop = stop_on_signals()  # after the session: PySpark installs a SIGINT handler of its own
    try:
        announce(server)
        while not stop.wait(1.0):
            pass
        print("stopping the server", file=sys.stderr, flush=True)
    finally:
        shutdown(server, spark)
    return 0


def shutdown(server: Server, spark: SparkSession) -> None:
    """Stop serving, then Spark. A signal sent to the whole process group (a service
    manager, ``timeout``) also stops the JVM, on its own shutdown hooks: nothing is left to stop."""
    from py4j.protocol import Py4JError

    try:
        server.stop()
    except Py4JError:
        pass
    stop_spark(spark)


def stop_spark(spark: SparkSession) -> None:
    """``spark.stop()``, quietly when the JVM is already gone (py4j then raises its own
    error, or ``ConnectionRefusedError`` when it tries to reconnect)."""
    from py4j.protocol import Py4JError

    try:
        spark.stop()
    except (Py4JError, ConnectionError):
        pass


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (Ctrl-C). PySpark starts its JVM ignoring SIGINT,
    so Ctrl-C in a terminal reaches only this process, which then stops Spark cleanly."""
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop


def fail(exc: Exception, code: int) -> int:
    """Print ``exc`` as one line of stderr; return ``code``."""
    print(f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    return code


__all__ = ["DEFAULT_HOST", "PortInUseError", "Server", "ServerError", "add_arguments", "catalog_description",
           "catalog_options", "check_port", "fail", "is_loopback", "relation_names", "run", "shutdown",
           "stop_on_signals", "stop_spark", "wait_listening"]
