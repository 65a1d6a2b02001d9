"""``python -m sparkseq <command>``: the command line.

Each command is a function taking the parsed arguments; :data:`COMMANDS` maps its
name to a help text, an argument declaration and that function.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark is imported when a command needs Spark: --help and explain without Spark stay fast
    from pyspark.sql import DataFrame, SparkSession

    from sql_rewrites.schema import ColumnTypes

#: The line of a Python traceback naming the exception: ``sql_rewrites.errors.SqlParseError: ...``.
PYTHON_ERROR_LINE = re.compile(r"^((?:\w+\.)*)(\w+(?:Error|Exception|Warning|Exit)\b.*)")
#: Exit code after the reader of stdout went away (``... | head``): as if killed by SIGPIPE.
BROKEN_PIPE = 128 + 13
#: Exit code after Ctrl-C: as if killed by SIGINT.
INTERRUPTED = 128 + 2


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master URL (default: $SPARKSEQ_MASTER or local[2])")


def _demo(args: argparse.Namespace) -> int:
    from sparkseq import demo  # its data and queries are package data: a wheel runs it as a checkout does

    demo.main(master=args.master)
    return 0


def _text_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="SQL statements separated by ';' (or use --file)")
    parser.add_argument("--file", "-f", type=Path, help="read the statements from this file")
    _relation_arguments(parser)


def _relation_arguments(parser: argparse.ArgumentParser) -> None:
    """``--table`` and ``--schema``: the relations the statements read, the same for ``sql`` and ``explain``."""
    parser.add_argument("--table", "-t", action="append", default=[], metavar="NAME=PATH",
                        help="register a CSV (header row), Parquet or JSON file as temporary view NAME before "
                             "running; may be repeated. Column types come from --schema NAME=..., else they are "
                             "inferred from the data")
    parser.add_argument("--schema", "-s", action="append", default=[], metavar="NAME=DDL",
                        help="NAME='col TYPE, ...': the columns of relation NAME as a Spark DDL schema, e.g. "
                             "clicks='customer_id INT, ts TIMESTAMP, action STRING, price DECIMAL(10,2)'; may be "
                             "repeated. With --table NAME: the file's column types. explain without --table reads "
                             "the relations from --schema alone and starts no Spark (it also takes them as JSON, "
                             "{\"clicks\": {\"ts\": \"timestamp\", ...}}, or @file.json)")


def _sql_arguments(parser: argparse.ArgumentParser) -> None:
    _text_arguments(parser)
    _demo_arguments(parser)
    parser.add_argument("--limit", type=int, default=20, help="rows to print per query result (default 20)")
    parser.add_argument("--share", action="store_true",
                        help="run the statements as one workload: operators over the same source, PARTITION BY "
                             "and ORDER BY share one pass (sparkseq.workload)")
    _catalog_arguments(parser)


def _catalog_arguments(parser: argparse.ArgumentParser) -> None:
    from sparkseq.warehouse import add_catalog_arguments

    add_catalog_arguments(parser, default=None)


def _explain_arguments(parser: argparse.ArgumentParser) -> None:
    _text_arguments(parser)
    _demo_arguments(parser)
    parser.add_argument("--share", action="store_true",
                        help="explain the statements as one workload: sharing groups, each member's path and "
                             "the shared timelines the pass runs (needs --table: statistics come from the data)")
    _catalog_arguments(parser)


def read_text(args: argparse.Namespace) -> str:
    if (args.text is None) == (args.file is None):
        raise SystemExit("give the SQL either as an argument or with --file, not both")
    return args.file.read_text() if args.file is not None else args.text


@dataclass(frozen=True)
class TableSpec:
    """A ``--table NAME=PATH`` and the ``--schema NAME=DDL`` that goes with it (if any)."""

    name: str
    path: str
    schema: str | None = None


def _table_specs(tables: Sequence[str], schemas: Sequence[str]) -> list[TableSpec]:
    """Parse ``--table`` and ``--schema NAME=DDL`` values (before Spark starts)."""
    ddl: dict[str, str] = {}
    for spec in schemas:
        name, text = _schema_spec(spec)
        ddl[name.casefold()] = text
    parsed = []
    for spec in tables:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--table takes NAME=PATH, got {spec!r}")
        parsed.append(TableSpec(name, path, ddl.pop(name.casefold(), None)))
    if ddl:
        raise SystemExit(f"--schema names no --table: {', '.join(sorted(ddl))}")
    return parsed


def _schema_spec(spec: str) -> tuple[str, str]:
    """A ``--schema NAME=DDL`` value as its name and DDL."""
    name, sep, text = spec.partition("=")
    if not sep or not name.strip() or not text.strip():
        raise SystemExit(f"--schema takes NAME='col TYPE, ...', got {spec!r}")
    return name.strip(), text


def _is_json_schema(spec: str) -> bool:
    return spec.lstrip().startswith(("{", "@"))


def _relation_schemas(specs: Sequence[str]) -> dict[str, ColumnTypes]:
    """The relations of ``--schema`` values given without ``--table`` (``NAME=DDL``, JSON or
    ``@file.json``), read without Spark."""
    from sql_rewrites.errors import SchemaProviderError
    from sql_rewrites.schema import ddl_columns

    relations: dict[str, ColumnTypes] = {}
    for spec in specs:
        if _is_json_schema(spec):
            raw = spec.lstrip()
            try:
                relations.update(json.loads(Path(raw[1:]).read_text() if raw.startswith("@") else raw))
            except (OSError, ValueError) as exc:
                raise SystemExit(f"--schema {raw[:40]!r}: {exc}") from None
            continue
        name, ddl = _schema_spec(spec)
        try:
            relations[name] = ddl_columns(ddl)
        except SchemaProviderError as exc:
            raise SystemExit(f"--schema {name}: {exc}") from None
    return relations


def _register_tables(spark: object, tables: Sequence[TableSpec]) -> None:
    """Each table as a temporary view (the reader chosen by the file suffix)."""
    from pyspark.errors import ParseException

    for table in tables:
        reader = spark.read  # type: ignore[attr-defined]
        if table.schema is not None:
            try:
                reader = reader.schema(table.schema)
            except ParseException as exc:
                raise _Failure(f"--schema {table.name}: {_spark_message(exc)}") from None
        suffix = Path(table.path).suffix.lower()
        if suffix == ".parquet":
            frame = reader.parquet(table.path)
        elif suffix in (".json", ".jsonl"):
            frame = reader.json(table.path)
        else:
            frame = reader.csv(table.path, header=True, inferSchema=table.schema is None)
        frame.createOrReplaceTempView(table.name)


def _session(args: argparse.Namespace) -> SparkSession:
    import sparkseq
    from sparkseq.warehouse import conf_settings

    try:
        conf = conf_settings(args.conf)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    with reporting():  # a catalog another process has open: one line, exit status 1
        # in a terminal Spark's progress bar shows long stages on stderr (sparkseq.progress); results go to stdout
        spark = sparkseq.session(args.master, app_name="sparkseq-cli", conf=conf, warehouse=args.warehouse)
    _quiet_error_loggers()
    return spark


def _cancelling(spark: SparkSession) -> Interruption:
    """Ctrl-C of a command running statements: cancel Spark's running jobs."""
    return Interruption(spark, spark.sparkContext.cancelAllJobs)


class Interruption:
    """Ctrl-C (and SIGTERM) for a command that drives Spark.

    A signal handler runs in the main thread, which is then mostly waiting inside a py4j
    call; calling the JVM from there re-enters that call's connection (PySpark's own
    handler does, to cancel jobs, then raises ``KeyboardInterrupt`` inside the call, and
    py4j logs a page of tracebacks for each). This handler hands ``stop`` to another
    thread and returns; the main thread's call ends when the work it waits for stops, and
    the command then ends with one line. Spark's logs go off first: work stopped midway
    is logged as aborted. A second signal leaves at once. Handled inside ``with`` (in the
    main thread: elsewhere Python delivers no signals); the handlers before it come back
    after.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, spark: SparkSession, stop: Callable[[], object]) -> None:
        self._spark = spark
        self._stop = stop
        self.requested = threading.Event()
        self._stopped = threading.Event()
        self._previous: dict[int, object] = {}

    def __enter__(self) -> Interruption:
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.signal(signum, self._handle) for signum in self.SIGNALS}
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]  # what signal.signal returned

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` once a stop was requested (between two pieces of work)."""
        if self.requested.is_set():
            raise KeyboardInterrupt

    def wait(self, timeout: float) -> None:
        """Once a stop was requested, wait for ``stop`` to return (before stopping the session under it)."""
        if self.requested.is_set():
            self._stopped.wait(timeout)

    def _handle(self, signum: int, frame: object) -> None:
        self.check()  # the second signal
        self.requested.set()
        threading.Thread(target=self._stopping, name="sparkseq-interruption", daemon=True).start()

    def _stopping(self) -> None:
        try:
            self._spark.sparkContext.setLogLevel("OFF")
            self._stop()
        except Exception:  # noqa: BLE001 - the work ends anyway, or a second signal ends the command
            pass
        finally:
            self._stopped.set()


def _quiet_error_loggers() -> None:
    """PySpark logs every SQL error as a JSON line on stderr before raising it; the command
    reports each error once, itself."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


def _sql(args: argparse.Namespace) -> int:
    text = read_text(args)
    tables = _table_specs(args.table, args.schema)
    spark = _session(args)
    with _cancelling(spark) as interruption, reporting(interruption):
        _register_tables(spark, tables)
        if args.share:
            from sparkseq.workloads import run_workload

            statements: Iterator[tuple[str, DataFrame]] = ((s.text, frame) for s, frame in run_workload(spark, text))
        else:
            from sparkseq.sql_api import run_statements

            statements = run_statements(spark, text)
        for statement, frame in statements:  # each runs when its turn comes: results in order, as in a shell
            interruption.check()
            if frame.columns:
                print(f"-- {_first_line(statement)}")
                frame.show(args.limit, truncate=False)
                sys.stdout.flush()
    return 0


def _explain(args: argparse.Namespace) -> int:
    from sparkseq.sql_api import explain

    text = read_text(args)
    if args.table and any(_is_json_schema(s) for s in args.schema):
        raise SystemExit("give either a JSON --schema (no Spark) or --table, not both")
    tables = _table_specs(args.table, args.schema) if args.table else []
    if args.share:
        if not tables:
            raise SystemExit("explain --share reads statistics from the data: give the relations with --table")
        from sparkseq.workloads import explain_workload

        spark = _session(args)
        with _cancelling(spark) as interruption, reporting(interruption):
            _register_tables(spark, tables)
            print(explain_workload(spark, text))
        return 0
    if tables:
        spark = _session(args)
        with _cancelling(spark) as interruption, reporting(interruption):
            _register_tables(spark, tables)
            print(explain(spark, text))
        return 0
    try:
        with reporting():
            shown = explain(_relation_schemas(args.schema), text)
    except SystemExit:
        if not args.schema:
            print("(explain reads relation schemas from --schema NAME=DDL or JSON, or from --table NAME=PATH "
                  "files)", file=sys.stderr)
        raise
    print(shown)
    return 0


class _Failure(Exception):
    """A mistake in the command's arguments found once Spark runs (a bad --schema)."""


@contextlib.contextmanager
def reporting(interruption: Interruption | None = None) -> Iterator[None]:
    """End the command with one line (plus the excerpt of a SQL error) on stderr for any
    sparkseq or Spark error, instead of a traceback; after Ctrl-C (``interruption``), any
    error is the work it stopped, and the line says so."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from udafs.errors import SparkSeqError

    try:
        yield
    except KeyboardInterrupt:
        raise SystemExit(_interrupted()) from None
    except (SparkSeqError, _Failure, PySparkException, Py4JJavaError) as exc:
        if interruption is not None and interruption.requested.is_set():
            raise SystemExit(_interrupted()) from None
        if isinstance(exc, (SparkSeqError, _Failure)):
            print(f"{type(exc).__name__}: {exc}" if isinstance(exc, SparkSeqError) else str(exc), file=sys.stderr)
        else:
            print(f"{type(exc).__name__}: {_spark_message(exc)}", file=sys.stderr)
        raise SystemExit(1) from None


def _interrupted() -> int:
    print("interrupted", file=sys.stderr)
    return INTERRUPTED


def _spark_message(exc: BaseException) -> str:
    """Spark's message on one line: for a Python worker's error its last line (the exception),
    for a JVM error without a PySpark class the Java exception's message."""
    from sparkseq.spark_errors import message_of

    java = getattr(exc, "java_exception", None)
    if java is not None:
        return str(java.toString()).strip().splitlines()[0]
    if type(exc).__name__ == "PythonException":
        lines = str(exc).rstrip().splitlines()
        raised = [i for i, line in enumerate(lines) if PYTHON_ERROR_LINE.match(line)]
        if raised:  # the worker's exception (a sparkseq error keeps its excerpt), without module path
            return "\n".join([PYTHON_ERROR_LINE.sub(r"\2", lines[raised[-1]]), *lines[raised[-1] + 1:]])
    return message_of(exc)


def _first_line(statement: str) -> str:
    """The header a result is printed under: the statement's first line of code (leading
    comments skipped), cut at 100 characters."""
    code = _without_leading_comments(statement)
    line = code.splitlines()[0].strip() if code else ""
    return line if len(line) <= 100 else line[:97] + "..."


def _without_leading_comments(text: str) -> str:
    """``text`` from its first character of code on: blanks, ``--`` comments and (nested)
    ``/* */`` comments before it skipped."""
    rest = text.lstrip()
    while rest.startswith(("--", "/*")):
        if rest.startswith("--"):
            rest = rest.partition("\n")[2].lstrip()
            continue
        depth, i = 0, 0
        while i < len(rest):
            if rest.startswith("/*", i):
                depth, i = depth + 1, i + 2
            elif rest.startswith("*/", i):
                depth, i = depth - 1, i + 2
            else:
                i += 1
            if depth == 0:
                break
        rest = rest[i:].lstrip()
    return rest


def _stream_arguments(parser: argparse.ArgumentParser) -> None:
    from sparkseq import live_cli

    live_cli.add_arguments(parser)


def _stream(args: argparse.Namespace) -> int:
    from sparkseq import live_cli

    return live_cli.main(args)


def _thrift_arguments(parser: argparse.ArgumentParser) -> None:
    from sparkseq import thrift

    thrift.add_arguments(parser)


def _thriftserver(args: argparse.Namespace) -> int:
    from sparkseq import thrift

    return thrift.main(args)


def _connect_arguments(parser: argparse.ArgumentParser) -> None:
    from sparkseq import connect_server

    connect_server.add_arguments(parser)


def _connect_server(args: argparse.Namespace) -> int:
    from sparkseq import connect_server

    return connect_server.main(args)


def _passwd_arguments(parser: argparse.ArgumentParser) -> None:
    from sparkseq import server_auth

    server_auth.passwd_arguments(parser)


def _passwd(args: argparse.Namespace) -> int:
    from sparkseq import server_auth

    return server_auth.passwd_main(args)


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {
    "demo": ("run the e-commerce funnel example on the bundled sample data", _demo_arguments, _demo),
    "sql": ("run SQL with MATCH_AGGREGATE in a local Spark session and print the results",
            _sql_arguments, _sql),
    "explain": ("show what MATCH_AGGREGATE statements become: analysis, engine plan, Spark SQL",
                _explain_arguments, _explain),
    "stream": ("run a MATCH_AGGREGATE over files arriving in a directory (Structured Streaming) and write its "
               "results as parquet, printing progress per micro-batch", _stream_arguments, _stream),
    "thriftserver": ("serve a Spark session with sparkseq's functions and views to JDBC/ODBC clients "
                     "(Spark's Thrift server, in-process)", _thrift_arguments, _thriftserver),
    "connect-server": ("serve a Spark session to Spark Connect clients, whose spark.sql then takes "
                       "MATCH_AGGREGATE (Spark's Connect plugin, in-process)", _connect_arguments, _connect_server),
    "passwd": ("add a user to a password file of the Thrift server (thriftserver --auth password-file), change "
               "their password or remove them; the file holds salted hashes only", _passwd_arguments, _passwd),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m sparkseq",
                                     description="Exact aggregates over event-sequence pattern matches in Spark SQL.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    for name, (help_text, declare, run) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        declare(sub)
        sub.set_defaults(run=run)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling (starting Spark, say)
        return _interrupted()
    except BrokenPipeError:
        # the reader of stdout is gone (``| head``): stop quietly, and keep Python from
        # reporting the failed flush of stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
