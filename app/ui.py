"""What every page shares: where results live, how errors are shown, cached loaders.

The result-file helpers import :mod:`workbench.explore.results_browser` and
:mod:`~workbench.explore.overlays` (which load every registered experiment) when first called,
so that pages without stored results do not pay for that import when they open.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from simulators.validation import InvalidParameter
from workbench.cli.dashboard import RESULTS_ENV
from workbench.store.atomic import WriteFailed
from workbench.studies.document import StudyError
from workbench.studies.user_code import CodeNotAllowed

DEFAULT_RESULTS = Path("results")


def results_directory() -> Path:
    """Where result files are looked for: ``workbench dashboard --results DIR`` sets it."""
    return Path(os.environ.get(RESULTS_ENV, DEFAULT_RESULTS))


@contextmanager
def user_errors():
    """Show invalid input, or a file that could not be written, as an error message naming
    the field or the path, and stop the page there."""
    try:
        yield
    except InvalidParameter as error:
        st.error(f"Invalid input — {error}")
        st.stop()
    except WriteFailed as error:
        st.error(f"The run failed — {error}")
        st.stop()
    except (StudyError, CodeNotAllowed) as error:  # the study's own code cannot run
        st.error(f"The study cannot run — {literal(str(error))}")
        st.stop()


def quick_run(label: str, start) -> object:
    """Run ``start(progress)`` (a :func:`workbench.explore.results_browser.run_quick` call
    taking the progress callback) under a progress bar over sweep points, say what it wrote
    and how its verdicts came out, and return its ``QuickRun``."""
    from workbench.run.main_job import verdict_counts

    bar = st.progress(0.0, text=f"{label} --quick: starting")

    def advance(done: int, total: int) -> None:
        bar.progress(done / total, text=f"{label} --quick: {done} of {total} sweep points")

    with user_errors():
        quick = start(advance)
    bar.progress(1.0, text=f"{label} --quick: done in {quick.seconds:.1f} s")
    counts = verdict_counts(quick.verdicts)
    st.success(f"wrote {quick.path} and {len(quick.figures)} figures; "
               f"{counts['holds']} holds, {counts['violated']} violated, "
               f"{counts['inconclusive']} inconclusive")
    return quick


def literal(text: str) -> str:
    """``text`` with Markdown's (and Streamlit's LaTeX) special characters escaped, so a
    message quoting user input shows it as typed (``__import__`` is not bold ``import``)."""
    return re.sub(r"([\\`*_{}\[\]()<>#+\-.!|~$])", r"\\\1", text)


def stored_results(directory: Path) -> list:
    """:func:`results_browser.list_results`, re-read only when a file is added or changes."""
    directory = Path(directory)
    signature = tuple(sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size)
                             for p in directory.glob("*.nc"))) if directory.is_dir() else ()
    return _listing(str(directory), signature)


@st.cache_resource(show_spinner=False, max_entries=8)
def _listing(directory: str, signature: tuple) -> list:
    from workbench.explore import results_browser

    return results_browser.list_results(Path(directory))


@st.cache_resource(show_spinner="Opening the result file…", max_entries=8)
def load(path: str, modified: float):
    """The Dataset of a result file (re-read when the file changes)."""
    from workbench.explore import results_browser

    return results_browser.stored(path, modified)


@st.cache_resource(show_spinner="Running the experiment's checks…", max_entries=8)
def verdicts(path: str, modified: float):
    from workbench.explore import results_browser

    return results_browser.stored_checks(path, modified)


@st.cache_resource(show_spinner="Lining up the measurements with the bounds…", max_entries=8)
def overlays_of(path: str, modified: float):
    from workbench.explore import results_browser

    return results_browser.stored_overlays(path, modified)


def verdict_table(rows: list) -> None:
    """One row per verdict, with the fields ``workbench check`` prints."""
    st.dataframe(rows, hide_index=True, width="stretch")


def verdicts_with_counts(found: list) -> None:
    """How many verdicts hold, are violated, are inconclusive, then their table."""
    from workbench.explore import results_browser
    from workbench.run.main_job import verdict_counts

    counts = verdict_counts(found)
    st.markdown(f"**{counts['holds']} holds, {counts['violated']} violated, "
                f"{counts['inconclusive']} inconclusive**")
    verdict_table(results_browser.verdict_rows(found))
