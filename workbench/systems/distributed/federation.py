"""A federated system of seed 002 (Algorithm 1) with its two estimators: what every run with
the same number of local updates T shares.

:class:`Federation` holds the sharded data, the surrogates q_s (computed once before
sampling, seed 002 §3.1), the client-draw schedule of ``n_chains`` independent chains
(:class:`simulators.federated.FederatedRounds`: a uniformly chosen client per round, T local
updates), the DSGLD estimator (:class:`~workbench.gradients.sharded.ShardScaled`, seed 002
Eq. 4) and the FSGLD one (:class:`~workbench.gradients.sharded.Conducive`, Eq. 7), and the exact
sharded oracle of each. The schedule is keyed by T only, so runs at other step sizes replay
the same client draws. Used by the federated-rounds point of a study
(:mod:`workbench.studies.sharded_point`), ``fsgld-gaussian``'s bound grid and the
local-updates lesson.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulators.federated import FederatedRounds
from simulators.seeding import derive
from workbench.run.experiment import point_key
from workbench.systems.distributed import chen_step_size
from workbench.systems.distributed.data import make_sharded

# the surrogates, gradient estimators, oracles and the engine (numba, scipy.stats) are imported
# where a federation is built: the study schema reads METHODS and SURROGATES, which `workbench
# show` prints without them (issue 15)

METHODS = ("dsgld", "fsgld")
SURROGATES = ("analytic", "laplace", "sgld-full", "sgld-diagonal")


def make_surrogates(experiment: str, config: dict, sharded, seed):
    """q_s per shard, computed once before sampling (seed 002 §3.1); the same for every T."""
    from workbench.gradients import surrogates as surrogate_kinds

    kind = config["surrogate"]
    if kind == "analytic":
        return surrogate_kinds.analytic(sharded)
    if kind == "laplace":
        pairs = []
        for s in range(sharded.n_shards):
            value, gradient, hessian = sharded.shard_negative_log_likelihood(s)
            pairs.append(surrogate_kinds.laplace(value, gradient,
                                                 np.zeros(sharded.model.dim), hessian))
        return surrogate_kinds.stack(pairs)
    return sampled_surrogates(experiment, config, sharded.shard_gradient(), 0.0, seed)


def sampled_surrogates(experiment: str, config: dict, sharded, start, seed):
    """The ``sgld-full`` or ``sgld-diagonal`` surrogates: a Gaussian fitted to each shard's
    local SGLD draws of p(X_s | θ) from ``start`` (seed 002 §5.2-5.3), as the ``surrogate_*``
    fields say; ``sharded`` is the shard-aware base estimator."""
    from workbench.engine.local_samples import local_sgld_samples
    from workbench.gradients import surrogates

    draws = local_sgld_samples(
        sharded, start, chen_step_size(config["surrogate_welling_teh_step_size"]),
        config["surrogate_samples"], config["surrogate_burn_in"], config["surrogate_thin"],
        config["surrogate_batch_size"], derive(seed, experiment, "surrogates"))
    covariance = config["surrogate"].removeprefix("sgld-")
    return surrogates.stack(surrogates.fit_to_samples(samples, covariance) for samples in draws)


@dataclass(frozen=True)
class Federation:
    """What every point with ``local`` local updates shares (module docstring)."""

    sharded: object
    fitted: object
    schedule: object
    estimators: dict
    oracles: dict
    probabilities: np.ndarray
    window: np.ndarray  # window lengths T after the burn-in at which φ̂_T is kept

    @classmethod
    def build(cls, experiment: str, config: dict, seed, local: int) -> Federation:
        from workbench.engine.replay import log_checkpoints
        from workbench.gradients.sharded import Conducive, ShardScaled
        from workbench.oracles.sharded_gaussian import ShardedGaussianOracle

        sharded = make_sharded(experiment, config, seed)
        fitted = make_surrogates(experiment, config, sharded, seed)
        n_shards = sharded.n_shards
        probabilities = np.full(n_shards, 1.0 / n_shards)
        seed_local = derive(seed, experiment, point_key({"local_updates": local}))
        schedule = FederatedRounds(tuple(probabilities), local, config["n_chains"]).simulate(
            config["burn_in"] + config["n_iterations"], derive(seed_local, "schedule"))
        batch = config["batch_size"]
        dsgld = ShardScaled(sharded.shard_gradient())
        estimators = {"dsgld": dsgld, "fsgld": Conducive(dsgld, fitted, config["alpha"])}
        oracles = {
            "dsgld": ShardedGaussianOracle.for_model(sharded, batch, config["replacement"]),
            "fsgld": ShardedGaussianOracle.for_model(sharded, batch, config["replacement"],
                                                     surrogates=fitted, alpha=config["alpha"])}
        window = log_checkpoints(config["n_iterations"], config["n_checkpoints"])
        return cls(sharded, fitted, schedule, estimators, oracles, probabilities, window)


def running_window_means(run, burn_in: int, window: np.ndarray) -> np.ndarray:
    """φ̂_T(θ) over the first T updates after the burn-in, ``(T, replicate, chain, d)``."""
    from workbench.systems.distributed.windows import measured_window

    return np.stack([measured_window(run, burn_in, burn_in + k)[0] for k in window])
