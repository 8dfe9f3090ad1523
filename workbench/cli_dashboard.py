"""``workbench dashboard``: start the Streamlit dashboard (``app/dashboard.py``).

Runs Streamlit's ``streamlit run`` in this process on the installed app's entry file (so
stopping it stops the server, with no orphan left), bound to 127.0.0.1 by default, headless
(no browser is opened, no first-run prompt) and with Streamlit's usage statistics off: the
workbench makes no network calls at run time. The served dashboard does not watch its source
files (``server.fileWatcherType none``): Streamlit's watcher rescans every imported module
(about 3,000 here) on the server's event loop in each new browser session, before the page's
"finished" message goes out; ``streamlit run app/dashboard.py`` keeps the watcher for
development. ``--results`` tells the Experiment browser and the Bounds explorer where result
files are (``WORKBENCH_RESULTS``).

Before the server accepts its first session, :func:`preload` imports what the pages import
(numpy, scipy, sympy, xarray, matplotlib, the experiments: about 1.7 s here) and analyses the
bound the Bounds explorer opens on (about 0.5 s of sympy), and a background thread opens,
checks and lines up with the bounds every result file already in the results directory
(:func:`workbench.explore.results_browser.warm`), so the first visit to a page costs what any
later visit costs; the pages then find these modules and cached results in place.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path

from simulators.validation import InvalidParameter, integer

RESULTS_ENV = "WORKBENCH_RESULTS"
DEFAULT_PORT = 8501


def entry_file() -> Path:
    import app

    return Path(app.__file__).parent / "dashboard.py"


def add_parser(sub) -> None:
    dashboard = sub.add_parser("dashboard", help="start the Streamlit dashboard")
    dashboard.add_argument("--port", type=int, default=DEFAULT_PORT,
                           help=f"port to serve on (default {DEFAULT_PORT})")
    dashboard.add_argument("--address", default="127.0.0.1",
                           help="address to bind (default 127.0.0.1: this machine only)")
    dashboard.add_argument("--results", type=Path, default=Path("results"),
                           help="directory of result files to browse (default results/)")


def streamlit_arguments(args: argparse.Namespace) -> list[str]:
    """The ``streamlit`` command line for ``args`` (what follows ``streamlit``)."""
    return ["run", str(entry_file()),
            "--server.port", str(args.port), "--server.address", args.address,
            "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--client.toolbarMode", "minimal", "--server.fileWatcherType", "none"]


def preload() -> None:
    """Import the pages' modules and analyse the default bound (module docstring)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import xarray  # noqa: F401

    import workbench.experiments  # noqa: F401
    from workbench.explore import bounds_view, playground, results_browser, system  # noqa: F401

    bounds_view.report(bounds_view.DEFAULT_BOUND)


def main(args: argparse.Namespace) -> int:
    if integer("--port", args.port, minimum=1) > 65535:
        raise InvalidParameter("--port", args.port, "must be <= 65535")
    os.environ[RESULTS_ENV] = str(Path(args.results).resolve())
    print(f"workbench dashboard on http://{args.address}:{args.port} "
          f"(results from {args.results}); Ctrl-C stops it", file=sys.stderr, flush=True)
    preload()
    from workbench.explore import results_browser

    threading.Thread(target=results_browser.warm, args=(Path(args.results),), daemon=True,
                     name="warm result files").start()
    from streamlit.web import cli as streamlit_cli

    return streamlit_cli.main(args=streamlit_arguments(args), prog_name="streamlit")
