"""Server time of a dashboard page's rerun: this checkout against a baseline revision.

A rerun is what a moved slider or a changed widget costs on the server before the browser
gets anything. Every page of the browser test's ``PAGES`` is opened in Streamlit's
``AppTest`` (the page's script run in one interpreter as the server runs it, no browser):
once to fill its caches, then ``--rounds`` reruns. Printed per page: the median rerun of the
baseline and of this checkout (all of the baseline's pages first, then all of this checkout's:
no interleaving, so a change in the machine's load between the two shows), and their ratio.
Each tree runs in its own interpreter with its
packages first on ``PYTHONPATH`` (the baseline from ``git archive``, as in ``cli_startup.py``);
both read one results directory, a default-size ``stale-gaussian`` written by this checkout.
The machine is shared: the load average at the start is printed.

Run from the repository root: ``python benchmarks/page_rerun.py [--baseline main]
[--rounds 7]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from cli_startup import unpack_revision  # noqa: E402

from tests.app.test_browser import PAGES  # noqa: E402
from workbench.cli.dashboard import RESULTS_ENV  # noqa: E402

# run in the tree: the pages it has, each opened once and rerun; medians in seconds as JSON
MEASURE = """
import json, statistics, sys, time
from pathlib import Path
from streamlit.testing.v1 import AppTest
entry, rounds, names = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
medians = {}
for name in names:
    page = next((f"{kind}/{name}.py" for kind in ("views", "lessons")
                 if (entry.parent / kind / f"{name}.py").exists()), None)
    if page is None:
        continue
    at = AppTest.from_file(str(entry), default_timeout=300)
    at.switch_page(page).run()
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        at.run()
        seconds.append(time.perf_counter() - started)
    if not at.exception:
        medians[name] = statistics.median(seconds)
print(json.dumps(medians))
"""


def rerun_medians(tree: Path, results: Path, rounds: int) -> dict[str, float]:
    """Median rerun seconds of every page ``tree``'s dashboard has (and drew without error)."""
    environment = dict(os.environ, PYTHONPATH=str(tree), **{RESULTS_ENV: str(results)})
    names = [name for name, *_ in PAGES]
    answer = subprocess.run([sys.executable, "-c", MEASURE, str(tree / "app" / "dashboard.py"),
                             str(rounds), *names], env=environment, cwd=tree, check=True,
                            capture_output=True, text=True)
    return json.loads(answer.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=7, help="reruns per page")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}; baseline {args.baseline}")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        unpack_revision(args.baseline, scratch)
        results = scratch / "results"
        subprocess.run([sys.executable, "-m", "workbench.cli.main", "run", "stale-gaussian",
                        "--out", str(results), "--quiet"], check=True, capture_output=True)
        baseline = rerun_medians(scratch / "src", results, args.rounds)
        current = rerun_medians(ROOT, results, args.rounds)
    print(f"{'page':<16} {'baseline ms':>12} {'current ms':>11} {'current/baseline':>17}")
    for name, *_ in PAGES:
        if name not in current:
            continue
        base = baseline.get(name)
        ratio = f"{current[name] / base:17.2f}" if base else f"{'—':>17}"
        base_text = f"{base * 1e3:12.0f}" if base else f"{'—':>12}"
        print(f"{name:<16} {base_text} {current[name] * 1e3:11.0f} {ratio}")


if __name__ == "__main__":
    main()
