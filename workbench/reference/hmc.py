"""Hamiltonian Monte Carlo (HMC), one step of L leapfrog steps vectorised over chains.

HMC (Duane, Kennedy, Pendleton & Roweth 1987; Neal 2011, "MCMC using Hamiltonian dynamics",
Handbook of MCMC, ch. 5, §5.3) draws a momentum p ~ N(0, M⁻¹) for the diagonal
inverse metric M, integrates H(θ, p) = U(θ) + ½ pᵀ M p with L leapfrog steps of size ε,

    p ← p - (ε/2) ∇U(θ),   θ ← θ + ε M p,   p ← p - (ε/2) ∇U(θ),

and accepts the end point with probability α = min(1, exp(H(θ, p) - H(θ', p'))). The leapfrog
map is volume-preserving and reversible, so the posterior is exactly invariant for any ε, M and
L. With L = 1 it is MALA (:mod:`workbench.reference.mala`) with h = ε²/2, which the tests check;
more leapfrog steps travel further per gradient in high dimension (Neal 2011, §5.4).

The kernel has MALA's signature (``noise`` is the standard normal that makes the momentum
p = M^{-1/2} ξ), so the chain code runs either. A fixed ε and L can make trajectories nearly
periodic (on a Gaussian, Lε close to a multiple of its period returns every chain near its
start), so the chain draws ε afresh for every transition and chain, uniformly within ±20 % of
the adapted value (the randomisation of ε suggested by Neal 2011, §5.4.2; the draw does not
depend on the state, so invariance is kept). A trajectory that reaches a non-finite potential
or gradient is a divergence and is rejected.
"""

from __future__ import annotations

import numpy as np

from workbench.reference.mala import ChainState, PotentialModel, Step, evaluate, metropolis


def hamiltonian(state: ChainState, momentum: np.ndarray, inverse_metric: np.ndarray):
    """H = U(θ) + ½ Σ_j M_j p_j², per chain."""
    return state.potential + 0.5 * np.sum(inverse_metric * momentum**2, axis=-1)


def hmc_step(model: PotentialModel, state: ChainState, step_size: float | np.ndarray,
             inverse_metric: np.ndarray, noise: np.ndarray, log_uniform: np.ndarray, *,
             leapfrog_steps: int) -> Step:
    """One HMC step (module docstring): momentum M^{-1/2}·``noise``, ``leapfrog_steps`` steps
    of size ``step_size`` (one for all chains, or one per chain), accepted where
    ``log_uniform`` < log α."""
    step_size = np.asarray(step_size, dtype=float)[..., None]
    momentum = noise / np.sqrt(inverse_metric)
    start_energy = hamiltonian(state, momentum, inverse_metric)
    current = state
    with np.errstate(invalid="ignore", over="ignore"):
        for _ in range(leapfrog_steps):
            momentum = momentum - 0.5 * step_size * current.gradient
            current = evaluate(model, current.position + step_size * inverse_metric * momentum)
            momentum = momentum - 0.5 * step_size * current.gradient
        log_ratio = start_energy - hamiltonian(current, momentum, inverse_metric)
    return metropolis(state, current, log_ratio, log_uniform)
