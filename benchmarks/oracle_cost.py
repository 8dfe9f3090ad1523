"""Cost of the exact linear-Gaussian oracle against the staleness τ: the shift-register
kernels (:mod:`workbench.oracles.shift_register`) against the dense O(S³) recursion they
replaced (``tests/workbench/dense_oracle.py``), interleaved in one run.

Constant staleness τ (capped by the update index), L updates of stale SGLD, 8 checkpoints
spaced geometrically up to L, with and without the fourth moments. Every (τ, moments) cell is
timed ``--rounds`` times, alternating the two paths; printed are the medians and the median of
the per-round ratios dense/kernels. The dense path is run only for τ <= ``--dense-max`` (it
takes minutes at τ = 100). The first call of the kernels in a process loads them from numba's
cache (or compiles them once): that call is timed separately and not counted. The load average
at the start is printed (the machine is shared). Issue 15's targets: L = 20,000 at τ = 400 in
under 10 s, τ <= 20 no slower than the dense path.

Run from the repository root: ``python benchmarks/oracle_cost.py [--length 20000]
[--rounds 3] [--dense-max 20]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.workbench.dense_oracle import dense_finite_moments  # noqa: E402
from workbench.oracles.linear_gaussian import finite_moments, sgld_dynamics  # noqa: E402

STALENESS = (2, 20, 100, 400)


def _seconds(function, staleness, checkpoints, fourth) -> float:
    start = time.perf_counter()
    function(sgld_dynamics(0.01), 1.0, staleness, checkpoints, fourth_moments=fourth)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dense-max", type=int, default=20)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; "
          f"L = {args.length}, {args.rounds} rounds")
    checkpoints = np.unique(np.geomspace(10, args.length, 8).astype(int))
    first = _seconds(finite_moments, np.zeros(50, int), [50], True)
    print(f"first call (numba cache load or compile): {first:.2f} s")
    print(f"{'tau':>5} {'4th moments':>11} {'kernels s':>10} {'dense s':>10} {'dense/kernels':>14}")
    for tau in STALENESS:
        staleness = np.minimum(np.full(args.length, tau), np.arange(args.length))
        for fourth in (True, False):
            fast, dense = [], []
            for _ in range(args.rounds):
                fast.append(_seconds(finite_moments, staleness, checkpoints, fourth))
                if tau <= args.dense_max:
                    dense.append(_seconds(dense_finite_moments, staleness, checkpoints, fourth))
            if dense:
                ratio = statistics.median(d / f for d, f in zip(dense, fast, strict=True))
                dense_text, ratio_text = f"{statistics.median(dense):10.3f}", f"{ratio:14.1f}"
            else:
                dense_text, ratio_text = f"{'-':>10}", f"{'-':>14}"
            print(f"{tau:>5} {str(fourth):>11} {statistics.median(fast):10.3f} {dense_text} "
                  f"{ratio_text}", flush=True)


if __name__ == "__main__":
    main()
