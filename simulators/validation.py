"""Early, named validation of user input.

Every public constructor in the project checks its arguments with these helpers, so a bad value
fails before any work starts, with a message that names the field and the allowed range.
"""

from __future__ import annotations

import math
from numbers import Integral, Real


class InvalidParameter(ValueError):
    """A configuration value outside its allowed range; names the field and the range."""

    def __init__(self, field: str, value: object, allowed: str):
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field} = {value!r} is invalid: {allowed}")


def _require_real(field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidParameter(field, value, "must be a real number")
    value = float(value)
    if math.isnan(value):
        raise InvalidParameter(field, value, "must be a number, not NaN")
    return value


def positive(field: str, value: object) -> float:
    """A finite real number > 0."""
    value = _require_real(field, value)
    if not (0.0 < value < math.inf):
        raise InvalidParameter(field, value, "must be a finite number > 0")
    return value


def non_negative(field: str, value: object) -> float:
    """A finite real number >= 0."""
    value = _require_real(field, value)
    if not (0.0 <= value < math.inf):
        raise InvalidParameter(field, value, "must be a finite number >= 0")
    return value


def finite(field: str, value: object) -> float:
    """Any finite real number."""
    value = _require_real(field, value)
    if not math.isfinite(value):
        raise InvalidParameter(field, value, "must be finite")
    return value


def probability(field: str, value: object) -> float:
    """A real number in [0, 1]."""
    value = _require_real(field, value)
    if not (0.0 <= value <= 1.0):
        raise InvalidParameter(field, value, "must lie in [0, 1]")
    return value


def integer(field: str, value: object, minimum: int | None = None) -> int:
    """An integer, optionally bounded below."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InvalidParameter(field, value, "must be an integer")
    value = int(value)
    if minimum is not None and value < minimum:
        raise InvalidParameter(field, value, f"must be an integer >= {minimum}")
    return value


def one_of(field: str, value: object, allowed: tuple[str, ...]) -> str:
    """One of a fixed set of names."""
    if value not in allowed:
        raise InvalidParameter(field, value, f"must be one of {', '.join(map(repr, allowed))}")
    return str(value)
