"""One protocol run on the Gaussian mean with SGLD, in replicate blocks: its summaries and its
exact oracle.

Model: d = 1, data x_i ~ N(0, 1), prior N(0, 1), N = ``n_data`` points
(:class:`workbench.models.gaussian.GaussianMeanModel`); SGLD with step ``step_size`` from
θ₀ = ``initial_position``. The system is simulated for ``n_iterations`` updates (downpour:
master versions, i.e. pushes; elastic: local steps of every chain, :mod:`simulators.downpour`,
:mod:`simulators.elastic`), and the engine replays it over ``n_replicates`` replicates, in
seeding blocks of ``replicate_block`` (:func:`run_blocks` for some blocks, :func:`finish_point`
over all of them: bit for bit the same point however it is split).

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

from collections.abc import Sequence
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
from workbench.samplers.sgld import SGLD
from workbench.systems.asynchronous.system import make_system

# xarray, the engine, the diagnostics and estimators (scipy.stats, arviz-stats), the model
# and the oracles (numba) are imported by the functions that run a point: the study schema
# reads this module's parameters without them (issue 15)
if TYPE_CHECKING:
    import xarray as xr

    from workbench.models.gaussian import GaussianMeanModel

TEST_FUNCTIONS = (THETA, THETA_SQUARED)


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


def _setup(experiment: str, config: dict, point: dict, seed, streams: str):
    """(model, schedule, checkpoints): the same for every block of the point."""
    from workbench.engine.replay import log_checkpoints

    model = gaussian_model(experiment, config, seed)
    system = make_protocol(config, config["system"], config["n_workers"], config["period"],
                           config.get("coupling_strength", COUPLING_STRENGTH.default))
    n_updates = config["n_iterations"]
    schedule = system.simulate(n_updates, derive(seed, experiment, point_key(point),
                                                 f"{streams}schedule"))
    return model, schedule, log_checkpoints(n_updates, config["n_checkpoints"])


def run_blocks(experiment: str, config: dict, point: dict, seed, blocks: Sequence[int],
               streams: str = "") -> xr.Dataset:
    """Raw results of some of the point's replicate seeding blocks (``replicate_block``):
    every chain's φ̂_L ``average`` ``(test_function, checkpoint, replicate, server)`` (one
    server for downpour's master, P for elastic's chains), ``diverged_at``
    ``(replicate, server)`` and the thinned ``draws`` ``(replicate, server, draw,
    component)``, the ``replicate`` coordinate holding global indices. ``config``: the
    point's, its ``system`` the protocol and ``iterations`` its updates; ``streams`` prefixes
    the names of the schedule's and the engine's random streams (the data's are the
    experiment's alone). Each block draws from its own streams (:mod:`workbench.engine.replay`),
    so a block is the same bits whichever blocks share the call and whatever the point's
    replicate count."""
    import xarray as xr

    from workbench.engine.replay import replay
    from workbench.engine.replay_setup import block_rows
    from workbench.run import progress
    from workbench.stats.diagnostics import draws_kept

    model, schedule, checkpoints = _setup(experiment, config, point, seed, streams)
    n_updates = config["n_iterations"]
    replicates = block_rows(config["n_replicates"], config["replicate_block"], blocks)
    run = replay(schedule, SGLD(config["step_size"]), model.minibatch_gradient(),
                 n_updates=n_updates, n_replicates=config["n_replicates"],
                 initial_position=config["initial_position"],
                 seed=derive(seed, experiment, f"{streams}engine"),
                 batch_size=config["batch_size"], test_functions=TEST_FUNCTIONS,
                 checkpoints=checkpoints, thin=n_updates // draws_kept(n_updates, 0),
                 replicate_block=config["replicate_block"], blocks=blocks,
                 progress=progress.reporter(replicates.size))
    names = [f.name for f in TEST_FUNCTIONS]
    chains = ("replicate", "server")
    average = np.stack([run.averages[name][..., 0] for name in names])
    return xr.Dataset({"average": (("test_function", "checkpoint") + chains, average),
                       "diverged_at": (chains, run.diverged_at),
                       "draws": (chains + ("draw", "component"), run.draws)},
                      coords={"test_function": names, "replicate": replicates})


def finish_point(experiment: str, config: dict, point: dict, seed, raw: xr.Dataset,
                 streams: str = "") -> xr.Dataset:
    """φ̂_L per replicate (elastic: the mean over its chains), its summaries and the exact
    oracle of the point's schedule, from the raw results of all its blocks
    (:func:`run_blocks`, whose arguments these are).

    Dims: ``test_function`` (theta, theta_squared), ``checkpoint``, ``replicate``.
    """
    import xarray as xr

    from workbench.engine.protocols import coupling_steps
    from workbench.oracles.linear_gaussian import estimator_moments
    from workbench.oracles.protocols import downpour_moments, elastic_moments
    from workbench.stats.diagnostics import diagnose_draws
    from workbench.stats.estimators import summarize

    model, schedule, checkpoints = _setup(experiment, config, point, seed, streams)
    n_updates, n_replicates = config["n_iterations"], config["n_replicates"]
    h, batch_size, start = config["step_size"], config["batch_size"], config["initial_position"]

    def values(name):  # C order, as a replay's (numpy may sum strided arrays in another order)
        return np.ascontiguousarray(raw[name].values)

    diverged = (values("diverged_at") >= 0).any(axis=1)
    diagnostics = diagnose_draws(values("draws"), TEST_FUNCTIONS, model.potential_gradient,
                                 valid=~diverged).isel(component=0, drop=True)
    if config["system"] == "downpour":
        staleness = schedule.update_staleness(n_updates)[:, 0]
        moments = downpour_moments(h, model.precision, config["period"], staleness,
                                   checkpoints)
    else:
        moments = elastic_moments(h, model.precision, config["n_workers"],
                                  config.get("coupling_strength", COUPLING_STRENGTH.default),
                                  coupling_steps(schedule, n_updates), n_updates, checkpoints)
        staleness = np.zeros(1)
    mu = float(model.posterior_mean[0])
    exact = estimator_moments(moments, mu, start - mu,
                              model.gradient_noise_variance(batch_size, True))
    truth = {THETA.name: mu, THETA_SQUARED.name: mu**2 + model.posterior_variance}
    names = [f.name for f in TEST_FUNCTIONS]
    coords = {"test_function": names, "checkpoint": np.arange(checkpoints.size),
              "replicate": np.arange(n_replicates)}
    average = values("average")
    pooled = np.stack([average[i].mean(axis=2) for i in range(len(names))])
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
