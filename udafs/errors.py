"""The exception hierarchy shared by every layer of sparkseq.

``SparkSeqError`` is the one root; ``sql_rewrites`` and ``sparkseq`` subclass it.
It lives here, in the lowest layer, so that the engine can raise it without
importing upward.
"""

from __future__ import annotations


class SparkSeqError(Exception):
    """Root of every error sparkseq raises on purpose."""


class PlanError(SparkSeqError, ValueError):
    """A compiled pattern plan is malformed (bad version, bad field, bad value)."""


class CountOverflowError(SparkSeqError, ArithmeticError):
    """An exact result does not fit the requested SQL type (BIGINT by default).

    Raised instead of wrapping or rounding. ``partition`` names the group whose
    value overflowed, when the caller knows it.
    """

    def __init__(self, what: str, value_digits: int, target: str, partition: object = None) -> None:
        self.what = what
        self.value_digits = value_digits
        self.target = target
        self.partition = partition
        where = f" in partition {partition!r}" if partition is not None else ""
        super().__init__(
            f"{what}{where} has {value_digits} decimal digits and does not fit {target}; "
            "ask for count_type='decimal' (DECIMAL(38,0)) or count_type='double' instead"
        )

    def with_partition(self, partition: object) -> CountOverflowError:
        """Return the same error naming ``partition``."""
        return CountOverflowError(self.what, self.value_digits, self.target, partition)


class InputDataError(SparkSeqError, ValueError):
    """Event data handed to a kernel is unusable (shapes, dtypes)."""


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
