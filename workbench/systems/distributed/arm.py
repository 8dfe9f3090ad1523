"""One arm of a distributed experiment: replay a schedule with a sampler and an estimator,
and compute the same quantities exactly with the sharded oracle.

An arm's result holds, per replicate and chain, the window averages of θ and θθᵀ over the
samples after the burn-in, their exact expectations given each chain's schedule, thinned
post-burn-in draws of replicate 0 for the figures, the convergence diagnostics of every
replicate's thinned post-burn-in draws (:func:`workbench.stats.diagnostics.diagnose`: every
replicate-chain pair a chain, φ = θ and θ² per component, the KSD against the full-data
posterior's exact score, so a chain whose window targets a biased law shows a large KSD), and
the replay and exact moments themselves for anything else an experiment needs (running means,
error curves). :func:`with_diagnostics` stores the diagnostics of a point's arms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from workbench.core.phi import THETA, THETA_SQUARED
from workbench.engine.replay import replay
from workbench.engine.replay_setup import Replay
from workbench.oracles.sharded_gaussian import ConditionalMoments
from workbench.stats.diagnostics import diagnose_draws
from workbench.systems.distributed.windows import (
    TEST_FUNCTIONS,
    exact_moments,
    measured_window,
)

DIAGNOSED_FUNCTIONS = (THETA, THETA_SQUARED)
"""φ whose ESS, R-hat and MCSE are stored: the diagonal of θθᵀ rather than all of it, so the
diagnostics share the dataset's ``component`` dim."""


@dataclass(frozen=True)
class ArmResult:
    window_mean: np.ndarray  # (replicate, chain, d)
    window_second: np.ndarray  # (replicate, chain, d, d)
    exact_window_mean: np.ndarray  # (chain, d)
    exact_window_second: np.ndarray  # (chain, d, d)
    samples: np.ndarray  # (chain, draw, d): replicate 0 after the burn-in
    diagnostics: xr.Dataset  # test_function x component, ksd over replicate
    run: Replay
    exact: ConditionalMoments


def run_arm(schedule, sampler, estimator, oracle, config: dict, seed, *, burn_in: int,
            n_updates: int, initial, potential_gradient: Callable[[np.ndarray], np.ndarray],
            extra_checkpoints=(), groups=None) -> ArmResult:
    """Replay and oracle for one arm; ``groups``: coupled groups (window stats per chain);
    ``potential_gradient``: the full-data ∇U, whose negative is the score of the diagnostics'
    KSD."""
    run = replay_arm(schedule, sampler, estimator, config, seed, burn_in=burn_in,
                     n_updates=n_updates, initial=initial, extra_checkpoints=extra_checkpoints)
    return finish_arm(run, schedule, sampler, oracle, config, burn_in=burn_in,
                      n_updates=n_updates, initial=initial,
                      potential_gradient=potential_gradient, groups=groups)


def replay_arm(schedule, sampler, estimator, config: dict, seed, *, burn_in: int,
               n_updates: int, initial, extra_checkpoints=(), blocks=None) -> Replay:
    """The arm's replay alone, of its replicates' seeding ``blocks`` (default all): what
    depends on the replicates, the same bits for each block whichever blocks share the call
    (:func:`workbench.engine.replay.replay`)."""
    return replay(schedule, sampler, estimator, n_updates=n_updates,
                  n_replicates=config["n_replicates"], initial_position=initial, seed=seed,
                  batch_size=config["batch_size"], replacement=config["replacement"],
                  test_functions=TEST_FUNCTIONS,
                  checkpoints=sorted({burn_in, n_updates, *extra_checkpoints} - {0}),
                  thin=config["thin"], replicate_block=config["replicate_block"],
                  blocks=blocks)


def finish_arm(run: Replay, schedule, sampler, oracle, config: dict, *, burn_in: int,
               n_updates: int, initial, potential_gradient: Callable[[np.ndarray], np.ndarray],
               groups=None) -> ArmResult:
    """The arm from its replay of every replicate: the measured windows, the oracle's exact
    moments at the replay's checkpoints and the diagnostics of the draws after the burn-in."""
    exact = exact_moments(oracle, schedule, n_updates, sampler.step_size,
                          np.broadcast_to(initial, (run.final_position.shape[-1],)),
                          run.checkpoints, groups=groups,
                          noise_correction=getattr(sampler, "noise_correction", True))
    mean, second = measured_window(run, burn_in, n_updates)
    exact_mean, exact_second = exact.window(burn_in, n_updates)
    if groups is not None and max(groups) > 1:  # the oracle has one entry per group
        member_group = np.repeat(np.arange(len(groups)), groups)
        exact_mean, exact_second = exact_mean[member_group], exact_second[member_group]
    after = run.draws[:, :, burn_in // config["thin"]:]  # (replicate, chain, draw, d)
    diagnostics = diagnose_draws(after, DIAGNOSED_FUNCTIONS, potential_gradient,
                                 valid=(run.diverged_at < 0).all(axis=1))
    return ArmResult(mean, second, exact_mean, exact_second, after[0], diagnostics, run, exact)


def with_diagnostics(dataset: xr.Dataset, arms: Sequence[ArmResult],
                     dims: dict[str, Sequence]) -> xr.Dataset:
    """``dataset`` with the diagnostics of its point's arms, the point's ``dims`` leading.

    ``dims`` maps each leading dim to its coordinate values, outermost first; the arms fill
    their product in order (one arm per point: one value per dim)."""
    shape = tuple(len(values) for values in dims.values())
    if len(arms) != int(np.prod(shape)):
        raise ValueError(f"{len(arms)} arms do not fill the dims {list(dims)} of sizes {shape}")
    first = arms[0].diagnostics
    stacked = {name: (tuple(dims) + first[name].dims,
                      np.stack([arm.diagnostics[name].values for arm in arms]).reshape(
                          shape + first[name].shape))
               for name in first.data_vars}
    merged = dataset.assign(stacked).assign_coords(test_function=first["test_function"].values)
    merged.attrs["diagnostics"] = first.attrs["diagnostics"]
    return merged
