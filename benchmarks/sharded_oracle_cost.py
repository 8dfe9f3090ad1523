"""Cost of the sharded-Gaussian oracle's exact moments: the compiled recursion
(:mod:`workbench.oracles.sharded_scan`) against the numpy doubling scan of the maps'
compositions, which the package ran before it (``tests/workbench/sharded_reference.py``),
interleaved in one run; and how far apart their values are (the same mathematics, rounded
differently).

Workloads: random diagonal maps of the shapes the distributed experiments' ``--quick`` points
hand the oracle (updates L, chains C, dimension d: dsgld-imbalance 20,000-80,000 × 20 × 2,
dsgld-trajectory 50,000 × 4 × 2, fsgld-gaussian 12,000 × 20 × 2, dsgld-coupling
8,000 × 20 × 2) and one at d = 5, and full maps (A a matrix, as with full surrogate
precisions or coupled groups) at two of those shapes; two checkpoints. Every cell is timed
``--rounds`` times, alternating the two paths; printed are the medians, the median of the
per-round ratios numpy/compiled, and the largest difference between the two paths' moment
arrays relative to the array's largest magnitude. The first compiled call
(numba's cache load or compilation) is timed separately and not counted. The load average at
the start is printed (the machine is shared).

Run from the repository root: ``python benchmarks/sharded_oracle_cost.py [--rounds 3]``.
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
from tests.workbench.sharded_reference import FIELDS, doubling_moments  # noqa: E402
from workbench.oracles.sharded_gaussian import StepMaps, conditional_moments  # noqa: E402

SHAPES = ((8_000, 20, 2, True), (12_000, 20, 2, True), (20_000, 20, 2, True),
          (50_000, 4, 2, True), (80_000, 20, 2, True), (20_000, 20, 5, True),
          (12_000, 20, 2, False), (20_000, 20, 5, False))


def _maps(n_updates: int, n_chains: int, dim: int, diagonal: bool) -> StepMaps:
    rng = np.random.default_rng(n_updates + n_chains + dim)
    if diagonal:
        a = rng.uniform(0.999, 1.0, (n_updates, n_chains, dim))
    else:
        a = 0.9995 * np.eye(dim) + 1e-4 * rng.standard_normal((n_updates, n_chains, dim, dim))
    b = 1e-3 * rng.standard_normal((n_updates, n_chains, dim))
    root = rng.standard_normal((n_updates, n_chains, dim, dim))
    return StepMaps(a, b, 1e-3 * root @ np.swapaxes(root, -1, -2), diagonal)


def _relative_gap(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.max(np.abs(x - y)) / max(np.max(np.abs(y)), np.finfo(float).tiny))


def _timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; "
          f"{args.rounds} rounds")
    first, _ = _timed(conditional_moments, _maps(10, 1, 2, True), np.zeros(2), [10])
    print(f"first call (numba cache load or compile): {first:.2f} s")
    print(f"{'L':>7} {'C':>3} {'d':>2} {'maps':>8} {'compiled s':>11} {'numpy s':>9} "
          f"{'numpy/compiled':>15} {'relative gap':>13}")
    for n_updates, n_chains, dim, diagonal in SHAPES:
        maps = _maps(n_updates, n_chains, dim, diagonal)
        start = np.full((n_chains, dim), 0.5)
        checkpoints = [n_updates // 5, n_updates]
        fast, slow, gap = [], [], 0.0
        for _ in range(args.rounds):
            seconds, moments = _timed(conditional_moments, maps, start, checkpoints)
            fast.append(seconds)
            seconds, composed = _timed(doubling_moments, maps, start, checkpoints)
            slow.append(seconds)
            gap = max(gap, *(_relative_gap(getattr(moments, field), composed[field])
                             for field in FIELDS))
        ratio = statistics.median(s / f for s, f in zip(slow, fast, strict=True))
        kind = "diagonal" if diagonal else "full"
        print(f"{n_updates:>7} {n_chains:>3} {dim:>2} {kind:>8} {statistics.median(fast):11.3f} "
              f"{statistics.median(slow):9.3f} {ratio:15.1f} {gap:13.1e}", flush=True)


if __name__ == "__main__":
    main()
