"""pSGLD (seed 003 Algorithm 1, Li et al. 2016): exact one-step updates, stale replay, and the
stationary variance on the Gaussian mean.

pSGLD is not linear (G depends on the gradients), so the exact oracle does not cover it. Its
stationary moments are checked instead, with β = 0 and full gradients, where G = 1/(λ + |∇U|)
is a function of θ alone and the continuous-time targets are known exactly: exp(-U) with the
Γ correction, exp(-U)/G without it (psgld module docstring). The check is a long-run Monte
Carlo comparison: each replicate's time average of θ² over the second part of the run, the
error from the spread over replicates, against the exact value with a stated relative margin
(the discretisation bias at c = h√k = 0.05 is about c/2 ≈ 2.5 %, the margin 10 %; the
uncorrected chain's bias is 44 %). A frozen preconditioner is SGLD, bit for bit, so the exact
linear-Gaussian oracle of SGLD covers that case. With the defaults of seed 003 (β = 0.99,
λ = 10⁻⁵) and minibatch gradients, G hardly moves once v has settled, and the chain is compared
with the stale-SGLD oracle at the self-consistent mean preconditioner (an approximation, hence
again a 10 % margin).
"""

import math

import numpy as np
import pytest
from scipy import integrate

from bounds.checks import oracle_check
from bounds.verdict import HOLDS, VIOLATED, z_for_family
from simulators.static import constant_staleness, iid_staleness
from simulators.validation import InvalidParameter
from workbench.engine.replay import replay
from workbench.models.full_data import FullDataGradient
from workbench.oracles.linear_gaussian import dynamics_for, sgld_dynamics, stationary_variance
from workbench.samplers import PSGLD, SGLD, make_sampler

FAMILY_RATE = 1e-3  # per test: probability that a correct sampler fails it

THETA = np.array([[0.3, -1.2]])
GRADIENT = np.array([[2.0, -0.5]])
SECOND_MOMENT = np.array([[1.0, 4.0]])
ZERO = np.zeros_like(THETA)


def _by_hand(h, beta, lam, curvature=None):
    """One step, coordinate by coordinate, written from seed 003 Algorithm 1 lines 7-11."""
    position, moment = [], []
    for theta, g, v in zip(THETA[0], GRADIENT[0], SECOND_MOMENT[0], strict=True):
        v = beta * v + (1 - beta) * g * g
        G = 1 / (lam + math.sqrt(v))
        gamma = 0.0 if curvature is None else -(1 - beta) * curvature * G * G * g / math.sqrt(v)
        position.append(theta - h * G * g + h * gamma)
        moment.append(v)
    return np.array([position]), np.array([moment])


def test_one_step_without_noise_is_algorithm_1():
    h, beta, lam = 0.01, 0.9, 0.1
    sampler = PSGLD(h, decay=beta, regularizer=lam)
    state = sampler.step(sampler.init(THETA, SECOND_MOMENT), GRADIENT, ZERO)
    position, moment = _by_hand(h, beta, lam)
    np.testing.assert_allclose(state.second_moment, moment, rtol=1e-15)
    np.testing.assert_allclose(state.position, position, rtol=1e-14)
    assert state.steps == 1
    np.testing.assert_array_equal(sampler.gradient_point(state), state.position)


def test_one_step_with_the_gamma_correction():
    h, beta, lam, kappa = 0.01, 0.5, 0.1, 3.0
    sampler = PSGLD(h, decay=beta, regularizer=lam, correction=True, curvature=kappa)
    state = sampler.step(sampler.init(THETA, SECOND_MOMENT), GRADIENT, ZERO)
    position, _ = _by_hand(h, beta, lam, curvature=kappa)
    np.testing.assert_allclose(state.position, position, rtol=1e-14)
    without = PSGLD(h, decay=beta, regularizer=lam).step(
        sampler.init(THETA, SECOND_MOMENT), GRADIENT, ZERO)
    assert np.all(np.abs(state.position - without.position) > 1e-5)


def test_noise_enters_with_the_preconditioned_scale():
    h, beta, lam = 0.01, 0.9, 0.1
    noise = np.array([[1.0, -2.0]])
    sampler = PSGLD(h, decay=beta, regularizer=lam)
    start = sampler.init(THETA, SECOND_MOMENT)
    quiet = sampler.step(start, GRADIENT, ZERO)
    noisy = sampler.step(start, GRADIENT, noise)
    G = 1 / (lam + np.sqrt(beta * SECOND_MOMENT + (1 - beta) * GRADIENT**2))
    np.testing.assert_allclose(noisy.position - quiet.position, np.sqrt(2 * h * G) * noise,
                               rtol=1e-12)
    np.testing.assert_array_equal(noisy.second_moment, quiet.second_moment)


def test_first_step_from_rest_and_zero_gradient_are_finite():
    sampler = PSGLD(0.01, decay=0.99, regularizer=1e-5, correction=True, curvature=2.0)
    state = sampler.init(np.zeros((3, 1, 2)))
    gradient = np.array([0.0, 4.0])
    state = sampler.step(state, np.broadcast_to(gradient, (3, 1, 2)), np.zeros((3, 1, 2)))
    np.testing.assert_allclose(state.second_moment[0, 0], 0.01 * gradient**2)
    assert np.all(np.isfinite(state.position))
    assert np.all(state.position[..., 0] == 0.0)  # v = 0 and g = 0: no drift, Γ = 0


def test_preconditioner_freezes_after_adaptation_and_gamma_stops():
    h, beta, lam, kappa = 0.01, 0.5, 0.1, 3.0
    sampler = PSGLD(h, decay=beta, regularizer=lam, correction=True, curvature=kappa,
                    adaptation_steps=1)
    adapted = sampler.step(sampler.init(THETA, SECOND_MOMENT), GRADIENT, ZERO)
    frozen = sampler.step(adapted, GRADIENT, ZERO)
    np.testing.assert_array_equal(frozen.second_moment, adapted.second_moment)
    G = 1 / (lam + np.sqrt(adapted.second_moment))
    np.testing.assert_allclose(frozen.position, adapted.position - h * G * GRADIENT,
                               rtol=1e-14)


def test_frozen_preconditioner_c_is_stale_sgld_with_step_c_h_bit_for_bit(scalar_model):
    """λ = 0.5, v₀ = 2.25 give G = 1/(0.5 + 1.5) = 0.5 exactly: pSGLD frozen from the start is
    SGLD with step h/2 under the same stale schedule and seed (the engine advances SGLD in
    windows and steps pSGLD one update at a time: the two paths must still agree)."""
    h = 0.02 / scalar_model.precision
    schedule = iid_staleness(300, [0.2, 0.3, 0.5], seed=8, n_servers=2)
    runs = [replay(schedule, sampler, scalar_model.minibatch_gradient(), n_updates=300,
                   n_replicates=7, initial_position=0.8, seed=12, batch_size=10,
                   checkpoints=[50, 300])
            for sampler in (PSGLD(h, regularizer=0.5, adaptation_steps=0,
                                  initial_second_moment=2.25), SGLD(0.5 * h))]
    np.testing.assert_array_equal(runs[0].final_position, runs[1].final_position)
    for name in ("theta", "theta_squared"):
        np.testing.assert_array_equal(runs[0].averages[name], runs[1].averages[name])


def _second_half_variance(run, model, n_updates):
    """Per replicate and coordinate, the time average of (θ - μ)² over updates L/4..L, in
    units of the posterior variance; E θ = μ by symmetry, so E θ² - μ² is the variance."""
    quarter = n_updates // 4
    mean_square = run.averages["theta_squared"]
    late = (n_updates * mean_square[1] - quarter * mean_square[0]) / (n_updates - quarter)
    return ((late - model.posterior_mean**2) * model.precision).reshape(-1)


def _uncorrected_target_variance(lam_over_root_k: float) -> float:
    """Var of z under exp(-z²/2)(a + |z|), z = (θ - μ)√k: pSGLD without Γ at β = 0 targets
    exp(-U)/G = exp(-U)(λ + k|θ - μ|)."""
    a = lam_over_root_k

    def moment(power):
        return integrate.quad(lambda z: z**power * (a + abs(z)) * math.exp(-z * z / 2),
                              -30, 30)[0]

    return moment(2) / moment(0)


def test_beta_zero_stationary_variance_with_and_without_gamma(gaussian_model):
    """β = 0, full gradients, λ = √k, h = 0.05/√k, 200 replicates × 2 coordinates started at μ.

    Three comparisons (z for family-wise false-failure rate 10⁻³), relative margin 10 %:
    with Γ the variance is the posterior's (holds); without Γ it is not (violated: the negative
    control), and it is what exp(-U)/G predicts (≈ 1.444 s², holds).
    """
    model, n_updates = gaussian_model, 8000
    root_k = math.sqrt(model.precision)
    h = 0.05 / root_k
    z = z_for_family(FAMILY_RATE, 3)
    estimates = {}
    for correction in (True, False):
        sampler = PSGLD(h, decay=0.0, regularizer=root_k, correction=correction,
                        curvature=model.precision if correction else None)
        run = replay(constant_staleness(n_updates, 0), sampler, FullDataGradient(model),
                     n_updates=n_updates, n_replicates=200, initial_position=model.posterior_mean,
                     seed=5, batch_size=1, checkpoints=[n_updates // 4, n_updates])
        assert np.all(run.diverged_at < 0)
        values = _second_half_variance(run, model, n_updates)
        estimates[correction] = (values.mean(), values.std(ddof=1) / math.sqrt(values.size))

    def check(name, correction, expected):
        observed, error = estimates[correction]
        return oracle_check(name, observed, error, expected, z, relative=True, margin=0.1,
                            n_replicates=400)

    corrected = check("with Γ vs posterior", True, 1.0)
    uncorrected = check("without Γ vs posterior", False, 1.0)
    predicted = check("without Γ vs exp(-U)/G", False, _uncorrected_target_variance(1.0))
    assert corrected.verdict == HOLDS, corrected
    assert uncorrected.verdict == VIOLATED, uncorrected
    assert predicted.verdict == HOLDS, predicted


def _mean_preconditioner_variance(model, h, lam, noise_variance, staleness):
    """Stationary Var θ / s² of stale SGLD with step h Ḡ per coordinate, where Ḡ solves
    Ḡ = 1/(λ + √E g²) with E g² = k² Var θ + V_ζ (the gradient read at a stale point has the
    stationary variance too): the fixed point of pSGLD whose v has settled (β near 1)."""
    k = model.precision
    preconditioner = 1 / (lam + np.sqrt(k + noise_variance))
    for _ in range(50):
        variance = np.array([stationary_variance(sgld_dynamics(h * g), k, v, staleness)[0]
                             for g, v in zip(preconditioner, noise_variance, strict=True)])
        preconditioner = 1 / (lam + np.sqrt(k * k * variance + noise_variance))
    return variance * k


def test_seed_003_defaults_with_stale_minibatch_gradients_match_the_mean_preconditioner(
        gaussian_model):
    """β = 0.99, λ = 10⁻⁵, minibatch 10 (V_ζ ≈ 10⁵ ≫ k), staleness 2, h Ḡ k ≈ 0.19; 200
    replicates × 2 coordinates from μ with v₀ = k + V_ζ (a settled start: see the psgld module
    docstring on Γ at v = 0), 4,000 updates, the last three quarters averaged.

    Against stale SGLD at the mean preconditioner (≈ 17.5 s²; pSGLD does not correct the
    gradient noise), per coordinate, with and without Γ (which carries 1 - β and is negligible
    here): holds. Negative control: the same oracle with fresh gradients (≈ 12 s², what the run
    would give if the engine ignored the staleness) is violated. Six comparisons, z for
    family-wise false-failure rate 10⁻³, relative margin 10 %.
    """
    model, n_updates, tau, lam = gaussian_model, 4000, 2, 1e-5
    k = model.precision
    noise_variance = model.gradient_noise_variance(10)
    h = 0.2 * math.sqrt(k + noise_variance.mean()) / k
    stale = _mean_preconditioner_variance(model, h, lam, noise_variance, tau)
    fresh = _mean_preconditioner_variance(model, h, lam, noise_variance, 0)
    assert np.all(fresh < 0.8 * stale)
    z = z_for_family(FAMILY_RATE, 6)
    verdicts = []
    for correction in (False, True):
        sampler = PSGLD(h, decay=0.99, regularizer=lam, correction=correction,
                        curvature=k if correction else None,
                        initial_second_moment=float(k + noise_variance.mean()))
        run = replay(constant_staleness(n_updates, tau), sampler, model.minibatch_gradient(),
                     n_updates=n_updates, n_replicates=200, initial_position=model.posterior_mean,
                     seed=5, batch_size=10, checkpoints=[n_updates // 4, n_updates])
        assert np.all(run.diverged_at < 0)
        values = _second_half_variance(run, model, n_updates).reshape(200, 2)
        for coordinate in range(2):
            observed = values[:, coordinate].mean()
            error = values[:, coordinate].std(ddof=1) / math.sqrt(200)
            verdicts.append((oracle_check(
                f"Γ={correction} coordinate {coordinate} vs stale oracle", observed, error,
                stale[coordinate], z, relative=True, margin=0.1, n_replicates=200), HOLDS))
            if not correction:
                verdicts.append((oracle_check(
                    f"coordinate {coordinate} vs fresh oracle", observed, error,
                    fresh[coordinate], z, relative=True, margin=0.1, n_replicates=200),
                    VIOLATED))
    wrong = [verdict for verdict, expected in verdicts if verdict.verdict != expected]
    assert not wrong, wrong


@pytest.mark.parametrize("field, kwargs", [
    ("decay", {"decay": 1.0}),
    ("decay", {"decay": -0.1}),
    ("decay", {"decay": 1.5}),
    ("decay", {"decay": float("nan")}),
    ("regularizer", {"regularizer": 0.0}),
    ("regularizer", {"regularizer": -1e-5}),
    ("curvature", {"correction": True}),
    ("curvature", {"curvature": 2.0}),
    ("correction", {"correction": 1}),
    ("adaptation_steps", {"adaptation_steps": -1}),
    ("initial_second_moment", {"initial_second_moment": -1.0}),
])
def test_bad_parameters_are_refused_by_name(field, kwargs):
    with pytest.raises(InvalidParameter) as error:
        PSGLD(0.01, **kwargs)
    assert error.value.field == field
    if field == "decay" and math.isfinite(kwargs["decay"]):
        assert "must lie in [0, 1)" in str(error.value)
    with pytest.raises(InvalidParameter) as error:
        make_sampler("psgld", 0.01, **kwargs)
    assert error.value.field == field


def test_decay_zero_is_allowed_and_describe_has_no_exact_oracle():
    sampler = PSGLD(0.01, decay=0.0, correction=True, curvature=1.0, adaptation_steps=5)
    description = sampler.describe()
    assert description["sampler"] == "psgld" and description["decay"] == 0.0
    assert description["correction"] == 1 and description["adaptation_steps"] == 5
    with pytest.raises(InvalidParameter, match="has no exact linear-Gaussian oracle"):
        dynamics_for(description)
