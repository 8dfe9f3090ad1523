"""Trajectory plans and adaptive load balancing for traveling chains (seed 004 §3.2.2).

A *plan* gives each worker s the trajectory length τ_s a chain makes there per visit. Workers
are visited uniformly, so the fraction of updates made on worker s (its shard's selection
frequency, which the D-SGLD estimator divides by) is q_s = τ_s / Σ_z τ_z.

Adaptive load balancing makes the fast workers work longer: q_s = d_s⁻¹ / Σ_z d_z⁻¹ from the
response delays d_s (time per update) and τ_s = q_s τ̄ S, so that every visit takes about
the same time τ̄ S / Σ_z d_z⁻¹. τ_s is rounded to the closest integer ("take simply the closest
integer", seed 004 §3.2.2) and kept at least 1; q_s is then recomputed from the rounded plan,
which keeps the estimator exactly unbiased. In the seed's Figure 1 the delays (3, 1, 2, 4)
and τ̄ = 25/4 give the plan (4, 12, 6, 3), every visit taking 12.

:class:`DelayMonitor` is the master's side of Algorithm 1: it records the delay measured on
each finished trajectory and asks for a new plan when a measurement moved by more than the
re-plan threshold relative to the delay the current plan was made with.
"""

from __future__ import annotations

import math

import numpy as np

from simulators import validation


def balanced_frequencies(delays) -> np.ndarray:
    """q_s = d_s⁻¹ / Σ_z d_z⁻¹: each worker's relative speed."""
    delays = np.asarray([validation.positive(f"delays[{i}]", d) for i, d in enumerate(delays)])
    speeds = 1.0 / delays
    return speeds / speeds.sum()


def balanced_plan(delays, mean_length: float) -> np.ndarray:
    """τ_s = round(q_s τ̄ S), at least 1 (module docstring)."""
    mean_length = validation.positive("mean_trajectory_length", mean_length)
    q = balanced_frequencies(delays)
    return np.maximum(1, np.floor(q * mean_length * q.size + 0.5)).astype(np.int64)


def plan_frequencies(lengths) -> np.ndarray:
    """Selection frequency q_s = τ_s / Σ_z τ_z of each shard under uniform worker choice."""
    lengths = trajectory_lengths(lengths)
    return lengths / lengths.sum()


def trajectory_lengths(lengths) -> np.ndarray:
    """Validate a plan: one integer τ_s >= 1 per worker."""
    values = np.atleast_1d(np.asarray(lengths))
    if values.ndim != 1 or values.size == 0:
        raise validation.InvalidParameter("trajectory_lengths", lengths,
                                          "must be one integer per worker")
    return np.array([validation.integer(f"trajectory_lengths[{i}]", v, minimum=1)
                     for i, v in enumerate(values.tolist())], dtype=np.int64)


class DelayMonitor:
    """Measured response delays and the decision to re-plan (module docstring).

    Before a worker has been measured it is assumed to be as fast as the average measured
    worker (all equal before any measurement), so the first plan is uniform.
    """

    def __init__(self, n_workers: int, mean_length: float, threshold: float):
        self.n_workers = validation.integer("n_workers", n_workers, minimum=1)
        self.mean_length = validation.positive("mean_trajectory_length", mean_length)
        self.threshold = validation.positive("replan_threshold", threshold)
        self.measured = np.full(self.n_workers, math.nan)
        self.planned_with = np.ones(self.n_workers)
        self.plan = balanced_plan(self.planned_with, self.mean_length)
        self.n_replans = 0

    def observe(self, worker: int, delay: float) -> None:
        self.measured[worker] = validation.positive("delay", delay)

    def current_delays(self) -> np.ndarray:
        known = np.isfinite(self.measured)
        fill = self.measured[known].mean() if known.any() else 1.0
        return np.where(known, self.measured, fill)

    def update(self) -> bool:
        """Re-plan if some delay moved by more than the threshold; True when it did."""
        delays = self.current_delays()
        # Only ratios matter: compare the delays after scaling both to a common mean.
        now = delays / delays.mean()
        before = self.planned_with / self.planned_with.mean()
        if np.max(np.abs(now / before - 1.0)) <= self.threshold:
            return False
        self.planned_with = delays
        self.plan = balanced_plan(delays, self.mean_length)
        self.n_replans += 1
        return True
