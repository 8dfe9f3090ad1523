"""One sweep point of ``stale-gaussian``: one staleness τ, its replicates, and its oracle.

A point splits into replicate blocks (``run_blocks``, seeded per block by the engine) and a
finishing step over all of them (``finish_point``: masking of diverged replicates, summaries,
the exact oracle); see :mod:`workbench.experiments.base`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from simulators.seeding import derive, generator
from simulators.static import constant_staleness, iid_staleness
from workbench import progress
from workbench.diagnostics import diagnose, draws_kept
from workbench.engine import log_checkpoints, replay, replicate_blocks
from workbench.estimators import summarize
from workbench.experiments.base import point_key
from workbench.models.gaussian import GaussianMeanModel
from workbench.oracles.linear_gaussian import (
    ERROR_SOURCES,
    dynamics_for,
    error_sources,
    estimator_moments,
    finite_moments,
    stationary_variance,
)
from workbench.samplers import make_sampler
from workbench.test_functions import THETA, THETA_SQUARED

TEST_FUNCTIONS = (THETA, THETA_SQUARED)


def make_model(experiment: str, config: dict, seed) -> GaussianMeanModel:
    """The data set: the same for every sweep point (keyed by experiment, not by point)."""
    return GaussianMeanModel.generate(
        generator(seed, experiment, "data"), config["n_data"], config["dim"],
        config["true_mean"], config["noise_scale"], config["prior_scale"], config["prior_mean"])


def step_size(config: dict, staleness: int) -> tuple[int, float]:
    """L = L0·τ and h = C τ^(-2/3) L^(-1/3) (seed 001 §5.1)."""
    n_iterations = config["base_iterations"] * staleness
    h = config["step_size_constant"] * staleness ** (-2 / 3) * n_iterations ** (-1 / 3)
    return n_iterations, h


def staleness_probabilities(config: dict, staleness: int) -> np.ndarray | None:
    if config["schedule"] == "uniform":
        return np.full(staleness + 1, 1.0 / (staleness + 1))
    return None


Design = tuple[int, float, np.ndarray]  # (L, h, checkpoints)


def point_design(config: dict, point: dict, design: Design | None) -> Design:
    """(L, h, checkpoints) of a point: the seed's L = L0·τ, h = C τ^(-2/3) L^(-1/3) with
    log-spaced checkpoints, unless a bound design (:mod:`.bound_design`) gives its own."""
    if design is not None:
        return design
    n_iterations, h = step_size(config, int(point["staleness"]))
    return n_iterations, h, log_checkpoints(n_iterations, config["n_checkpoints"])


def _schedule(experiment: str, config: dict, point: dict, seed, n_iterations: int):
    """The staleness schedule of a point: L updates, constant or i.i.d. uniform."""
    tau = int(point["staleness"])
    probabilities = staleness_probabilities(config, tau)
    if probabilities is None:
        return constant_staleness(n_iterations, tau)
    seed_point = derive(seed, experiment, point_key(point))
    return iid_staleness(n_iterations, probabilities, derive(seed_point, "schedule"))


def run_point(experiment: str, config: dict, point: dict, seed,
              design: Design | None = None, streams: dict | None = None) -> xr.Dataset:
    """All replicate blocks of a point, finished (what the runner does for an unsplit point);
    the bound designs call it with their own ``design`` and ``streams`` (see run_blocks)."""
    blocks = range(len(replicate_blocks(config["n_replicates"], config["replicate_block"])))
    raw = run_blocks(experiment, config, point, seed, blocks, design, streams)
    return finish_point(experiment, config, point, seed, raw, design)


def run_blocks(experiment: str, config: dict, point: dict, seed, blocks: Sequence[int],
               design: Design | None = None, streams: dict | None = None) -> xr.Dataset:
    """Raw results of some replicate blocks: φ̂ per replicate, divergence, thinned draws.

    The engine's random numbers (minibatches, injected noise) are keyed by ``streams``, by
    default the point itself; points given the same ``streams`` share them (common random
    numbers, so differences between them are measured with far less noise).

    Dims ``(test_function, checkpoint, replicate, component)`` for ``estimate`` (diverged
    replicates not yet masked), ``replicate`` for ``diverged_at``; ``draws`` is
    ``(replicate, draw, component)``, ``n_draws`` of them or, if that is 0, the diagnostics'
    own (:func:`workbench.diagnostics.draws_kept`). The ``replicate`` coordinate holds
    global indices.
    """
    seed_point = derive(seed, experiment, point_key(point))
    seed_streams = seed_point if streams is None else derive(seed, experiment, point_key(streams))
    model = make_model(experiment, config, seed)
    n_iterations, h, checkpoints = point_design(config, point, design)
    schedule = _schedule(experiment, config, point, seed, n_iterations)
    sampler = make_sampler(config["sampler"], h, config["friction"])
    n_draws = draws_kept(n_iterations, config["n_draws"])
    ranges = replicate_blocks(config["n_replicates"], config["replicate_block"])
    replicates = np.concatenate([np.arange(ranges[b].start, ranges[b].stop) for b in blocks])
    run = replay(
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
    return xr.Dataset(data, coords={"test_function": names, "replicate": replicates})


def finish_point(experiment: str, config: dict, point: dict, seed, raw: xr.Dataset,
                 design: Design | None = None) -> xr.Dataset:
    """The point's Dataset: summaries over all replicates of ``raw``, the exact oracle, and
    (seed design only) the diagnostics of the thinned draws (:mod:`workbench.diagnostics`,
    with the exact score -∇U)."""
    tau = int(point["staleness"])
    model = make_model(experiment, config, seed)
    n_iterations, h, checkpoints = point_design(config, point, design)
    probabilities = staleness_probabilities(config, tau)
    schedule = _schedule(experiment, config, point, seed, n_iterations)
    sampler = make_sampler(config["sampler"], h, config["friction"])
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
    stationary = stationary_variance(dynamics, model.precision, vz, staleness=tau,
                                     probabilities=probabilities)

    coords = {
        "staleness": [tau],
        "test_function": names,
        "checkpoint": np.arange(checkpoints.size),
        "replicate": np.arange(config["n_replicates"]),
        "component": np.arange(dim),
    }
    estimate = xr.DataArray(
        raw["estimate"].values[None],
        dims=("staleness", "test_function", "checkpoint", "replicate", "component"),
        coords=coords, name="estimate")
    coords["error_source"] = list(ERROR_SOURCES)
    # A replicate that diverged is excluded from every estimate (n_valid counts the others);
    # diverged_at below records when it happened.
    estimate = estimate.where(xr.DataArray(diverged_at < 0, dims="replicate"))
    posterior_value = xr.DataArray(
        truth, dims=("test_function", "component"),
        coords={"test_function": names, "component": coords["component"]})
    summary = summarize(estimate, posterior_value, confidence=config["confidence"])
    exact_dims = ("staleness", "test_function", "checkpoint", "component")

    def stack(source, key):
        return (exact_dims, np.stack([source[n][key] for n in names])[None])

    data = {name: summary[name] for name in summary.data_vars}
    data.update({
        "estimate": estimate,
        "posterior_value": posterior_value,
        "exact_mean": stack(exact, "mean"),
        "exact_variance": stack(exact, "variance"),
        "exact_bias_by_source": (exact_dims + ("error_source",),
                                 np.stack([sources[n]["bias"] for n in names])[None]),
        "exact_variance_by_source": (exact_dims + ("error_source",),
                                     np.stack([sources[n]["variance"] for n in names])[None]),
        "exact_stationary_variance": (("staleness", "component"), stationary[None]),
        "iterations": (("staleness", "checkpoint"), checkpoints[None]),
        "n_iterations": ("staleness", [n_iterations]),
        "step_size": ("staleness", [h]),
        "mean_staleness": ("staleness", [float(realised.mean())]),
        "stable": ("staleness", [bool(np.all(np.isfinite(stationary)))]),
        "diverged_at": (("staleness", "replicate"), diverged_at[None]),
    })
    if n_draws:
        data["draws"] = (("staleness", "chain", "draw", "component"),
                         raw["draws"].values[None])
        data["draw_iterations"] = (("staleness", "draw"), raw["draw_iterations"].values[None])
    if design is None:
        draws = raw["draws"].values[:, None]  # one server
        with np.errstate(over="ignore", invalid="ignore"):  # diverged chains: left out
            values = {f.name: f(draws) for f in TEST_FUNCTIONS}
        diagnostics = diagnose(draws, values,
                               lambda theta: -model.potential_gradient(theta),
                               valid=diverged_at < 0)
        data.update({name: diagnostics[name].expand_dims(staleness=[tau])
                     for name in diagnostics.data_vars})
    dataset = xr.Dataset(data, coords=coords)
    if design is None:
        dataset.attrs["diagnostics"] = diagnostics.attrs["diagnostics"]
    dataset["exact_bias"] = dataset["exact_mean"] - dataset["posterior_value"]
    dataset["exact_mse"] = dataset["exact_bias"] ** 2 + dataset["exact_variance"]
    dataset.attrs.update({f"data_{k}": str(v) for k, v in model.sufficient_statistics().items()})
    dataset.attrs["gradient_noise_variance"] = str(vz.tolist())
    return dataset
