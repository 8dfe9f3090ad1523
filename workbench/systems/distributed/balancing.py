"""Slow workers and load balancing on traveling chains (seed 004 §3.2.2, Figures 1 and 7).

The last ``n_slow_workers`` workers take ``slowdown`` D times longer per update. Without
balancing every worker runs the same trajectory length and a fast worker's chain waits for
the slow ones at the end of every round (block-by-the-slowest). With adaptive balancing the
master measures the response delays and sets τ_s = q_s τ̄ S with q_s ∝ 1/d_s
(:mod:`simulators.load_balancing`), so that every visit takes about as long. Seed 004 gives the
slow workers trajectories of 10 and the fast ones 10·D: the plan's mean τ̄ follows from the
slow workers' length (:func:`plan_lengths`), and the fixed plan runs round(τ̄) on every worker,
so that both plans make as many updates per round.
"""

from __future__ import annotations

import numpy as np

from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import GRADIENT


def worker_timing(config: dict) -> WorkerTiming:
    """Constant response delays, the last ``n_slow_workers`` workers ``slowdown`` times
    slower."""
    n_workers, n_slow = len(config["shard_sizes"]), config["n_slow_workers"]
    speeds = (1.0,) * (n_workers - n_slow) + (1.0 / config["slowdown"],) * n_slow
    return WorkerTiming(LatencyModel("constant", config["worker_delay"]), speed_factors=speeds)


def plan_lengths(config: dict) -> tuple[float, int]:
    """τ̄ that gives the slow workers ``slow_trajectory_length`` under balancing, and the
    fixed plan's common length (the same mean, so both make as many updates per round)."""
    n_workers = (len(config["shard_sizes"]) if "shard_sizes" in config  # a shard a worker
                 else config["n_workers"])
    n_slow = config["n_slow_workers"]
    mean = config["slow_trajectory_length"] * ((n_workers - n_slow) * config["slowdown"]
                                               + n_slow) / n_workers
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
