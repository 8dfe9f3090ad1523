"""One sweep point of a study on the Gaussian mean with S servers pooled: seed 001 §3.3.

A Gaussian-mean study on the asynchronous system that names ``n_servers`` (written, swept or
an expression) runs S independent servers, each with its own ``n_workers`` workers and its own
schedule (:func:`workbench.systems.asynchronous.run.schedule_for`); the engine replays them side
by side, and a replicate's estimate φ̂_L(θ) averages its S servers' running averages: the
samples are pooled at test time (Chen, Ding, Carin et al. 2016, "Stochastic gradient MCMC with
stale gradients", §3.3, Figure 4).

Model: d = 1, data x_i ~ N(true_mean, σ_x²), prior N(prior_mean, σ₀²), N = ``n_data`` points
(:class:`workbench.models.gaussian.GaussianMeanModel`), so the bias of φ̂_L(θ) from θ₀ =
``initial_position`` is exact. Exact oracle (docs/math.md §8): for server s with realised
staleness sequence τ_l^(s), :func:`workbench.oracles.linear_gaussian.finite_moments` gives the
mean m_s and variance v_s of its φ̂_L(θ); the servers are independent, so the pooled estimate
has mean (1/S) Σ m_s and variance (1/S²) Σ v_s: the bias is not reduced (Theorem 6) and the
variance falls like 1/S (Theorem 7). :mod:`.pooled_judgements` judges against them.

The point keeps θ alone (no component dim): ``estimate`` ``(checkpoint, replicate)``, its
summaries over replicates, ``exact_bias`` and ``exact_variance`` per checkpoint, the schedule's
coordinates, and the convergence diagnostics of about
:data:`workbench.stats.diagnostics.DIAGNOSTIC_DRAWS` thinned draws per server (every
replicate-server pair a chain; the draws are not stored). A replicate with a diverged server is
marked and left out of the summaries.
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
from workbench.systems.asynchronous.run import at_point, schedule_for, schedule_summary

#: the key of the point's data stream under the study and the seed (the same at every point)
DATA_STREAM = "gaussian-data"
#: the summaries over replicates a pooled point keeps
SUMMARIES = ("bias", "bias_se", "bias_lower", "bias_upper", "variance", "variance_se",
             "variance_lower", "variance_upper", "n_valid")


def run_point(experiment: str, config: dict, point: dict, seed,
              dims: tuple[str, ...]) -> xr.Dataset:
    """φ̂_L(θ) pooled over ``n_servers`` servers, its summaries and the exact oracle (module
    docstring); ``point`` keys the schedule and the engine's streams, ``dims`` are the sweep
    dims the point's Dataset takes."""
    n_servers, n_workers = config["n_servers"], config["n_workers"]
    n_updates, n_replicates = config["n_iterations"], config["n_replicates"]
    model = GaussianMeanModel.generate(
        generator(seed, experiment, DATA_STREAM), config["n_data"], 1, config["true_mean"],
        config["noise_scale"], config["prior_scale"], config["prior_mean"])
    schedule = schedule_for(experiment, config, point, seed, n_workers, n_servers, n_updates)
    sampler = make_sampler(config["sampler"], config["step_size"], config["friction"])
    checkpoints = log_checkpoints(n_updates, config["n_checkpoints"])
    batch_size, replacement = config["batch_size"], config["replacement"]
    run = replay(schedule, sampler, model.minibatch_gradient(), n_updates=n_updates,
                 n_replicates=n_replicates, initial_position=config["initial_position"],
                 seed=derive(seed, experiment, point_key(point), "engine"),
                 batch_size=batch_size, replacement=replacement, test_functions=(THETA,),
                 checkpoints=checkpoints, thin=n_updates // draws_kept(n_updates, 0),
                 replicate_block=n_replicates,
                 divergence_threshold=config["divergence_threshold"])
    diverged = (run.diverged_at >= 0).any(axis=1)
    diagnostics = diagnose_draws(run.draws, (THETA,), model.potential_gradient,
                                 valid=~diverged).isel(component=0, drop=True)
    pooled = run.averages[THETA.name][:, :, :, 0].mean(axis=2)  # (checkpoint, replicate)
    estimate = xr.DataArray(pooled, dims=("checkpoint", "replicate"),
                            coords={"checkpoint": np.arange(checkpoints.size),
                                    "replicate": np.arange(n_replicates)})
    mu = float(model.posterior_mean[0])
    summary = summarize(estimate.where(xr.DataArray(~diverged, dims="replicate")), mu,
                        confidence=config["confidence"])

    dynamics = dynamics_for(sampler.describe())
    noise = model.gradient_noise_variance(batch_size, replacement)
    staleness = schedule.update_staleness(n_updates)
    means, variances = [], []
    for server in range(n_servers):
        moments = finite_moments(dynamics, model.precision, staleness[:, server], checkpoints)
        exact = estimator_moments(moments, mu, config["initial_position"] - mu, noise)["theta"]
        means.append(exact["mean"][:, 0])
        variances.append(exact["variance"][:, 0])
    data = {name: summary[name] for name in SUMMARIES}
    data.update({
        "estimate": estimate,
        "exact_bias": ("checkpoint", np.mean(means, axis=0) - mu),
        "exact_variance": ("checkpoint", np.sum(variances, axis=0) / n_servers**2),
        "posterior_mean": ((), mu),
        "diverged": ("replicate", diverged),
        **schedule_summary(schedule, n_updates, checkpoints, n_workers),
        **{name: diagnostics[name].variable for name in diagnostics.data_vars},
    })
    dataset = xr.Dataset(data, coords={"test_function": diagnostics["test_function"].values},
                         attrs=diagnostics.attrs)
    return at_point(dataset, point, dims)
