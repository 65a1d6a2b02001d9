"""``python -m sparkseq <command>``: the command line.

Each command is a function taking the parsed arguments; :data:`COMMANDS` maps its
name to a help text, an argument declaration and that function.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sparkseq.commands.console import (
    CommandFailure,
    Interruption,
    interrupted,
    quiet_error_loggers,
    read_text,
    reporting,
    spark_message,
)

if TYPE_CHECKING:  # pyspark is imported when a command needs Spark: --help and explain without Spark stay fast
    from pyspark.sql import DataFrame, SparkSession

    from sql_rewrites.logical.schema import ColumnTypes

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
    from sparkseq.spark.warehouse import add_catalog_arguments

    add_catalog_arguments(parser, default=None)


def _explain_arguments(parser: argparse.ArgumentParser) -> None:
    _text_arguments(parser)
    _demo_arguments(parser)
    parser.add_argument("--share", action="store_true",
                        help="explain the statements as one workload: sharing groups, each member's path and "
                             "the shared timelines the pass runs (needs --table: statistics come from the data)")
    _catalog_arguments(parser)


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
    from sql_rewrites.logical.schema import ddl_columns

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
                raise CommandFailure(f"--schema {table.name}: {spark_message(exc)}") from None
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
    from sparkseq.spark.warehouse import conf_settings

    try:
        conf = conf_settings(args.conf)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    with reporting():  # a catalog another process has open: one line, exit status 1
        # in a terminal Spark's progress bar shows long stages on stderr (sparkseq.spark.progress); results go to stdout
        spark = sparkseq.session(args.master, app_name="sparkseq-cli", conf=conf, warehouse=args.warehouse)
    quiet_error_loggers()
    return spark


def _cancelling(spark: SparkSession) -> Interruption:
    """Ctrl-C of a command running statements: cancel Spark's running jobs."""
    return Interruption(spark, spark.sparkContext.cancelAllJobs)


def _sql(args: argparse.Namespace) -> int:
    text = read_text(args)
    tables = _table_specs(args.table, args.schema)
    spark = _session(args)
    with _cancelling(spark) as interruption, reporting(interruption):
        _register_tables(spark, tables)
        if args.share:
            from sparkseq.statements.workloads import run_workload

            statements: Iterator[tuple[str, DataFrame]] = ((s.text, frame) for s, frame in run_workload(spark, text))
        else:
            from sparkseq.statements.sql_api import run_statements

            statements = run_statements(spark, text)
        for statement, frame in statements:  # each runs when its turn comes: results in order, as in a shell
            interruption.check()
            if frame.columns:
                print(f"-- {_first_line(statement)}")
                frame.show(args.limit, truncate=False)
                sys.stdout.flush()
    return 0


def _explain(args: argparse.Namespace) -> int:
    from sparkseq.statements.sql_api import explain

    text = read_text(args)
    if args.table and any(_is_json_schema(s) for s in args.schema):
        raise SystemExit("give either a JSON --schema (no Spark) or --table, not both")
    tables = _table_specs(args.table, args.schema) if args.table else []
    if args.share:
        if not tables:
            raise SystemExit("explain --share reads statistics from the data: give the relations with --table")
        from sparkseq.statements.workloads import explain_workload

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
    from sparkseq.commands import live_cli

    live_cli.add_arguments(parser)


def _stream(args: argparse.Namespace) -> int:
    from sparkseq.commands import live_cli

    return live_cli.main(args)


def _thrift_arguments(parser: argparse.ArgumentParser) -> None:
    from sparkseq.servers import thrift

    thrift.add_arguments(parser)


def _thriftserver(args: argparse.Namespace) -> int:
    from sparkseq.servers import thrift

    return thrift.main(args)


def _connect_arguments(parser: argparse.ArgumentParser) -> None:
    from sparkseq.servers import connect as connect_server

    connect_server.add_arguments(parser)


def _connect_server(args: argparse.Namespace) -> int:
    from sparkseq.servers import connect as connect_server

    return connect_server.main(args)


def _passwd_arguments(parser: argparse.ArgumentParser) -> None:
    from sparkseq.servers import auth as server_auth

    server_auth.passwd_arguments(parser)


def _passwd(args: argparse.Namespace) -> int:
    from sparkseq.servers import auth as server_auth

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
        return interrupted()
    except BrokenPipeError:
        # the reader of stdout is gone (``| head``): stop quietly, and keep Python from
        # reporting the failed flush of stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
