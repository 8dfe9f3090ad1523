"""Stationary moments of DSGLD and FSGLD with T local updates per round (docs/math.md §13).

Seed 002 Algorithm 1: each round a client s is drawn with probability f_s, independently of
the past, and the chain makes T updates on it. On the Gaussian mean each update is, per
coordinate and in error coordinates e = θ - r around a reference r (the posterior mean),

    e' = a_s e + c_s + w,   Var w = q_s,

with a_s, c_s, q_s from :class:`workbench.oracles.sharded_gaussian.ShardedGaussianOracle`
(diagonal K). Conditioning on the round's client makes the within-round moments closed-form:
after p updates from a round start e₀, E[e_p | s] = a^p E e₀ + u_p and
E[e_p² | s] = a^{2p} E e₀² + 2 a^p u_p E e₀ + u_p² + q (1 - a^{2p})/(1 - a²),
u_p = c (1 - a^p)/(1 - a). Stationarity of the round-start moments (averaged over s with
weights f_s) is a 2×2 linear system per coordinate, solved exactly. What a chain's sample
cloud shows is the average over the T positions of a round, p = 1..T, which is returned.

For S equal shards chosen uniformly, exact local surrogates (FSGLD) and the D-SGLD estimator
this reduces to docs/math.md §7.5's closed forms (derived in §13.2), with ε = 2h, a = 1 - hk:
FSGLD Var_∞ = (ε + ε²V_w/4)/(1 - a²) for every T; DSGLD adds (ε²/4) V_b Φ(a, T), with
Φ(a, T) = (1/T) Σ_{p=0}^{T-1} [(1 - a^{p+1})² + a^{2(p+1)} (1 - a^T)/(1 + a^T)]/(1 - a)²
(:func:`phi`); Φ(a, 1) = 1/(1 - a²) and Φ(a, ∞) = 1/(1 - a)²: long rounds sit at the local
posteriors.
"""

from __future__ import annotations

import numpy as np

from simulators import validation


def round_stationary(a, c, q, probabilities, local_updates: int) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """Time-averaged stationary E e and E e² over a round (module docstring).

    ``a``, ``c``, ``q``: ``(S, d)`` per client and coordinate; ``probabilities``: f_s.
    Returns two ``(d,)`` arrays; ``inf`` where the round map is not contracting.
    """
    local = validation.integer("local_updates", local_updates, minimum=1)
    f = np.asarray(probabilities, dtype=float)[:, None]
    a, c, q = (np.asarray(v, dtype=float) for v in (a, c, q))
    powers = a[..., None] ** np.arange(1, local + 1)  # (S, d, T): a^p, p = 1..T
    with np.errstate(divide="ignore", invalid="ignore"):
        drift = c[..., None] * np.where(a[..., None] == 1, np.arange(1, local + 1),
                                        (1 - powers) / (1 - a[..., None]))  # u_p
        spread = q[..., None] * np.where(a[..., None] ** 2 == 1, np.arange(1, local + 1),
                                         (1 - powers**2) / (1 - a[..., None] ** 2))
    end_a, end_u, end_spread = powers[..., -1], drift[..., -1], spread[..., -1]
    contraction = np.sum(f * end_a**2, axis=0)
    if np.any(contraction >= 1):
        return np.full(a.shape[1], np.inf), np.full(a.shape[1], np.inf)
    first = np.sum(f * end_u, axis=0) / (1 - np.sum(f * end_a, axis=0))
    second = (np.sum(f * (2 * end_a * end_u * first + end_u**2 + end_spread), axis=0)
              / (1 - contraction))
    mean = np.sum(f * np.mean(powers * first[:, None] + drift, axis=-1), axis=0)
    square = np.sum(f * np.mean(powers**2 * second[:, None] + 2 * powers * drift * first[:, None]
                                + drift**2 + spread, axis=-1), axis=0)
    return mean, square


def phi(a, local_updates: int):
    """Φ(a, T) of docs/math.md §7.5 (module docstring)."""
    local = validation.integer("local_updates", local_updates, minimum=1)
    a = np.asarray(a, dtype=float)
    p = np.arange(1, local + 1)
    powers = a[..., None] ** p
    end = a[..., None] ** local
    terms = (1 - powers) ** 2 + powers**2 * (1 - end) / (1 + end)
    return terms.mean(axis=-1) / (1 - a) ** 2


def dsgld_stationary_variance(step_size: float, precision: float, within: float,
                              between: float, local_updates: int, conducive: bool) -> float:
    """docs/math.md §7.5 closed form in the Chen convention (ε = 2h): equal shards, uniform choice.

    ``within`` = V_w = N² mean_s(S_s²)/(n σ_x⁴) and ``between`` = V_b = N² Var_s(x̄_s)/σ_x⁴,
    per coordinate, in gradient units (as docs/math.md §7.5 writes them).
    """
    epsilon = 2 * validation.positive("step_size", step_size)
    a = 1 - epsilon * precision / 2
    variance = (epsilon + epsilon**2 * within / 4) / (1 - a * a)
    if conducive:
        return float(variance)
    return float(variance + epsilon**2 / 4 * between * phi(a, local_updates))


def shard_round_maps(oracle, probabilities, step_size: float, reference) -> tuple[np.ndarray,
                                                                                   ...]:
    """Per-client (a_s, c_s, q_s) in error coordinates around ``reference``, ``(S, d)`` each.

    Needs diagonal dynamics (no full-covariance surrogate): a coordinate evolves on its own.
    """
    if not oracle.diagonal:
        raise validation.InvalidParameter(
            "surrogate", "full covariance",
            "the round-stationary result needs diagonal dynamics (diagonal surrogates)")
    h = validation.positive("step_size", step_size)
    shards = np.arange(len(probabilities))
    k, beta, noise = oracle.coefficients(shards, np.asarray(probabilities, dtype=float))
    a = 1 - h * k
    c = h * (beta - k * np.asarray(reference, dtype=float))
    q = h * h * np.diagonal(noise, axis1=-2, axis2=-1) + 2 * h
    return a, c, q
