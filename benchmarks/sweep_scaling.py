"""Sweep scaling: the ``stale-gaussian`` sweep in one process and in a pool of two.

The default configuration (6 staleness values, 200 replicates, L = 1000·τ) is run through
``workbench.runner.run_sweep`` without a result store, so every point is computed. Serial and
pooled runs are interleaved round by round; the speed-up is the median of the per-round ratios
(this machine is shared and noisy). The pool is opened inside the timed region, as a user's
``workbench run`` would. Target on 2 cores: >= 1.7x.

Run: ``python benchmarks/sweep_scaling.py [--repeats 5] [--processes 2]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from workbench import experiments
from workbench.executors import open_workers
from workbench.runner import run_sweep


def timed_sweep(experiment, config, processes: int) -> tuple[float, str]:
    start = time.perf_counter()
    with open_workers(processes=processes) as workers:
        result = run_sweep(experiment, config, 2016, workers=workers)
    return time.perf_counter() - start, result.describe()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="the quick configuration")
    args = parser.parse_args()
    experiment = experiments.get("stale-gaussian")
    config = experiment.configure(quick=args.quick)
    rounds = []
    for _ in range(args.repeats):
        serial, _ = timed_sweep(experiment, config, 1)
        pooled, described = timed_sweep(experiment, config, args.processes)
        rounds.append((serial, pooled))
    speedup = statistics.median(s / p for s, p in rounds)
    print(f"stale-gaussian sweep ({'quick' if args.quick else 'default'} configuration; "
          f"{described}); medians of {args.repeats} interleaved rounds")
    print(f"  1 process              {statistics.median(s for s, _ in rounds):8.2f} s")
    print(f"  {args.processes} processes            "
          f"{statistics.median(p for _, p in rounds):8.2f} s")
    print(f"  speed-up               {speedup:8.2f} x               (target >= 1.7 on 2 cores)")


if __name__ == "__main__":
    main()
