"""One protocol run on the Gaussian mean with SGLD, its summaries and its exact oracle.

Model: d = 1, data x_i ~ N(0, 1), prior N(0, 1), N = ``n_data`` points
(:class:`workbench.models.gaussian.GaussianMeanModel`); SGLD with step ``step_size`` from
θ₀ = ``initial_position``. The system is simulated for ``iterations`` updates (downpour: master
versions, i.e. pushes; elastic: local steps of every chain, :mod:`simulators.downpour`,
:mod:`simulators.elastic`), and the engine replays it over ``n_replicates`` replicates.

Test functions φ = θ and φ = θ², estimated by φ̂_L (elastic: the mean over chains of the
chains' φ̂_L, seed 003 Appendix B with equal steps). The run also keeps about
:data:`workbench.stats.diagnostics.DIAGNOSTIC_DRAWS` evenly thinned samples per chain (master
versions for downpour, every chain's positions for elastic) for the convergence diagnostics
of :func:`workbench.stats.diagnostics.diagnose` (every replicate-chain pair a chain, the KSD of a
replicate's pooled chains with the exact score); they are not stored. The exact oracle of
:mod:`workbench.oracles.protocols` for the run's own schedule gives E φ̂_L(θ), Var φ̂_L(θ)
(hence the exact MSE) and E φ̂_L(θ²); the variance of φ̂_L(θ²) needs fourth moments and is NaN.

Seeds: the schedule is keyed by the point; the engine's streams by the experiment only, so
every point of a sweep uses the same noise and minibatches (common random numbers: differences
between points, such as the excess MSE over P = 1, are measured replicate by replicate).
A protocol's messages: a downpour push and its pull are two; an elastic coupling is a state
sent and a reply.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from simulators import validation
from simulators.downpour import DownpourSystem
from simulators.elastic import ElasticSystem
from simulators.schedule import COUPLING, PULL, PUSH, Schedule
from simulators.seeding import derive, generator
from workbench.core.parameters import Parameter
from workbench.core.phi import THETA, THETA_SQUARED
from workbench.core.validators import distinct_positive_ints
from workbench.run.experiment import point_key
from workbench.run.parameters import (
    BATCH_SIZE,
    CONFIDENCE,
    FALSE_FAILURE_RATE,
    INITIAL_POSITION,
    ITERATIONS,
    N_CHECKPOINTS,
    N_DATA,
    N_REPLICATES,
    STEP_SIZE,
)
from workbench.samplers.sgld import SGLD
from workbench.systems.asynchronous.system import SYSTEM_PARAMETERS, make_system

# xarray, the engine, the diagnostics and estimators (scipy.stats, arviz-stats), the model
# and the oracles (numba) are imported by the functions that run a point: the experiments read
# RUN_PARAMETERS, which `workbench show` prints without them (issue 15)
if TYPE_CHECKING:
    import xarray as xr

    from workbench.models.gaussian import GaussianMeanModel

TEST_FUNCTIONS = (THETA, THETA_SQUARED)

RUN_PARAMETERS = (
    *SYSTEM_PARAMETERS,
    N_DATA,
    BATCH_SIZE,
    replace(STEP_SIZE, default=2e-5, help="SGLD step h (Chen convention, docs/math.md §1)"),
    replace(ITERATIONS, help="updates L: master versions (downpour) or local steps of every "
            "chain (elastic)"),
    replace(N_REPLICATES, default=400),
    replace(INITIAL_POSITION, help="θ₀ (0: the data are centred at 0, so the chains start near "
            "the posterior and the staleness effects are not hidden by a transient)"),
    replace(N_CHECKPOINTS, default=8),
    CONFIDENCE,
    FALSE_FAILURE_RATE,
)


def _strength(name, value):
    return validation.probability(name, value)


COUPLING_STRENGTH = Parameter("coupling_strength", 1.0,
                              "elastic coupling α in [0, 1] (seed 003 App. B: 1)", _strength)

#: the communication periods π swept by the downpour and elastic experiments
PERIOD = Parameter("period", [1, 2, 4, 8], "communication periods π: local steps per push "
                   "(downpour) or per coupling (elastic)", distinct_positive_ints)


def gaussian_model(experiment: str, config: dict, seed) -> GaussianMeanModel:
    from workbench.models.gaussian import GaussianMeanModel

    return GaussianMeanModel.generate(generator(seed, experiment, "gaussian-data"),
                                      config["n_data"], 1, 0.0, 1.0, 1.0, 0.0)


def make_protocol(config: dict, protocol: str, n_workers: int, period: int,
                  coupling_strength: float = 1.0) -> DownpourSystem | ElasticSystem:
    """The point's system: downpour or elastic, with the configuration's timing
    (:func:`workbench.systems.asynchronous.system.make_system`)."""
    return make_system({**config, "system": protocol, "period": period,
                        "coupling_strength": coupling_strength}, n_workers)


def message_count(schedule: Schedule, n_updates: int) -> int:
    """Messages exchanged until update ``n_updates`` (module docstring)."""
    if schedule.attrs["protocol"] == "downpour":
        last = np.flatnonzero(schedule.applied)[n_updates - 1]
        kinds = schedule.kind[:last + 2]  # the last push and its pull
        return int(np.count_nonzero((kinds == PUSH) | (kinds == PULL)))
    couplings = (schedule.kind == COUPLING) & (schedule.version_read < n_updates)
    return 2 * int(np.count_nonzero(couplings))


def run_protocol(experiment: str, config: dict, point: dict, seed, protocol: str,
                 n_workers: int, period: int, coupling_strength: float = 1.0,
                 streams: str = "") -> xr.Dataset:
    """φ̂_L per replicate, its summaries and the exact oracle at one sweep point; ``streams``
    prefixes the names of the schedule's and the engine's random streams (the data's are the
    experiment's alone).

    Dims: ``test_function`` (theta, theta_squared), ``checkpoint``, ``replicate``.
    """
    import xarray as xr

    from workbench.engine.protocols import coupling_steps
    from workbench.engine.replay import log_checkpoints, replay
    from workbench.oracles.linear_gaussian import estimator_moments
    from workbench.oracles.protocols import downpour_moments, elastic_moments
    from workbench.stats.diagnostics import diagnose_draws, draws_kept
    from workbench.stats.estimators import summarize

    n_updates, n_replicates = config["iterations"], config["n_replicates"]
    model = gaussian_model(experiment, config, seed)
    system = make_protocol(config, protocol, n_workers, period, coupling_strength)
    schedule = system.simulate(n_updates, derive(seed, experiment, point_key(point),
                                                 f"{streams}schedule"))
    checkpoints = log_checkpoints(n_updates, config["n_checkpoints"])
    h, batch_size, start = config["step_size"], config["batch_size"], config["initial_position"]
    run = replay(schedule, SGLD(h), model.minibatch_gradient(), n_updates=n_updates,
                 n_replicates=n_replicates, initial_position=start,
                 seed=derive(seed, experiment, f"{streams}engine"), batch_size=batch_size,
                 test_functions=TEST_FUNCTIONS, checkpoints=checkpoints,
                 thin=n_updates // draws_kept(n_updates, 0), replicate_block=n_replicates)
    diverged = (run.diverged_at >= 0).any(axis=1)
    diagnostics = diagnose_draws(run.draws, TEST_FUNCTIONS, model.potential_gradient,
                                 valid=~diverged).isel(component=0, drop=True)
    if protocol == "downpour":
        staleness = schedule.update_staleness(n_updates)[:, 0]
        moments = downpour_moments(h, model.precision, period, staleness, checkpoints)
    else:
        moments = elastic_moments(h, model.precision, n_workers, coupling_strength,
                                  coupling_steps(schedule, n_updates), n_updates, checkpoints)
        staleness = np.zeros(1)
    mu = float(model.posterior_mean[0])
    exact = estimator_moments(moments, mu, start - mu,
                              model.gradient_noise_variance(batch_size, True))
    truth = {THETA.name: mu, THETA_SQUARED.name: mu**2 + model.posterior_variance}
    names = [f.name for f in TEST_FUNCTIONS]
    coords = {"test_function": names, "checkpoint": np.arange(checkpoints.size),
              "replicate": np.arange(n_replicates)}
    pooled = np.stack([run.averages[name][..., 0].mean(axis=2) for name in names])
    estimate = xr.DataArray(pooled, dims=("test_function", "checkpoint", "replicate"),
                            coords=coords)
    posterior = xr.DataArray([truth[name] for name in names], dims="test_function",
                             coords={"test_function": names})
    summary = summarize(estimate, posterior, confidence=config["confidence"])
    exact_mean = np.stack([exact[name]["mean"][:, 0] for name in names])
    exact_variance = np.stack([exact[name]["variance"][:, 0] for name in names])
    exact_bias = exact_mean - posterior.values[:, None]
    times = schedule.update_times(n_updates).max(axis=1)
    data = {name: summary[name] for name in ("bias", "bias_se", "mse", "mse_se", "variance",
                                             "variance_se", "n_valid")}
    dims = ("test_function", "checkpoint")
    data.update({
        "estimate": estimate,
        "squared_error": (estimate - posterior) ** 2,
        "posterior_value": posterior,
        "exact_bias": (dims, exact_bias),
        "exact_variance": (dims, exact_variance),
        "exact_mse": (dims, exact_bias**2 + exact_variance),
        "iterations": ("checkpoint", checkpoints),
        "time": ("checkpoint", times[checkpoints - 1]),
        "messages": ("checkpoint", [message_count(schedule, int(c)) for c in checkpoints]),
        "mean_staleness": ((), float(staleness.mean())),
        "max_staleness": ((), int(staleness.max())),
        "diverged": ("replicate", diverged),
        **{name: diagnostics[name].variable for name in diagnostics.data_vars},
    })
    return xr.Dataset(data, coords=coords, attrs=diagnostics.attrs)
