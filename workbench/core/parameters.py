"""Experiment parameters: declared once, with defaults, help and validation.

The same name is used as config key, ``--set`` key, xarray dim or attribute, and dashboard
label. A configuration is a plain ``dict`` of parameter values; it renders to TOML (``workbench
show``) and is stored verbatim in every result file.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import tomli_w

from simulators.validation import InvalidParameter


@dataclass(frozen=True)
class Parameter:
    """One configuration key: its default, its meaning, and an optional validator.

    The type is the default's: an int parameter accepts integers, a float parameter accepts
    any real number, a list parameter accepts a list of the element type, a string parameter
    one of ``choices`` when given.
    """

    name: str
    default: Any
    help: str
    validate: Callable[[str, Any], Any] | None = None
    choices: tuple[str, ...] | None = None

    def coerce(self, value: Any) -> Any:
        value = _coerce_like(self.name, self.default, value)
        if self.choices is not None and value not in self.choices:
            raise InvalidParameter(self.name, value,
                                   f"must be one of {', '.join(map(repr, self.choices))}")
        if self.validate is not None:
            value = self.validate(self.name, value)
        return value


def _coerce_like(name: str, default: Any, value: Any) -> Any:
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        raise InvalidParameter(name, value, "must be true or false")
    if isinstance(default, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidParameter(name, value, "must be an integer")
        if not -2**63 <= value < 2**63:  # TOML's range, and numpy's int64
            raise InvalidParameter(name, value, "must be an integer in [-2**63, 2**63 - 1]")
        return value
    if isinstance(default, float):
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an integer beyond the float range
                number = math.inf
            if not math.isfinite(number):
                raise InvalidParameter(name, value, "must be a finite number")
            return number
        raise InvalidParameter(name, value, "must be a number")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise InvalidParameter(name, value, "must be a string")
    if isinstance(default, list):
        if not isinstance(value, list) or not value:
            raise InvalidParameter(name, value, "must be a non-empty list")
        template = default[0]
        return [_coerce_like(f"{name}[{i}]", template, v) for i, v in enumerate(value)]
    raise TypeError(f"parameter {name}: unsupported default type {type(default).__name__}")


def resolve(parameters: tuple[Parameter, ...], overrides: Mapping[str, Any] | None = None,
            quick: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Defaults, then the quick overrides, then the user's; every value validated."""
    known = {p.name: p for p in parameters}
    config = {p.name: p.default for p in parameters}
    for source in (quick or {}, overrides or {}):
        for key, value in source.items():
            if key not in known:
                raise InvalidParameter(key, value,
                                       f"is not a parameter; known: {', '.join(sorted(known))}")
            config[key] = value
    return {name: known[name].coerce(value) for name, value in config.items()}


def parse_assignment(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE read as a TOML value, or as a bare string if it is not one."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InvalidParameter("--set", text, "must look like KEY=VALUE")
    try:
        value = tomllib.loads(f"value = {raw.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return key, value


def to_toml(config: Mapping[str, Any], parameters: tuple[Parameter, ...] | None = None) -> str:
    """Render a configuration; with ``parameters``, each key is preceded by its help."""
    if parameters is None:
        return tomli_w.dumps(dict(config))
    lines = []
    for p in parameters:
        lines.append(f"# {p.help}")
        lines.append(tomli_w.dumps({p.name: config[p.name]}).rstrip())
    return "\n".join(lines) + "\n"


class ValidatedParameter(Parameter):
    """A parameter whose value (a table, a list that may be empty) is checked by its
    validator alone."""

    def coerce(self, value):
        return self.validate(self.name, value)
