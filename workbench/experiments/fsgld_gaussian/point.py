"""One sweep point of ``fsgld-gaussian``: one number of local updates T, DSGLD and FSGLD on
the same federated schedule, their exact moments, and the bound constants γ_s², ε_s²."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from simulators.federated import FederatedRounds
from simulators.seeding import derive, generator
from workbench import surrogates as surrogate_kinds
from workbench.engine import log_checkpoints
from workbench.experiments.base import point_key
from workbench.experiments.distributed import chen_step_size
from workbench.experiments.distributed.arm import run_arm, with_diagnostics
from workbench.experiments.distributed.data import data_attributes, make_sharded
from workbench.experiments.distributed.windows import measured_window
from workbench.oracles.federated import (
    dsgld_stationary_variance,
    round_stationary,
    shard_round_maps,
)
from workbench.oracles.gradient_noise import epsilon_squared, gamma_squared, theta_grid
from workbench.oracles.sharded_gaussian import ShardedGaussianOracle
from workbench.samplers import SGLD
from workbench.shard_gradients import Conducive, ShardScaled

METHODS = ("dsgld", "fsgld")
SURROGATES = ("analytic", "laplace", "sgld-full", "sgld-diagonal")


def make_surrogates(experiment: str, config: dict, sharded, seed):
    """q_s per shard, computed once before sampling (seed 002 §3.1); the same for every T."""
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
    pairs = []
    for s in range(sharded.n_shards):
        samples = surrogate_kinds.local_sgld_samples(
            sharded.local_likelihood_gradient(s), 0.0,
            chen_step_size(config["surrogate_welling_teh_step_size"]),
            config["surrogate_samples"], config["surrogate_burn_in"], config["surrogate_thin"],
            config["surrogate_batch_size"], derive(seed, experiment, "surrogates", s))
        pairs.append(surrogate_kinds.fit_to_samples(samples, kind.removeprefix("sgld-")))
    return surrogate_kinds.stack(pairs)


@dataclass(frozen=True)
class Federation:
    """What every point with ``local`` local updates shares: data, surrogates, schedule and
    the two estimators. The schedule is keyed by the number of local updates only, so runs at
    other step sizes (the bound grid) replay the same client draws."""

    sharded: object
    fitted: object
    schedule: object
    estimators: dict
    oracles: dict
    probabilities: np.ndarray
    window: np.ndarray  # window lengths T after the burn-in at which φ̂_T is kept

    @classmethod
    def build(cls, experiment: str, config: dict, seed, local: int) -> Federation:
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
    return np.stack([measured_window(run, burn_in, burn_in + k)[0] for k in window])


def run_point(experiment: str, config: dict, point: dict, seed) -> xr.Dataset:
    local = int(point["local_updates"])
    seed_point = derive(seed, experiment, point_key(point))
    federation = Federation.build(experiment, config, seed, local)
    sharded, fitted, after = federation.sharded, federation.fitted, federation.window
    model = sharded.model
    dim = model.dim
    burn_in = config["burn_in"]
    n_updates = burn_in + config["n_iterations"]
    h = chen_step_size(config["welling_teh_step_size"])
    mu = model.posterior_mean
    batch = config["batch_size"]
    equal = len(set(sharded.shard_sizes)) == 1
    per_method = []
    for method in METHODS:
        oracle = federation.oracles[method]
        arm = run_arm(federation.schedule, SGLD(h), federation.estimators[method], oracle,
                      config, derive(seed_point, "engine", method), burn_in=burn_in,
                      n_updates=n_updates, initial=np.full(dim, config["initial_position"]),
                      potential_gradient=model.potential_gradient,
                      extra_checkpoints=burn_in + after)
        running = running_window_means(arm.run, burn_in, after)
        exact_running = np.stack([arm.exact.window(burn_in, burn_in + k)[0] for k in after])
        stationary, closed = _stationary(oracle, federation.probabilities, h, mu, local,
                                         sharded, batch, method,
                                         equal and config["replacement"])
        per_method.append({
            "window_mean": arm.window_mean, "window_second": arm.window_second,
            "exact_window_mean": arm.exact_window_mean,
            "exact_window_second": arm.exact_window_second,
            "running_mean": running, "exact_running_mean": exact_running,
            "samples": arm.samples, "arm": arm,
            "stationary_second_moment": stationary, "closed_form_second_moment": closed,
        })
    return _dataset(config, sharded, fitted, per_method, local, after, h, seed)


def _stationary(oracle, probabilities, h, mu, local, sharded, batch, method, closed_applies):
    """Exact stationary E(θ - μ)² per coordinate, averaged over a round, and math.md §7's
    closed form where its assumptions (equal shards, uniform choice, replacement) hold."""
    dim = sharded.model.dim
    if not oracle.diagonal:
        return np.full(dim, np.nan), np.full(dim, np.nan)
    a, c, q = shard_round_maps(oracle, probabilities, h, mu)
    _, second = round_stationary(a, c, q, probabilities, local)
    if not closed_applies or (method == "fsgld" and oracle.alpha != 1.0):
        return second, np.full(dim, np.nan)
    model = sharded.model
    scale = model.n_data**2 / model.noise_scale**4
    within = scale * sharded.shard_variances.mean(axis=0) / batch
    between = scale * sharded.shard_means.var(axis=0)
    exact_surrogates = method == "fsgld"
    closed = np.array([dsgld_stationary_variance(h, model.precision, within[j], between[j],
                                                 local, exact_surrogates) for j in range(dim)])
    return second, closed


def _dataset(config, sharded, fitted, per_method, local, after, h, seed) -> xr.Dataset:
    model = sharded.model
    dim, n_shards = model.dim, sharded.n_shards
    components = np.arange(dim)
    grid = theta_grid(config["grid_half_width"], config["grid_points"], dim)
    gamma = gamma_squared(sharded.point_scores, n_shards, grid)
    epsilon = epsilon_squared(sharded.point_scores, sharded.shard_sizes, grid, fitted)
    n_samples = per_method[0]["samples"].shape[1]
    posterior_draws = (model.posterior_mean + np.sqrt(model.posterior_variance)
                       * generator(seed, "fsgld-gaussian", "posterior").standard_normal(
                           (n_samples, dim)))

    def stacked(name, dims):
        return (("local_updates", "estimator") + dims,
                np.stack([m[name] for m in per_method])[None])

    pair = ("component", "component2")
    data = {
        "window_mean": stacked("window_mean", ("replicate", "chain", "component")),
        "window_second": stacked("window_second", ("replicate", "chain") + pair),
        "exact_window_mean": stacked("exact_window_mean", ("chain", "component")),
        "exact_window_second": stacked("exact_window_second", ("chain",) + pair),
        "running_mean": stacked("running_mean", ("checkpoint", "replicate", "chain",
                                                 "component")),
        "exact_running_mean": stacked("exact_running_mean", ("checkpoint", "chain",
                                                             "component")),
        "samples": stacked("samples", ("chain", "draw", "component")),
        "stationary_second_moment": stacked("stationary_second_moment", ("component",)),
        "closed_form_second_moment": stacked("closed_form_second_moment", ("component",)),
        "iterations": (("checkpoint",), after),
        "posterior_mean": (("component",), model.posterior_mean),
        "posterior_variance": ((), model.posterior_variance),
        "posterior_samples": (("draw", "component"), posterior_draws),
        "gamma_squared": (("shard",), gamma),
        "epsilon_squared": (("shard",), epsilon),
        "shard_size": (("shard",), np.asarray(sharded.shard_sizes)),
        "shard_mean": (("shard", "component"), sharded.shard_means),
        "surrogate_mean": (("shard", "component"), fitted.means),
        "surrogate_covariance": (("shard",) + pair, fitted.covariances),
        "data": (("point", "component"), model.data),
        "step_size": ((), h),
    }
    coords = {"local_updates": [local], "estimator": list(METHODS), "component": components,
              "component2": components, "checkpoint": np.arange(after.size),
              "shard": np.arange(n_shards)}
    dataset = with_diagnostics(xr.Dataset(data, coords=coords), [m["arm"] for m in per_method],
                               {"local_updates": [local], "estimator": list(METHODS)})
    dataset.attrs.update(data_attributes(sharded))
    return dataset
