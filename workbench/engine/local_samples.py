"""Samples from every shard's local posterior p_s ∝ p(X_s | θ), by plain SGLD on each shard
alone, all shards in one replay.

FSGLD fits its surrogates q_s to such samples (seed 002 §5.2-5.3: "running SGLD independently
for each client"; :func:`workbench.gradients.surrogates.fit_to_samples` does the fit). The
shards' chains are the servers of one fresh-gradient schedule, server s drawing its minibatches
from shard s with frequency 1, so that :class:`workbench.gradients.sharded.ShardLikelihood`
estimates -∇log p(X_s | θ) for each: one vectorised step for all S chains instead of S runs.
The chains run in groups of shards whose kept draws stay under :data:`DRAW_ELEMENTS` floats
(the MLP of seed 002 §5.3: 3,000 draws of 854 coordinates a shard), each group its own replay
and seed; the groups depend on the sizes alone, never on the machine, so the draws do not
either.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from simulators import validation
from simulators.seeding import derive
from simulators.static import constant_staleness
from workbench.engine.replay import replay
from workbench.gradients.sharded import ShardLikelihood
from workbench.samplers import SGLD

#: the most kept draws' floats one replay of shard chains holds (64 MiB)
DRAW_ELEMENTS = 1 << 23


def local_sgld_samples(sharded, start, step_size: float, n_samples: int, burn_in: int,
                       thin: int, batch_size: int, seed) -> np.ndarray:
    """``n_samples`` SGLD draws (every ``thin``-th after ``burn_in``) from each p_s ∝
    p(X_s | θ): shape ``(S, n_samples, d)``.

    ``sharded`` is a shard-aware base estimator (``shard_sizes``, ``prepare(indices, shards,
    frequencies)``, ``likelihood_gradient``: for example
    :meth:`workbench.models.sharded_gaussian.ShardedGaussianMean.shard_gradient` or
    :class:`workbench.models.sharded_per_example.ShardedPerExample`); every chain starts at
    ``start`` (a scalar or a position ``(d,)``).
    """
    n_samples = validation.integer("surrogate_samples", n_samples, minimum=2)
    burn_in = validation.integer("surrogate_burn_in", burn_in, minimum=0)
    thin = validation.integer("surrogate_thin", thin, minimum=1)
    n_updates = burn_in + n_samples * thin
    n_shards = len(sharded.shard_sizes)
    group = max(1, min(n_shards, DRAW_ELEMENTS // (n_samples * sharded.dim)))
    kept = burn_in + thin * np.arange(1, n_samples + 1)
    start = np.asarray(start, dtype=float)
    draws = []
    for first in range(0, n_shards, group):
        shards = np.arange(first, min(first + group, n_shards))
        schedule = constant_staleness(n_updates, 0, n_servers=shards.size)
        schedule = dataclasses.replace(schedule, shard=shards[schedule.server],
                                       shard_frequency=np.ones(schedule.n_events))
        run = replay(schedule, SGLD(step_size), ShardLikelihood(sharded), n_updates=n_updates,
                     n_replicates=1, seed=derive(seed, "shards", first), batch_size=batch_size,
                     initial_position=np.broadcast_to(start, (1, shards.size, sharded.dim)),
                     thin=kept, test_functions=())
        draws.append(run.draws[0])
    return np.concatenate(draws)
