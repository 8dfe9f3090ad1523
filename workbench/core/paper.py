"""The paper beside the workbench: what a seed paper states, and the verdicts that compare it.

A study declares, in ``[[paper]]`` tables, the claims its paper states in its text and the
numbers it reports in its tables (never values read off a figure, which the text does not
carry), each citing its section; the Experiment browser's Paper tab puts them next to the
workbench's result and the verdicts named in ``checks`` (docs/dashboard.md)::

    [[paper]]
    section = "seed 001 §5.1"
    claim = "approximately the same MSE’s are obtained after L iterations for different τ values"
    checks = ["invariance/mse/*"]                    # verdict names or fnmatch patterns

    [[paper]]                                        # a table of reported numbers
    section = "seed 002 §5.3, Table 1"
    claim = "Average log-likelihood for MLPs learned with DSGLD and FSGLD."
    checks = []                                      # no verdict compares it: said so
    variable = "log_likelihood"                      # what the workbench puts beside it
    select = { split = "test", data = "non-iid" }
    reported = [{ label = "FSGLD", value = -0.67, sd = 0.03, select = { estimator = "fsgld" } }]

``claim`` is the paper's words, a short quotation; ``paraphrase = true`` says it is not.
``note`` says, in the workbench's words, how the checks bear on the claim (optional).
A plain record: reading it needs nothing of the result; names it gives that the result lacks
are reported when the tab is drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from simulators.exceptions import PicklesWithArguments

KEYS = ("section", "claim", "paraphrase", "checks", "note", "variable", "select", "reported")
ROW_KEYS = ("label", "value", "sd", "select")


class PaperError(PicklesWithArguments, ValueError):
    """A refused ``[[paper]]`` entry: ``path`` is the key's place in the entry (``("claim",)``,
    ``("reported", 0, "value")``), preceded by the entry's index where a list was read."""

    def __init__(self, path: tuple, reason: str):
        self.path, self.reason = tuple(path), reason
        indexed = bool(path) and isinstance(path[0], int)  # "[[paper]] #1 reported.0.value"
        head = f"[[paper]] #{path[0] + 1}" if indexed else "paper"
        rest = ".".join(map(str, self.path[indexed:]))
        self.key = f"{head} {rest}" if rest else head
        super().__init__(f"{self.key}: {reason}")


@dataclass(frozen=True)
class Reported:
    """One row of a paper's table: its label, the value and standard deviation the paper
    reports, and where in the result the workbench's value is (``select`` beside the entry's)."""

    label: str
    value: float
    sd: float | None = None
    select: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PaperEntry:
    section: str                   # where the paper states it: "seed 001 §5.1"
    claim: str                     # the paper's words (a short quotation)
    checks: tuple[str, ...]        # verdict names or fnmatch patterns; () when none compares it
    paraphrase: bool = False       # the claim is not the paper's wording
    note: str = ""                 # how the checks bear on it, in the workbench's words
    variable: str = ""             # the result's variable beside ``reported``
    select: dict[str, Any] = field(default_factory=dict)
    reported: tuple[Reported, ...] = ()

    @classmethod
    def from_table(cls, table) -> PaperEntry:
        """An entry from one ``[[paper]]`` table, refused naming the key."""
        if not isinstance(table, dict):
            raise PaperError((), "must be a table (section, claim, checks, ...)")
        for key in table:
            if key not in KEYS:
                raise PaperError((key,), f"unknown key; known: {', '.join(KEYS)}")
        for key in ("section", "claim"):
            if not isinstance(table.get(key), str) or not table[key].strip():
                raise PaperError((key,), "is required: " + (
                    "where the paper states it, e.g. \"seed 001 §5.1\"" if key == "section"
                    else "what the paper states, in its words"))
        if not isinstance(table.get("paraphrase", False), bool):
            raise PaperError(("paraphrase",), "must be true or false")
        checks = table.get("checks")
        if not isinstance(checks, list) or not all(isinstance(c, str) and c for c in checks):
            raise PaperError(("checks",), "is required: a list of verdict names or patterns "
                                          "([] where no check compares the claim)")
        for key in ("note", "variable"):
            if not isinstance(table.get(key, ""), str):
                raise PaperError((key,), "must be a string")
        reported = table.get("reported", [])
        if not isinstance(reported, list):
            raise PaperError(("reported",), "must be a list of rows { label, value, sd }")
        if bool(reported) != bool(table.get("variable")):
            raise PaperError(("variable",) if reported else ("reported",),
                             "a table of reported numbers needs both reported and variable")
        if "select" in table and not reported:
            raise PaperError(("select",), "means something only beside reported numbers")
        rows = tuple(_row(i, row) for i, row in enumerate(reported))
        return cls(table["section"].strip(), table["claim"].strip(), tuple(checks),
                   table.get("paraphrase", False), table.get("note", "").strip(),
                   table.get("variable", ""),
                   _select(("select",), table.get("select", {})), rows)


def entries(value) -> tuple[PaperEntry, ...]:
    """The ``[[paper]]`` tables of a study file; a refusal's path starts with the index."""
    if not isinstance(value, list):
        raise PaperError((), "write the paper's claims as [[paper]] tables")
    out = []
    for i, table in enumerate(value):
        try:
            out.append(PaperEntry.from_table(table))
        except PaperError as error:
            raise PaperError((i, *error.path), error.reason) from None
    return tuple(out)


def _row(i: int, row) -> Reported:
    if not isinstance(row, dict):
        raise PaperError(("reported", i), "must be a table { label, value, sd }")
    for key in row:
        if key not in ROW_KEYS:
            raise PaperError(("reported", i, key), f"unknown key; known: {', '.join(ROW_KEYS)}")
    if not isinstance(row.get("label"), str) or not row["label"].strip():
        raise PaperError(("reported", i, "label"), "is required: the row's name in the table")
    if not _finite(row.get("value")):
        raise PaperError(("reported", i, "value"), "is required: the number the paper reports")
    sd = row.get("sd")
    if sd is not None and not (_finite(sd) and sd >= 0):
        raise PaperError(("reported", i, "sd"), "must be a number >= 0")
    return Reported(row["label"].strip(), float(row["value"]),
                    None if sd is None else float(sd),
                    _select(("reported", i, "select"), row.get("select", {})))


def _finite(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _select(path: tuple, select) -> dict[str, Any]:
    if not isinstance(select, dict) or not all(
            isinstance(v, str | int | float) and not isinstance(v, bool)
            for v in select.values()):
        raise PaperError(path, "must be a table of dim = coordinate")
    return dict(select)
