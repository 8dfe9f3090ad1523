"""One sweep point of a study on the Gaussian mean: its replicates, and its exact oracle.

The model of seed 001 §5.1 (docs/math.md §7): data x_i ~ N(true_mean, σ_x²), a Gaussian prior, so
the posterior and the stacked-state recursion of stale SGLD/SGHMC are exact. A point is a
resolved configuration (:func:`workbench.studies.grid.resolve`): the system gives the
staleness schedule (constant τ, i.i.d. uniform on {0..τ}, or a simulated asynchronous server,
seed 001 Appendix A), ``n_iterations`` and ``step_size`` the run, ``n_checkpoints`` the
log-spaced sample counts at which φ̂_L is kept.

A point splits into replicate blocks (``run_blocks``, seeded per block by the engine) and a
finishing step over all of them (``finish_point``: masking of diverged replicates, summaries,
the exact oracle); see :mod:`workbench.run.experiment`. The exact oracle holds for any
deterministic staleness sequence, so it judges the realised schedule of every system; the
stationary variance of an asynchronous run treats its realised staleness as i.i.d. draws from
their empirical distribution.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from simulators.seeding import derive, generator
from simulators.static import constant_staleness, iid_staleness
from workbench.core.phi import THETA, THETA_SQUARED
from workbench.engine import jax_replay
from workbench.engine.replay import log_checkpoints, replay
from workbench.engine.replay_setup import block_rows, replicate_blocks
from workbench.models.gaussian import GaussianMeanModel
from workbench.oracles.linear_gaussian import (
    ERROR_SOURCES,
    dynamics_for,
    error_sources,
    estimator_moments,
    finite_moments,
    stationary_variance,
)
from workbench.run import progress
from workbench.run.experiment import point_key
from workbench.samplers import make_sampler
from workbench.stats.diagnostics import diagnose_draws, draws_kept
from workbench.stats.estimators import summarize
from workbench.studies.schema import sampler_name
from workbench.systems.asynchronous.system import make_system

TEST_FUNCTIONS = (THETA, THETA_SQUARED)


def make_model(experiment: str, config: dict, seed) -> GaussianMeanModel:
    """The data set: the same for every sweep point (keyed by experiment, not by point)."""
    return GaussianMeanModel.generate(
        generator(seed, experiment, "data"), config["n_data"], config["dim"],
        config["true_mean"], config["noise_scale"], config["prior_scale"], config["prior_mean"])


def staleness_probabilities(config: dict, schedule=None, n_iterations: int = 0):
    """The staleness distribution of the stationary variance: uniform on {0..τ} for the
    uniform system, the empirical one of an asynchronous run, None (constant τ) otherwise."""
    if config["system"] == "uniform":
        return np.full(config["staleness"] + 1, 1.0 / (config["staleness"] + 1))
    if config["system"] == "asynchronous":
        realised = schedule.update_staleness(n_iterations)[:, 0]
        return np.bincount(realised) / realised.size
    return None


Design = tuple[int, float, np.ndarray]  # (L, h, checkpoints)


def point_design(config: dict, design: Design | None) -> Design:
    """(L, h, checkpoints) of a point: its ``n_iterations`` and ``step_size`` with
    ``n_checkpoints`` log-spaced checkpoints, unless a bound design gives its own."""
    if design is not None:
        return design
    n_iterations = config["n_iterations"]
    return n_iterations, config["step_size"], log_checkpoints(n_iterations,
                                                              config["n_checkpoints"])


def _schedule(experiment: str, config: dict, point: dict, seed, n_iterations: int):
    """The staleness schedule of a point: L updates of its system (module docstring)."""
    seed_point = derive(seed, experiment, point_key(point))
    if config["system"] == "asynchronous":
        system = make_system(config, config["n_workers"])
        return system.simulate(n_iterations, derive(seed_point, "schedule"))
    tau = config["staleness"]
    if config["system"] == "uniform":
        probabilities = np.full(tau + 1, 1.0 / (tau + 1))
        return iid_staleness(n_iterations, probabilities, derive(seed_point, "schedule"))
    return constant_staleness(n_iterations, tau)


def run_point(experiment: str, config: dict, point: dict, seed,
              design: Design | None = None, streams: dict | None = None,
              dims: Sequence[str] | None = None) -> xr.Dataset:
    """All replicate blocks of a point, finished (what the runner does for an unsplit point);
    the bound designs call it with their own ``design``, ``streams`` (see run_blocks) and
    ``dims`` (see finish_point)."""
    blocks = range(len(replicate_blocks(config["n_replicates"], config["replicate_block"])))
    raw = run_blocks(experiment, config, point, seed, blocks, design, streams)
    return finish_point(experiment, config, point, seed, raw, design, dims)


def run_blocks(experiment: str, config: dict, point: dict, seed, blocks: Sequence[int],
               design: Design | None = None, streams: dict | None = None) -> xr.Dataset:
    """Raw results of some replicate blocks: φ̂ per replicate, divergence, thinned draws.

    The engine's random numbers (minibatches, injected noise) are keyed by ``streams``, by
    default the point itself; points given the same ``streams`` share them (common random
    numbers, so differences between them are measured with far less noise).

    Dims ``(test_function, checkpoint, replicate, component)`` for ``estimate`` (diverged
    replicates not yet masked), ``replicate`` for ``diverged_at``; ``draws`` is
    ``(replicate, draw, component)``, ``n_draws`` of them or, if that is 0, the diagnostics'
    own (:func:`workbench.stats.diagnostics.draws_kept`). The ``replicate`` coordinate holds
    global indices.
    """
    seed_point = derive(seed, experiment, point_key(point))
    seed_streams = seed_point if streams is None else derive(seed, experiment, point_key(streams))
    model = make_model(experiment, config, seed)
    n_iterations, h, checkpoints = point_design(config, design)
    schedule = _schedule(experiment, config, point, seed, n_iterations)
    sampler = make_sampler(sampler_name(config), h, config["friction"])
    n_draws = draws_kept(n_iterations, config["n_draws"])
    replicates = block_rows(config["n_replicates"], config["replicate_block"], blocks)
    on_jax = config["backend"] == jax_replay.BACKEND
    run = (jax_replay.replay if on_jax else replay)(
        schedule, sampler, model.minibatch_gradient(),
        n_updates=n_iterations, n_replicates=config["n_replicates"],
        initial_position=np.full(model.dim, config["initial_position"]),
        seed=derive(seed_streams, "engine"), batch_size=config["batch_size"],
        replacement=config["replacement"], test_functions=TEST_FUNCTIONS,
        checkpoints=checkpoints, thin=n_iterations // n_draws,
        replicate_block=config["replicate_block"], blocks=blocks,
        divergence_threshold=config["divergence_threshold"],
        progress=progress.reporter(replicates.size),
    )
    names = [f.name for f in TEST_FUNCTIONS]
    data = {
        "estimate": (("test_function", "checkpoint", "replicate", "component"),
                     np.stack([run.averages[n][:, :, 0, :] for n in names])),
        "diverged_at": ("replicate", run.diverged_at[:, 0]),
        "draws": (("replicate", "draw", "component"), run.draws[:, 0, :n_draws]),
        "draw_iterations": ("draw", run.draw_iterations[:n_draws]),
    }
    raw = xr.Dataset(data, coords={"test_function": names, "replicate": replicates})
    if on_jax:  # which JAX and device computed the numbers
        raw.attrs[jax_replay.DEVICE_ATTR] = jax_replay.device()
    return raw


def finish_point(experiment: str, config: dict, point: dict, seed, raw: xr.Dataset,
                 design: Design | None = None, dims: Sequence[str] | None = None) -> xr.Dataset:
    """The point's Dataset: summaries over all replicates of ``raw``, the exact oracle, and
    (seed design only) the diagnostics of the thinned draws (:mod:`workbench.stats.diagnostics`,
    with the exact score -∇U).

    Every variable that depends on the point gets the point's ``dims`` (by default all its
    keys) as leading size-1 dims, so a sweep's points concatenate along them; a swept value
    (``step_size`` in a sweep over it, say) is a coordinate rather than a variable.
    """
    dims = list(point) if dims is None else list(dims)
    model = make_model(experiment, config, seed)
    n_iterations, h, checkpoints = point_design(config, design)
    schedule = _schedule(experiment, config, point, seed, n_iterations)
    sampler = make_sampler(sampler_name(config), h, config["friction"])
    n_draws = min(config["n_draws"], n_iterations)
    dim = model.dim
    if raw.sizes["replicate"] != config["n_replicates"]:
        raise ValueError(f"raw results hold {raw.sizes['replicate']} replicates, "
                         f"expected {config['n_replicates']}")
    diverged_at = raw["diverged_at"].values
    mu = model.posterior_mean
    s2 = model.posterior_variance
    truth = np.stack([mu, mu**2 + s2])  # φ̄ for θ and θ²
    e0 = config["initial_position"] - mu
    vz = model.gradient_noise_variance(config["batch_size"], config["replacement"])
    cumulants = model.gradient_noise_cumulants(config["batch_size"], config["replacement"])
    dynamics = dynamics_for(sampler.describe())
    realised = schedule.update_staleness(n_iterations)[:, 0]
    exact_moments = finite_moments(dynamics, model.precision, realised, checkpoints)
    fresh_moments = finite_moments(dynamics, model.precision, np.zeros_like(realised), checkpoints)
    exact = estimator_moments(exact_moments, mu, e0, vz, cumulants)
    names = [f.name for f in TEST_FUNCTIONS]
    sources = error_sources(exact_moments, fresh_moments, mu, e0, vz,
                            dict(zip(names, truth, strict=True)), cumulants)
    probabilities = staleness_probabilities(config, schedule, n_iterations)
    stationary = stationary_variance(
        dynamics, model.precision, vz,
        staleness=config["staleness"] if probabilities is None else probabilities.size - 1,
        probabilities=probabilities)

    coords = {
        "test_function": names,
        "checkpoint": np.arange(checkpoints.size),
        "replicate": np.arange(config["n_replicates"]),
        "component": np.arange(dim),
    }
    estimate = xr.DataArray(
        raw["estimate"].values, dims=("test_function", "checkpoint", "replicate", "component"),
        coords=coords, name="estimate")
    # A replicate that diverged is excluded from every estimate (n_valid counts the others);
    # diverged_at below records when it happened.
    estimate = estimate.where(xr.DataArray(diverged_at < 0, dims="replicate"))
    posterior_value = xr.DataArray(
        truth, dims=("test_function", "component"),
        coords={"test_function": names, "component": coords["component"]})
    summary = summarize(estimate, posterior_value, confidence=config["confidence"])
    exact_dims = ("test_function", "checkpoint", "component")

    def stack(source, key):
        return (exact_dims, np.stack([source[n][key] for n in names]))

    data = {name: summary[name] for name in summary.data_vars}
    data.update({
        "estimate": estimate,
        "exact_mean": stack(exact, "mean"),
        "exact_variance": stack(exact, "variance"),
        "exact_bias_by_source": (exact_dims + ("error_source",),
                                 np.stack([sources[n]["bias"] for n in names])),
        "exact_variance_by_source": (exact_dims + ("error_source",),
                                     np.stack([sources[n]["variance"] for n in names])),
        "exact_stationary_variance": (("component",), stationary),
        "iterations": (("checkpoint",), checkpoints),
        "n_iterations": n_iterations,
        "step_size": h,
        "mean_staleness": float(realised.mean()),
        "stable": not bool(np.any(np.isinf(stationary))),  # nan: not computed (too large)
        "diverged_at": (("replicate",), diverged_at),
    })
    if n_draws:
        data["draws"] = (("chain", "draw", "component"), raw["draws"].values)
        data["draw_iterations"] = (("draw",), raw["draw_iterations"].values)
    if design is None:
        diagnostics = diagnose_draws(raw["draws"].values[:, None],  # one server
                                     TEST_FUNCTIONS, model.potential_gradient,
                                     valid=diverged_at < 0)
        data.update({name: diagnostics[name] for name in diagnostics.data_vars})
    coords["error_source"] = list(ERROR_SOURCES)
    dataset = xr.Dataset({k: v for k, v in data.items() if k not in point}, coords=coords)
    if design is None:
        dataset.attrs["diagnostics"] = diagnostics.attrs["diagnostics"]
    dataset["exact_bias"] = dataset["exact_mean"] - posterior_value
    dataset["exact_mse"] = dataset["exact_bias"] ** 2 + dataset["exact_variance"]
    dataset = dataset.expand_dims({d: [point[d]] for d in dims})
    dataset["posterior_value"] = posterior_value
    dataset.attrs.update({f"data_{k}": str(v) for k, v in model.sufficient_statistics().items()})
    dataset.attrs["gradient_noise_variance"] = str(vz.tolist())
    if jax_replay.DEVICE_ATTR in raw.attrs:
        dataset.attrs[jax_replay.DEVICE_ATTR] = raw.attrs[jax_replay.DEVICE_ATTR]
    return dataset
