"""Exact moments of downpour and elastic SGLD on the Gaussian mean (seed 003; docs/math.md §6, §14).

Both protocols keep the updates affine in the state, so the exact first and second moments of
φ̂_L follow from propagating means and covariances, for the schedule's own staleness sequence
or coupling order. Gradient noise ζ (variance V_ζ per unit, independent across evaluations)
and the injected noise ξ are kept apart as in :mod:`workbench.oracles.linear_gaussian`, and so
are the moments per unit initial error e₀ = θ₀ - μ; :func:`~workbench.oracles.linear_gaussian
.estimator_moments` turns the result into E and Var of φ̂_L(θ) and E φ̂_L(θ²). The variance of
φ̂_L(θ²) needs fourth moments, which are not propagated here (NaN).

Downpour (seed 003 Algorithm 1) with SGLD, a = 1 - hk, k = 1/s². A worker that pulled master
error e_r runs π local SGLD steps, x_{j+1} = a x_j - h ζ_j + √(2h) ξ_j, and the master adds the
move x_π - x_0:

    e_{l+1} = e_l - (1 - a^π) e_{l-τ_l} + w_l,
    Var w_l = (h² V_ζ + 2h) Σ_{j<π} a^{2j}.

This is stale SGLD with the contraction 1 - a^π in place of hk and the noise of π steps: the
stacked-state recursion of :mod:`workbench.oracles.linear_gaussian` with those gains
(:func:`downpour_sgld_dynamics`) and the schedule's push staleness. π = 1 gives stale SGLD.

Elastic (seed 003 Appendix B; :mod:`simulators.elastic`) with SGLD: the state is
(x_1..x_P, c, S), P chain errors, the centre and the running sum S of the chain average. Each
local step maps x_p ← a x_p + w_p (independent noises per chain), S ← S + mean_p x_p; after step
t every coupling of chain p (in order) maps x_p ← (1 - α) x_p + α c, c ← α x_p + (1 - α) c.
The estimate is the chain average of the chains' sample averages (equal steps).
"""

from __future__ import annotations

import math

import numpy as np

from simulators import validation
from workbench.oracles.linear_gaussian import FiniteMoments, LinearDynamics, finite_moments


def downpour_sgld_dynamics(step_size: float, precision: float, period: int) -> LinearDynamics:
    """One push of downpour SGLD as stale-SGLD gains (module docstring)."""
    h = validation.positive("step_size", step_size)
    k = validation.positive("precision", precision)
    period = validation.integer("period", period, minimum=1)
    a = 1.0 - h * k
    powers = float(np.sum(a ** (2.0 * np.arange(period))))  # Σ_{j<π} a^{2j}
    return LinearDynamics(
        np.eye(1), np.array([-(1.0 - a**period) / k]), np.array([math.sqrt(2 * h * powers)]),
        np.array([1.0]), gradient_noise_gain=np.array([-h * math.sqrt(powers)]))


def downpour_moments(step_size: float, precision: float, period: int, staleness,
                     checkpoints) -> FiniteMoments:
    """Exact moments for the push staleness sequence of a downpour schedule (its
    ``update_staleness()[:, 0]``), per unit e₀ and V_ζ."""
    return finite_moments(downpour_sgld_dynamics(step_size, precision, period), precision,
                          staleness, checkpoints, fourth_moments=False)


def elastic_moments(step_size: float, precision: float, n_chains: int,
                    coupling_strength: float, coupled: dict[int, list[int]], n_updates: int,
                    checkpoints) -> FiniteMoments:
    """Exact moments of the chain-averaged estimate (module docstring), per unit e₀ and V_ζ.

    coupled: the chains coupled after each local step, in order (as
    :func:`workbench.engine.protocols.coupling_steps` reads them from a schedule).
    """
    h = validation.positive("step_size", step_size)
    k = validation.positive("precision", precision)
    n = validation.integer("n_chains", n_chains, minimum=1)
    alpha = validation.probability("coupling_strength", coupling_strength)
    n_updates = validation.integer("n_updates", n_updates, minimum=1)
    checkpoints = np.unique(np.asarray(checkpoints, dtype=np.int64))
    if checkpoints.size == 0 or checkpoints.min() < 1 or checkpoints.max() > n_updates:
        raise validation.InvalidParameter("checkpoints", checkpoints.tolist(),
                                          f"must lie in [1, {n_updates}]")
    a = 1.0 - h * k
    size = n + 2  # chains, centre, running sum
    centre, total = n, n + 1
    step = np.eye(size)
    step[np.arange(n), np.arange(n)] = a
    step[total, :n] = a / n
    gains = np.zeros((n, size))  # one independent unit noise per chain
    gains[np.arange(n), np.arange(n)] = 1.0
    gains[:, total] = 1.0 / n
    unit_noise = gains.T @ gains
    noise = np.stack([h * h * unit_noise, 2 * h * unit_noise])  # ζ per unit V_ζ, ξ
    couplings = {}
    for chain in range(n):
        c = np.eye(size)
        c[chain, chain], c[chain, centre] = 1 - alpha, alpha
        c[centre, chain], c[centre, centre] = alpha, 1 - alpha
        couplings[chain] = c
    mean = np.ones(size)
    mean[total] = 0.0
    covariance = np.zeros((2, size, size))
    totals = np.zeros(4)  # Σ mean_p m, Σ mean_p m², Σ mean_p Var_ζ, Σ mean_p Var_ξ
    wanted = set(checkpoints.tolist())
    rows = []
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, n_updates + 1):
            mean = step @ mean
            covariance = step @ covariance @ step.T + noise
            chains = mean[:n]
            totals += (chains.mean(), (chains**2).mean(),
                       covariance[0].diagonal()[:n].mean(), covariance[1].diagonal()[:n].mean())
            if t in wanted:
                rows.append((mean[total], covariance[0, total, total],
                             covariance[1, total, total], *totals))
            for chain in coupled.get(t, ()):
                c = couplings[chain]
                mean = c @ mean
                covariance = c @ covariance @ c.T
    values = np.array(rows).T
    missing = np.full((checkpoints.size, 3), np.nan)
    return FiniteMoments(checkpoints, *values, missing, missing, missing, missing)
