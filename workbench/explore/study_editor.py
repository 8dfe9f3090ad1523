"""The Study editor: a study's TOML checked on every edit, run in its ``--quick`` form, judged.

Issue 14 item 4. The text is validated exactly as ``workbench check FILE.toml`` validates a
file (:func:`workbench.studies.files.loads`): every refusal is a
:class:`~workbench.studies.document.StudyError` naming the key and its line, bound strings are
parsed through the whitelist of :mod:`bounds.parse` and never executed. A valid study runs as
its experiment (:func:`~workbench.studies.parts_experiment.experiment_of`) through the runner of the
Experiment browser (:func:`workbench.explore.results_browser.run_quick`), with the same store,
verdicts and default figures as ``workbench check FILE.toml --quick``.

Two guards keep an edited study from touching anything else: its runs are written under
:data:`EDITOR_DIRECTORY` inside the results directory (never over a stored result of the
Experiment browser), and a study may not take a built-in experiment's name (a stored result is
judged again by the experiment its name designates). The editor therefore opens on the shipped
``stale-gaussian`` study under the name :data:`EXAMPLE_NAME`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workbench import experiments
from workbench.explore.results_browser import QuickRun, run_quick
from workbench.studies import library
from workbench.studies.document import Document, StudyError
from workbench.studies.files import loads
from workbench.studies.parts_experiment import experiment_of
from workbench.studies.study import Study
from workbench.studies.user_code import require_allowed

ORIGIN = "<study editor>"
"""The source a study typed in the editor is named by in its errors."""
EDITOR_DIRECTORY = "study-editor"
"""Sub-directory of the results directory that holds the editor's runs."""
EXAMPLE_STUDY = "stale-gaussian"
"""The shipped study the editor opens on."""
EXAMPLE_NAME = "my-stale-gaussian"
"""Its name in the editor (the shipped name is the built-in experiment's)."""


def example() -> str:
    """The text of the shipped :data:`EXAMPLE_STUDY`, with ``[study] name`` set to
    :data:`EXAMPLE_NAME`, without the line naming the workbench's own code (its ``figure``,
    which only a shipped file names) and everything else as shipped (comments included)."""
    text = library.path(EXAMPLE_STUDY).read_text(encoding="utf-8")
    shipped = f'name = "{EXAMPLE_STUDY}"'
    if shipped not in text:
        raise ValueError(f"the shipped study {library.path(EXAMPLE_STUDY)} has no line {shipped}")
    lines = [line for line in text.replace(shipped, f'name = "{EXAMPLE_NAME}"', 1).splitlines()
             if not line.startswith(f"{library.CODE_KEY} = ")]
    return "\n".join(lines) + "\n"


def validate(text: str) -> Study:
    """The study written in ``text``, or a :class:`StudyError` naming the key and line: any
    refusal of :func:`~workbench.studies.files.loads`, or a name that is a built-in
    experiment's."""
    study = loads(text, ORIGIN)
    if study.name in experiments.EXPERIMENTS:
        raise Document.parse(text, ORIGIN).error(
            ("study", "name"), f"{study.name!r} is a built-in experiment; give your study a "
                               "name of its own")
    return study


@dataclass(frozen=True)
class Problem:
    """A refusal as the page shows it: where, which key, why, and the line as typed."""

    line: int | None
    key: str
    reason: str
    excerpt: str

    @property
    def where(self) -> str:
        place = f"line {self.line}" if self.line else "the study"
        return f"{place}, {self.key}" if self.key else place


def problem(text: str, error: StudyError) -> Problem:
    """``error`` (raised by :func:`validate` on ``text``) with the line it points at."""
    lines = text.splitlines()
    excerpt = lines[error.line - 1] if error.line and error.line <= len(lines) else ""
    return Problem(error.line, error.key, error.reason, excerpt)


def run(study: Study, directory: Path, seed: int,
        progress: Callable[[int, int], None] | None = None, allow_code: bool = False
        ) -> QuickRun:
    """``workbench check STUDY --quick --seed SEED [--allow-code]`` with its results under
    ``directory``/:data:`EDITOR_DIRECTORY`, reporting ``progress(done, total)`` per sweep
    point. A study naming Python code runs only with ``allow_code`` (the page's explicit
    switch), its model probed before any work (:mod:`workbench.studies.user_code`)."""
    experiment = experiment_of(study)
    config = experiment.configure(quick=True)
    require_allowed(study.name, ORIGIN, config, allow_code)
    experiment.check_code(config, seed)
    return run_quick(experiment, Path(directory) / EDITOR_DIRECTORY, seed, progress)
