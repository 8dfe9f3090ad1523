"""The Metropolis-adjusted Langevin algorithm (MALA), one step vectorised over chains.

MALA (Roberts & Tweedie 1996, "Exponential convergence of Langevin distributions and their
discrete approximations", Bernoulli 2(4)) proposes one full-gradient Langevin step in the
project's convention (docs/math.md §1; ε = 2h in Welling–Teh's), here preconditioned by a diagonal
inverse metric M (Roberts & Stramer 2002, "Langevin diffusions and Metropolis–Hastings
algorithms", Methodol. Comput. Appl. Probab. 4; M = I is plain MALA),

    θ' = θ - h M ∇U(θ) + √(2h) M^{1/2} ξ,   ξ ~ N(0, I),

and accepts it with probability α = min(1, exp(U(θ) - U(θ') + log q(θ | θ') - log q(θ' | θ))),
q(y | x) ∝ exp(-(y - x + h M ∇U(x))ᵀ M⁻¹ (y - x + h M ∇U(x)) / (4h)). The correction makes
the posterior exactly invariant for any step size h and metric M, which is what a reference
chain needs; stochastic-gradient samplers have no such correction. Only U decides what is
sampled: the gradient enters the proposal and both of its densities alike, so a wrong ∇U
costs efficiency (acceptance), never correctness.

A model is anything with ``dim`` (d), ``potential(theta)`` (U, shape ``(...,)`` for θ of shape
``(..., d)``) and ``potential_gradient(theta)`` (∇U, shape ``(..., d)``). The random numbers are
passed in, so a step is a pure function of its inputs (and checked by hand in the tests). A
proposal whose potential or gradient is not finite (a divergence) is rejected, never propagated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


class PotentialModel(Protocol):
    """What a reference chain needs of a model: d, and U and ∇U vectorised over leading axes."""

    @property
    def dim(self) -> int: ...

    def potential(self, theta: np.ndarray) -> np.ndarray: ...

    def potential_gradient(self, theta: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class ChainState:
    """Positions ``(chains, d)`` with their potentials ``(chains,)`` and gradients, kept so that
    every step evaluates the model once, at the proposal."""

    position: np.ndarray
    potential: np.ndarray
    gradient: np.ndarray


@dataclass(frozen=True)
class Step:
    """One MALA step: the new state, which chains accepted, α per chain, and which chains'
    proposals were divergent (non-finite potential or gradient; rejected)."""

    state: ChainState
    accepted: np.ndarray
    acceptance_probability: np.ndarray
    divergent: np.ndarray


def evaluate(model: PotentialModel, position: np.ndarray) -> ChainState:
    """The state at ``position`` ``(chains, d)``: U and ∇U evaluated there."""
    position = np.asarray(position, dtype=float)
    return ChainState(position, np.asarray(model.potential(position), dtype=float),
                      np.asarray(model.potential_gradient(position), dtype=float))


def log_proposal_density(to: np.ndarray, start: np.ndarray, gradient: np.ndarray,
                         step_size: float, inverse_metric: np.ndarray) -> np.ndarray:
    """log q(to | start) up to its constant (which cancels in α): the Langevin proposal
    N(start - h M ∇U(start), 2h M)."""
    residual = to - start + step_size * inverse_metric * gradient
    return -np.sum(residual**2 / inverse_metric, axis=-1) / (4 * step_size)


def mala_step(model: PotentialModel, state: ChainState, step_size: float,
              inverse_metric: np.ndarray, noise: np.ndarray, log_uniform: np.ndarray) -> Step:
    """One MALA step (module docstring) with diagonal ``inverse_metric`` M ``(d,)``, the given
    standard normal ``noise`` ``(chains, d)`` and ``log_uniform`` = log u, u ~ U(0, 1),
    ``(chains,)``: accept where log u < log α."""
    proposal = (state.position - step_size * inverse_metric * state.gradient
                + np.sqrt(2 * step_size * inverse_metric) * noise)
    with np.errstate(invalid="ignore", over="ignore"):
        candidate = evaluate(model, proposal)
        log_ratio = (state.potential - candidate.potential
                     + log_proposal_density(state.position, proposal, candidate.gradient,
                                            step_size, inverse_metric)
                     - log_proposal_density(proposal, state.position, state.gradient, step_size,
                                            inverse_metric))
        return metropolis(state, candidate, log_ratio, log_uniform)


def metropolis(state: ChainState, candidate: ChainState, log_ratio: np.ndarray,
               log_uniform: np.ndarray) -> Step:
    """Accept ``candidate`` per chain where log u < log α; a candidate whose potential or
    gradient is not finite (or whose log α is NaN) is divergent and rejected. Shared by MALA
    and HMC (:mod:`workbench.reference.hmc`)."""
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(candidate.potential) & np.all(np.isfinite(candidate.gradient), -1)
        log_ratio = np.where(finite & ~np.isnan(log_ratio), log_ratio, -np.inf)
        accepted = log_uniform < log_ratio
        probability = np.exp(np.minimum(log_ratio, 0.0))
    new = ChainState(np.where(accepted[:, None], candidate.position, state.position),
                     np.where(accepted, candidate.potential, state.potential),
                     np.where(accepted[:, None], candidate.gradient, state.gradient))
    return Step(new, accepted, probability, ~finite)
