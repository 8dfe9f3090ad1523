"""The Experiment browser's Paper tab: the paper beside the workbench.

A study's ``[[paper]]`` entries (:mod:`workbench.core.paper`) say what its seed paper states in
its text or reports in a table, citing the section. For a stored result this module builds, as
plain rows the page shows as tables:

- :func:`paper_rows`: one row per stated claim, and one per reported number of a table, with
  the section, the paper's words or value (± its sd), the workbench's value where the entry
  names a variable of the result (± its ``<variable>_sd`` and with its interval where the
  result stores them), how the verdicts named in ``checks`` came out, or :data:`NO_CHECK`
  where the entry names none;
- :func:`paper_verdict_rows`: those verdicts, one row each, with a short reason.

Verdicts are matched by name or :mod:`fnmatch` pattern; a pattern that matches no verdict of
the result is said so, never dropped.
"""

from __future__ import annotations

from collections import Counter
from fnmatch import fnmatchcase

import numpy as np
import xarray as xr

from bounds.verdict import VERDICTS, Verdict
from workbench import experiments
from workbench.core.paper import PaperEntry, Reported

#: what the tab says of an entry whose ``checks`` is empty
NO_CHECK = "no check compares this claim"
#: characters of a verdict's detail shown as its reason
REASON_LENGTH = 240


def declared(dataset: xr.Dataset) -> tuple[PaperEntry, ...]:
    """The ``[[paper]]`` entries of the experiment that made ``dataset`` (built-in or study)."""
    return tuple(experiments.for_dataset(dataset).paper)


def none_declared(experiment: str) -> str:
    """The one line of the tab for an experiment that declares no entries."""
    return (f"{experiment} declares nothing of its paper beside the workbench: its study file "
            "has no [[paper]] entries (docs/studies.md).")


def matching(entry: PaperEntry, verdicts: list[Verdict]) -> list[Verdict]:
    """The verdicts whose name matches one of the entry's ``checks``, in the result's order."""
    return [v for v in verdicts if any(fnmatchcase(v.check, p) for p in entry.checks)]


def unmatched(entry: PaperEntry, verdicts: list[Verdict]) -> list[str]:
    """The entry's ``checks`` that name no verdict of the result."""
    return [p for p in entry.checks if not any(fnmatchcase(v.check, p) for v in verdicts)]


def verdict_summary(entry: PaperEntry, verdicts: list[Verdict]) -> str:
    """How the entry's verdicts came out, in words: ``"1 holds, 2 inconclusive"``."""
    if not entry.checks:
        return NO_CHECK
    counts = Counter(v.verdict for v in matching(entry, verdicts))
    parts = [f"{counts[word]} {word}" for word in VERDICTS if counts[word]]
    missing = unmatched(entry, verdicts)
    if missing:
        parts.append(f"not in this result: {', '.join(missing)}")
    return "; ".join(parts)


def workbench_value(dataset: xr.Dataset, entry: PaperEntry,
                    row: Reported) -> tuple[float, float, float]:
    """The result's value beside a reported number, and its interval (NaN where the result
    stores no ``<variable>_lower``/``_upper``); a :class:`KeyError` names what it lacks."""
    select = {**entry.select, **row.select}

    def picked(name: str) -> float:
        array = dataset[name]
        extra = [d for d in select if d not in array.dims]
        if extra:
            raise KeyError(f"{name} has no dim {', '.join(extra)}")
        try:
            array = array.sel(select)
        except KeyError:
            raise KeyError(f"{name} has no coordinate {select}") from None
        if array.ndim:
            raise KeyError(f"{name}: select a coordinate of {', '.join(map(str, array.dims))}")
        return float(array)

    if entry.variable not in dataset.data_vars:
        raise KeyError(f"the result has no variable {entry.variable}")
    bounds = [f"{entry.variable}_{side}" for side in ("lower", "upper")]
    if not set(bounds) <= set(dataset.data_vars):
        return picked(entry.variable), np.nan, np.nan
    return picked(entry.variable), picked(bounds[0]), picked(bounds[1])


def measured_value(dataset: xr.Dataset, entry: PaperEntry, row: Reported) -> str:
    """The workbench's value beside a reported number, written ``value ± sd [lower, upper]``
    (each part where the result stores it); a :class:`KeyError` names what it lacks."""
    value, lower, upper = workbench_value(dataset, entry, row)
    spread = _spread(dataset, entry, row)
    return (f"{value:.4g}" + (f" ± {spread:.2g}" if np.isfinite(spread) else "")
            + ("" if np.isnan(lower) else f" [{lower:.4g}, {upper:.4g}]"))


def reported_value(row: Reported) -> str:
    """A reported number as the paper gives it: ``value`` or ``value ± sd``."""
    return f"{row.value:.4g}" + ("" if row.sd is None else f" ± {row.sd:.2g}")


def _measured(dataset: xr.Dataset, entry: PaperEntry, row: Reported) -> str:
    try:
        value = measured_value(dataset, entry, row)
    except KeyError as error:
        return f"not in this result: {error.args[0]}"
    where = ", ".join(f"{d} = {c}" for d, c in {**entry.select, **row.select}.items())
    return f"{value} ({entry.variable}{' at ' + where if where else ''})"


def _spread(dataset: xr.Dataset, entry: PaperEntry, row: Reported) -> float:
    """The result's ``<variable>_sd`` at the row's coordinates of its dims (the spread a paper's
    ± reports, such as the standard deviation over repetitions of seed 002 Table 1), or NaN
    where it keeps none or not one number there."""
    name = f"{entry.variable}_sd"
    if name not in dataset.data_vars:
        return np.nan
    spread = dataset[name]
    try:
        value = spread.sel({d: c for d, c in {**entry.select, **row.select}.items()
                            if d in spread.dims})
    except KeyError:
        return np.nan
    return float(value) if value.ndim == 0 else np.nan


def paper_rows(entries: tuple[PaperEntry, ...], verdicts: list[Verdict],
               dataset: xr.Dataset) -> list[dict]:
    """The Paper tab's table (module docstring): section, paper, workbench, verdicts, note."""
    rows = []
    for entry in entries:
        claim = entry.claim + (" (paraphrased)" if entry.paraphrase else "")
        common = {"verdicts": verdict_summary(entry, verdicts), "note": entry.note}
        if not entry.reported:
            rows.append({"section": entry.section, "paper": claim, "workbench": "", **common})
        for row in entry.reported:
            rows.append({"section": entry.section,
                         "paper": f"{claim}: {row.label} {reported_value(row)}",
                         "workbench": _measured(dataset, entry, row), **common})
    return rows


def paper_verdict_rows(entries: tuple[PaperEntry, ...], verdicts: list[Verdict]) -> list[dict]:
    """One row per entry and verdict it names: section, claim, check, verdict, a short reason."""
    return [{"section": entry.section, "claim": entry.claim, "check": v.check,
             "verdict": v.verdict,
             "reason": v.detail if len(v.detail) <= REASON_LENGTH
             else v.detail[:REASON_LENGTH - 1] + "…"}
            for entry in entries for v in matching(entry, verdicts)]
