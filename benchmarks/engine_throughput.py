"""Engine throughput for stale SGLD, and how it compares with the alternatives.

Workload (issue 2): the Gaussian mean with N = 1000 points, d = 1, minibatch 10 with
replacement, 200 replicates, constant staleness τ = 10. Each measurement is repeated and the
median is reported, because this machine is noisy. Printed:

- engine: replicate-steps per second of ``workbench.engine.replay``;
- naive loop: the same algorithm as a per-replicate Python loop (one replicate at a time, a
  ring buffer of past positions, scalar numpy draws), the way a one-off script would do it;
- random-number limit: the rate at which numpy alone draws the same Gaussian and minibatch
  random numbers (the practical ceiling for this workload);
- the ratios engine/naive and engine/limit.

The three measurements are interleaved round by round and each ratio is the median of the
per-round ratios, so a slow phase of the machine affects numerator and denominator alike.

Run: ``python benchmarks/engine_throughput.py [--repeats 5] [--updates 20000]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from simulators.seeding import generator
from simulators.static import constant_staleness
from workbench.engine import replay
from workbench.models.gaussian import GaussianMeanModel
from workbench.samplers import SGLD

N_DATA, BATCH, REPLICATES, STALENESS = 1000, 10, 200, 10


def _rate(work: int, run) -> float:
    start = time.perf_counter()
    run()
    return work / (time.perf_counter() - start)


def engine_workload(model, n_updates: int, dim: int = 1):
    schedule = constant_staleness(n_updates, STALENESS)
    h = 0.5 / STALENESS / model.precision
    gradient = model.minibatch_gradient()

    def run():
        replay(schedule, SGLD(h), gradient, n_updates=n_updates, n_replicates=REPLICATES,
               initial_position=np.zeros(dim), seed=1, batch_size=BATCH)

    return n_updates * REPLICATES, run


def naive_workload(model, n_updates: int, replicates: int):
    """One replicate at a time, one step at a time: the one-off script baseline."""
    h = 0.5 / STALENESS / model.precision
    data = model.data[:, 0]
    k, scale = model.precision, model.n_data / model.noise_scale**2
    root = np.sqrt(2 * h)

    def run():
        rng = np.random.default_rng(1)
        for _ in range(replicates):
            history = [0.0] * (STALENESS + 1)
            theta, total = 0.0, 0.0
            for step in range(n_updates):
                stale = history[(step - min(step, STALENESS)) % (STALENESS + 1)]
                batch = data[rng.integers(0, N_DATA, BATCH)].mean()
                theta = theta - h * (k * stale - scale * batch) + root * rng.standard_normal()
                history[(step + 1) % (STALENESS + 1)] = theta
                total += theta

    return n_updates * replicates, run


def random_number_workload(n_updates: int, dim: int = 1):
    """numpy drawing the normals and the minibatch uniforms the workload needs, nothing else."""
    chunk = 1024

    def run():
        noise_rng, batch_rng = generator(1, "noise"), generator(1, "minibatch")
        for _ in range(0, n_updates, chunk):
            noise_rng.standard_normal((chunk, REPLICATES, dim))
            batch_rng.integers(0, N_DATA, (chunk, REPLICATES, BATCH))

    return n_updates * REPLICATES, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--updates", type=int, default=20_000)
    parser.add_argument("--naive-updates", type=int, default=2_000)
    parser.add_argument("--naive-replicates", type=int, default=10)
    args = parser.parse_args()
    model = GaussianMeanModel.generate(generator(0, "benchmark"), N_DATA, 1)

    workloads = {
        "engine": engine_workload(model, args.updates),
        "naive": naive_workload(model, args.naive_updates, args.naive_replicates),
        "limit": random_number_workload(args.updates),
    }
    rounds = [{name: _rate(work, run) for name, (work, run) in workloads.items()}
              for _ in range(args.repeats)]
    median = {name: statistics.median(r[name] for r in rounds) for name in workloads}
    versus_naive = statistics.median(r["engine"] / r["naive"] for r in rounds)
    versus_limit = statistics.median(r["engine"] / r["limit"] for r in rounds)
    print(f"stale SGLD, d = 1, {REPLICATES} replicates, staleness {STALENESS}, minibatch "
          f"{BATCH} of {N_DATA}; medians of {args.repeats} interleaved rounds")
    print(f"  engine                 {median['engine']:14,.0f} replicate-steps/s"
          "   (target >= 5,000,000)")
    print(f"  naive per-replicate    {median['naive']:14,.0f} replicate-steps/s")
    print(f"  numpy random numbers   {median['limit']:14,.0f} replicate-steps/s")
    print(f"  engine / naive         {versus_naive:14.1f} x                    (target >= 50)")
    print(f"  engine / random limit  {versus_limit:14.1%}")

if __name__ == "__main__":
    main()
