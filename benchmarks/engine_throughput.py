"""Engine throughput for stale SGLD, and how it compares with the alternatives.

Workload (issues 2 and 5): the Gaussian mean with N = 1000 points, d = 1, 10 and 100,
minibatch 10 with replacement, 200 replicates, constant staleness τ = 10. Printed for each d:

- engine: replicate-steps per second of ``workbench.engine.replay.replay`` (test-function averages
  of θ and θ² at the final step included);
- random-number limit: the rate at which numpy alone draws the same Gaussian and minibatch
  random numbers (the practical ceiling for this workload); target engine/limit >= 50 % at
  d = 1;
- naive loop: the same algorithm as a per-replicate Python loop (one replicate at a time, a
  ring buffer of past positions, numpy draws per step), the way a one-off script would do it;
  target engine/naive >= 50x;
- BlackJAX (only if the optional ``jax`` extra is installed): plain SGLD (τ = 0, BlackJAX has
  no stale gradients) as ``jit(vmap(lax.scan(blackjax.sgld step)))`` in float64 against the
  engine on the same plain-SGLD workload; compilation is excluded.

The measurements are interleaved round by round and each ratio is the median of the per-round
ratios, so a slow phase of the machine (which is shared) affects numerator and denominator
alike. The load average at the start is printed: other processes on the cores make every
absolute rate lower.

Run: ``python benchmarks/engine_throughput.py [--repeats 5] [--updates 20000]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from simulators.seeding import generator
from simulators.static import constant_staleness
from workbench.engine.replay import replay
from workbench.models.gaussian import GaussianMeanModel
from workbench.samplers import SGLD

N_DATA, BATCH, REPLICATES, STALENESS = 1000, 10, 200, 10
DIMS = (1, 10, 100)


def _rate(work: int, run) -> float:
    """Work per second of ``run()``; a run that times itself returns its seconds."""
    start = time.perf_counter()
    elapsed = run()
    return work / (time.perf_counter() - start if elapsed is None else elapsed)


class Rounds:
    """Rates of every workload measured in interleaved rounds (each round runs them all, so a
    load change hits every workload alike); medians over rounds, and medians of per-round
    ratios."""

    def __init__(self, workloads: dict, n_rounds: int, scale: float = 1.0):
        self.rounds = [{key: _rate(work, run) / scale for key, (work, run) in workloads.items()}
                       for _ in range(n_rounds)]

    def median(self, key) -> float:
        return statistics.median(r[key] for r in self.rounds)

    def ratio(self, a, b) -> float:
        return statistics.median(r[a] / r[b] for r in self.rounds)


def _step_size(model, staleness: int) -> float:
    return 0.5 / max(staleness, 1) / model.precision


def engine_workload(model, n_updates: int, staleness: int = STALENESS):
    schedule = constant_staleness(n_updates, staleness)
    h = _step_size(model, staleness)
    gradient = model.minibatch_gradient()

    def run():
        replay(schedule, SGLD(h), gradient, n_updates=n_updates, n_replicates=REPLICATES,
               initial_position=np.zeros(model.dim), seed=1, batch_size=BATCH)

    return n_updates * REPLICATES, run


def naive_workload(model, n_updates: int, replicates: int):
    """One replicate at a time, one step at a time: the one-off script baseline."""
    h = _step_size(model, STALENESS)
    k, scale = model.precision, model.n_data / model.noise_scale**2
    root = np.sqrt(2 * h)
    dim = model.dim
    data = model.data[:, 0] if dim == 1 else model.data

    def run():
        rng = np.random.default_rng(1)
        zero = 0.0 if dim == 1 else np.zeros(dim)
        for _ in range(replicates):
            history = [zero] * (STALENESS + 1)
            theta, total = zero, zero
            for step in range(n_updates):
                stale = history[(step - min(step, STALENESS)) % (STALENESS + 1)]
                batch = data[rng.integers(0, N_DATA, BATCH)].mean(axis=0)
                noise = rng.standard_normal() if dim == 1 else rng.standard_normal(dim)
                theta = theta - h * (k * stale - scale * batch) + root * noise
                history[(step + 1) % (STALENESS + 1)] = theta
                total = total + theta

    return n_updates * replicates, run


def random_number_workload(n_updates: int, dim: int):
    """numpy drawing the normals and the minibatch indices the workload needs, nothing else."""
    chunk = 1024

    def run():
        noise_rng, batch_rng = generator(1, "noise"), generator(1, "minibatch")
        for first in range(0, n_updates, chunk):
            length = min(chunk, n_updates - first)
            noise_rng.standard_normal((length, REPLICATES, dim))
            batch_rng.integers(0, N_DATA, (length, REPLICATES, BATCH))

    return n_updates * REPLICATES, run


def blackjax_workload(model, n_updates: int, replicates: int = REPLICATES):
    """Plain SGLD in BlackJAX, vectorised over replicates; None if jax is not installed."""
    try:
        import blackjax
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    data = jnp.asarray(model.data)
    h = _step_size(model, 0)

    def log_prior(theta):
        return -0.5 * jnp.sum((theta - model.prior_mean) ** 2) / model.prior_scale**2

    def log_likelihood(theta, x):
        return -0.5 * jnp.sum((x - theta) ** 2) / model.noise_scale**2

    gradient = blackjax.sgmcmc.gradients.grad_estimator(log_prior, log_likelihood, N_DATA)
    sgld = blackjax.sgld(gradient)

    def chain(key, theta):
        def update(carry, key):
            theta, total, total_squared = carry
            batch_key, noise_key = jax.random.split(key)
            batch = data[jax.random.randint(batch_key, (BATCH,), 0, N_DATA)]
            theta = sgld.step(noise_key, theta, batch, h)
            return (theta, total + theta, total_squared + theta**2), None

        zero = jnp.zeros_like(theta)
        (theta, total, total_squared), _ = jax.lax.scan(
            update, (theta, zero, zero), jax.random.split(key, n_updates))
        return total / n_updates, total_squared / n_updates

    compiled = jax.jit(jax.vmap(chain))
    keys = jax.random.split(jax.random.key(1), replicates)
    start = jnp.zeros((replicates, model.dim))
    jax.block_until_ready(compiled(keys, start))  # compile outside the timing

    def run():
        jax.block_until_ready(compiled(keys, start))

    return n_updates * replicates, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--updates", type=int, default=20_000,
                        help="updates at d = 1 (d = 10 and 100 run 1/4 and 1/20 of it)")
    parser.add_argument("--naive-updates", type=int, default=2_000)
    parser.add_argument("--naive-replicates", type=int, default=10)
    args = parser.parse_args()
    updates = {1: args.updates, 10: args.updates // 4, 100: args.updates // 20}
    models = {d: GaussianMeanModel.generate(generator(0, "benchmark"), N_DATA, d) for d in DIMS}
    workloads = {}
    for d in DIMS:
        workloads[("engine", d)] = engine_workload(models[d], updates[d])
        workloads[("limit", d)] = random_number_workload(updates[d], d)
        workloads[("naive", d)] = naive_workload(models[d], args.naive_updates,
                                                 args.naive_replicates)
    jax_run = blackjax_workload(models[1], args.updates)
    if jax_run is not None:
        workloads[("blackjax", 1)] = jax_run
        workloads[("engine-plain", 1)] = engine_workload(models[1], args.updates, staleness=0)

    load = os.getloadavg()[0]
    rounds = Rounds(workloads, args.repeats)
    median, ratio = rounds.median, rounds.ratio

    print(f"stale SGLD, {REPLICATES} replicates, staleness {STALENESS}, minibatch {BATCH} of "
          f"{N_DATA}; medians of {args.repeats} interleaved rounds; load average at start "
          f"{load:.2f} on {os.cpu_count()} cores")
    print(f"  {'d':>4} {'engine':>14} {'random limit':>14} {'naive':>12} {'engine/limit':>13} "
          f"{'engine/naive':>13}   (replicate-steps/s)")
    for d in DIMS:
        print(f"  {d:>4} {median(('engine', d)):14,.0f} {median(('limit', d)):14,.0f} "
              f"{median(('naive', d)):12,.0f} {ratio(('engine', d), ('limit', d)):13.1%} "
              f"{ratio(('engine', d), ('naive', d)):12.1f}x")
    print("  targets at d = 1: engine/limit >= 50 %, engine/naive >= 50x")
    if jax_run is None:
        print("  BlackJAX: not installed (pip install '.[blackjax]' to compare)")
    else:
        print(f"  plain SGLD (τ = 0), d = 1: engine {median(('engine-plain', 1)):,.0f}, "
              f"BlackJAX jit/vmap/scan {median(('blackjax', 1)):,.0f} replicate-steps/s; "
              f"engine/BlackJAX {ratio(('engine-plain', 1), ('blackjax', 1)):.2f}x")


if __name__ == "__main__":
    main()
