"""The Markdown files of the repository link only to files of the repository.

A reader of a clone (or of the docs a package points to) has the repository and nothing
beside it: a relative link that climbs out of it (``../shared/SEMANTICS.md``), a
``file:`` URL, or a link to a file that does not exist finds nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Folders without documentation of the repository: version control, tools' caches, environments, build output.
SKIPPED = {".git", ".venv", ".hypothesis", ".ruff_cache", ".mypy_cache", ".pytest_cache", ".sparkseq-tmp", "build",
           "dist", "__pycache__", "spark-warehouse", "metastore_db", "sparkseq-warehouse",
           ".venv-dbt", ".venv-superset",  # the BI tools' environments of tests/integration
           ".venv-bench"}  # bench/peers.py's peers (DuckDB, chdb)
FENCED_CODE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)[^`].*?\1", re.DOTALL)
#: ``[text](target "title")`` and ``![alt](target)``: the target.
INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*)?\)")
#: ``[label]: target`` (a reference definition): the target.
REFERENCE_LINK = re.compile(r"^ {0,3}\[[^\]\n]+\]:\s*<?([^\s>]+)>?", re.MULTILINE)
URL_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")


def markdown_files(root: Path) -> list[Path]:
    """Every ``*.md`` file under ``root`` outside :data:`SKIPPED` folders and ``*.egg-info``."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED and not d.endswith(".egg-info"))
        found += [Path(folder) / f for f in sorted(files) if f.endswith(".md")]
    return found


def link_targets(text: str) -> list[str]:
    """The targets of the Markdown links in ``text``, outside code blocks and code spans."""
    prose = CODE_SPAN.sub("", FENCED_CODE.sub("", text))
    return INLINE_LINK.findall(prose) + REFERENCE_LINK.findall(prose)


def link_problem(root: Path, document: Path, target: str) -> str | None:
    """Why ``target``, linked from ``document``, finds nothing in the repository at ``root``; None if it does.

    Web and mail links are not followed. A link starting with ``/`` is read from the
    repository's root, as GitHub reads it.
    """
    scheme = URL_SCHEME.match(target)
    if scheme:
        return "a file: URL points outside the repository" if scheme.group(1).lower() == "file" else None
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not path:
        return None  # an anchor in the same document
    resolved = ((root / path.lstrip("/")) if path.startswith("/") else (document.parent / path)).resolve()
    if not resolved.is_relative_to(root):
        return f"resolves to {resolved}, outside the repository"
    if not resolved.exists():
        return "names no file of the repository"
    return None


def broken_links(root: Path) -> list[str]:
    """``document: target (problem)`` for every link of the Markdown files under ``root`` that finds nothing."""
    root = root.resolve()
    broken = []
    for document in markdown_files(root):
        for target in link_targets(document.read_text(encoding="utf-8")):
            problem = link_problem(root, document, target)
            if problem:
                broken.append(f"{document.relative_to(root)}: {target} ({problem})")
    return broken


def test_markdown_links_stay_inside_the_repository() -> None:
    assert markdown_files(ROOT), "no Markdown file found"
    assert not broken_links(ROOT), "\n".join(broken_links(ROOT))


@pytest.mark.parametrize(("document", "link", "problem"), [
    ("README.md", "../shared/SEMANTICS.md", "outside the repository"),
    ("docs/guide.md", "../../shared/SEMANTICS.md#3-matches", "outside the repository"),
    ("docs/guide.md", "file:///work/shared/SEMANTICS.md", "file: URL"),
    ("docs/guide.md", "missing.md", "names no file"),
], ids=["parent", "grandparent-with-anchor", "file-url", "missing"])
def test_a_link_that_finds_nothing_is_reported(tmp_path: Path, document: str, link: str, problem: str) -> None:
    (tmp_path / "repo" / "docs").mkdir(parents=True)
    (tmp_path / "repo" / document).write_text(f"See [the contract]({link}).\n")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "SEMANTICS.md").write_text("# outside\n")
    [report] = broken_links(tmp_path / "repo")
    assert report.startswith(f"{document}: {link} (") and problem in report


def test_links_inside_the_repository_code_and_the_web_are_not_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "semantics.md").write_text("# Semantics\n")
    (tmp_path / "README.md").write_text(
        "[contract](docs/semantics.md#1-the-clause), [root](/docs/semantics.md), [top](#usage),\n"
        "[web](https://spark.apache.org/docs/latest/), `[code](../outside.md)`\n\n"
        "```markdown\n[fenced](../outside.md)\n```\n\n[ref]: docs/semantics.md\n")
    assert broken_links(tmp_path) == []
