"""Start-up time of the command line: this checkout against a baseline revision, interleaved.

``workbench --help``, ``workbench list``, an argument error (an unknown experiment name),
``workbench show`` of a built-in experiment and of a shipped study, and a bad ``--set`` value
(refused after the experiment is loaded and configured) run in fresh interpreters, alternating
a baseline (``git archive BASELINE`` unpacked in a temporary directory and put first on
``PYTHONPATH`` so its packages shadow the installed ones) and this checkout. Printed per
command: the median wall time of each over ``--rounds`` runs and the median of the per-round
ratios baseline/current. Issue 15's target is a median under 0.5 s for ``--help`` and
``list``; ``show`` and argument errors should answer as fast.
The machine is shared: the load average at the start is printed.

Where the time goes: ``python -X importtime -c "import workbench.cli.main"`` or ``python -X
importtime -m workbench.cli.main show NAME``.

Run from the repository root: ``python benchmarks/cli_startup.py [--baseline main]
[--rounds 10]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (("--help",), ("list",), ("show", "no-such-experiment"), ("show", "dsgld-imbalance"),
            ("show", "stale-gaussian"), ("run", "dsgld-imbalance", "--set", "burn_in=-1"))
RUN = "import sys; from workbench.cli.main import main; sys.exit(main(sys.argv[1:]))"


def unpack_revision(revision: str, directory: Path) -> None:
    archive = directory / "baseline.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", revision], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(directory / "src", filter="data")


def _seconds(argv: tuple[str, ...], source: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(source))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", RUN, *argv], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd=source)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        unpack_revision(args.baseline, Path(tmp))
        sources = {"baseline": Path(tmp) / "src", "current": ROOT}
        print(f"{'command':<50} {'baseline s':>10} {'current s':>10} {'baseline/current':>17}")
        for argv in COMMANDS:
            times = {name: [] for name in sources}
            for _ in range(args.rounds):
                for name, source in sources.items():
                    times[name].append(_seconds(argv, source))
            ratios = [b / c for b, c in zip(times["baseline"], times["current"], strict=True)]
            print(f"{'workbench ' + ' '.join(argv):<50} "
                  f"{statistics.median(times['baseline']):>10.3f} "
                  f"{statistics.median(times['current']):>10.3f} "
                  f"{statistics.median(ratios):>17.1f}")


if __name__ == "__main__":
    main()
