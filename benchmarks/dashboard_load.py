"""Dashboard page loads in Chromium: this checkout against a baseline revision, interleaved.

Two ``workbench dashboard`` servers run side by side with the same results directory (a
default-size ``stale-gaussian``, written once by the command line): one from this checkout,
one from ``git archive BASELINE`` unpacked in a temporary directory and put first on
``PYTHONPATH`` so that its packages shadow the installed ones. A third server shows a
hello-world page: the floor a new tab costs on this machine whatever the page does.

Every page of the browser test (``tests/app/test_browser.py``, whose helpers are used, so a
load ends exactly where the test's does: the page's results drawn and its script finished) is
opened in a new tab of headless Debian Chromium, alternating baseline and current: first one
cold pass (the first visit of each page since its server started, in the test's order), then
``--repeats`` warm passes (``--pages`` picks some of them). Printed: the cold times, the median
warm times and the median of the per-pass ratios current/baseline. The machine is shared; the
load average at the start is printed.

``--browser-cache`` says what the new tab keeps: ``none`` (the default) opens each tab in a
fresh browser profile, so every load downloads, parses and compiles the dashboard's
JavaScript, as on a first visit; ``shared`` opens every tab in one profile, as a user's own
browser does, so static files come from its cache after their first load. The two differ
most on a page whose first interactive chart loads the Vega-Lite bundle (about 0.8 MB of
JavaScript).

Run from the repository root: ``python benchmarks/dashboard_load.py [--baseline main]
[--repeats 5] [--pages staleness_step local_updates] [--browser-cache shared]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests import process_group  # noqa: E402
from tests.app.test_browser import CHROMIUM, FLAGS, PAGES, _free_port, _load  # noqa: E402

HELLO = ("hello", "", "", "Hello", "hello world")


def serve(arguments: list[str], port_flag: str, environment: dict,
          log: Path, cwd: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """Start a server on a free port of 127.0.0.1 in ``cwd`` and wait until it answers."""
    port = _free_port()
    process = process_group.start([*arguments, port_flag, str(port)], log, env=environment,
                                  cwd=cwd)
    url = f"http://127.0.0.1:{port}"
    if process_group.healthy(url, process, 120):
        return process, url
    process_group.stop(process)
    raise RuntimeError(f"server did not start:\n{log.read_text()}")


def dashboard(tree: Path | None, results: Path, log: Path):
    """``workbench dashboard`` from ``tree`` (None: this checkout as installed). It runs in
    ``tree``: ``python -m`` puts the working directory first on ``sys.path``, ahead of
    ``PYTHONPATH``, so a server started in this checkout would import this checkout's
    packages whatever ``PYTHONPATH`` says."""
    environment = dict(os.environ)
    if tree is not None:
        environment["PYTHONPATH"] = os.pathsep.join(
            [str(tree), *filter(None, [environment.get("PYTHONPATH")])])
    return serve([sys.executable, "-m", "workbench.cli.main", "dashboard", "--results",
                  str(results)], "--port", environment, log, cwd=tree or ROOT)


def baseline_pages(tree: Path) -> set[str]:
    """The url paths the baseline's navigation lists (a page it lacks is not timed there)."""
    listing = tree / "app" / "pages.py"  # before it existed, the entry file listed them
    entry = (listing if listing.exists() else tree / "app" / "dashboard.py").read_text()
    return {name for name, path, *_ in PAGES if f"/{name}.py" in entry or path == ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--repeats", type=int, default=5, help="warm passes")
    parser.add_argument("--pages", nargs="+", choices=[name for name, *_ in PAGES],
                        help="time only these pages (default: all)")
    parser.add_argument("--browser-cache", choices=("none", "shared"), default="none",
                        help="what a new tab keeps (module docstring)")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}; baseline {args.baseline}; "
          f"browser cache {args.browser_cache}")
    servers = []
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        tree, results = scratch / "baseline", scratch / "results"
        tree.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        subprocess.run([sys.executable, "-m", "workbench.cli.main", "run", "stale-gaussian",
                        "--out", str(results), "--quiet"], check=True, capture_output=True)
        hello = scratch / "hello.py"
        hello.write_text('import streamlit as st\nst.title("Hello")\nst.write("hello world")\n')
        try:
            for name, where in (("baseline", tree), ("current", None)):
                servers.append((name, *dashboard(where, results, scratch / f"{name}.log")))
            servers.append(("hello", *serve(
                [sys.executable, "-m", "streamlit", "run", str(hello), "--server.headless",
                 "true", "--browser.gatherUsageStats", "false", "--server.address",
                 "127.0.0.1"], "--server.port", dict(os.environ), scratch / "hello.log")))
            urls = {name: url for name, _, url in servers}
            pages = [p for p in PAGES if not args.pages or p[0] in args.pages]
            times = measure(urls, pages, baseline_pages(tree), args.repeats,
                            args.browser_cache == "shared")
        finally:
            for _, process, _ in servers:
                process_group.stop(process)
    report(times, pages)


def measure(urls: dict, pages: list, in_baseline: set, repeats: int, shared: bool) -> dict:
    """times[(server, page)] = [cold, warm, warm, ...] in seconds, for ``pages`` (rows of
    the browser test's ``PAGES``) and the hello-world page; ``shared``: every tab in one
    browser profile (else each in a fresh one)."""
    times: dict = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=FLAGS)
        viewport = {"width": 1400, "height": 1000}
        profile = browser.new_context(viewport=viewport) if shared else None
        try:
            for _ in range(1 + repeats):
                for name, path, _, title, ready in [*pages, HELLO]:
                    servers = (["hello"] if name == "hello"
                               else [s for s in ("baseline", "current")
                                     if s == "current" or name in in_baseline])
                    for server in servers:
                        page = (profile.new_page() if shared
                                else browser.new_page(viewport=viewport))
                        seconds = _load(page, f"{urls[server]}/{path}", title, ready)
                        times.setdefault((server, name), []).append(seconds)
                        page.close()
        finally:
            browser.close()
    return times


def report(times: dict, pages: list) -> None:
    print(f"\n{'page':<16} {'cold: baseline':>15} {'current':>8}   {'warm median: baseline':>22} "
          f"{'current':>8} {'ratio':>6}")
    for name, *_ in [*pages, HELLO]:
        server = "hello" if name == "hello" else "current"
        current = times[(server, name)]
        base = times.get(("baseline", name))
        ratio = (statistics.median(c / b for c, b in zip(current[1:], base[1:], strict=True))
                 if base else float("nan"))
        base_cold = f"{base[0]:15.2f}" if base else f"{'—':>15}"
        base_warm = f"{statistics.median(base[1:]):22.2f}" if base else f"{'—':>22}"
        print(f"{name:<16} {base_cold} {current[0]:8.2f}   {base_warm} "
              f"{statistics.median(current[1:]):8.2f} {ratio:6.2f}")


if __name__ == "__main__":
    main()
