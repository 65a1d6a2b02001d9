"""The docstring examples that use a SparkSession run, with the tests' session as ``spark``
(tests/docstring_examples.py); the temporary views and concept hierarchies an example
leaves behind are dropped after it."""

from __future__ import annotations

import doctest

import pytest

from tests.docstring_examples import docstring_examples, needs_session, run_examples

EXAMPLES = [t for t in docstring_examples() if needs_session(t)]


@pytest.mark.parametrize("test", EXAMPLES, ids=[t.name for t in EXAMPLES])
def test_docstring_examples(spark, test: doctest.DocTest) -> None:
    from sparkseq.spark import hierarchies

    views = {t.name for t in spark.catalog.listTables() if t.isTemporary}
    known = set(hierarchies.registered_hierarchies(spark))
    try:
        attempted, failures = run_examples(test, {"spark": spark})
    finally:
        for table in spark.catalog.listTables():
            if table.isTemporary and table.name not in views:
                spark.catalog.dropTempView(table.name)
        for name in set(hierarchies.registered_hierarchies(spark)) - known:
            hierarchies.drop_hierarchy(spark, name)
    assert not failures, failures
    assert attempted > 0, f"{test.name}: every example is skipped"
