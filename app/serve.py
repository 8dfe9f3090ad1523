"""Serve the dashboard: warm its pages, then run Streamlit on ``app/dashboard.py``.

``workbench dashboard`` checks its arguments and then becomes ``python -m app.serve --port P
--address A --results DIR`` (:mod:`workbench.cli.dashboard`). This module runs Streamlit's
``streamlit run`` in this process on the app's entry file, headless (no browser is opened, no
first-run prompt) and with Streamlit's usage statistics off: the workbench makes no network
calls at run time. The served dashboard does not watch its source files
(``server.fileWatcherType none``): Streamlit's watcher rescans every imported module (about
3,000) on the server's event loop in each new browser session, before the page's "finished"
message goes out; ``streamlit run app/dashboard.py`` keeps the watcher for development.

Before the server accepts its first session, every page is drawn once with its default
controls in Streamlit's bare mode (:func:`app.warm.warm`: the imports, the lesson grids, the
default simulation, replay and bound analysis, the figures), which fills the server's caches,
and a background thread then opens, checks and lines up with the bounds every result file
already in the results directory (:func:`workbench.explore.results_browser.warm`), so the
first visit to a page costs what any later visit costs.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

ENTRY = Path(__file__).parent / "dashboard.py"


def streamlit_options(args: argparse.Namespace) -> dict[str, object]:
    """Streamlit's configuration options for ``args`` (module docstring)."""
    return {"server.port": args.port, "server.address": args.address,
            "server.headless": True, "browser.gatherUsageStats": False,
            "client.toolbarMode": "minimal", "server.fileWatcherType": "none"}


def streamlit_arguments(options: dict[str, object]) -> list[str]:
    """The ``streamlit run`` command line (what follows ``streamlit``) setting ``options``."""
    flags = [(f"--{name}", str(value).lower() if isinstance(value, bool) else str(value))
             for name, value in options.items()]
    return ["run", str(ENTRY), *(part for flag in flags for part in flag)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.serve",
                                     description="serve the dashboard (workbench dashboard)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--results", type=Path, required=True)
    args = parser.parse_args(argv)
    options = streamlit_options(args)
    # the pages are drawn under the configuration the server will run with (otherwise
    # Streamlit, parsing it again at start, warns that the server section changed)
    from streamlit.web import bootstrap

    bootstrap.load_config_options({k.replace(".", "_"): v for k, v in options.items()})
    from app import warm
    from workbench.explore import results_browser

    print(f"warming the pages: {warm.warm().summary()}", file=sys.stderr, flush=True)
    threading.Thread(target=results_browser.warm, args=(args.results,), daemon=True,
                     name="warm result files").start()
    from streamlit.web import cli as streamlit_cli

    return streamlit_cli.main(args=streamlit_arguments(options), prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main())
