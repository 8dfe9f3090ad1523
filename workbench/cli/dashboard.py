"""``workbench dashboard``: check the arguments, then hand this process to the dashboard's
server (:mod:`app.serve`, which warms the pages and runs Streamlit on ``app/dashboard.py``).

The command line validates the port, the address and ``--results`` here (exit status 2 with
one line, as every command does), warns when the address is not this machine only (anyone who
can reach it can browse the results and start runs), tells the pages where the result files
are (``WORKBENCH_RESULTS``), and then replaces itself with ``python -m app.serve``
(``os.execv``): the server runs in this same process, so stopping it stops the server with no
orphan left, and the workbench never imports the app (the layers run
``app -> workbench``, never back).
"""


from __future__ import annotations

import argparse
import ipaddress
import os
import re
import sys
from pathlib import Path

from simulators.validation import InvalidParameter, integer

RESULTS_ENV = "WORKBENCH_RESULTS"
DEFAULT_PORT = 8501
_HOSTNAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})")


def add_parser(sub) -> None:
    dashboard = sub.add_parser("dashboard", help="start the Streamlit dashboard")
    dashboard.add_argument("--port", type=int, default=DEFAULT_PORT,
                           help=f"port to serve on (default {DEFAULT_PORT})")
    dashboard.add_argument("--address", default="127.0.0.1",
                           help="address to bind (default 127.0.0.1: this machine only)")
    dashboard.add_argument("--results", type=Path, default=Path("results"),
                           help="directory of result files to browse (default results/)")


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
    command = [sys.executable, "-m", "app.serve", "--port", str(args.port),
               "--address", args.address, "--results", str(args.results)]
    os.execv(sys.executable, command)
    return 0  # not reached: execv returns only by raising
