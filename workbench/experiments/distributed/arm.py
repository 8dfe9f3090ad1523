"""One arm of a distributed experiment: replay a schedule with a sampler and an estimator,
and compute the same quantities exactly with the sharded oracle.

An arm's result holds, per replicate and chain, the window averages of θ and θθᵀ over the
samples after the burn-in, their exact expectations given each chain's schedule, thinned
post-burn-in draws of replicate 0 for the figures, and the replay and exact moments
themselves for anything else an experiment needs (running means, error curves).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.engine import Replay, replay
from workbench.experiments.distributed.windows import (
    TEST_FUNCTIONS,
    exact_moments,
    measured_window,
)
from workbench.oracles.sharded_gaussian import ConditionalMoments


@dataclass(frozen=True)
class ArmResult:
    window_mean: np.ndarray  # (replicate, chain, d)
    window_second: np.ndarray  # (replicate, chain, d, d)
    exact_window_mean: np.ndarray  # (chain, d)
    exact_window_second: np.ndarray  # (chain, d, d)
    samples: np.ndarray  # (chain, draw, d): replicate 0 after the burn-in
    run: Replay
    exact: ConditionalMoments


def run_arm(schedule, sampler, estimator, oracle, config: dict, seed, *, burn_in: int,
            n_updates: int, initial, extra_checkpoints=(), groups=None) -> ArmResult:
    """Replay and oracle for one arm; ``groups``: coupled groups (window stats per chain)."""
    checkpoints = sorted({burn_in, n_updates, *extra_checkpoints} - {0})
    thin = config["thin"]
    run = replay(schedule, sampler, estimator, n_updates=n_updates,
                 n_replicates=config["n_replicates"], initial_position=initial, seed=seed,
                 batch_size=config["batch_size"], replacement=config["replacement"],
                 test_functions=TEST_FUNCTIONS, checkpoints=checkpoints, thin=thin,
                 replicate_block=config["replicate_block"])
    exact = exact_moments(oracle, schedule, n_updates, sampler.step_size,
                          np.broadcast_to(initial, (run.final_position.shape[-1],)),
                          checkpoints, groups=groups,
                          noise_correction=getattr(sampler, "noise_correction", True))
    mean, second = measured_window(run, burn_in, n_updates)
    exact_mean, exact_second = exact.window(burn_in, n_updates)
    if groups is not None and max(groups) > 1:  # the oracle has one entry per group
        member_group = np.repeat(np.arange(len(groups)), groups)
        exact_mean, exact_second = exact_mean[member_group], exact_second[member_group]
    return ArmResult(mean, second, exact_mean, exact_second,
                     run.draws[0, :, burn_in // thin:], run, exact)
