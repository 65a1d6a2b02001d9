"""The runnable examples in the docstrings of sparkseq/, sql_rewrites/ and udafs/.

Every module of the three packages is searched (``doctest.DocTestFinder``); a docstring
whose examples name ``spark`` runs in tests/spark/test_spark_doctests.py with the tests'
session, the others in tests/compiler/test_sql_doctests.py without Spark.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from typing import Any

PACKAGES = ("sparkseq", "sql_rewrites", "udafs")
#: Modules that run something when imported.
NOT_IMPORTED = {"sparkseq.__main__"}
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_SPARK = re.compile(r"\bspark\b(?!:)")  # the name, not a spark:// URL


def module_names() -> list[str]:
    names = []
    for package in PACKAGES:
        names.append(package)
        path = importlib.import_module(package).__path__
        names += [m.name for m in pkgutil.walk_packages(path, f"{package}.") if m.name not in NOT_IMPORTED]
    return sorted(names)


def docstring_examples() -> list[doctest.DocTest]:
    """Each docstring with at least one example, in module order."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    found: dict[str, doctest.DocTest] = {}
    for name in module_names():
        for test in finder.find(importlib.import_module(name), name):  # objects defined in the module
            if test.examples:
                found.setdefault(test.name, test)
    return sorted(found.values(), key=lambda t: t.name)


def needs_session(test: doctest.DocTest) -> bool:
    return any(_SPARK.search(example.source) for example in test.examples)


def run_examples(test: doctest.DocTest, globs: dict[str, Any]) -> tuple[int, str]:
    """(examples run, doctest's report of the failures) for ``test`` with ``globs`` added."""
    test.globs = {**test.globs, **globs}
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    result = runner.run(test, out=report.append, clear_globs=False)
    return result.attempted, "".join(report)  # attempted: without the +SKIP examples
