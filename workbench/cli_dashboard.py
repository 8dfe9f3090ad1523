"""``workbench dashboard``: start the Streamlit dashboard (``app/dashboard.py``).

Runs Streamlit's ``streamlit run`` in this process on the installed app's entry file (so
stopping it stops the server, with no orphan left), bound to 127.0.0.1 by default (another
``--address`` is served with a warning that anyone who can reach it can start runs), headless
(no browser is opened, no first-run prompt) and with Streamlit's usage statistics off: the
workbench makes no network calls at run time. The served dashboard does not watch its source
files (``server.fileWatcherType none``): Streamlit's watcher rescans every imported module
(about 3,000 here) on the server's event loop in each new browser session, before the page's
"finished" message goes out; ``streamlit run app/dashboard.py`` keeps the watcher for
development. ``--results`` tells the Experiment browser and the Bounds explorer where result
files are (``WORKBENCH_RESULTS``).

Before the server accepts its first session, every page is drawn once with its default
controls in Streamlit's bare mode (:func:`app.warm.warm`: the imports, the lesson grids, the
default simulation, replay and bound analysis, the figures; 5.5-8 s here), which fills the
server's caches, and a background thread then opens, checks and lines up with the bounds every
result file already in the results directory
(:func:`workbench.explore.results_browser.warm`), so the first visit to a page costs what any
later visit costs.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import sys
import threading
from pathlib import Path

from simulators.validation import InvalidParameter, integer

RESULTS_ENV = "WORKBENCH_RESULTS"
DEFAULT_PORT = 8501
_HOSTNAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})")


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


def streamlit_options(args: argparse.Namespace) -> dict[str, object]:
    """Streamlit's configuration options for ``args`` (module docstring)."""
    return {"server.port": args.port, "server.address": args.address,
            "server.headless": True, "browser.gatherUsageStats": False,
            "client.toolbarMode": "minimal", "server.fileWatcherType": "none"}


def streamlit_arguments(options: dict[str, object]) -> list[str]:
    """The ``streamlit run`` command line (what follows ``streamlit``) setting ``options``."""
    flags = [(f"--{name}", str(value).lower() if isinstance(value, bool) else str(value))
             for name, value in options.items()]
    return ["run", str(entry_file()), *(part for flag in flags for part in flag)]


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse a port outside [1, 65535], an address that is not one, a --results path with a
    NUL character (exit status 2)."""
    integer("--port", args.port, minimum=1, maximum=65535)
    if "\x00" in str(args.results):
        raise InvalidParameter("--results", str(args.results),
                               "must be a path without NUL characters")
    args.exposure = exposure_warning(args.address)


def exposure_warning(address: str) -> str:
    """The warning for serving on ``address`` ("" for this machine only); raises
    :class:`InvalidParameter` for something that is neither an IP address nor a host name."""
    try:
        loopback = ipaddress.ip_address(address).is_loopback
    except ValueError:
        if not _HOSTNAME.fullmatch(address):
            raise InvalidParameter("--address", address, "must be an IP address or a host "
                                   "name (letters, digits, '.', '-')") from None
        loopback = address == "localhost"
    if loopback:
        return ""
    return (f"workbench dashboard: warning: serving on {address}, not on this machine only: "
            "anyone who can reach that address can browse the results and start runs")


def main(args: argparse.Namespace) -> int:
    if args.exposure:
        print(args.exposure, file=sys.stderr, flush=True)
    os.environ[RESULTS_ENV] = str(Path(args.results).resolve())
    print(f"workbench dashboard on http://{args.address}:{args.port} "
          f"(results from {args.results}); Ctrl-C stops it", file=sys.stderr, flush=True)
    options = streamlit_options(args)
    # the pages are drawn under the configuration the server will run with (otherwise
    # Streamlit, parsing it again at start, warns that the server section changed)
    from streamlit.web import bootstrap

    bootstrap.load_config_options({k.replace(".", "_"): v for k, v in options.items()})
    from app import warm

    print(f"warming the pages: {warm.warm().summary()}", file=sys.stderr, flush=True)
    from workbench.explore import results_browser

    threading.Thread(target=results_browser.warm, args=(Path(args.results),), daemon=True,
                     name="warm result files").start()
    from streamlit.web import cli as streamlit_cli

    return streamlit_cli.main(args=streamlit_arguments(options), prog_name="streamlit")
