"""One sweep point of ``dsgld-imbalance``: one arm (with or without the N_s/(N q_s) correction)
on the common traveling-chain schedule, with its exact moments.

Besides the run's own step ε, the exact oracle is evaluated at ε/k for each k of the
``step_divisor`` parameter on the same schedule, over a window of the same simulated length
(updates k·burn-in .. k·(burn-in + iterations)): the same Langevin time at every step size, so
that the window moments are a smooth function of ε whose ε → 0 limit the checks extrapolate.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import xarray as xr

from simulators.seeding import derive
from workbench.gradients.sharded import ShardScaled
from workbench.oracles.sharded_gaussian import ShardedGaussianOracle
from workbench.run.experiment import point_key
from workbench.samplers import SGLD
from workbench.systems.distributed import chen_step_size
from workbench.systems.distributed.arm import run_arm, with_diagnostics
from workbench.systems.distributed.data import data_attributes, make_sharded
from workbench.systems.distributed.traveling import traveling_system
from workbench.systems.distributed.windows import exact_moments


def run_point(experiment: str, config: dict, point: dict, seed) -> xr.Dataset:
    correction = point["correction"]
    corrected = correction == "corrected"
    sharded = make_sharded(experiment, config, seed)
    model = sharded.model
    burn_in, n_updates = config["burn_in"], config["burn_in"] + config["n_iterations"]
    divisors = config["step_divisor"]
    # the same schedule for both arms: keyed by the experiment, not by the point; long enough
    # for the smallest step's window (the run replays its first n_updates updates)
    schedule = traveling_system(config, config["trajectory_lengths"]).simulate(
        max(divisors) * n_updates, derive(seed, experiment, "schedule"))
    h = chen_step_size(config["welling_teh_step_size"])
    base = sharded.shard_gradient()
    oracle = ShardedGaussianOracle.for_model(sharded, config["batch_size"],
                                             config["replacement"], correction=corrected)
    initial = np.full(model.dim, config["initial_position"])
    arm = run_arm(schedule, SGLD(h), ShardScaled(base) if corrected else base, oracle, config,
                  derive(seed, experiment, point_key(point), "engine"), burn_in=burn_in,
                  n_updates=n_updates, initial=initial,
                  potential_gradient=model.potential_gradient)
    # the same sampler with exact shard gradients: what is left without minibatch noise
    quiet = dataclasses.replace(oracle, shard_covariances=np.zeros_like(
        oracle.shard_covariances))
    quiet_mean, quiet_second = exact_moments(quiet, schedule, n_updates, h, initial,
                                             [burn_in, n_updates]).window(burn_in, n_updates)
    # the same sampler with smaller steps on the same schedule and the same simulated time
    smaller = [exact_moments(oracle, schedule, k * n_updates, h / k, initial,
                             [k * burn_in, k * n_updates]).window(k * burn_in, k * n_updates)
               for k in divisors]
    local = [sharded.local_posterior(s, model.n_data / size)
             for s, size in enumerate(sharded.shard_sizes)]
    frequencies = schedule.update_column("shard_frequency")
    shards = schedule.update_shards()
    frequency_of = np.zeros(sharded.n_shards)
    frequency_of[shards.ravel()] = frequencies.ravel()
    pair = ("component", "component2")
    data = {
        "window_mean": (("correction", "replicate", "chain", "component"),
                        arm.window_mean[None]),
        "window_second": (("correction", "replicate", "chain") + pair, arm.window_second[None]),
        "exact_window_mean": (("correction", "chain", "component"), arm.exact_window_mean[None]),
        "exact_window_second": (("correction", "chain") + pair, arm.exact_window_second[None]),
        "exact_window_mean_without_minibatch_noise": (("correction", "chain", "component"),
                                                       quiet_mean[None]),
        "exact_window_second_without_minibatch_noise": (("correction", "chain") + pair,
                                                         quiet_second[None]),
        "exact_window_mean_smaller_steps": (("correction", "step_divisor", "chain",
                                             "component"),
                                            np.stack([m for m, _ in smaller])[None]),
        "exact_window_second_smaller_steps": (("correction", "step_divisor", "chain") + pair,
                                              np.stack([q for _, q in smaller])[None]),
        "samples": (("correction", "chain", "draw", "component"), arm.samples[None]),
        "posterior_mean": (("component",), model.posterior_mean),
        "posterior_variance": ((), model.posterior_variance),
        "shard_size": (("shard",), np.asarray(sharded.shard_sizes)),
        "shard_mean": (("shard", "component"), sharded.shard_means),
        "trajectory_length": (("shard",), np.asarray(config["trajectory_lengths"])),
        "shard_frequency": (("shard",), frequency_of),
        "local_posterior_mean": (("shard", "component"), np.stack([m for m, _ in local])),
        "local_posterior_variance": (("shard",), np.array([v for _, v in local])),
        "step_size": ((), h),
    }
    coords = {"correction": [correction], "step_divisor": list(divisors),
              "component": np.arange(model.dim),
              "component2": np.arange(model.dim), "shard": np.arange(sharded.n_shards)}
    dataset = with_diagnostics(xr.Dataset(data, coords=coords), [arm],
                               {"correction": [correction]})
    dataset.attrs.update(data_attributes(sharded))
    return dataset
