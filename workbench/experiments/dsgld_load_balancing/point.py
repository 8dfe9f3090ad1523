"""One sweep point of ``dsgld-load-balancing``: one slowdown D, with fixed and with adaptive
trajectory lengths, on the same random numbers."""

from __future__ import annotations

import numpy as np
import xarray as xr

from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import GRADIENT
from simulators.seeding import derive
from simulators.traveling_chains import waiting_time
from workbench.gradients.sharded import ShardScaled
from workbench.oracles.sharded_gaussian import ShardedGaussianOracle
from workbench.run.experiment import point_key
from workbench.samplers import SGLD
from workbench.systems.distributed import chen_step_size
from workbench.systems.distributed.arm import run_arm, with_diagnostics
from workbench.systems.distributed.data import data_attributes, make_sharded
from workbench.systems.distributed.traveling import traveling_system

BALANCING = ("fixed", "adaptive")


def plan_lengths(config: dict, slowdown: float) -> tuple[float, int]:
    """τ̄ that gives the slow workers ``slow_trajectory_length`` under balancing, and the
    fixed plan's common length (the same mean, so both make as many updates per round)."""
    n_workers = len(config["shard_sizes"])
    n_slow = config["n_slow_workers"]
    mean = config["slow_trajectory_length"] * ((n_workers - n_slow) * slowdown + n_slow) \
        / n_workers
    return mean, max(1, int(np.floor(mean + 0.5)))


def trajectory_blocks(schedule, n_rounds: int) -> dict[str, np.ndarray]:
    """(chain, worker, begin, end) of each chain's first ``n_rounds`` trajectories, for a
    Gantt chart in the style of seed 004 Figure 1."""
    gradient = schedule.kind == GRADIENT
    blocks = {"chain": [], "worker": [], "begin": [], "end": []}
    for chain in range(schedule.n_servers):
        rows = np.flatnonzero(gradient & (schedule.server == chain))
        workers = schedule.worker[rows]
        starts = np.flatnonzero(np.concatenate(([True], workers[1:] != workers[:-1])))
        ends = np.concatenate((starts[1:], [rows.size])) - 1
        for first, last in list(zip(starts, ends, strict=True))[:n_rounds]:
            blocks["chain"].append(chain)
            blocks["worker"].append(int(workers[first]))
            blocks["begin"].append(float(schedule.start_time[rows[first]]))
            blocks["end"].append(float(schedule.time[rows[last]]))
    return {name: np.asarray(values) for name, values in blocks.items()}


def run_point(experiment: str, config: dict, point: dict, seed) -> xr.Dataset:
    slowdown = float(point["slowdown"])
    sharded = make_sharded(experiment, config, seed)
    model = sharded.model
    n_workers, dim = sharded.n_shards, model.dim
    n_slow = config["n_slow_workers"]
    speeds = (1.0,) * (n_workers - n_slow) + (1.0 / slowdown,) * n_slow
    timing = WorkerTiming(LatencyModel("constant", config["worker_delay"]), speed_factors=speeds)
    mean_length, fixed_length = plan_lengths(config, slowdown)
    burn_in, n_updates = config["burn_in"], config["burn_in"] + config["n_iterations"]
    seed_point = derive(seed, experiment, point_key(point))
    h = chen_step_size(config["welling_teh_step_size"])
    oracle = ShardedGaussianOracle.for_model(sharded, config["batch_size"],
                                             config["replacement"])
    mu, sd = model.posterior_mean, np.sqrt(model.posterior_variance)
    initial = mu + config["initial_offset"] * sd
    thin = config["thin"]
    steps = np.arange(thin, n_updates + 1, thin)
    arms = []
    for balancing in BALANCING:
        options = ({"balancing": "adaptive", "mean_trajectory_length": mean_length}
                   if balancing == "adaptive" else {})
        system = traveling_system(config, [fixed_length] * n_workers, timing=timing,
                                  **options)
        # the same seeds for both arms: common random numbers sharpen the comparison
        schedule = system.simulate(n_updates, derive(seed_point, "schedule"))
        arm = run_arm(schedule, SGLD(h), ShardScaled(sharded.shard_gradient()), oracle, config,
                      derive(seed_point, "engine"), burn_in=burn_in, n_updates=n_updates,
                      initial=initial, potential_gradient=model.potential_gradient,
                      extra_checkpoints=steps)
        draws = arm.run.draws  # (replicate, chain, draw, d) at updates thin, 2 thin, ...
        error = np.sum((draws - mu) ** 2, axis=-1)
        index = np.searchsorted(arm.exact.checkpoints, steps)
        exact_mean, exact_second = arm.exact.mean[index], arm.exact.second[index]
        exact_error = (np.sum((exact_mean - mu) ** 2, axis=-1)
                       + np.trace(exact_second, axis1=-2, axis2=-1)
                       - np.sum(exact_mean**2, axis=-1))
        times = schedule.update_times(n_updates)[steps - 1]
        makespan = schedule.update_times(n_updates)[-1]
        plan = schedule.attrs.get("final_plan", ",".join([str(fixed_length)] * n_workers))
        arms.append({"arm": arm, "error": error, "exact_error": exact_error.T, "time": times.T,
                     "waiting": waiting_time(schedule) / makespan,
                     "plan": np.array(plan.split(","), dtype=np.int64),
                     "gantt": trajectory_blocks(schedule, config["gantt_rounds"])})
    pair = ("component", "component2")

    def stacked(name, dims):
        values = [getattr(a["arm"], name) if hasattr(a["arm"], name) else a[name] for a in arms]
        return (("slowdown", "balancing") + dims, np.stack(values)[None])

    data = {
        "window_mean": stacked("window_mean", ("replicate", "chain", "component")),
        "window_second": stacked("window_second", ("replicate", "chain") + pair),
        "exact_window_mean": stacked("exact_window_mean", ("chain", "component")),
        "exact_window_second": stacked("exact_window_second", ("chain",) + pair),
        "squared_error": stacked("error", ("replicate", "chain", "step")),
        "exact_squared_error": stacked("exact_error", ("chain", "step")),
        "update_time": stacked("time", ("chain", "step")),
        "waiting_fraction": stacked("waiting", ("chain",)),
        "trajectory_plan": stacked("plan", ("shard",)),
        **{f"gantt_{name}": (("slowdown", "balancing", "trajectory"),
                             np.stack([a["gantt"][name] for a in arms])[None])
           for name in ("chain", "worker", "begin", "end")},
        "mean_trajectory_length": (("slowdown",), [mean_length]),
        "posterior_mean": (("component",), mu),
        "posterior_variance": ((), model.posterior_variance),
        "step_size": ((), h),
    }
    coords = {"slowdown": [slowdown], "balancing": list(BALANCING), "component": np.arange(dim),
              "component2": np.arange(dim), "step": steps, "shard": np.arange(n_workers)}
    dataset = with_diagnostics(xr.Dataset(data, coords=coords), [a["arm"] for a in arms],
                               {"slowdown": [slowdown], "balancing": list(BALANCING)})
    dataset.attrs.update(data_attributes(sharded))
    return dataset
