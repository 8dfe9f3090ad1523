"""Exact moments of stale SG-MCMC on a linear-Gaussian target (docs/math.md §7, §8, §9).

On the Gaussian-mean posterior N(μ, s² I) the stochastic gradient at a gradient point u is
k (u - μ) + ζ with k = 1/s² and ζ zero-mean noise of variance V_ζ, independent of everything
else. In error coordinates x = (e, auxiliary...) with e = θ - μ, every sampler here is linear:

    x' = F x + b g + c ξ,   g = k u_stale + ζ,   u = G x  (the sampler's gradient point),

with ξ standard normal. The matrices below are written from docs/math.md §1 and §3 (table in
docs/math.md §8.1), independently of the sampler code that the oracle is used to test.

Stale gradients make the recursion depend on past gradient points, so the state is stacked:
z_l = (x_l, u_{l-1}, ..., u_{l-H}, S_l) with H the largest staleness and S_l = Σ_{j<=l} e_j the
running sum that φ̂_L(θ) = μ + S_L/L needs. Any deterministic staleness sequence τ_l then gives
z_{l+1} = A_{τ_l} z_l + noise, and the mean and covariance propagate exactly:
m' = A m, P' = A P Aᵀ + V_ζ Q_ζ + Q_ξ. Because the chain starts at rest at θ₀ and the two noise
sources are independent, every moment is a fixed multiple of e₀ = θ₀ - μ or of V_ζ: the
recursion is run once with unit e₀ and unit V_ζ and rescaled per coordinate.

Fourth moments (the variance of φ̂_L(θ²), docs/math.md §9). With F_L = Σ_{l<=L} θ_l² =
Σ (M_l + δ_l)², M_l the mean of θ_l and δ = B w the zero-mean part driven by independent unit
noises w (thermal ξ and gradient noise ζ/√V_ζ), F_L = const + 2 (BᵀM)ᵀw + wᵀ(BᵀB)w, so

    Var F_L = 2 tr(C²) + 4 MᵀCM + Σ_i κ₄ᵢ (BᵀB)ᵢᵢ² + 4 Σ_i κ₃ᵢ (BᵀB)ᵢᵢ (BᵀM)ᵢ,

C = BBᵀ the L×L covariance of (e_1..e_L) and κ₃, κ₄ the standardised third and fourth
cumulants of each noise (zero for ξ; for ζ those of the minibatch sum, which is not Gaussian).
The first two terms are the Gaussian fourth moments; they come from forward recursions that
never form C: with v_l = Cov(z_l, e_l), W_l = A W_{l-1} Aᵀ + v_l v_lᵀ gives
Σ_{j<=l} C_{jl}² = (W_l)₀₀, and u_l = A u_{l-1} + v_l x_l gives Σ_{j<=l} x_j C_{jl} = (u_l)₀, so
tr(C²) and xᵀCy accumulate update by update. The cumulant terms need, for every noise, its
total weight in F_L, which depends on the future: they come from a backward pass
(:mod:`workbench.oracles.square_variance`). Everything is again kept per unit e₀, μ and V_ζ.

The stationary covariance solves the discrete Lyapunov equation for constant staleness, and
vec P = (I - Σ_τ π_τ A_τ ⊗ A_τ)⁻¹ vec Q for i.i.d. staleness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from simulators import validation
from workbench.core.kernel_arrays import kernel_array
from workbench.oracles import shift_register
from workbench.oracles.square_variance import cumulant_weights


@dataclass(frozen=True)
class LinearDynamics:
    """x' = F x + b g + c ξ with gradient point u = G x (module docstring).

    ``gradient_noise_gain``: how a unit of gradient noise enters when it is not b ζ, as when
    one update sums several independent gradient evaluations (a downpour push,
    :mod:`workbench.oracles.protocols`); None means b. Only means and covariances are then
    exact: such a sum has other cumulants than ζ, so pass ``fourth_moments=False``.
    """

    transition: np.ndarray  # F
    gradient_gain: np.ndarray  # b
    thermal_gain: np.ndarray  # c
    gradient_point: np.ndarray  # G
    gradient_noise_gain: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.transition.shape[0])


def sgld_dynamics(step_size: float) -> LinearDynamics:
    """e' = e - h g + √(2h) ξ (docs/math.md §1)."""
    h = validation.positive("step_size", step_size)
    return LinearDynamics(np.eye(1), np.array([-h]), np.array([math.sqrt(2 * h)]), np.array([1.0]))


def sghmc_euler_dynamics(step_size: float, friction: float) -> LinearDynamics:
    """p' = (1 - Dh) p - h g + √(2Dh) ξ; e' = e + h p' (seed 001 Algorithm 1)."""
    h = validation.positive("step_size", step_size)
    d = validation.positive("friction", friction)
    noise = math.sqrt(2 * d * h)
    transition = np.array([[1.0, h * (1 - d * h)], [0.0, 1 - d * h]])
    return LinearDynamics(transition, np.array([-h * h, -h]), np.array([h * noise, noise]),
                          np.array([1.0, 0.0]))


def sghmc_splitting_dynamics(step_size: float, friction: float) -> LinearDynamics:
    """A-B-O-B-A splitting (docs/math.md §3); the gradient is taken at u = e + p h/2."""
    h = validation.positive("step_size", step_size)
    d = validation.positive("friction", friction)
    decay = math.exp(-0.5 * d * h)
    noise = math.sqrt(2 * d * h)
    # p' = decay (decay p - h g + noise ξ);  e' = e + (h/2) p + (h/2) p'
    transition = np.array([[1.0, 0.5 * h * (1 + decay * decay)], [0.0, decay * decay]])
    gradient_gain = np.array([-0.5 * h * h * decay, -h * decay])
    thermal_gain = np.array([0.5 * h * decay * noise, decay * noise])
    return LinearDynamics(transition, gradient_gain, thermal_gain, np.array([1.0, 0.5 * h]))


def dynamics_for(description: dict) -> LinearDynamics:
    """The dynamics of a sampler from its ``describe()`` dictionary."""
    name = description["sampler"]
    if name == "sgld":
        return sgld_dynamics(description["step_size"])
    if name == "sghmc-euler":
        return sghmc_euler_dynamics(description["step_size"], description["friction"])
    if name == "sghmc-splitting":
        return sghmc_splitting_dynamics(description["step_size"], description["friction"])
    raise validation.InvalidParameter("sampler", name, "has no exact linear-Gaussian oracle")


class StackedSystem:
    """The stacked recursion z' = A_τ z + noise for history length H (module docstring)."""

    def __init__(self, dynamics: LinearDynamics, precision: float, history: int,
                 running_sum: bool = True):
        self.dynamics = dynamics
        self.precision = validation.positive("precision", precision)
        self.history = validation.integer("history", history, minimum=0)
        self.running_sum = running_sum
        k = dynamics.size
        self.size = k + self.history + (1 if running_sum else 0)
        self._cache: dict[int, np.ndarray] = {}
        gradient_noise = np.zeros(self.size)
        thermal_noise = np.zeros(self.size)
        noise_gain = (dynamics.gradient_gain if dynamics.gradient_noise_gain is None
                      else dynamics.gradient_noise_gain)
        gradient_noise[:k] = noise_gain
        thermal_noise[:k] = dynamics.thermal_gain
        if running_sum:
            gradient_noise[-1] = noise_gain[0]
            thermal_noise[-1] = dynamics.thermal_gain[0]
        #: how a unit gradient noise and a unit thermal noise enter the stacked state
        self.gradient_vector = gradient_noise
        self.thermal_vector = thermal_noise
        self.gradient_noise = np.outer(gradient_noise, gradient_noise)
        self.thermal_noise = np.outer(thermal_noise, thermal_noise)

    def transition(self, staleness: int) -> np.ndarray:
        if staleness in self._cache:
            return self._cache[staleness]
        if not 0 <= staleness <= self.history:
            raise validation.InvalidParameter(
                "staleness", staleness, f"must lie in [0, {self.history}] for this system")
        dyn, k, history = self.dynamics, self.dynamics.size, self.history
        read = np.zeros(self.size)  # the row that picks the stale gradient point
        if staleness == 0:
            read[:k] = dyn.gradient_point
        else:
            read[k + staleness - 1] = 1.0
        a = np.zeros((self.size, self.size))
        a[:k, :k] = dyn.transition
        a[:k] += self.precision * np.outer(dyn.gradient_gain, read)
        if history:
            a[k, :k] = dyn.gradient_point
            for i in range(history - 1):
                a[k + 1 + i, k + i] = 1.0
        if self.running_sum:
            a[-1] = a[0]
            a[-1, -1] += 1.0
        a.setflags(write=False)
        self._cache[staleness] = a
        return a

    def kernel_arguments(self) -> tuple:
        """(F, b, G, precision, H): what the shift-register kernels need to apply A_τ."""
        dyn = self.dynamics
        return (np.ascontiguousarray(dyn.transition, dtype=float),
                np.ascontiguousarray(dyn.gradient_gain, dtype=float),
                np.ascontiguousarray(dyn.gradient_point, dtype=float),
                float(self.precision), self.history)

    def initial_mean(self) -> np.ndarray:
        """State mean for unit e₀ with the auxiliary variables at rest."""
        k = self.dynamics.size
        mean = np.zeros(self.size)
        mean[0] = 1.0
        mean[k:k + self.history] = self.dynamics.gradient_point[0]
        return mean


@dataclass(frozen=True)
class FiniteMoments:
    """Unit-scaled sums over samples 1..L at each checkpoint L (module docstring).

    sum_mean: E S_L / e₀;  sum_variance_gradient, sum_variance_thermal: parts of Var S_L per
    unit V_ζ and from the injected noise; e_mean, e_mean_sq: Σ_l m_l and Σ_l m_l² (per e₀, e₀²);
    e_variance_gradient, e_variance_thermal: Σ_l Var e_l parts.

    Fourth moments, with C = V_ζ C_ζ + C_ξ the covariance of (e_1..e_L), a_l = m_l/e₀ and 1 the
    vector of ones: square_trace = (tr C_ζ², tr C_ζC_ξ, tr C_ξ²); square_form_gradient and
    square_form_thermal = (1ᵀC1, 1ᵀCa, aᵀCa) for C_ζ and C_ξ; cumulant_weights = the
    backward-pass sums (Σ_j q_j², Σ_j q_j r_j, Σ_j q_j s_j) of
    :func:`workbench.oracles.square_variance.cumulant_weights`. Arrays ``(checkpoint,)`` or
    ``(checkpoint, 3)``.
    """

    checkpoints: np.ndarray
    sum_mean: np.ndarray
    sum_variance_gradient: np.ndarray
    sum_variance_thermal: np.ndarray
    e_mean: np.ndarray
    e_mean_sq: np.ndarray
    e_variance_gradient: np.ndarray
    e_variance_thermal: np.ndarray
    square_trace: np.ndarray
    square_form_gradient: np.ndarray
    square_form_thermal: np.ndarray
    cumulant_weights: np.ndarray


def _validated_sequence(staleness, checkpoints) -> tuple[np.ndarray, np.ndarray]:
    staleness = kernel_array(staleness, np.int64)  # one signature of the compiled passes
    checkpoints = np.asarray(checkpoints, dtype=np.int64)
    if staleness.ndim != 1 or staleness.size == 0:
        raise validation.InvalidParameter("staleness", staleness.shape, "must be a 1-d sequence")
    if np.any(staleness > np.arange(staleness.size)):
        raise validation.InvalidParameter("staleness", "sequence",
                                          "update l cannot read a version older than 0")
    if checkpoints.size == 0 or checkpoints.min() < 1 or checkpoints.max() > staleness.size:
        raise validation.InvalidParameter("checkpoints", checkpoints.tolist(),
                                          f"must lie in [1, {staleness.size}]")
    return staleness, checkpoints


def finite_moments(dynamics: LinearDynamics, precision: float, staleness: np.ndarray,
                   checkpoints: np.ndarray, fourth_moments: bool = True) -> FiniteMoments:
    """Propagate mean, covariance and the fourth-moment recursions through ``staleness[l]``.

    One forward pass (mean, covariance P, the W and u recursions of the module docstring)
    and one backward pass for the cumulant terms, both on the shift-register structure of
    the stacked state (:mod:`workbench.oracles.shift_register`): O(L·S) for means and
    covariances, O(L·S²) with the fourth moments (the W recursions), O(L·K·S) for the
    backward pass, and O(K·S²) memory, for K checkpoints and stacked size S.
    ``fourth_moments=False`` skips the W and u recursions and the backward pass for callers
    that need only means and Var φ̂(θ); the fourth-moment fields are then NaN, and so is the
    variance of φ̂(θ²).
    """
    staleness, checkpoints = _validated_sequence(staleness, checkpoints)
    system = StackedSystem(dynamics, precision, int(staleness.max()))
    wanted = np.zeros(staleness.size, dtype=np.bool_)
    wanted[checkpoints - 1] = True
    rows, unit_means = shift_register.forward_pass(
        *system.kernel_arguments(), staleness, system.gradient_vector, system.thermal_vector,
        system.initial_mean(), wanted, fourth_moments)
    # rows come in update order; checkpoints may be in any order and repeat
    order = np.searchsorted(np.flatnonzero(wanted), checkpoints - 1)
    values = rows[order].T
    weights = (cumulant_weights(system, staleness, unit_means, checkpoints) if fourth_moments
               else np.full((checkpoints.size, 3), np.nan))
    return FiniteMoments(checkpoints, *values[:7], values[7:10].T, values[10:13].T,
                         values[13:16].T, weights)


def _square_variance(moments: FiniteMoments, mu, e0, vz, third, fourth) -> np.ndarray:
    """Var Σ_{l<=L} θ_l² per checkpoint and coordinate (module docstring), ``(checkpoint, d)``."""
    trace = moments.square_trace
    gaussian = 2 * (vz**2 * trace[:, 0:1] + 2 * vz * trace[:, 1:2] + trace[:, 2:3])

    def form(parts):
        return mu**2 * parts[:, 0:1] + 2 * mu * e0 * parts[:, 1:2] + e0**2 * parts[:, 2:3]

    linear = 4 * (vz * form(moments.square_form_gradient) + form(moments.square_form_thermal))
    weights = moments.cumulant_weights
    skew = 4 * third * (mu * weights[:, 1:2] + e0 * weights[:, 2:3])
    kurtosis = fourth * weights[:, 0:1]
    return gaussian + linear + skew + kurtosis


def estimator_moments(moments: FiniteMoments, posterior_mean, initial_error,
                      gradient_noise_variance, gradient_noise_cumulants=None,
                      ) -> dict[str, dict[str, np.ndarray]]:
    """Exact moments of φ̂_L per coordinate, arrays ``(checkpoint, d)``.

    φ = θ and φ = θ²: ``mean`` and ``variance``. ``gradient_noise_cumulants``: the third and
    fourth cumulants (κ₃, κ₄) of the gradient noise ζ per coordinate (for the Gaussian mean,
    :meth:`workbench.models.gaussian.GaussianMeanModel.gradient_noise_cumulants`); None means
    Gaussian gradient noise. They enter only the variance of φ̂(θ²).
    """
    mu = np.atleast_1d(np.asarray(posterior_mean, dtype=float))[None, :]
    e0 = np.atleast_1d(np.asarray(initial_error, dtype=float))[None, :]
    vz = np.atleast_1d(np.asarray(gradient_noise_variance, dtype=float))[None, :]
    third, fourth = (0.0, 0.0) if gradient_noise_cumulants is None else (
        np.atleast_1d(np.asarray(c, dtype=float))[None, :] for c in gradient_noise_cumulants)
    length = moments.checkpoints.astype(float)[:, None]

    def col(values):
        return values[:, None]

    with np.errstate(over="ignore", invalid="ignore"):
        theta_mean = mu + e0 * col(moments.sum_mean) / length
        theta_variance = (vz * col(moments.sum_variance_gradient)
                          + col(moments.sum_variance_thermal)) / length**2
        square_mean = (mu**2 + 2 * mu * e0 * col(moments.e_mean) / length
                       + e0**2 * col(moments.e_mean_sq) / length
                       + (vz * col(moments.e_variance_gradient)
                          + col(moments.e_variance_thermal)) / length)
        square_variance = _square_variance(moments, mu, e0, vz, third, fourth) / length**2
    return {
        "theta": {"mean": theta_mean, "variance": theta_variance},
        "theta_squared": {"mean": square_mean, "variance": square_variance},
    }


ERROR_SOURCES = ("exact_gradients", "staleness", "minibatch_noise", "interaction")


def error_sources(stale: FiniteMoments, fresh: FiniteMoments, posterior_mean, initial_error,
                  gradient_noise_variance, posterior_value, gradient_noise_cumulants=None,
                  ) -> dict[str, dict[str, np.ndarray]]:
    """Additive split of the exact bias and variance of φ̂_L by where the error comes from.

    With Q(staleness, V_ζ) the exact bias (E φ̂ - φ̄) or variance, the sources are
    exact_gradients = Q(fresh, 0): SGLD with fresh full-data gradients (initialisation
    transient, discretisation, and the chain's own Monte Carlo variance); staleness =
    Q(stale, 0) - Q(fresh, 0); minibatch_noise = Q(fresh, V) - Q(fresh, 0); interaction = the
    rest. They sum to Q(stale, V). Arrays ``(checkpoint, d, source)`` in :data:`ERROR_SOURCES`.
    "V" is the whole gradient noise: its variance and, if given, its higher cumulants.
    """
    vz = np.atleast_1d(np.asarray(gradient_noise_variance, dtype=float))
    noises = {"v": (vz, gradient_noise_cumulants), "0": (np.zeros_like(vz), None)}
    q = {(s, v): estimator_moments(m, posterior_mean, initial_error, *noises[v])
         for s, m in (("stale", stale), ("fresh", fresh)) for v in noises}
    out = {}
    for function, truth in posterior_value.items():
        out[function] = {}
        for moment in ("mean", "variance"):
            offset = truth if moment == "mean" else 0.0

            def value(key, function=function, moment=moment, offset=offset):
                return q[key][function][moment] - offset

            parts = [value(("fresh", "0")),
                     value(("stale", "0")) - value(("fresh", "0")),
                     value(("fresh", "v")) - value(("fresh", "0")),
                     value(("stale", "v")) - value(("stale", "0"))
                     - value(("fresh", "v")) + value(("fresh", "0"))]
            out[function]["bias" if moment == "mean" else "variance"] = np.stack(parts, axis=-1)
    return out


def spectral_radius(matrix: np.ndarray) -> float:
    return float(np.max(np.abs(np.linalg.eigvals(matrix))))


#: largest stacked size S whose i.i.d.-staleness stationary variance is solved: its stability
#: test is the spectral radius of an S²×S² dense matrix (about 1 s at 24, 13 s at 39 here);
#: uniform staleness up to τ = 22 fits
MAX_KRONECKER_SIZE = 24


def stationary_variance(dynamics: LinearDynamics, precision: float, gradient_noise_variance,
                        staleness: int = 0, probabilities=None) -> np.ndarray:
    """Stationary Var θ per coordinate; ``inf`` where the recursion is unstable.

    Constant staleness ``staleness`` (discrete Lyapunov equation), or i.i.d. staleness with
    ``P(τ = j) = probabilities[j]`` (mean-square recursion over the Kronecker products, whose
    S²×S² system is solved only up to S = :data:`MAX_KRONECKER_SIZE`; beyond, ``nan``: not
    computed, neither stable nor unstable).
    """
    vz = np.atleast_1d(np.asarray(gradient_noise_variance, dtype=float))
    if probabilities is None:
        system = StackedSystem(dynamics, precision, int(staleness), running_sum=False)
        a = system.transition(int(staleness))
        if spectral_radius(a) >= 1.0:
            return np.full(vz.shape, np.inf)
        parts = [scipy.linalg.solve_discrete_lyapunov(a, q)[0, 0]
                 for q in (system.gradient_noise, system.thermal_noise)]
    else:
        probabilities = np.asarray(probabilities, dtype=float)
        system = StackedSystem(dynamics, precision, probabilities.size - 1, running_sum=False)
        n = system.size
        if n > MAX_KRONECKER_SIZE:
            return np.full(vz.shape, np.nan)
        second_moment = sum(p * np.kron(system.transition(j), system.transition(j))
                            for j, p in enumerate(probabilities) if p > 0)
        if spectral_radius(second_moment) >= 1.0:
            return np.full(vz.shape, np.inf)
        lhs = np.eye(n * n) - second_moment
        parts = [np.linalg.solve(lhs, q.reshape(-1)).reshape(n, n)[0, 0]
                 for q in (system.gradient_noise, system.thermal_noise)]
    return vz * parts[0] + parts[1]


def is_stable(dynamics: LinearDynamics, precision: float, staleness: int) -> bool:
    """Whether the constant-staleness recursion has spectral radius below 1."""
    system = StackedSystem(dynamics, precision, int(staleness), running_sum=False)
    return spectral_radius(system.transition(int(staleness))) < 1.0
