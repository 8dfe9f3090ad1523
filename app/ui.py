"""What every page shares: where results live, how errors are shown, cached loaders, plots."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import streamlit as st  # noqa: E402

from simulators.validation import InvalidParameter  # noqa: E402
from workbench.cli_dashboard import RESULTS_ENV  # noqa: E402
from workbench.explore import overlays, results_browser  # noqa: E402

DEFAULT_RESULTS = Path("results")


def results_directory() -> Path:
    """Where result files are looked for: ``workbench dashboard --results DIR`` sets it."""
    return Path(os.environ.get(RESULTS_ENV, DEFAULT_RESULTS))


@contextmanager
def user_errors():
    """Show invalid input as an error message naming the field, and stop the page there."""
    try:
        yield
    except InvalidParameter as error:
        st.error(f"Invalid input — {error}")
        st.stop()


def subplots(*args, **kwargs):
    """``matplotlib.pyplot.subplots`` on the non-interactive backend."""
    return plt.subplots(*args, **kwargs)


def colours(n: int):
    """``n`` distinguishable colours along viridis."""
    return matplotlib.colormaps["viridis"](np.linspace(0, 0.85, n))


def show(figure) -> None:
    st.pyplot(figure, clear_figure=True)
    plt.close(figure)


@st.cache_resource(show_spinner="Opening the result file…", max_entries=8)
def load(path: str, modified: float):
    """The Dataset of a result file (re-read when the file changes)."""
    return results_browser.load_result(Path(path))


@st.cache_resource(show_spinner="Running the experiment's checks…", max_entries=8)
def verdicts(path: str, modified: float):
    return results_browser.checks(load(path, modified))


@st.cache_resource(show_spinner="Lining up the measurements with the bounds…", max_entries=8)
def overlays_of(path: str, modified: float):
    dataset = load(path, modified)
    return overlays.overlays_of(dataset.attrs["experiment"], dataset)


def verdict_table(rows: list) -> None:
    """One row per verdict, with the fields ``workbench check`` prints."""
    st.dataframe(rows, hide_index=True, width="stretch")
