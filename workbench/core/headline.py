"""An experiment's headline view: the one chart that says what its result is.

The Experiment browser opens on it (docs/dashboard.md): one variable of the stored result along
one dim, drawn against that dim's coordinate or a variable aligned with it (``x``: the samples
L of each checkpoint, say), one curve per coordinate of ``series``, the other dims at the
coordinates ``select`` names (their last one where it names none: the final checkpoint, the
longest run), its Monte Carlo interval from ``<variable>_lower``/``_upper`` where the result
has them, and ``reference`` (an exact oracle's value, a bound) dashed beside it. ``average``
names a dim of repeated draws (independent measurements of the same quantity) to average
over: the view draws their mean with its interval, mean ± 1.96 standard errors. A study
declares it in its ``[study]`` table::

    headline = { variable = "mse", along = "checkpoint", x = "iterations",
                 series = "staleness", select = { test_function = "theta_squared" },
                 reference = "exact_mse", log_x = true, log_y = true }

A plain record: reading it needs nothing of the result; names it gives that the result lacks
are reported when the view is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulators.exceptions import PicklesWithArguments

KEYS = ("variable", "along", "x", "series", "select", "average", "reference", "log_x", "log_y",
        "caption")


class HeadlineError(PicklesWithArguments, ValueError):
    def __init__(self, key: str, reason: str):
        super().__init__(f"{key}: {reason}")
        self.key, self.reason = key, reason


@dataclass(frozen=True)
class Headline:
    variable: str
    along: str
    x: str = ""                  # the along dim's coordinate when empty
    series: str = ""             # one curve when empty
    select: dict[str, Any] = field(default_factory=dict)
    average: str = ""            # a dim of repeated draws to average over (module docstring)
    reference: str = ""
    log_x: bool = False
    log_y: bool = False
    caption: str = ""

    @classmethod
    def from_table(cls, table) -> Headline:
        """A headline from a study's ``headline`` table, refused naming the key."""
        if not isinstance(table, dict):
            raise HeadlineError("headline", "must be a table (variable, along, ...)")
        for key in table:
            if key not in KEYS:
                raise HeadlineError(key, f"unknown key; known: {', '.join(KEYS)}")
        for key in ("variable", "along"):
            if not isinstance(table.get(key), str) or not table[key]:
                raise HeadlineError(key, "is required: the name of a variable or dim")
        for key in ("x", "series", "average", "reference", "caption"):
            if not isinstance(table.get(key, ""), str):
                raise HeadlineError(key, "must be a string")
        for key in ("log_x", "log_y"):
            if not isinstance(table.get(key, False), bool):
                raise HeadlineError(key, "must be true or false")
        select = table.get("select", {})
        if not isinstance(select, dict) or not all(
                isinstance(v, str | int | float) and not isinstance(v, bool)
                for v in select.values()):
            raise HeadlineError("select", "must be a table of dim = coordinate")
        return cls(**{**table, "select": dict(select)})
