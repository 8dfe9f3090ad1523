"""A long full-gradient Metropolis-adjusted run (MALA or HMC) over several independent chains,
recording test functions.

Warm-up adapts one step size and one diagonal metric shared by all chains (dual averaging on
the mean acceptance probability across chains, the metric from the pooled positions of Stan's
windows; :mod:`workbench.reference.adaptation`) and is discarded; sampling then runs at the
fixed averaged step and metric, so every chain is an exact, time-homogeneous
Metropolis–Hastings chain for the posterior and the chains are independent given them.
Only the test-function values φ(θ) of the kept draws are stored, ``(chains, draws, m)`` per test
function, which is what the posterior expectations, their Monte Carlo errors and R-hat need
(:mod:`workbench.reference.summary`).

Randomness comes from the seed tree (:mod:`simulators.seeding`): the starting positions from
``(seed, "reference", "initial")`` and the proposals and accept/reject draws from
``(seed, "reference", "proposals")``. The chains are coupled during warm-up through the shared
step, so a chain's stream is addressed by purpose, not by chain index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from simulators import seeding, validation
from workbench.core.phi import TestFunction
from workbench.reference.adaptation import (
    DualAveraging,
    metric_windows,
    regularised_variance,
    starting_step_size,
)
from workbench.reference.hmc import hmc_step
from workbench.reference.mala import ChainState, PotentialModel, Step, evaluate, mala_step
from workbench.reference.settings import ReferenceSettings

REPORT_EVERY = 1_000
"""Steps between two calls of a run's progress callback."""
HMC_JITTER = 0.2
"""HMC's leapfrog step is drawn uniformly within ±20 % of the adapted one, per transition."""


@dataclass(frozen=True)
class ChainRun:
    """What a run keeps: test-function values ``(chains, draws, m)`` by name, the step size
    and diagonal inverse metric ``(d,)`` used after warm-up, the acceptance rate and the
    number of divergent (rejected non-finite) proposals per chain after warm-up, and the mean
    acceptance rate during warm-up (``nan`` without warm-up)."""

    values: dict[str, np.ndarray]
    step_size: float
    inverse_metric: np.ndarray
    acceptance_rate: np.ndarray
    divergent_proposals: np.ndarray
    warmup_acceptance_rate: float


@dataclass(frozen=True)
class WarmedUp:
    """The end of warm-up: the chains' state and the adapted step, metric and acceptance."""

    state: ChainState
    step_size: float
    inverse_metric: np.ndarray
    acceptance_rate: float


def starting_state(model: PotentialModel, settings: ReferenceSettings,
                   seed: seeding.SeedLike) -> ChainState:
    """The chains' starting positions (``initial`` + spread·N(0, I)), evaluated."""
    dim = validation.integer("dim", model.dim, minimum=1)
    rng = seeding.generator(seed, "reference", "initial")
    position = settings.initial + settings.initial_spread * rng.standard_normal(
        (settings.chains, dim))
    state = evaluate(model, position)
    if not (np.all(np.isfinite(state.potential)) and np.all(np.isfinite(state.gradient))):
        raise validation.InvalidParameter(
            "initial", settings.initial,
            "the potential or its gradient is not finite at the starting positions")
    return state


class _Steps:
    """Transitions of ``settings.method`` for all chains on one random stream, counted for the
    progress callback. HMC's step is jittered per transition and chain by ±``HMC_JITTER``
    (:mod:`workbench.reference.hmc`)."""

    def __init__(self, model: PotentialModel, settings: ReferenceSettings,
                 rng: np.random.Generator, progress: Callable[[int], None] | None):
        self.model, self.rng, self.progress = model, rng, progress
        if settings.method == "hmc":
            self.transition = partial(hmc_step, leapfrog_steps=settings.leapfrog_steps)
            self.jitter = HMC_JITTER
        else:
            self.transition, self.jitter = mala_step, 0.0
        self.unreported = 0

    def __call__(self, state: ChainState, step_size: float, inverse_metric: np.ndarray) -> Step:
        chains, dim = state.position.shape
        noise = self.rng.standard_normal((chains, dim))
        log_uniform = np.log(self.rng.random(chains))
        if self.jitter:
            step_size = step_size * self.rng.uniform(1 - self.jitter, 1 + self.jitter, chains)
        step = self.transition(self.model, state, step_size, inverse_metric, noise, log_uniform)
        self.unreported += chains
        if self.unreported >= REPORT_EVERY * chains:
            self.flush()
        return step

    def flush(self) -> None:
        """Report the chain-steps not yet reported."""
        if self.progress is not None and self.unreported:
            self.progress(self.unreported)
        self.unreported = 0

    def search(self, state: ChainState, step_size: float, inverse_metric: np.ndarray) -> float:
        """Hoffman & Gelman's starting step from ``step_size``, on one draw of noise."""
        chains, dim = state.position.shape
        noise = self.rng.standard_normal((chains, dim))
        return starting_step_size(lambda h: float(np.mean(self.transition(
            self.model, state, h, inverse_metric, noise, np.zeros(chains)
        ).acceptance_probability)), initial=step_size)


def warm_up(steps: _Steps, state: ChainState, settings: ReferenceSettings) -> WarmedUp:
    """Adapt the step (dual averaging) and, for ``metric = "diagonal"``, the inverse metric
    (estimated at the end of each of Stan's windows, the step then searched again)."""
    chains, dim = state.position.shape
    inverse_metric = np.ones(dim)
    if not settings.warmup:
        return WarmedUp(state, settings.step_size, inverse_metric, np.nan)
    windows = metric_windows(settings.warmup) if settings.metric == "diagonal" else []
    step_size = settings.step_size
    if step_size is None:
        step_size = steps.search(state, 1.0, inverse_metric)
    adaptation = DualAveraging(step_size, settings.target_acceptance)
    accepted, window, recorded = 0, 0, []
    for m in range(settings.warmup):
        result = steps(state, step_size, inverse_metric)
        state = result.state
        accepted += int(result.accepted.sum())
        step_size = adaptation.update(float(np.mean(result.acceptance_probability)))
        if window < len(windows) and m >= windows[window][0]:
            recorded.append(state.position)
            if m + 1 == windows[window][1]:
                inverse_metric = regularised_variance(np.concatenate(recorded))
                step_size = steps.search(state, adaptation.final, inverse_metric)
                adaptation = DualAveraging(step_size, settings.target_acceptance)
                window, recorded = window + 1, []
    return WarmedUp(state, adaptation.final, inverse_metric,
                    accepted / (settings.warmup * chains))


def run_chains(model: PotentialModel, test_functions: Sequence[TestFunction],
               settings: ReferenceSettings, seed: seeding.SeedLike,
               progress: Callable[[int], None] | None = None) -> ChainRun:
    """Warm up, then sample ``settings.draws`` per chain (every ``settings.thin``-th step),
    recording every test function.

    progress: called with the number of chain-steps done since its last call, every
    :data:`REPORT_EVERY` steps and at the end (e.g. :func:`workbench.run.progress.reporter`'s
    callback).
    """
    if not test_functions:
        raise validation.InvalidParameter("test_functions", list(test_functions),
                                          "must name at least one test function")
    names = [f.name for f in test_functions]
    if len(set(names)) != len(names):
        raise validation.InvalidParameter("test_functions", names, "names must be distinct")
    chains = settings.chains
    steps = _Steps(model, settings, seeding.generator(seed, "reference", "proposals"), progress)
    warmed = warm_up(steps, starting_state(model, settings, seed), settings)
    state, step_size, inverse_metric = warmed.state, warmed.step_size, warmed.inverse_metric
    values: dict[str, np.ndarray] = {}
    accepted_per_chain = np.zeros(chains)
    divergent_per_chain = np.zeros(chains, dtype=int)
    for t in range(settings.draws):
        for _ in range(settings.thin):
            result = steps(state, step_size, inverse_metric)
            state = result.state
            accepted_per_chain += result.accepted
            divergent_per_chain += result.divergent
        for function in test_functions:
            value = np.asarray(function(state.position), dtype=float).reshape(chains, -1)
            if t == 0:
                values[function.name] = np.empty((chains, settings.draws, value.shape[1]))
            values[function.name][:, t] = value
    steps.flush()
    return ChainRun(values, float(step_size), inverse_metric,
                    accepted_per_chain / (settings.draws * settings.thin),
                    divergent_per_chain, float(warmed.acceptance_rate))
