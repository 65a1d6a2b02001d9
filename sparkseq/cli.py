"""``python -m sparkseq <command>``: the command line.

Each command is a function taking the parsed arguments; :data:`COMMANDS` maps its
name to a help text, an argument declaration and that function.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master URL (default: $SPARKSEQ_MASTER or local[2])")


def _demo(args: argparse.Namespace) -> int:
    script = EXAMPLES / "ecommerce_funnel.py"
    if not script.is_file():
        print(f"the demo needs a source checkout of sparkseq; {script} does not exist", file=sys.stderr)
        return 2
    runpy.run_path(str(script))["main"](master=args.master)
    return 0


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {
    "demo": ("run the e-commerce funnel example on the bundled sample data", _demo_arguments, _demo),
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
