"""The common result of every topic-model runner (seed 004 §4.2, Figures 6–7): the topics a
simulated run holds at each evaluation time, from which perplexity against simulated wall-clock
time is computed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TopicTrace:
    """Topics at each evaluation time of a simulated run."""

    times: np.ndarray    # (E,) the evaluation times (simulated, cost-model units), increasing
    topics: np.ndarray   # (E, R, K, W) topic-word probabilities (rows sum to 1) of the state
                         # holding at each time: the state after every update that finished at or
                         # before that time
    updates: np.ndarray  # (E,) int64: updates (SGRLD steps of the recorded chain / Gibbs sweeps of
                         # a worker, summed over workers) finished by each time
    finished: float      # the simulated time at which the run stopped (>= times[-1])
