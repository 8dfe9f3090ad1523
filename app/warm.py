"""Draw every page once, with its default controls, before the server takes its first session.

Streamlit's ``st.cache_data`` and ``st.cache_resource`` live in the server process, keyed by
each cached function's source and arguments, not by the session. Running a page's script
once in Streamlit's bare mode (no server, no session: every widget returns its default, every
element is discarded) therefore fills the caches a first visit would fill: the lesson grids,
the default simulation and replay, the default bound's analysis and curve, the figures. The
first visit to a page then costs what any later visit costs. A page that cannot finish in
bare mode (``st.stop`` does not stop without a session, so a page with nothing to show runs
on past it) is reported and left to compute on its first visit.
"""

from __future__ import annotations

import logging
import runpy
import time
from dataclasses import dataclass, field
from pathlib import Path

from app.pages import scripts


@dataclass
class Warmed:
    seconds: float
    pages: int
    unfinished: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        text = f"drew {self.pages - len(self.unfinished)} of {self.pages} pages in " \
               f"{self.seconds:.1f} s"
        if self.unfinished:
            text += ("; left to their first visit (without a session st.stop does not stop a "
                     "page with nothing to show): ") + "; ".join(
                f"{page} ({reason})" for page, reason in self.unfinished.items())
        return text


def warm(pages: list[Path] | None = None) -> Warmed:
    """Run each page script once in bare mode (module docstring); Streamlit's bare-mode
    warnings are silenced while they run."""
    pages = scripts() if pages is None else pages
    unfinished = {}
    started = time.perf_counter()
    logging.disable(logging.WARNING)
    try:
        for page in pages:
            try:
                runpy.run_path(str(page), run_name="__main__")
            except Exception as error:  # the page computes the rest on its first visit
                unfinished[page.stem] = f"{type(error).__name__}: {error}"
    finally:
        logging.disable(logging.NOTSET)
    return Warmed(time.perf_counter() - started, len(pages), unfinished)
