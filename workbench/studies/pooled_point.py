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

The replicates run in seeding blocks of ``replicate_block``, each from its own streams: a point
splits into them (:func:`run_blocks` for some, :func:`finish_point` over all), bit for bit the
unsplit point, and a block's numbers do not depend on the point's replicate count (kept across
the looks of a sequential check). The shipped multi-server study runs one block.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from simulators.seeding import derive, generator
from workbench.core.phi import THETA
from workbench.engine.replay import log_checkpoints, replay
from workbench.engine.replay_setup import block_rows
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


def _setup(experiment: str, config: dict, point: dict, seed):
    """(model, schedule, sampler, checkpoints): the same for every block of the point."""
    model = GaussianMeanModel.generate(
        generator(seed, experiment, DATA_STREAM), config["n_data"], 1, config["true_mean"],
        config["noise_scale"], config["prior_scale"], config["prior_mean"])
    schedule = schedule_for(experiment, config, point, seed, config["n_workers"],
                            config["n_servers"], config["n_iterations"])
    sampler = make_sampler(config["sampler"], config["step_size"], config["friction"])
    return model, schedule, sampler, log_checkpoints(config["n_iterations"],
                                                     config["n_checkpoints"])


def run_blocks(experiment: str, config: dict, point: dict, seed,
               blocks: Sequence[int]) -> xr.Dataset:
    """Raw results of some of the point's replicate seeding blocks (``replicate_block``):
    every server's φ̂_L(θ) ``average`` ``(checkpoint, replicate, server)``, ``diverged_at``
    ``(replicate, server)`` and the thinned ``draws`` ``(replicate, server, draw, component)``,
    the ``replicate`` coordinate holding global indices; each block the engine's streams of
    that block alone, the same bits whichever blocks share the call and whatever the point's
    replicate count."""
    model, schedule, sampler, checkpoints = _setup(experiment, config, point, seed)
    n_updates = config["n_iterations"]
    replicates = block_rows(config["n_replicates"], config["replicate_block"], blocks)
    run = replay(schedule, sampler, model.minibatch_gradient(), n_updates=n_updates,
                 n_replicates=config["n_replicates"],
                 initial_position=config["initial_position"],
                 seed=derive(seed, experiment, point_key(point), "engine"),
                 batch_size=config["batch_size"], replacement=config["replacement"],
                 test_functions=(THETA,), checkpoints=checkpoints,
                 thin=n_updates // draws_kept(n_updates, 0),
                 replicate_block=config["replicate_block"], blocks=blocks,
                 divergence_threshold=config["divergence_threshold"])
    server = ("replicate", "server")
    return xr.Dataset({"average": (("checkpoint",) + server, run.averages[THETA.name][..., 0]),
                       "diverged_at": (server, run.diverged_at),
                       "draws": (server + ("draw", "component"), run.draws)},
                      coords={"replicate": replicates})


def finish_point(experiment: str, config: dict, point: dict, seed, raw: xr.Dataset,
                 dims: tuple[str, ...]) -> xr.Dataset:
    """The point's Dataset from the raw results of all its blocks (:func:`run_blocks`):
    φ̂_L(θ) pooled over the servers, its summaries and the exact oracle (module docstring),
    with the sweep ``dims`` as leading size-1 dims."""
    model, schedule, sampler, checkpoints = _setup(experiment, config, point, seed)
    n_servers, n_workers = config["n_servers"], config["n_workers"]
    n_updates, n_replicates = config["n_iterations"], config["n_replicates"]
    batch_size, replacement = config["batch_size"], config["replacement"]

    def values(name):  # C order, as a replay's (numpy may sum strided arrays in another order)
        return np.ascontiguousarray(raw[name].values)

    diverged = (values("diverged_at") >= 0).any(axis=1)
    diagnostics = diagnose_draws(values("draws"), (THETA,), model.potential_gradient,
                                 valid=~diverged).isel(component=0, drop=True)
    pooled = values("average").mean(axis=2)  # (checkpoint, replicate)
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
