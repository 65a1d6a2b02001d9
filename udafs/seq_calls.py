"""One group's ``seq_*`` call as its worker body and the compiler hand it to each other.

The body of a ``seq_*`` function (:mod:`udafs.workers.seq_functions`) reads the Arrow
arguments of one group into a :class:`CallArguments` of plain values; the compiler's
description of the function (:class:`sql_rewrites.analysis.seq_functions.Signature`)
checks them, with the errors the function raises, and returns the :class:`Compiled`
pattern the body evaluates. Pure Python and numpy, so the compiler imports it without
pyarrow, and the body without the compiler.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from udafs.contract import OrderKind
from udafs.plan import Plan, ValueType

#: The session's concept hierarchies as bound into the registered functions:
#: ``((casefolded name, ((child, parent), ...)), ...)`` (hashable, picklable).
Hierarchies = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]


@dataclass(frozen=True)
class Compiled:
    """A plan plus what turns a type column into the plan's symbol mask: a row whose type is
    ``values[i]`` is an instance of the symbols in the bitmask ``bits[i]``."""

    plan: Plan
    values: tuple[str, ...]  # distinct type values of the pattern
    bits: np.ndarray  # bits[i]: OR of the symbols whose type value is values[i]


@dataclass(frozen=True)
class Constant:
    """An argument that must be the same for every row of a group (``pattern``, ``within``,
    ``slide``, ``symbol``): its value as Python reads it (``str``, ``int``, ``Decimal``,
    ``timedelta`` ...; None when NULL or left out), whether rows disagree on it, and the
    type it arrived as (Arrow's name, for a message)."""

    value: object = None
    varies: bool = False
    arrow_type: str = "null"


@dataclass(frozen=True)
class CallArguments:
    """One group's call of a ``seq_*`` function, read by the worker body for the compiler.

    ``time_kind`` is None when ``ts`` has no event-time type; ``value_type`` is None when the
    measured column is not numeric (and for the functions that measure no column). The SQL
    type texts name what arrived, in Spark's words, for messages.
    """

    time_kind: OrderKind | None
    time_type: str
    pattern: Constant
    within: Constant
    slide: Constant
    symbol: Constant
    value_type: ValueType | None = None
    value_sql_type: str = ""


__all__ = ["CallArguments", "Compiled", "Constant", "Hierarchies"]
