"""Warming the pages before the server serves (:mod:`app.warm`): a cached function a page
calls in bare mode is not called again when a session then draws the page, a page that fails
is named with its error, and the real pages all finish with stored results present."""

import argparse
import textwrap

from streamlit.testing.v1 import AppTest

from app import warm
from app.pages import scripts
from app.serve import streamlit_arguments, streamlit_options
from app.ui import RESULTS_ENV

PAGE = """
    from pathlib import Path

    import streamlit as st

    CALLS = Path({calls!r})

    @st.cache_data
    def computed(n):
        with CALLS.open("a") as calls:
            calls.write(f"{{n}}\\n")
        return n * n

    n = st.number_input("n", value=3)
    st.metric("square", computed(int(n)))
"""


def test_a_warmed_page_finds_its_cached_results_in_the_first_session(tmp_path):
    calls = tmp_path / "calls.txt"  # one line per call of the cached function
    page = tmp_path / "page.py"
    page.write_text(textwrap.dedent(PAGE.format(calls=str(calls))))
    warmed = warm.warm([page])
    assert (warmed.pages, warmed.unfinished) == (1, {})
    assert calls.read_text().split() == ["3"]
    at = AppTest.from_file(str(page)).run()
    assert at.metric[0].value == "9"
    assert calls.read_text().split() == ["3"]  # drawn from the cache the warm-up filled
    at.number_input[0].set_value(4).run()  # negative control: a new input is computed
    assert at.metric[0].value == "16"
    assert calls.read_text().split() == ["3", "4"]


def test_a_page_that_fails_is_named_with_its_error(tmp_path):
    page = tmp_path / "broken.py"
    page.write_text("raise ValueError('no data')\n")
    warmed = warm.warm([page])
    assert warmed.unfinished == {"broken": "ValueError: no data"}
    assert "drew 0 of 1 pages" in warmed.summary()
    assert "broken (ValueError: no data)" in warmed.summary()


def test_every_page_finishes_with_a_stored_result(default_results, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(default_results))
    warmed = warm.warm()
    assert warmed.pages == len(scripts()) == 9
    assert warmed.unfinished == {}


def test_the_server_is_started_with_the_options_the_pages_were_drawn_under():
    args = argparse.Namespace(port=8600, address="127.0.0.1")
    command = streamlit_arguments(streamlit_options(args))
    assert command[0] == "run" and command[1].endswith("dashboard.py")
    flags = dict(zip(command[2::2], command[3::2], strict=True))
    assert flags == {"--server.port": "8600", "--server.address": "127.0.0.1",
                     "--server.headless": "true", "--browser.gatherUsageStats": "false",
                     "--client.toolbarMode": "minimal", "--server.fileWatcherType": "none"}
