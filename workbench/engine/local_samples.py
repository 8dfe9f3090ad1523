"""Samples from one shard's local posterior p_s ∝ p(X_s | θ), by plain SGLD on that shard alone.

FSGLD fits its surrogates q_s to such samples (seed 002 §5.2-5.3: "running SGLD independently
for each client"; :func:`workbench.gradients.surrogates.fit_to_samples` does the fit).
"""

from __future__ import annotations

import numpy as np

from simulators import validation
from simulators.static import constant_staleness
from workbench.engine.replay import replay
from workbench.samplers import SGLD


def local_sgld_samples(local_gradient, start, step_size: float, n_samples: int, burn_in: int,
                       thin: int, batch_size: int, seed) -> np.ndarray:
    """``n_samples`` SGLD draws (every ``thin``-th after ``burn_in``) from p_s ∝ p(X_s | θ).

    ``local_gradient`` is a single-shard estimator of -∇log p(X_s | θ) (for example
    :meth:`workbench.models.sharded_gaussian.ShardedGaussianMean.local_likelihood_gradient`);
    the run is one replicate of the engine on a fresh-gradient schedule.
    """
    n_samples = validation.integer("surrogate_samples", n_samples, minimum=2)
    burn_in = validation.integer("surrogate_burn_in", burn_in, minimum=0)
    thin = validation.integer("surrogate_thin", thin, minimum=1)
    n_updates = burn_in + n_samples * thin
    run = replay(constant_staleness(n_updates, 0), SGLD(step_size), local_gradient,
                 n_updates=n_updates, n_replicates=1, initial_position=start, seed=seed,
                 batch_size=batch_size, thin=thin, test_functions=())
    draws = run.draws[0, 0]
    return draws[-n_samples:]
