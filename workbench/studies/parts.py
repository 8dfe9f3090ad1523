"""A study of parts: whole studies on different models that share their sweep dims, run and
judged as one experiment with one dataset.

``[study] parts = ["gaussian", "logistic"]`` names the parts; each is a whole study written
under ``[part.<name>.model]``, ``[part.<name>.system]``, ``[part.<name>.sampler]``,
``[part.<name>.run]``, ``[[part.<name>.check]]`` and ``[[part.<name>.bound]]``, read and refused
as a study file is (:func:`workbench.studies.study.from_document`), every refusal naming the key and
line as written. What the parts share is written once:

- ``[constants]``, ``[sweep]`` and ``[study] symbols`` and ``family``: every part sweeps the same
  dims (a part's own ``[sweep]`` is refused);
- fields written in the top-level ``[model]``, ``[system]``, ``[sampler]`` and ``[run]``: each
  part reads them as its own (a part that writes one again is refused);
- ``[quick]``, keyed by the study's configuration names.

Configuration names: a shared field, a constant or a sweep dim keeps its name; a part's own
field is ``<part>_<name>`` (``--set gaussian_n_iterations=500``). The dataset keeps the first
part's dims and variables as they are and prefixes every other part's with ``<part>_``
(``logistic_variance`` over ``logistic_servers``). A point is ``{"part": name, **point}``, so
the part keys its random numbers (:func:`workbench.run.experiment.point_key`) beside the sweep
point, while the data of each part's model are keyed by the study alone. Each part's checks
judge its own slice of the dataset under its own names, their verdicts named
``<part>/<name>``; with ``[study] family = "study"`` all parts' verdicts form one Bonferroni
family. :class:`workbench.studies.parts_experiment.PartsExperiment` runs it.

``[study] points = "shared"`` makes the parts the halves of one sweep point rather than points
of their own: a part's seeds are keyed by the sweep point alone (no ``part``), each later
part's random streams named ``<part>-<stream>`` (the first part's as a study of one model names
them), so that a sweep point's halves share its schedule's key as one experiment would; the
sweep dims are the dataset's once (only a later part's own dims and variables are prefixed);
and the verdicts keep the names each part gives them. Every later part is then a point of seed
003's protocols (downpour or elastic on the Gaussian mean, downpour on logistic regression with
``start = "laplace"``), whose runs name their streams so.

Chen, Ding, Carin et al. 2016 ("Stochastic gradient MCMC with stale gradients", §3.3, Figure 4,
Theorems 6-7) pool S servers on the Gaussian mean and on Bayesian logistic regression:
``multi-server`` is such a study.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from workbench.core.headline import Headline
from workbench.core.paper import PaperEntry
from workbench.core.parameters import Parameter
from workbench.studies import study
from workbench.studies.document import Document
from workbench.studies.schema import (
    FIELD_SECTIONS,
    OTHER_SECTIONS,
    PAIRED_PROTOCOL,
    PROTOCOL_ORACLE,
    SECTIONS,
)
from workbench.studies.study import (
    Study,
    coerce_quick,
    heading,
    looks_budget,
    presentation,
    table_at,
)

#: what a part's name may be: it prefixes configuration keys, dims and variables
PART_NAME = re.compile(r"[a-z][a-z0-9]*")
#: the tables of one part: a whole study's, less what the parts share
PART_SECTIONS = (*FIELD_SECTIONS, "check", "bound")
#: ``[study] points``: a part's points are its own (keyed by ``part``), or the parts are the
#: halves of the sweep's points (module docstring)
POINTS = ("per-part", "shared")
#: the study's own tables beside its parts (its checks and bounds are the parts')
SECTIONS_OF_PARTS = (*FIELD_SECTIONS, *(s for s in OTHER_SECTIONS if s not in PART_SECTIONS),
                     "part")


@dataclass(frozen=True)
class Part:
    """One part: its name, its whole study, and the names configured once for every part."""

    name: str
    study: Study
    shared: frozenset[str]

    def key(self, name: str) -> str:
        """The study's configuration key of the part's parameter ``name``."""
        return name if name in self.shared else f"{self.name}_{name}"


@dataclass
class PartsStudy:
    name: str
    summary: str
    source: str
    parts: tuple[Part, ...]
    parameters: tuple[Parameter, ...]
    quick: dict[str, Any]
    origin: str = "<study>"
    text: str = ""
    headline: Headline | None = None
    paper: tuple[PaperEntry, ...] = ()
    family: str = "check"
    points: str = POINTS[0]
    until_decided: float | None = None  # [study] until_decided, seconds (.study.looks_budget)

    @property
    def sweep_dims(self) -> tuple[str, ...]:
        return self.parts[0].study.sweep_dims

    @property
    def shared(self) -> bool:
        """Whether the parts are the halves of the sweep's points (``points = "shared"``)."""
        return self.points == POINTS[1]

    def streams(self, part: Part) -> str:
        """The prefix of the part's random streams: ``<part>-`` for a later part of shared
        points, else none (module docstring)."""
        return f"{part.name}-" if self.shared and part is not self.parts[0] else ""

    def part_config(self, config: dict, part: Part) -> dict:
        """The part's own configuration out of the study's (module docstring)."""
        return {p.name: config[part.key(p.name)] for p in part.study.parameters}


def from_document(doc: Document, defer_bounds: bool = False) -> PartsStudy:
    """The study of parts ``doc`` declares, refused naming the key and line (module
    docstring); ``defer_bounds``: the parts' ``[[bound]]`` tables read when a check first
    judges (a shipped file's, :class:`.study.DeferredBounds`)."""
    name, head = heading(doc, SECTIONS_OF_PARTS)
    names = head["parts"]
    if not isinstance(names, list) or len(names) < 2 or len(set(map(str, names))) != len(names) \
            or not all(isinstance(n, str) and PART_NAME.fullmatch(n) for n in names):
        raise doc.error(("study", "parts"), "must list two or more distinct part names, each "
                                            "lower-case letters and digits (it prefixes the "
                                            "part's keys, dims and variables)")
    tables = table_at(doc, ("part",), doc.data.get("part", {}))
    for written, table in tables.items():
        if written not in names:
            first = list(table)[:1] if isinstance(table, dict) else []
            raise doc.error(("part", written, *first), f"{written!r} is not a part of the "
                                                       f"study; [study] parts lists "
                                                       f"{', '.join(names)}")
    parts = _paired_by_starts(doc, head, tuple(_part(doc, head, part, tables.get(part, {}),
                                                     defer_bounds) for part in names))
    points = head.get("points", POINTS[0])
    if points not in POINTS:
        raise doc.error(("study", "points"), f"must be one of {', '.join(POINTS)}, got "
                                             f"{points!r}")
    for part in parts[1:] if points == POINTS[1] else ():
        if not set(part.study.point_kinds) & {PROTOCOL_ORACLE, PAIRED_PROTOCOL}:
            raise doc.error(("study", "points"), f"shares the sweep's points between parts "
                            "whose later ones are points of seed 003's protocols (downpour or "
                            "elastic on the Gaussian mean, or with start = \"laplace\": their "
                            f"runs name their streams by the part); part {part.name!r} runs "
                            f"{' / '.join(part.study.point_kinds)}")
    parameters: dict[str, Parameter] = {}
    for part in parts:
        for parameter in part.study.parameters:
            key = part.key(parameter.name)
            if key in parameters and key not in part.shared:
                raise doc.error(("study", "parts"), f"part {part.name!r} configures {key!r}, "
                                                    "which the study names already")
            parameters.setdefault(key, parameter if key == parameter.name else replace(
                parameter, name=key, help=f"part {part.name}: {parameter.help}"))
    headline, paper = presentation(doc, head)
    return PartsStudy(name, str(head.get("summary", "")), str(head.get("source", "")), parts,
                      tuple(parameters.values()), coerce_quick(doc, tuple(parameters.values())),
                      doc.source, doc.text, headline, paper, head.get("family", "check"),
                      points, looks_budget(doc, head))


def _paired_by_starts(doc: Document, head: dict, parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """The parts with ``[study] pair_common_starts`` as the study writes it: the parts on a
    model without an oracle take it (:func:`.study.pair_common_starts`; refused where no part
    is one)."""
    if "pair_common_starts" not in head:
        return parts
    held_out = {part.name for part in parts if study.held_out(part.study)}
    value = study.pair_common_starts(doc, head, bool(held_out))
    return tuple(Part(part.name, replace(part.study, pair_common_starts=value), part.shared)
                 if part.name in held_out else part for part in parts)


def _part(doc: Document, head: dict, name: str, table, defer_bounds: bool) -> Part:
    """One part read as a whole study: its own tables over the shared ones, every key path
    renamed to where the file writes it."""
    if not table:
        raise doc.error(("study", "parts"), f"names {name!r}, which has no [part.{name}.model] "
                                            "or other table of its own")
    table = table_at(doc, ("part", name), table)
    for key in table:
        if key not in PART_SECTIONS:
            why = (": a study of parts sweeps its dims once, in [sweep], for every part"
                   if key == "sweep" else f"; known: {', '.join(PART_SECTIONS)}")
            raise doc.error(("part", name, key), "is not a table of a part" + why)
    data: dict[str, Any] = {"study": {k: head[k] for k in ("name", "symbols", "family",
                                                          "paired") if k in head}}
    data.update({k: doc.data[k] for k in ("constants", "sweep") if k in doc.data})
    renamed, shared = {}, set(data.get("constants", {}))
    for section in FIELD_SECTIONS:
        common = table_at(doc, (section,), doc.data.get(section, {}))
        own = table_at(doc, ("part", name, section), table.get(section, {}))
        by_key = {spec.key: spec.name for spec in SECTIONS[section]}
        for key in own:
            if key in common:
                raise doc.error(("part", name, section, key),
                                f"is shared by every part: [{section}] writes it on line "
                                f"{doc.line((section, key))}")
            renamed[(section, key)] = ("part", name, section, key)
        shared.update(by_key[key] for key in common if key in by_key)
        if own and not common:
            renamed[(section,)] = ("part", name, section)
        data[section] = {**common, **own}
    for section in ("check", "bound"):
        if section in table:
            data[section] = table[section]
            renamed[(section,)] = ("part", name, section)
    read = study.from_document(Document(doc.source, data, doc.lines, doc.text, renamed),
                               defer_bounds)
    return Part(name, read, frozenset(shared | set(read.swept)))
