"""The Gaussian-mean part of ``multi-server``: S servers replayed together, the exact oracle.

Model: d = 1, data x_i ~ N(0, 1), prior N(0, 1), N = ``gaussian_n_data`` points
(:class:`workbench.models.gaussian.GaussianMeanModel`), stale SGLD from θ₀ =
``gaussian_initial_position`` so that the bias of φ̂_L(θ) is visible at the run's L. Each of S
servers has its own P workers and its own schedule (:mod:`..asynchronous.run`), the engine
replays them side by side, and a replicate's estimate pools the servers (seed 001 §3.3).

Exact oracle (docs/math.md §8): for server s with realised staleness sequence τ_l^(s),
:func:`workbench.oracles.linear_gaussian.finite_moments` gives the mean m_s and variance v_s of
its φ̂_L(θ); the servers are independent, so the pooled estimate has mean (1/S) Σ m_s and
variance (1/S²) Σ v_s: the bias is not reduced (Theorem 6) and the variance falls like 1/S
(Theorem 7).

The run keeps about :data:`workbench.stats.diagnostics.DIAGNOSTIC_DRAWS` thinned samples per server
for the convergence diagnostics (:func:`workbench.stats.diagnostics.diagnose`: every
replicate-server pair a chain; they are not stored).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from simulators.seeding import derive, generator
from workbench.core.phi import THETA
from workbench.engine.replay import log_checkpoints, replay
from workbench.models.gaussian import GaussianMeanModel
from workbench.oracles.linear_gaussian import dynamics_for, estimator_moments, finite_moments
from workbench.run.experiment import point_key
from workbench.samplers import make_sampler
from workbench.stats.diagnostics import diagnose_draws, draws_kept
from workbench.stats.estimators import summarize
from workbench.systems.asynchronous.run import schedule_for, schedule_summary


def run_gaussian(experiment: str, config: dict, point: dict, seed) -> xr.Dataset:
    """φ̂_L(θ) pooled over ``point["servers"]`` servers, its summaries and the exact oracle."""
    n_servers, n_workers = point["servers"], config["workers_per_server"]
    n_updates, n_replicates = config["gaussian_iterations"], config["gaussian_replicates"]
    model = GaussianMeanModel.generate(generator(seed, experiment, "gaussian-data"),
                                       config["gaussian_n_data"], 1, 0.0, 1.0, 1.0, 0.0)
    schedule = schedule_for(experiment, config, point, seed, n_workers, n_servers, n_updates)
    sampler = make_sampler("sgld", config["gaussian_step_size"])
    checkpoints = log_checkpoints(n_updates, config["n_checkpoints"])
    batch_size = config["gaussian_batch_size"]
    run = replay(schedule, sampler, model.minibatch_gradient(), n_updates=n_updates,
                 n_replicates=n_replicates, initial_position=config["gaussian_initial_position"],
                 seed=derive(seed, experiment, point_key(point), "engine"),
                 batch_size=batch_size, test_functions=(THETA,), checkpoints=checkpoints,
                 thin=n_updates // draws_kept(n_updates, 0), replicate_block=n_replicates)
    diverged = (run.diverged_at >= 0).any(axis=1)
    diagnostics = diagnose_draws(run.draws, (THETA,), model.potential_gradient,
                                 valid=~diverged).isel(component=0, drop=True)
    pooled = run.averages[THETA.name][:, :, :, 0].mean(axis=2)  # (checkpoint, replicate)
    estimate = xr.DataArray(pooled, dims=("checkpoint", "replicate"),
                            coords={"checkpoint": np.arange(checkpoints.size),
                                    "replicate": np.arange(n_replicates)})
    mu = float(model.posterior_mean[0])
    summary = summarize(estimate, mu, confidence=config["confidence"])

    dynamics = dynamics_for(sampler.describe())
    noise = model.gradient_noise_variance(batch_size, True)
    staleness = schedule.update_staleness(n_updates)
    means, variances = [], []
    for server in range(n_servers):
        moments = finite_moments(dynamics, model.precision, staleness[:, server], checkpoints)
        exact = estimator_moments(moments, mu, config["gaussian_initial_position"] - mu,
                                  noise)["theta"]
        means.append(exact["mean"][:, 0])
        variances.append(exact["variance"][:, 0])
    data = {name: summary[name] for name in ("bias", "bias_se", "bias_lower", "bias_upper",
                                             "variance", "variance_se", "variance_lower",
                                             "variance_upper", "n_valid")}
    data.update({
        "estimate": estimate,
        "exact_bias": ("checkpoint", np.mean(means, axis=0) - mu),
        "exact_variance": ("checkpoint", np.sum(variances, axis=0) / n_servers**2),
        "posterior_mean": ((), mu),
        "diverged": ("replicate", diverged),
        **schedule_summary(schedule, n_updates, checkpoints, n_workers),
        **{name: diagnostics[name].variable for name in diagnostics.data_vars},
    })
    return xr.Dataset(data, coords={"test_function": diagnostics["test_function"].values},
                      attrs=diagnostics.attrs)
