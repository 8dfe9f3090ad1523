"""A study file read whole: a study of one model (:mod:`.study`) or a study of parts
(:mod:`.parts`, where its ``[study]`` names ``parts``), and the experiment that runs either
(:func:`workbench.studies.parts_experiment.experiment_of`). What ``workbench check FILE.toml``,
the registry of built-in experiments and the Study editor read.
"""

from __future__ import annotations

from pathlib import Path

from workbench.studies import library, parts, study
from workbench.studies.document import Document
from workbench.studies.parts import PartsStudy
from workbench.studies.study import Study


def from_document(doc: Document, defer_bounds: bool = False) -> Study | PartsStudy:
    """The study ``doc`` declares; ``defer_bounds``: its ``[[bound]]`` tables (its parts') read
    when a check first judges (:class:`.study.DeferredBounds`)."""
    head = doc.data.get("study", {})
    if isinstance(head, dict) and "parts" in head:
        return parts.from_document(doc, defer_bounds)
    return study.from_document(doc, defer_bounds)


def load(path: str | Path) -> Study | PartsStudy:
    return from_document(Document.read(path))


def loads(text: str, source: str = "<study>") -> Study | PartsStudy:
    return from_document(Document.parse(text, source))


def built_in(name: str) -> Study | PartsStudy:
    """The shipped study file of the built-in experiment ``name``, its bounds deferred."""
    return from_document(Document.read(library.path(name)), defer_bounds=True)
