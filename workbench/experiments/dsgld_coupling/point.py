"""One sweep point of ``dsgld-coupling``: chains coupled in groups of R (seed 004 §3.2.3)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from simulators.seeding import derive, generator
from workbench.gradients.minibatch import draw_indices
from workbench.gradients.sharded import ShardScaled
from workbench.oracles.gradient_noise import coupled_gradient_noise
from workbench.oracles.sharded_gaussian import ShardedGaussianOracle
from workbench.run.experiment import point_key
from workbench.samplers.coupled import CoupledSGLD
from workbench.systems.distributed import chen_step_size
from workbench.systems.distributed.arm import run_arm, with_diagnostics
from workbench.systems.distributed.data import data_attributes, make_sharded
from workbench.systems.distributed.traveling import traveling_system


def group_sizes(n_chains: int, group_size: int) -> list[int]:
    """Groups of R consecutive chains, the remainder in one smaller group (hybrid)."""
    group_size = min(group_size, n_chains)
    sizes = [group_size] * (n_chains // group_size)
    return sizes + ([n_chains % group_size] if n_chains % group_size else [])


def gradient_errors(estimator, sharded, group_size: int, config: dict, seed,
                    block: int = 500):
    """‖ĝ_R - ∇U(θ)‖² and its minibatch part at θ = μ, for groups on uniformly random sets of
    R distinct shards (the law of a group's shards under random-permutation rounds), drawn in
    blocks of ``block`` groups to bound memory."""
    rng = generator(seed)
    draws = config["gradient_draws"]
    parts = [_gradient_block(estimator, sharded, group_size, config, rng,
                             min(block, draws - start)) for start in range(0, draws, block)]
    return tuple(np.concatenate(values) for values in zip(*parts, strict=True))


def _gradient_block(estimator, sharded, group_size, config, rng, draws):
    n_shards, batch = sharded.n_shards, config["batch_size"]
    shards = np.argsort(rng.random((draws, n_shards)), axis=1)[:, :group_size]
    frequency = np.full(shards.shape, 1.0 / n_shards)
    sizes = np.asarray(sharded.shard_sizes)[shards]
    indices = draw_indices(rng, sizes, batch, shards.shape, config["replacement"])
    minibatches = estimator.prepare(indices[None], shards[None], frequency[None])[0]
    theta = np.broadcast_to(sharded.model.posterior_mean, shards.shape + (sharded.model.dim,))
    estimate = estimator(theta, minibatches).mean(axis=1)
    full = sharded.model.potential_gradient(sharded.model.posterior_mean)
    conditional = estimator(theta, minibatches._replace(
        batch=sharded.shard_means[shards])).mean(axis=1)
    return (np.sum((estimate - full) ** 2, axis=-1),
            np.sum((estimate - conditional) ** 2, axis=-1))


def run_point(experiment: str, config: dict, point: dict, seed) -> xr.Dataset:
    group_size = int(point["group_size"])
    sharded = make_sharded(experiment, config, seed)
    model = sharded.model
    n_chains, dim = sharded.n_shards, model.dim
    groups = group_sizes(n_chains, group_size)
    burn_in, n_updates = config["burn_in"], config["burn_in"] + config["n_iterations"]
    seed_point = derive(seed, experiment, point_key(point))
    schedule = traveling_system(config, [config["trajectory_length"]] * n_chains,
                                coupling_groups=tuple(groups),
                                coupling_time=config["coupling_time"]).simulate(
        n_updates, derive(seed_point, "schedule"))
    h = chen_step_size(config["welling_teh_step_size"])
    oracle = ShardedGaussianOracle.for_model(sharded, config["batch_size"],
                                             config["replacement"])
    estimator = ShardScaled(sharded.shard_gradient())
    sampler = CoupledSGLD(h, groups, noise_correction=config["noise_correction"])
    arm = run_arm(schedule, sampler, estimator, oracle, config, derive(seed_point, "engine"),
                  burn_in=burn_in, n_updates=n_updates,
                  initial=np.full(dim, config["initial_position"]),
                  potential_gradient=model.potential_gradient, groups=groups)
    total, minibatch = gradient_errors(estimator, sharded, group_size, config,
                                       derive(seed_point, "gradient-draws"))
    scores = [sharded.point_scores(model.posterior_mean, s) for s in range(sharded.n_shards)]
    exact = coupled_gradient_noise(scores, config["batch_size"], group_size,
                                   replacement=config["replacement"])
    first = np.zeros(n_chains, dtype=bool)
    first[np.cumsum([0] + groups[:-1])] = True
    pair = ("component", "component2")
    data = {
        "window_mean": (("group_size", "replicate", "chain", "component"),
                        arm.window_mean[None]),
        "window_second": (("group_size", "replicate", "chain") + pair, arm.window_second[None]),
        "exact_window_mean": (("group_size", "chain", "component"), arm.exact_window_mean[None]),
        "exact_window_second": (("group_size", "chain") + pair, arm.exact_window_second[None]),
        "samples": (("group_size", "chain", "draw", "component"), arm.samples[None]),
        "first_member": (("group_size", "chain"), first[None]),
        "n_groups": (("group_size",), [len(groups)]),
        "gradient_error": (("group_size", "gradient_draw"), total[None]),
        "gradient_minibatch_error": (("group_size", "gradient_draw"), minibatch[None]),
        "exact_gradient_error": (("group_size",), [exact["total"]]),
        "exact_gradient_minibatch_error": (("group_size",), [exact["minibatch"]]),
        "time_per_update": (("group_size",), [float(schedule.update_times(n_updates)[-1].mean()
                                                    / n_updates)]),
        "posterior_mean": (("component",), model.posterior_mean),
        "posterior_variance": ((), model.posterior_variance),
        "step_size": ((), h),
    }
    coords = {"group_size": [group_size], "component": np.arange(dim),
              "component2": np.arange(dim), "chain": np.arange(n_chains)}
    dataset = with_diagnostics(xr.Dataset(data, coords=coords), [arm],
                               {"group_size": [group_size]})
    dataset.attrs.update(data_attributes(sharded))
    return dataset
