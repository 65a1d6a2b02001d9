"""The sharing optimizer's one error class."""

from __future__ import annotations

from sql_rewrites.errors import SqlRewriteError


class SharingError(SqlRewriteError):
    """A workload or its statistics cannot be optimised (bad input, named in the message)."""
