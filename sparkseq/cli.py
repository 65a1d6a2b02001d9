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
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark is imported when a command needs Spark: --help and explain without Spark stay fast
    from pyspark.sql import DataFrame, SparkSession

#: The line of a Python traceback naming the exception: ``sql_rewrites.errors.SqlParseError: ...``.
PYTHON_ERROR_LINE = re.compile(r"^((?:\w+\.)*)(\w+(?:Error|Exception|Warning|Exit)\b.*)")
#: Exit code after the reader of stdout went away (``... | head``): as if killed by SIGPIPE.
BROKEN_PIPE = 128 + 13


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master URL (default: $SPARKSEQ_MASTER or local[2])")


def _demo(args: argparse.Namespace) -> int:
    from sparkseq import demo  # its data and queries are package data: a wheel runs it as a checkout does

    demo.main(master=args.master)
    return 0


def _text_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="SQL statements separated by ';' (or use --file)")
    parser.add_argument("--file", "-f", type=Path, help="read the statements from this file")
    parser.add_argument("--table", "-t", action="append", default=[], metavar="NAME=PATH",
                        help="register a CSV (header row), Parquet or JSON file as temporary view NAME before "
                             "running; may be repeated. Column types come from --schema NAME=..., else they are "
                             "inferred from the data")


TABLE_SCHEMA_HELP = ("NAME='col TYPE, ...': the columns of --table NAME as a Spark DDL schema, e.g. "
                     "clicks='customer_id INT, ts TIMESTAMP, action STRING, price DECIMAL(10,2)'; may be repeated")


def _sql_arguments(parser: argparse.ArgumentParser) -> None:
    _text_arguments(parser)
    _demo_arguments(parser)
    parser.add_argument("--schema", "-s", action="append", default=[], metavar="NAME=DDL", help=TABLE_SCHEMA_HELP)
    parser.add_argument("--limit", type=int, default=20, help="rows to print per query result (default 20)")
    parser.add_argument("--share", action="store_true",
                        help="run the statements as one workload: operators over the same source, PARTITION BY "
                             "and ORDER BY share one pass (sparkseq.workload)")


def _explain_arguments(parser: argparse.ArgumentParser) -> None:
    _text_arguments(parser)
    _demo_arguments(parser)
    parser.add_argument("--schema", "-s", action="append", default=[], metavar="JSON|NAME=DDL",
                        help="relation schemas as JSON, {\"clicks\": {\"ts\": \"timestamp\", ...}}, or @file.json: "
                             "explains without starting Spark; or, with --table, " + TABLE_SCHEMA_HELP)
    parser.add_argument("--share", action="store_true",
                        help="explain the statements as one workload: sharing groups, each member's path and "
                             "the shared timelines the pass runs (needs --table: statistics come from the data)")
    parser.add_argument("--dot", action="store_true", help=argparse.SUPPRESS)  # removed: DOT_REMOVED says why


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
        name, sep, text = spec.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise SystemExit(f"--schema takes NAME='col TYPE, ...', got {spec!r}")
        ddl[name.strip().casefold()] = text
    parsed = []
    for spec in tables:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--table takes NAME=PATH, got {spec!r}")
        parsed.append(TableSpec(name, path, ddl.pop(name.casefold(), None)))
    if ddl:
        raise SystemExit(f"--schema names no --table: {', '.join(sorted(ddl))}")
    return parsed


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

    # the console progress bar shows long stages on stderr; results go to stdout
    spark = sparkseq.session(args.master, app_name="sparkseq-cli", conf={"spark.ui.showConsoleProgress": "true"})
    _quiet_error_loggers()
    return spark


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
    with reporting():
        _register_tables(spark, tables)
        if args.share:
            from sparkseq.workloads import run_workload

            statements: Iterator[tuple[str, DataFrame]] = ((s.text, frame) for s, frame in run_workload(spark, text))
        else:
            from sparkseq.sql_api import run_statements

            statements = run_statements(spark, text)
        for statement, frame in statements:  # each runs when its turn comes: results in order, as in a shell
            if frame.columns:
                print(f"-- {_first_line(statement)}")
                frame.show(args.limit, truncate=False)
                sys.stdout.flush()
    return 0


#: ``explain --share --dot`` drew the sharing optimizer's graph; the optimizer decided nothing
#: that runs and was removed. The flag stays, as this error, for one release.
DOT_REMOVED = ("--dot was removed: it drew the graph of the sharing optimizer, which decided nothing that runs "
               "and is gone; explain --share prints the shared timelines the pass runs")


def _explain(args: argparse.Namespace) -> int:
    from sparkseq.sql_api import explain

    if args.dot:
        raise SystemExit(DOT_REMOVED)
    text = read_text(args)
    json_schemas = [s for s in args.schema if s.lstrip().startswith(("{", "@"))]
    if json_schemas and args.table:
        raise SystemExit("give either a JSON --schema (no Spark) or --table, not both")
    if len(json_schemas) > 1 or (json_schemas and len(args.schema) > 1):
        raise SystemExit("give one JSON --schema")
    tables = _table_specs(args.table, [s for s in args.schema if s not in json_schemas])
    if args.share:
        if not tables:
            raise SystemExit("explain --share reads statistics from the data: give the relations with --table")
        from sparkseq.workloads import explain_workload

        spark = _session(args)
        with reporting():
            _register_tables(spark, tables)
            print(explain_workload(spark, text))
        return 0
    if tables:
        source = _session(args)
        with reporting():
            _register_tables(source, tables)
    else:
        raw = json_schemas[0] if json_schemas else "{}"
        source = json.loads(Path(raw.lstrip()[1:]).read_text() if raw.lstrip().startswith("@") else raw)
    try:
        with reporting():
            shown = explain(source, text)
    except SystemExit:
        if not tables and not json_schemas:
            print("(explain reads relation schemas from --schema JSON or --table NAME=PATH files)", file=sys.stderr)
        raise
    print(shown)
    return 0


class _Failure(Exception):
    """A mistake in the command's arguments found once Spark runs (a bad --schema)."""


@contextlib.contextmanager
def reporting() -> Iterator[None]:
    """End the command with one line (plus the excerpt of a SQL error) on stderr for any
    sparkseq or Spark error, instead of a traceback."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from udafs.errors import SparkSeqError

    try:
        yield
    except (SparkSeqError, _Failure) as exc:
        print(f"{type(exc).__name__}: {exc}" if isinstance(exc, SparkSeqError) else str(exc), file=sys.stderr)
        raise SystemExit(1) from None
    except (PySparkException, Py4JJavaError) as exc:
        print(f"{type(exc).__name__}: {_spark_message(exc)}", file=sys.stderr)
        raise SystemExit(1) from None


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
    line = " ".join(statement.split())
    return line if len(line) <= 100 else line[:97] + "..."


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
    except BrokenPipeError:
        # the reader of stdout is gone (``| head``): stop quietly, and keep Python from
        # reporting the failed flush of stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
