"""The docstring examples that need no SparkSession run and stay true (tests/support/docstring_examples.py)."""

from __future__ import annotations

import doctest

import pytest

from tests.support.docstring_examples import docstring_examples, needs_session, run_examples

EXAMPLES = [t for t in docstring_examples() if not needs_session(t)]


@pytest.mark.parametrize("test", EXAMPLES, ids=[t.name for t in EXAMPLES])
def test_docstring_examples(test: doctest.DocTest) -> None:
    attempted, failures = run_examples(test, {})
    assert not failures, failures
    assert attempted > 0, f"{test.name}: every example is skipped"


def test_only_starting_a_session_is_skipped() -> None:
    """Examples stay runnable: the one line a doctest may skip starts a session (the tests
    give theirs as ``spark``)."""
    skipped = {e.source.split("#")[0].strip() for t in docstring_examples() for e in t.examples
               if e.options.get(doctest.SKIP)}
    assert skipped <= {"spark = sparkseq.session()"}
