"""Sharded replays (D-SGLD, FSGLD) on the engine's compiled path against its numpy path.

Workload (issue 15, item 1; the shape of dsgld-imbalance and fsgld-gaussian): the Gaussian mean
in d = 2 on 20 shards of 500 and 1500 points (N = 20,000), 20 traveling chains with
trajectories of 70 updates on the small shards and 10 on the large ones (random hops), SGLD,
R = 3 replicates, minibatches with replacement of n = 10 and n = 300. Estimators: D-SGLD
(:class:`~workbench.gradients.sharded.ShardScaled`) and FSGLD
(:class:`~workbench.gradients.sharded.Conducive` with the analytic, diagonal surrogates).

Printed per (estimator, n), in million chain-steps per second (replicate × chain × update):
``workbench.engine.replay.replay`` with ``engine_kernel.ENABLED`` on and off, medians over
``--rounds`` interleaved rounds, and the median per-round ratio. Both paths give the same bits
(tests/workbench/test_engine_kernel.py); numba's compilation is excluded (one warm-up run).

Coupled D-SGLD (dsgld-coupling's shape, seed 004 §3.2.3): 20 IID shards of 1,000 points,
d = 2, one traveling chain a worker (trajectories of 10, random-permutation rounds), chains
coupled in groups of R = 1, 5 and 20 (:class:`~workbench.samplers.coupled.CoupledSGLD`, which
the kernel does not run: its group mean is numpy's BLAS matmul), R = 4 replicates, n = 100
with replacement. Printed per R: the generic path with the compiled shard minibatch means
(``ShardLocalGradient.prepare``, :func:`workbench.engine.compiled.shard_batch_means`) against the
same replay with the numpy preparation they replaced (``batch_means`` of the gathered global
rows), the same bits, and the median per-round ratio.

Run from the repository root: ``python benchmarks/sharded_kernel.py [--rounds 3]
[--coupled-only]``.
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
from workbench.engine import compiled as engine_kernel
from workbench.engine import replay as engine  # noqa: E402
from workbench.gradients import surrogates
from workbench.gradients.minibatch import batch_means  # noqa: E402
from workbench.gradients.sharded import Conducive, ShardBatches, ShardScaled  # noqa: E402
from workbench.models.gaussian import GaussianMeanModel  # noqa: E402
from workbench.models.sharded_gaussian import ShardedGaussianMean, ShardLocalGradient  # noqa: E402
from workbench.samplers import SGLD  # noqa: E402
from workbench.samplers.coupled import CoupledSGLD  # noqa: E402

SHARD_SIZES = (500,) * 10 + (1500,) * 10
TRAJECTORIES = (70,) * 10 + (10,) * 10
DIM, REPLICATES, BATCHES = 2, 3, (10, 300)
COUPLED_SHARDS, COUPLED_GROUPS, COUPLED_REPLICATES, COUPLED_BATCH = 20, (1, 5, 20), 4, 100


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
    parser.add_argument("--coupled-updates", type=int, default=3000)
    parser.add_argument("--coupled-only", action="store_true",
                        help="measure only the coupled D-SGLD workloads")
    args = parser.parse_args()
    cases = {} if args.coupled_only else workloads(args.updates)
    cases.update(coupled_workloads(args.coupled_updates))
    for _, run in cases.values():  # warm-up: numba's compilation (or its cache) out of the way
        run()
    rounds = Rounds(cases, args.rounds, scale=1e6)
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.rounds} rounds, million "
          "chain-steps/s")
    if not args.coupled_only:
        print(f"L = {args.updates} updates, {REPLICATES} replicates × {len(SHARD_SIZES)} "
              f"chains, d = {DIM}")
        print(f"{'estimator':>9} {'n':>4} {'compiled':>9} {'numpy':>7} {'ratio':>6}")
        for name in ("dsgld", "fsgld"):
            for batch in BATCHES:
                on, off = (name, batch, True), (name, batch, False)
                print(f"{name:>9} {batch:>4} {rounds.median(on):>9.3f} "
                      f"{rounds.median(off):>7.3f} {rounds.ratio(on, off):>6.2f}")
    print(f"coupled D-SGLD, generic path: L = {args.coupled_updates} updates, "
          f"{COUPLED_REPLICATES} replicates × {COUPLED_SHARDS} chains, n = {COUPLED_BATCH}; "
          "minibatch means compiled (new) against numpy's (old)")
    print(f"{'R':>4} {'new':>7} {'old':>7} {'new/old':>8}")
    for group in COUPLED_GROUPS:
        new, old = ("coupled", group, True), ("coupled", group, False)
        print(f"{group:>4} {rounds.median(new):>7.3f} {rounds.median(old):>7.3f} "
              f"{rounds.ratio(new, old):>8.2f}")


def _numpy_prepare(gradient, indices, shards, frequencies):
    """What ``ShardLocalGradient.prepare`` computed before issue 15: the global rows, gathered,
    and their means by :func:`~workbench.gradients.minibatch.batch_means` (the same bits)."""
    rows = gradient._offsets[shards][..., None] + indices
    return ShardBatches(shards, frequencies, batch_means(gradient._data, rows))


def coupled_workloads(n_updates: int) -> dict:
    sizes = (1000,) * COUPLED_SHARDS
    model = GaussianMeanModel.generate(generator(4, "bench-coupled"), sum(sizes), DIM, 0.5)
    sharded = ShardedGaussianMean(model, sizes)
    h = 0.05 / model.precision
    work = n_updates * COUPLED_REPLICATES * COUPLED_SHARDS
    cases = {}
    for group in COUPLED_GROUPS:
        groups = (group,) * (COUPLED_SHARDS // group)
        schedule = TravelingChains(COUPLED_SHARDS, trajectory_lengths=10,
                                   assignment="permutation", coupling_groups=groups,
                                   coupling_time=0.5).simulate(n_updates, seed=5)
        for compiled in (True, False):
            def run(schedule=schedule, groups=groups, compiled=compiled):
                original = ShardLocalGradient.prepare
                if not compiled:
                    ShardLocalGradient.prepare = _numpy_prepare
                try:  # built here: ShardScaled takes the base's prepare when it is made
                    estimator = ShardScaled(ShardLocalGradient(sharded))
                    engine.replay(schedule, CoupledSGLD(h, groups), estimator,
                                  n_updates=n_updates, n_replicates=COUPLED_REPLICATES,
                                  initial_position=np.zeros(DIM), seed=6,
                                  batch_size=COUPLED_BATCH)
                finally:
                    ShardLocalGradient.prepare = original

            cases[("coupled", group, compiled)] = (work, run)
    return cases


if __name__ == "__main__":
    main()
