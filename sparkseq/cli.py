"""``python -m sparkseq <command>``: the command line.

Each command is a function taking the parsed arguments; :data:`COMMANDS` maps its
name to a help text, an argument declaration and that function.
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
T = TypeVar("T")


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master URL (default: $SPARKSEQ_MASTER or local[2])")


def _demo(args: argparse.Namespace) -> int:
    script = EXAMPLES / "ecommerce_funnel.py"
    if not script.is_file():
        print(f"the demo needs a source checkout of sparkseq; {script} does not exist", file=sys.stderr)
        return 2
    runpy.run_path(str(script))["main"](master=args.master)
    return 0


def _text_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="SQL statements separated by ';' (or use --file)")
    parser.add_argument("--file", "-f", type=Path, help="read the statements from this file")
    parser.add_argument("--table", "-t", action="append", default=[], metavar="NAME=PATH",
                        help="register a CSV (header row, types inferred), Parquet or JSON file as temporary view "
                             "NAME before running; may be repeated")


def _sql_arguments(parser: argparse.ArgumentParser) -> None:
    _text_arguments(parser)
    _demo_arguments(parser)
    parser.add_argument("--limit", type=int, default=20, help="rows to print per query result (default 20)")
    parser.add_argument("--share", action="store_true",
                        help="run the statements as one workload: operators over the same source, PARTITION BY "
                             "and ORDER BY share one pass (sparkseq.workload)")


def _explain_arguments(parser: argparse.ArgumentParser) -> None:
    _text_arguments(parser)
    _demo_arguments(parser)
    parser.add_argument("--schema", help="relation schemas as JSON, {\"clicks\": {\"ts\": \"timestamp\", ...}}, "
                                         "or @file.json; explains without starting Spark")
    parser.add_argument("--share", action="store_true",
                        help="explain the statements as one workload: sharing groups, statistics, the sharing "
                             "optimizer's plan (needs --table: statistics come from the data)")
    parser.add_argument("--dot", action="store_true", help="with --share, also print the Sharon graph as DOT")


def _read_text(args: argparse.Namespace) -> str:
    if (args.text is None) == (args.file is None):
        raise SystemExit("give the SQL either as an argument or with --file, not both")
    return args.file.read_text() if args.file is not None else args.text


def _register_tables(spark: object, specs: Sequence[str]) -> None:
    """``NAME=PATH`` pairs as temporary views (the reader chosen by the file suffix)."""
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--table takes NAME=PATH, got {spec!r}")
        reader = spark.read  # type: ignore[attr-defined]
        suffix = Path(path).suffix.lower()
        if suffix == ".parquet":
            frame = reader.parquet(path)
        elif suffix in (".json", ".jsonl"):
            frame = reader.json(path)
        else:
            frame = reader.csv(path, header=True, inferSchema=True)
        frame.createOrReplaceTempView(name)


def _session(args: argparse.Namespace) -> object:
    import sparkseq

    # the console progress bar shows long stages on stderr; results go to stdout
    return sparkseq.session(args.master, app_name="sparkseq-cli", conf={"spark.ui.showConsoleProgress": "true"})


def _sql(args: argparse.Namespace) -> int:
    from sparkseq.sql_api import run_statements

    text = _read_text(args)
    spark = _session(args)
    _register_tables(spark, args.table)
    if args.share:
        from sparkseq.workloads import workload

        from sql_rewrites.rewriter import split_statements

        frames = _reporting(lambda: workload(spark, text))
        for statement, frame in zip(split_statements(text), frames):
            if frame.columns:
                print(f"-- {_first_line(statement.text)}")
                frame.show(args.limit, truncate=False)
        return 0
    for statement, frame in _reporting(lambda: run_statements(spark, text)):
        if frame.columns:
            print(f"-- {_first_line(statement)}")
            frame.show(args.limit, truncate=False)
    return 0


def _explain(args: argparse.Namespace) -> int:
    from sparkseq.sql_api import explain

    text = _read_text(args)
    if args.schema is not None and args.table:
        raise SystemExit("give either --schema (no Spark) or --table, not both")
    if args.share:
        if not args.table:
            raise SystemExit("explain --share reads statistics from the data: give the relations with --table")
        from sparkseq.workloads import explain_workload

        spark = _session(args)
        _register_tables(spark, args.table)
        print(_reporting(lambda: explain_workload(spark, text, dot=args.dot)))
        return 0
    if args.table:
        source = _session(args)
        _register_tables(source, args.table)
    else:
        raw = args.schema or "{}"
        source = json.loads(Path(raw[1:]).read_text() if raw.startswith("@") else raw)
    try:
        shown = _reporting(lambda: explain(text, source))
    except SystemExit:
        if not args.table and args.schema is None:
            print("(explain reads relation schemas from --schema JSON or --table NAME=PATH files)", file=sys.stderr)
        raise
    print(shown)
    return 0


def _reporting(run: Callable[[], T]) -> T:
    """Run ``run``; a sparkseq or Spark analysis error ends the command with its message."""
    from pyspark.errors import AnalysisException

    from udafs.errors import SparkSeqError

    try:
        result = run()
        return list(result) if isinstance(result, Iterator) else result  # type: ignore[return-value]
    except (SparkSeqError, AnalysisException) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None


def _first_line(statement: str) -> str:
    line = " ".join(statement.split())
    return line if len(line) <= 100 else line[:97] + "..."


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
    return args.run(args)
