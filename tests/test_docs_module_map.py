"""docs/architecture.md names every module of the three packages, and docs/engine.md every
kernel module: the map a new engineer reads first stays complete."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Package directory -> (document, heading of the section whose table lists its modules).
MAPS = {
    "sql_rewrites": ("docs/architecture.md", "### `sql_rewrites/`"),
    "udafs": ("docs/architecture.md", "### `udafs/`"),
    "sparkseq": ("docs/architecture.md", "### `sparkseq/`"),
    "udafs/kernels": ("docs/engine.md", "# The engine: `udafs/kernels`"),
}


def _section(document: str, heading: str) -> str:
    text = (ROOT / document).read_text()
    found = re.search(rf"^{re.escape(heading)}.*$", text, re.MULTILINE)
    assert found is not None, f"{document} has no heading {heading!r}"
    start = found.end()
    following = re.search(r"^#{1,3} ", text[start:], re.MULTILINE)
    return text[start:start + following.start()] if following else text[start:]


def _wing_tables(section: str) -> list[tuple[str, str]]:
    """(wing prefix such as ``"syntax/"``, its table) for the top table and each ``#### `pkg/wing/` `` table."""
    parts = re.split(r"^#### `[a-z_/]+?/([a-z_]+)/`.*$", section, flags=re.MULTILINE)
    return [("", parts[0])] + [(parts[i] + "/", parts[i + 1]) for i in range(1, len(parts), 2)]


@pytest.mark.parametrize("package", sorted(MAPS))
def test_every_module_is_in_its_map(package: str) -> None:
    document, heading = MAPS[package]
    section = _section(document, heading)
    listed = set()
    for wing, table in _wing_tables(section):
        first_cells = re.findall(r"^\|([^|]*)\|", table, re.MULTILINE)
        listed |= {wing + name for cell in first_cells for name in re.findall(r"`([a-z_0-9]+\.py)`", cell)}
    base = ROOT / package
    nested = {other for other in MAPS if other.startswith(package + "/")}
    modules = {f.relative_to(base).as_posix() for f in base.rglob("*.py")
               if not any(f.is_relative_to(ROOT / other) for other in nested)
               and (f.name != "__init__.py" or f.parent == base and package == "sparkseq")}
    missing = sorted(modules - listed)
    assert not missing, f"{document} ({heading}) does not list: {', '.join(missing)}"
    gone = sorted(listed - modules)
    assert not gone, f"{document} ({heading}) lists modules that do not exist: {', '.join(gone)}"
