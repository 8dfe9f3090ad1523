"""Exact second-moment test functions of SGHMC's phase space (θ, p) on the Gaussian mean with
full gradients (V_ζ = 0), for the integrator-order experiment (docs/math.md §3, §7, §15).

- Finite L: the chain starts at the posterior mean with the momentum at rest, so every moment
  comes from the injected noise; for φ = θ² the recursion of
  :func:`workbench.oracles.linear_gaussian.finite_moments` gives E and Var of φ̂_L directly, and
  for φ = p² the same recursion runs on the dynamics with the coordinates swapped
  (:func:`momentum_first`), so that its first coordinate, the one it sums, is p.
- Asymptotically in L: with A the one-step transition and Σ the stationary covariance (discrete
  Lyapunov equation), φ = (cᵀz)² has stationary bias cᵀΣc − φ̄ and, the process being Gaussian,
  autocovariance 2(cᵀAʲΣc)² at lag j, so L·Var φ̂_L → V = 2[(cᵀΣc)² + 2Σ_{j≥1}(cᵀAʲΣc)²].
  MSE(h, L) ≈ bias(h)² + V(h)/L is what :func:`optimal_step` minimises over h: the optimal step
  of the exact asymptotic MSE, which the bounds' h* ∝ L^(−1/(2K+1)) describes.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
from scipy.optimize import minimize_scalar

from simulators import validation
from workbench.oracles.linear_gaussian import (
    LinearDynamics,
    estimator_moments,
    finite_moments,
    spectral_radius,
)

COORDINATES = ("theta", "momentum")


def momentum_first(dynamics: LinearDynamics) -> LinearDynamics:
    """The same two-coordinate dynamics written in the order (p, e)."""
    swap = np.array([1, 0])
    return LinearDynamics(dynamics.transition[np.ix_(swap, swap)], dynamics.gradient_gain[swap],
                          dynamics.thermal_gain[swap], dynamics.gradient_point[swap])


def _selector(coordinate: str) -> np.ndarray:
    validation.one_of("coordinate", coordinate, COORDINATES)
    return np.array([1.0, 0.0]) if coordinate == "theta" else np.array([0.0, 1.0])


def square_moments(dynamics: LinearDynamics, precision: float, coordinate: str,
                   checkpoints, centre: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """E and Var of φ̂_L(x²) at the checkpoints, from rest at the mean, for x = θ = μ + e
    (``centre`` μ) or x = p (``centre`` 0)."""
    _selector(coordinate)
    if coordinate == "momentum":
        dynamics = momentum_first(dynamics)
    checkpoints = np.asarray(checkpoints, dtype=np.int64)
    moments = finite_moments(dynamics, precision, np.zeros(int(checkpoints.max()), np.int64),
                             checkpoints)
    squares = estimator_moments(moments, centre, 0.0, 0.0)["theta_squared"]
    return squares["mean"][:, 0], squares["variance"][:, 0]


def asymptotic_parts(dynamics: LinearDynamics, precision: float,
                     coordinate: str) -> tuple[float, float, float]:
    """(stationary E x², the asymptotic variance V of √L φ̂_L(x²), the stationary value of
    φ, 1 for p² and 1/precision for e²); V = inf where the chain is unstable."""
    c = _selector(coordinate)
    a = dynamics.transition + precision * np.outer(dynamics.gradient_gain,
                                                   dynamics.gradient_point)
    truth = 1.0 if coordinate == "momentum" else 1.0 / precision
    if spectral_radius(a) >= 1.0:
        return math.inf, math.inf, truth
    sigma = scipy.linalg.solve_discrete_lyapunov(a, np.outer(dynamics.thermal_gain,
                                                             dynamics.thermal_gain))
    stationary = float(c @ sigma @ c)
    lagged, total = sigma @ c, 0.0
    while True:
        lagged = a @ lagged
        term = float(c @ lagged) ** 2
        total += term
        if term <= 1e-16 * stationary**2:
            break
    return stationary, 2.0 * (stationary**2 + 2.0 * total), truth


def asymptotic_mse(dynamics: LinearDynamics, precision: float, coordinate: str,
                   n_updates: int) -> float:
    stationary, variance, truth = asymptotic_parts(dynamics, precision, coordinate)
    return (stationary - truth) ** 2 + variance / n_updates


def optimal_step(make_dynamics, precision: float, coordinate: str, n_updates: int,
                 largest: float) -> float:
    """The step h in (0, ``largest``] minimising :func:`asymptotic_mse` (module docstring);
    ``make_dynamics(h)`` builds the sampler's dynamics."""
    def objective(log_step):
        value = asymptotic_mse(make_dynamics(math.exp(log_step)), precision, coordinate,
                               n_updates)
        return math.log(value) if math.isfinite(value) else 1e300

    result = minimize_scalar(objective, bounds=(math.log(largest) - 12, math.log(largest)),
                             method="bounded", options={"xatol": 1e-4})
    return float(math.exp(result.x))
