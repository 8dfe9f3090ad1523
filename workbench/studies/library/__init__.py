"""The shipped study files: one per built-in experiment, in the order ``workbench list`` shows.

Every built-in experiment is declared by its file here, and its name, summary, source and headline
view live there alone. Every file is a whole study (its ``[model]``, ``[system]``, ``[sampler]``,
... tables, or its parts'), with at most a ``figure`` in its ``[study]`` table: the paper's
figure, ``"module:function"`` under :mod:`workbench.experiments` drawn instead of the default
figures (docs/studies.md).

:func:`header` reads only the ``[study]`` table with :mod:`tomllib`, so ``workbench list`` and
``--help`` stay fast and import no experiment code; :func:`workbench.studies.files.built_in`
reads a whole study, and :mod:`workbench.experiments` makes the experiment.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from workbench.core.headline import Headline
from workbench.core.paper import PaperEntry
from workbench.core.paper import entries as paper_entries

DIRECTORY = Path(__file__).parent

#: the built-in experiments, in the order ``workbench list`` shows them (each a file here)
ORDER = ("stale-gaussian", "integrator-order", "fsgld-gaussian", "fsgld-metric-learning",
         "fsgld-mlp",
         "dsgld-imbalance",
         "dsgld-trajectory", "dsgld-load-balancing", "dsgld-coupling", "stale-blr-speedup",
         "stale-nn-workers", "multi-server", "downpour-period", "elastic-vs-downpour",
         "protocols-rnn", "protocols-networks", "real-vs-simulated", "lda-perplexity")

#: the keys of a study file's ``[study]`` table (``symbols``: how the sweep dims are written in
#: check names, ``{ local_updates = "T" }`` giving ``stationary/fsgld/T=10``; ``paired``: sweep
#: dims whose points share every random number; ``family``: one Bonferroni family per check or
#: for the whole study; ``parts``: the names of a study of parts, :mod:`workbench.studies.parts`,
#: and ``points``: whether its parts share the sweep's points; ``until_decided``: the budget
#: of the looks ``workbench check`` runs by default, :func:`.study.looks_budget`)
STUDY_KEYS = ("name", "summary", "source", "symbols", "paired", "pair_common_starts",
              "headline", "family", "parts", "points", "until_decided", "figure")
#: the ``[study]`` key only a shipped file may use: it names Python code of the workbench's own
CODE_KEY = "figure"


class LibraryError(ValueError):
    """A shipped file that breaks its form, naming the file and the key."""


@dataclass(frozen=True)
class Header:
    """A shipped file's ``[study]`` table: what describes the experiment, and its code."""

    name: str
    summary: str
    source: str
    headline: Headline | None
    figure: str = ""   # "module:function" under workbench.experiments: the paper's figure
    paper: tuple[PaperEntry, ...] = ()  # its [[paper]] tables (workbench.core.paper)


def path(name: str) -> Path:
    return DIRECTORY / f"{name}.toml"


def shipped(source: str) -> bool:
    """Whether ``source`` (a study's origin) is one of the files here."""
    origin = Path(source)
    return origin.suffix == ".toml" and origin.stem in ORDER and \
        origin.resolve() == path(origin.stem).resolve()


def header(name: str) -> Header:
    """The ``[study]`` and ``[[paper]]`` tables of the shipped file ``name``, without reading
    the rest; an unknown ``[study]`` key is a :class:`LibraryError`."""
    with path(name).open("rb") as file:
        document = tomllib.load(file)
    table = document.get("study", {})
    where = path(name).name
    for key in table:
        if key not in STUDY_KEYS:
            raise LibraryError(f"{where}: [study] {key}: unknown key; known: "
                               f"{', '.join(STUDY_KEYS)}")
    headline = Headline.from_table(table["headline"]) if "headline" in table else None
    return Header(table["name"], table.get("summary", ""), table.get("source", ""), headline,
                  table.get("figure", ""),
                  paper_entries(document.get("paper", [])))
