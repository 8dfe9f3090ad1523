"""The registry of experiments, in a stable order.

``EXPERIMENTS`` maps each built-in experiment's name to its instance. It is built from the
``[study]`` tables of the shipped study files (:mod:`workbench.studies.library`: one per
built-in, its one declaration of name, summary, source and headline) and imports an
experiment's code only when that experiment is first looked up, so listing names and summaries
(``workbench list``) stays cheap; iterating over ``values()`` imports them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from simulators.validation import InvalidParameter
from workbench.studies import library
from workbench.studies.library import Header

if TYPE_CHECKING:
    from workbench.run.experiment import Experiment


class Registry(Mapping):
    """Name -> experiment, each instantiated on first access (module docstring)."""

    def __init__(self, entries: tuple[Header, ...]):
        self.entries = {entry.name: entry for entry in entries}
        self._loaded: dict[str, Experiment] = {}

    def __getitem__(self, name: str) -> Experiment:
        if name not in self._loaded:
            self._loaded[name] = _instantiate(self.entries[name])
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def _code(reference: str):
    """The function ``module:function`` names under :mod:`workbench.experiments`."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


def _instantiate(head: Header) -> Experiment:
    """The experiment a shipped file declares (imports its code; the study is read whole)."""
    from workbench.studies.experiment import PaperFigure
    from workbench.studies.files import built_in
    from workbench.studies.parts_experiment import experiment_of

    return experiment_of(built_in(head.name), PaperFigure(head.figure, _code) if head.figure
                         else None)


EXPERIMENTS: Mapping[str, Experiment] = Registry(tuple(map(library.header, library.ORDER)))


def summaries() -> list[tuple[str, str]]:
    """(name, summary) of every registered experiment, without importing the built-in ones."""
    if isinstance(EXPERIMENTS, Registry):
        return [(name, entry.summary) for name, entry in EXPERIMENTS.entries.items()]
    return [(name, experiment.summary) for name, experiment in EXPERIMENTS.items()]


def markdown_table() -> str:
    """The registered experiments as a Markdown table of name and summary, in registry order:
    the table of ``docs/experiments.md`` (``workbench list --markdown``; a test keeps the doc
    equal to it)."""
    rows = ["| experiment | what it runs and checks |", "|---|---|"]
    cells = [(name, summary.replace("|", r"\|")) for name, summary in summaries()]
    rows += [f"| `{name}` | {summary} |" for name, summary in cells]
    return "\n".join(rows) + "\n"


def get(name: str) -> Experiment:
    """A built-in experiment by name, or the study in a ``.toml`` file (a path)."""
    if name in EXPERIMENTS:
        return EXPERIMENTS[name]
    if str(name).endswith(".toml"):
        from workbench.studies.files import load
        from workbench.studies.parts_experiment import experiment_of

        return experiment_of(load(name))
    raise InvalidParameter("experiment", name, f"must be one of {', '.join(EXPERIMENTS)} "
                                               "or a study file (.toml)")


def for_dataset(dataset) -> Experiment:
    """The experiment that made a stored result: a built-in one by name, otherwise the study
    whose text the result carries (attribute ``study_toml``)."""
    name = dataset.attrs["experiment"]
    if name not in EXPERIMENTS and "study_toml" in dataset.attrs:
        from workbench.studies.files import loads
        from workbench.studies.parts_experiment import experiment_of

        return experiment_of(loads(dataset.attrs["study_toml"], f"<study {name}>"))
    return get(name)


def __getattr__(name: str):
    # ``Experiment`` (the base class) imports xarray: resolved on first use only
    if name == "Experiment":
        from workbench.run.experiment import Experiment

        return Experiment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["EXPERIMENTS", "Experiment", "for_dataset", "get", "markdown_table", "summaries"]
