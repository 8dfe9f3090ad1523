"""Engine throughput at every size, with and without replicate groups, against a naive loop.

Workload (issue 15's table): the Gaussian mean with N = 1000 points, minibatch 10 with
replacement, stale SGLD with constant staleness τ = 10, (d, R) in {1, 10, 100} × {200,
10000}. Printed per (d, R), in million replicate-steps per second:

- grouped: ``workbench.engine.replay.replay`` as it is (replicate blocks stepped in groups of about
  ``GROUP_ELEMENTS`` state elements);
- one group: the same call with every block in one group (``GROUP_ELEMENTS`` raised above
  R·d), i.e. the engine before issue 15;
- naive: the per-replicate Python loop of ``benchmarks/engine_throughput.py`` (its rate does
  not depend on R: it runs ``--naive-replicates`` replicates).

Both engine variants give identical numbers (tests/workbench/test_engine_groups.py). The
work per cell is about ``--work`` replicate-steps divided by d (at least 64 updates). Every
round measures every cell, interleaved; printed are the medians over ``--rounds`` rounds and
the medians of the per-round ratios. The load average at the start is printed (the machine is
shared).

Run from the repository root: ``python benchmarks/engine_groups.py [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_throughput import N_DATA, Rounds, _step_size, naive_workload  # noqa: E402

from simulators.seeding import generator  # noqa: E402
from simulators.static import constant_staleness  # noqa: E402
from workbench.engine import replay as engine  # noqa: E402
from workbench.models.gaussian import GaussianMeanModel  # noqa: E402
from workbench.samplers import SGLD  # noqa: E402

DIMS, REPLICATES, STALENESS, BATCH = (1, 10, 100), (200, 10_000), 10, 10


def engine_run(model, n_updates: int, n_replicates: int, group_elements: int):
    schedule = constant_staleness(n_updates, STALENESS)
    sampler, gradient = SGLD(_step_size(model, STALENESS)), model.minibatch_gradient()

    def run():
        saved, engine.GROUP_ELEMENTS = engine.GROUP_ELEMENTS, group_elements
        try:
            engine.replay(schedule, sampler, gradient, n_updates=n_updates,
                          n_replicates=n_replicates, initial_position=np.zeros(model.dim),
                          seed=1, batch_size=BATCH)
        finally:
            engine.GROUP_ELEMENTS = saved

    return n_updates * n_replicates, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=float, default=4e6)
    parser.add_argument("--naive-updates", type=int, default=2_000)
    parser.add_argument("--naive-replicates", type=int, default=5)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; "
          f"GROUP_ELEMENTS = {engine.GROUP_ELEMENTS}, {args.rounds} rounds")
    models = {d: GaussianMeanModel.generate(generator(0, "benchmark"), N_DATA, d) for d in DIMS}
    cells = {}
    for d in DIMS:
        cells[("naive", d, None)] = naive_workload(models[d], args.naive_updates,
                                                   args.naive_replicates)
        for r in REPLICATES:
            updates = max(64, int(args.work / d / r))
            cells[("grouped", d, r)] = engine_run(models[d], updates, r, engine.GROUP_ELEMENTS)
            cells[("one group", d, r)] = engine_run(models[d], updates, r, 1 << 62)
    rounds = Rounds(cells, args.rounds, scale=1e6)
    median, ratio = rounds.median, rounds.ratio

    print(f"{'d':>4} {'R':>6} {'grouped':>9} {'one group':>10} {'naive':>8} "
          f"{'grouped/one':>12} {'grouped/naive':>14}")
    for d in DIMS:
        naive = ("naive", d, None)
        for r in REPLICATES:
            grouped, single = ("grouped", d, r), ("one group", d, r)
            print(f"{d:>4} {r:>6} {median(grouped):>9.3f} {median(single):>10.3f} "
                  f"{median(naive):>8.3f} {ratio(grouped, single):>12.2f} "
                  f"{ratio(grouped, naive):>14.1f}")


if __name__ == "__main__":
    main()
