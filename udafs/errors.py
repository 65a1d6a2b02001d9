"""The exception hierarchy shared by every layer of sparkseq.

``SparkSeqError`` is the one root; ``sql_rewrites`` and ``sparkseq`` subclass it.
It lives here, in the lowest layer, so that the engine can raise it without
importing upward.
"""

from __future__ import annotations

import enum


class SparkSeqError(Exception):
    """Root of every error sparkseq raises on purpose."""


class PlanError(SparkSeqError, ValueError):
    """A compiled pattern plan is malformed (bad version, bad field, bad value)."""


class CountOverflowError(SparkSeqError, ArithmeticError):
    """An exact result does not fit the requested SQL type (BIGINT by default).

    Raised instead of wrapping or rounding. ``partition`` names the group whose
    value overflowed, when the caller knows it.
    """

    def __init__(self, what: str, value_digits: int, target: str, partition: object = None,
                 advice: str | None = None) -> None:
        self.what = what
        self.value_digits = value_digits
        self.target = target
        self.partition = partition
        self.advice = advice
        text = {OverflowSlot.PARTITION: repr(partition), OverflowSlot.DIGITS: str(value_digits)}
        super().__init__("".join(text[piece] if isinstance(piece, OverflowSlot) else piece
                                 for piece in overflow_template(what, target, partition is not None, advice)))

    def with_partition(self, partition: object) -> CountOverflowError:
        """Return the same error naming ``partition``."""
        return CountOverflowError(self.what, self.value_digits, self.target, partition, self.advice)


class OverflowSlot(enum.Enum):
    """A variable part of the overflow message (:func:`overflow_template`)."""

    PARTITION = "partition"  # the partition, as its ``repr`` (or JSON text, in generated SQL)
    DIGITS = "digits"  # the number of decimal digits of the value that does not fit


def overflow_template(what: str, target: str, names_partition: bool,
                      advice: str | None = None) -> tuple[str | OverflowSlot, ...]:
    """The one text of a :class:`CountOverflowError`, as literal pieces and slots: the
    kernels fill the slots in Python, the JVM path (:mod:`sql_rewrites.generation.jvm_path`) in
    Java, so both paths raise the same words."""
    where: tuple[str | OverflowSlot, ...] = (" in partition ", OverflowSlot.PARTITION) if names_partition else ()
    return (what, *where, " has ", OverflowSlot.DIGITS,
            f" decimal digits and does not fit {target}; {advice or wider_count_types(target)}")


def wider_count_types(target: str) -> str:
    """What to ask for instead of ``target``, in SQL words (never ``target`` itself)."""
    if target == "BIGINT":
        return ("write COUNT TYPE DECIMAL (exact, DECIMAL(38, 0)) or COUNT TYPE DOUBLE (approximate) in "
                "MATCH_AGGREGATE (a Plan's count_type 'decimal' or 'double')")
    return ("only COUNT TYPE DOUBLE (approximate; a Plan's count_type 'double') holds a value this large; "
            "or split the partitions further")


def measure_words(kind: str, name: str | None) -> str:
    """A measure as a message names it, in SQL words: its aggregate (``kind``, a
    :class:`udafs.plan.MeasureKind` value) and its name.

    >>> measure_words("count_star", "n"), measure_words("sum", None)
    ("measure 'n' (COUNT(*))", 'SUM measure')
    """
    aggregate = "COUNT(*)" if kind == "count_star" else str.upper(kind)
    return f"measure {name!r} ({aggregate})" if name else f"{aggregate} measure"


#: Why a sum or average of a DECIMAL column cannot be widened (it is Spark's overflow too).
DECIMAL_SUM_OVERFLOW = ("Spark's own SUM / AVG of the column overflow as well (an error with ANSI mode on); cast the "
                        "column to DOUBLE in a subquery for an approximate result")


class InputDataError(SparkSeqError, ValueError):
    """Event data handed to a kernel is unusable (shapes, dtypes)."""


class StateError(SparkSeqError, ValueError):
    """Stored streaming state cannot be used: not sparkseq's, another format version,
    damaged, or written by a different query (plan) than the one reading it."""


class UncertainTimeError(InputDataError):
    """Events with imprecise timestamps that the engine cannot evaluate (exactly).

    Raised for a lower bound above the upper one, too many possible times, or input
    outside the exact method's conditions (``docs/sql-reference.md`` section 15).
    ``partition`` names the group, when the caller knows it.
    """

    def __init__(self, message: str, partition: object = None) -> None:
        self.message = message
        self.partition = partition
        where = f" in partition {partition!r}" if partition is not None else ""
        super().__init__(f"imprecise timestamps{where}: {message}")

    def with_partition(self, partition: object) -> UncertainTimeError:
        """Return the same error naming ``partition``."""
        return UncertainTimeError(self.message, partition)
