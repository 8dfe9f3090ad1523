"""A long full-gradient MALA run over several independent chains, recording test functions.

Warm-up adapts one step size shared by all chains (dual averaging on the mean acceptance
probability across chains, :mod:`workbench.reference.adaptation`) and is discarded; sampling
then runs at the fixed averaged step, so every chain is an exact, time-homogeneous
Metropolis–Hastings chain for the posterior and the chains are independent given the step.
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

import numpy as np

from simulators import seeding, validation
from workbench.reference.adaptation import DualAveraging, starting_step_size
from workbench.reference.mala import ChainState, PotentialModel, evaluate, mala_step
from workbench.reference.settings import ReferenceSettings
from workbench.test_functions import TestFunction


@dataclass(frozen=True)
class ChainRun:
    """What a run keeps: test-function values ``(chains, draws, m)`` by name, the fixed step
    size used after warm-up, the acceptance rate per chain after warm-up and the mean
    acceptance rate during warm-up (``nan`` without warm-up)."""

    values: dict[str, np.ndarray]
    step_size: float
    acceptance_rate: np.ndarray
    warmup_acceptance_rate: float


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


def run_chains(model: PotentialModel, test_functions: Sequence[TestFunction],
               settings: ReferenceSettings, seed: seeding.SeedLike,
               progress: Callable[[int], None] | None = None) -> ChainRun:
    """Warm up, then sample ``settings.draws`` per chain (every ``settings.thin``-th step),
    recording every test function.

    progress: called with the number of chain-steps done, every so often (e.g.
    :func:`workbench.progress.reporter`'s callback).
    """
    if not test_functions:
        raise validation.InvalidParameter("test_functions", list(test_functions),
                                          "must name at least one test function")
    names = [f.name for f in test_functions]
    if len(set(names)) != len(names):
        raise validation.InvalidParameter("test_functions", names, "names must be distinct")
    chains = settings.chains
    state = starting_state(model, settings, seed)
    dim = state.position.shape[1]
    rng = seeding.generator(seed, "reference", "proposals")
    report_every = 1_000

    def step(current: ChainState, step_size: float):
        return mala_step(model, current, step_size, rng.standard_normal((chains, dim)),
                         np.log(rng.random(chains)))

    warmup_acceptance = np.nan
    if settings.warmup:
        first = settings.step_size
        if first is None:
            search_noise = rng.standard_normal((chains, dim))
            first = starting_step_size(lambda h: float(np.mean(mala_step(
                model, state, h, search_noise, np.zeros(chains)).acceptance_probability)))
        adaptation = DualAveraging(first, settings.target_acceptance)
        step_size, accepted = first, 0
        for m in range(settings.warmup):
            result = step(state, step_size)
            state = result.state
            accepted += int(result.accepted.sum())
            step_size = adaptation.update(float(np.mean(result.acceptance_probability)))
            if progress is not None and (m + 1) % report_every == 0:
                progress(report_every * chains)
        step_size = adaptation.final
        warmup_acceptance = accepted / (settings.warmup * chains)
    else:
        step_size = settings.step_size

    values: dict[str, np.ndarray] = {}
    accepted_per_chain = np.zeros(chains)
    for t in range(settings.draws):
        for _ in range(settings.thin):
            result = step(state, step_size)
            state = result.state
            accepted_per_chain += result.accepted
        for function in test_functions:
            value = np.asarray(function(state.position), dtype=float).reshape(chains, -1)
            if t == 0:
                values[function.name] = np.empty((chains, settings.draws, value.shape[1]))
            values[function.name][:, t] = value
        if progress is not None and (t + 1) % report_every == 0:
            progress(report_every * settings.thin * chains)
    return ChainRun(values, float(step_size),
                    accepted_per_chain / (settings.draws * settings.thin),
                    float(warmup_acceptance))
