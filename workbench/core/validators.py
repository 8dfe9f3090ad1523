"""Validators for experiment parameters (``Parameter.validate``): each takes the parameter's
name and value and returns the value, or raises ``InvalidParameter`` naming the field."""

from __future__ import annotations

import re

from simulators import validation

#: what an experiment's (a study's) name may be: it names ``<out>/<name>.nc`` and
#: ``<out>/store/<name>/``, so no path separator, no leading dot (``..``), and a length a file
#: system takes
EXPERIMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def positive(name, value):
    return validation.positive(name, value)


def non_negative(name, value):
    return validation.non_negative(name, value)


def at_least_one(name, value):
    return validation.integer(name, value, minimum=1)


def at_least_two(name, value):
    return validation.integer(name, value, minimum=2)


def non_negative_int(name, value):
    return validation.integer(name, value, minimum=0)


def finite(name, value):
    return validation.finite(name, value)


def rate(name, value):
    """A probability strictly between 0 and 1."""
    value = validation.probability(name, value)
    if not 0 < value < 1:
        raise validation.InvalidParameter(name, value, "must lie strictly between 0 and 1")
    return value


def distinct_positive_ints(name, value):
    """A grid of distinct integers >= 1, sorted."""
    grid = [validation.integer(f"{name}[{i}]", v, minimum=1) for i, v in enumerate(value)]
    if len(set(grid)) != len(grid):
        raise validation.InvalidParameter(name, value, "must not repeat a value")
    return sorted(grid)


def positive_grid(minimum_length: int, integer: bool, lowest: float):
    """A validator of a sorted grid without repeats, of at least ``minimum_length`` values:
    integers >= ``lowest``, or positive reals."""

    def validate(name, value):
        check = validation.integer if integer else validation.positive
        grid = [check(f"{name}[{i}]", v, **({"minimum": lowest} if integer else {}))
                for i, v in enumerate(value)]
        if len(set(grid)) != len(grid):
            raise validation.InvalidParameter(name, value, "must not repeat a value")
        if len(grid) < minimum_length:
            raise validation.InvalidParameter(name, value,
                                              f"needs at least {minimum_length} values")
        return sorted(grid)

    return validate
