"""One sweep point of ``dsgld-trajectory``: one trajectory length for every worker."""

from __future__ import annotations

import numpy as np
import xarray as xr

from simulators.seeding import derive
from workbench.experiments.base import point_key
from workbench.experiments.distributed import chen_step_size
from workbench.experiments.distributed.arm import run_arm, with_diagnostics
from workbench.experiments.distributed.data import data_attributes, make_sharded
from workbench.experiments.distributed.references import (
    REFERENCES,
    local_components,
    references,
)
from workbench.experiments.distributed.traveling import traveling_system
from workbench.oracles.sharded_gaussian import ShardedGaussianOracle
from workbench.samplers import SGLD
from workbench.shard_gradients import ShardScaled


def run_point(experiment: str, config: dict, point: dict, seed) -> xr.Dataset:
    length = int(point["trajectory_length"])
    sharded = make_sharded(experiment, config, seed)
    model = sharded.model
    n_shards, dim = sharded.n_shards, model.dim
    burn_in, n_updates = config["burn_in"], config["burn_in"] + config["n_iterations"]
    seed_point = derive(seed, experiment, point_key(point))
    schedule = traveling_system(config, [length] * n_shards).simulate(
        n_updates, derive(seed_point, "schedule"))
    h = chen_step_size(config["welling_teh_step_size"])
    oracle = ShardedGaussianOracle.for_model(sharded, config["batch_size"],
                                             config["replacement"])
    arm = run_arm(schedule, SGLD(h), ShardScaled(sharded.shard_gradient()), oracle, config,
                  derive(seed_point, "engine"), burn_in=burn_in, n_updates=n_updates,
                  initial=np.full(dim, config["initial_position"]),
                  potential_gradient=model.potential_gradient)
    frequencies = np.full(n_shards, 1.0 / n_shards)
    refs = references(sharded, oracle, frequencies, h, config["batch_size"])
    component_means, component_covariances = local_components(oracle, frequencies, h)
    pair = ("component", "component2")
    data = {
        "window_mean": (("trajectory_length", "replicate", "chain", "component"),
                        arm.window_mean[None]),
        "window_second": (("trajectory_length", "replicate", "chain") + pair,
                          arm.window_second[None]),
        "exact_window_mean": (("trajectory_length", "chain", "component"),
                              arm.exact_window_mean[None]),
        "exact_window_second": (("trajectory_length", "chain") + pair,
                                arm.exact_window_second[None]),
        "samples": (("trajectory_length", "chain", "draw", "component"), arm.samples[None]),
        "reference_mean": (("reference", "component"), np.stack([refs[r][0]
                                                                  for r in REFERENCES])),
        "reference_covariance": (("reference",) + pair, np.stack([refs[r][1]
                                                                   for r in REFERENCES])),
        "local_mean": (("shard", "component"), component_means),
        "local_covariance": (("shard",) + pair, component_covariances),
        "posterior_mean": (("component",), model.posterior_mean),
        "posterior_variance": ((), model.posterior_variance),
        "step_size": ((), h),
    }
    coords = {"trajectory_length": [length], "component": np.arange(dim),
              "component2": np.arange(dim), "reference": list(REFERENCES),
              "shard": np.arange(n_shards)}
    dataset = with_diagnostics(xr.Dataset(data, coords=coords), [arm],
                               {"trajectory_length": [length]})
    dataset.attrs.update(data_attributes(sharded))
    return dataset
