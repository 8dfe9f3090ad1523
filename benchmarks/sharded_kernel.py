"""Sharded replays (D-SGLD, FSGLD) on the engine's compiled path against its numpy path.

Workload (issue 15, item 1; the shape of dsgld-imbalance and fsgld-gaussian): the Gaussian mean
in d = 2 on 20 shards of 500 and 1500 points (N = 20,000), 20 traveling chains with
trajectories of 70 updates on the small shards and 10 on the large ones (random hops), SGLD,
R = 3 replicates, minibatches with replacement of n = 10 and n = 300. Estimators: D-SGLD
(:class:`~workbench.shard_gradients.ShardScaled`) and FSGLD
(:class:`~workbench.shard_gradients.Conducive` with the analytic, diagonal surrogates).

Printed per (estimator, n), in million chain-steps per second (replicate × chain × update):
``workbench.engine.replay`` with ``engine_kernel.ENABLED`` on and off, medians over
``--rounds`` interleaved rounds, and the median per-round ratio. Both paths give the same bits
(tests/workbench/test_engine_kernel.py); numba's compilation is excluded (one warm-up run).

Run from the repository root: ``python benchmarks/sharded_kernel.py [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_throughput import Rounds  # noqa: E402

from simulators.seeding import generator  # noqa: E402
from simulators.traveling_chains import TravelingChains  # noqa: E402
from workbench import engine, engine_kernel, surrogates  # noqa: E402
from workbench.models.gaussian import GaussianMeanModel  # noqa: E402
from workbench.models.sharded_gaussian import ShardedGaussianMean  # noqa: E402
from workbench.samplers import SGLD  # noqa: E402
from workbench.shard_gradients import Conducive, ShardScaled  # noqa: E402

SHARD_SIZES = (500,) * 10 + (1500,) * 10
TRAJECTORIES = (70,) * 10 + (10,) * 10
DIM, REPLICATES, BATCHES = 2, 3, (10, 300)


def workloads(n_updates: int) -> dict:
    model = GaussianMeanModel.generate(generator(1, "bench-data"), sum(SHARD_SIZES), DIM, 0.5)
    sharded = ShardedGaussianMean(model, SHARD_SIZES)
    schedule = TravelingChains(len(SHARD_SIZES), trajectory_lengths=TRAJECTORIES,
                               assignment="permutation").simulate(n_updates, seed=2)
    dsgld = ShardScaled(sharded.shard_gradient())
    estimators = {"dsgld": dsgld, "fsgld": Conducive(dsgld, surrogates.analytic(sharded))}
    h = 0.05 / model.precision
    work = n_updates * REPLICATES * len(SHARD_SIZES)
    cases = {}
    for name, estimator in estimators.items():
        for batch in BATCHES:
            for compiled in (True, False):
                def run(estimator=estimator, batch=batch, compiled=compiled):
                    engine_kernel.ENABLED = compiled
                    try:
                        engine.replay(schedule, SGLD(h), estimator, n_updates=n_updates,
                                      n_replicates=REPLICATES, initial_position=np.zeros(DIM),
                                      seed=3, batch_size=batch)
                    finally:
                        engine_kernel.ENABLED = True

                cases[(name, batch, compiled)] = (work, run)
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--updates", type=int, default=4000)
    args = parser.parse_args()
    cases = workloads(args.updates)
    for _, run in cases.values():  # warm-up: numba's compilation (or its cache) out of the way
        run()
    print(f"load average {os.getloadavg()[0]:.2f}; L = {args.updates} updates, "
          f"{REPLICATES} replicates × {len(SHARD_SIZES)} chains, d = {DIM}; medians of "
          f"{args.rounds} rounds, million chain-steps/s")
    rounds = Rounds(cases, args.rounds, scale=1e6)
    print(f"{'estimator':>9} {'n':>4} {'compiled':>9} {'numpy':>7} {'ratio':>6}")
    for name in ("dsgld", "fsgld"):
        for batch in BATCHES:
            on, off = (name, batch, True), (name, batch, False)
            print(f"{name:>9} {batch:>4} {rounds.median(on):>9.3f} {rounds.median(off):>7.3f} "
                  f"{rounds.ratio(on, off):>6.2f}")


if __name__ == "__main__":
    main()
