"""Early, named validation of user input.

Every public constructor in the project checks its arguments with these helpers, so a bad value
fails before any work starts, with a message that names the field and the allowed range.
"""

from __future__ import annotations

import math
import re
from numbers import Integral, Real

from simulators.exceptions import PicklesWithArguments


class InvalidParameter(PicklesWithArguments, ValueError):
    """A configuration value outside its allowed range; names the field and the range."""

    def __init__(self, field: str, value: object, allowed: str):
        self.field = field
        self.value = value
        self.allowed = allowed
        shown = field if str(field).isprintable() else repr(field)  # one line, always
        super().__init__(f"{shown} = {value!r} is invalid: {allowed}")


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


def integer(field: str, value: object, minimum: int | None = None,
            maximum: int | None = None) -> int:
    """An integer, optionally bounded below and above."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InvalidParameter(field, value, "must be an integer")
    value = int(value)
    if maximum is not None and (value > maximum or (minimum is not None and value < minimum)):
        raise InvalidParameter(field, value, f"must be an integer in [{minimum}, {maximum}]"
                               if minimum is not None else f"must be an integer <= {maximum}")
    if minimum is not None and value < minimum:
        raise InvalidParameter(field, value, f"must be an integer >= {minimum}")
    return value


_BYTE_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6,
               "mib": 2**20, "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12,
               "tib": 2**40}


def _with_unit(field: str, value: str, units: dict, allowed: str) -> float:
    """A number followed by one of ``units`` (case ignored) times that unit's size."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", value)
    unit = match.group(2).lower() if match else None
    if unit not in units:
        raise InvalidParameter(field, value, allowed)
    return float(match.group(1)) * units[unit]


def byte_size(field: str, value: object) -> int:
    """A positive number of bytes: an integer, or text such as ``512MiB``, ``1.5 GB`` or
    ``2G`` (k, M, G, T: powers of 1000; KiB, MiB, GiB, TiB: powers of 1024; case ignored)."""
    if isinstance(value, str):
        value = _with_unit(field, value, _BYTE_UNITS, "must be a size in bytes such as "
                                                      "1073741824, 512MiB, 1.5GB or 2G")
        if not math.isfinite(value):
            raise InvalidParameter(field, value, "must be a finite size")
        value = int(round(value))
    return integer(field, value, minimum=1)


_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def duration(field: str, value: object) -> float:
    """A positive number of seconds: a number, or text such as ``600``, ``90s``, ``10m`` or
    ``1.5h`` (s, m or min, h; case ignored)."""
    if isinstance(value, str):
        value = _with_unit(field, value, _DURATION_UNITS, "must be a duration such as 600, "
                                                          "90s, 10m or 1.5h")
    return positive(field, value)


def one_of(field: str, value: object, allowed: tuple[str, ...]) -> str:
    """One of a fixed set of names."""
    if value not in allowed:
        raise InvalidParameter(field, value, f"must be one of {', '.join(map(repr, allowed))}")
    return str(value)


def frequencies(field: str, values: object, strictly_positive: bool = True) -> list[float]:
    """A probability vector: finite entries, > 0 (or >= 0), summing to 1 within 1e-9."""
    try:
        entries = [float(v) for v in values]  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise InvalidParameter(field, values, "must be a list of numbers") from None
    if not entries:
        raise InvalidParameter(field, entries, "must be a non-empty list")
    lowest = "> 0" if strictly_positive else ">= 0"
    for value in entries:
        if not math.isfinite(value) or value < 0 or (strictly_positive and value == 0):
            raise InvalidParameter(field, entries, f"entries must be finite and {lowest}")
    total = math.fsum(entries)
    if abs(total - 1.0) > 1e-9:
        raise InvalidParameter(field, entries, f"must sum to 1 (sums to {total:.12g})")
    return entries


def sizes(field: str, values: object, total: int | None = None) -> list[int]:
    """Positive integer sizes (of shards), adding up to ``total`` when it is given."""
    if isinstance(values, str) or not hasattr(values, "__iter__"):
        raise InvalidParameter(field, values, "must be a list of positive integers")
    entries = [integer(f"{field}[{i}]", v, minimum=1) for i, v in enumerate(values)]
    if not entries:
        raise InvalidParameter(field, entries, "must be a non-empty list")
    if total is not None and sum(entries) != total:
        raise InvalidParameter(field, entries,
                               f"must add up to {total} (they add up to {sum(entries)})")
    return entries
