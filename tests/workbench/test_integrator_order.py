"""``integrator-order`` (issue 16): the phase-space view of SGHMC, the exact moments of
φ̂_L(θ²) and φ̂_L(p²) with full gradients, the optimal step and its rates, and the shipped
study's verdicts with their negative controls (the study layer's phase-space point, its
``oracle`` and ``rate`` checks against the registry bounds).

The oracle is tested against the sampler code, not against its own matrices: the one-step
transition is read off :class:`workbench.samplers.SGHMC` with the noise off, the covariance of
(x_1..x_L) is unrolled as an explicit L×L matrix, and φ̂_L's moments follow from it by the
Gaussian fourth-moment identity.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from bounds import registry
from bounds.checks import oracle_check, rate_check
from bounds.verdict import HOLDS, VIOLATED
from simulators.seeding import generator
from simulators.static import iid_staleness
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.core.phi import THETA, THETA_SQUARED
from workbench.engine.replay import replay
from workbench.oracles.linear_gaussian import dynamics_for
from workbench.oracles.phase_space import (
    asymptotic_mse,
    asymptotic_parts,
    optimal_step,
    square_moments,
)
from workbench.run.runner import run_experiment
from workbench.samplers import SGHMC, SGLD
from workbench.samplers.phase_space import PhaseSpace
from workbench.studies.gaussian_judgements import bound_rate as study_bound_rate

THETA0 = np.array([[0.3, -1.2]])
MOMENTUM = np.array([[0.7, 0.1]])
GRADIENT = np.array([[2.0, -0.5]])
INTEGRATORS = ("euler", "splitting")


def bound_rate(order: int) -> float:
    """The exponent in L at the optimal step of the registry's fixed-step bound of order K,
    as a study's rate check derives it."""
    return study_bound_rate(registry.get(f"chen2015-mse-fixed-k{order}"))[0]


# ---------------------------------------------------------------- the phase-space view

@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_phase_space_one_step_without_noise_records_theta_and_momentum(integrator):
    h, d = 0.1, 2.0
    plain, viewed = SGHMC(h, d, integrator), PhaseSpace(SGHMC(h, d, integrator))
    start = viewed.init(THETA0)
    np.testing.assert_array_equal(viewed.position(start), np.concatenate([THETA0, 0 * THETA0],
                                                                         axis=-1))
    start = plain.init(THETA0, MOMENTUM)
    np.testing.assert_array_equal(viewed.gradient_point(start), plain.gradient_point(start))
    state = viewed.step(start, GRADIENT, np.zeros_like(THETA0))
    if integrator == "euler":  # seed 001 Algorithm 1
        p = (1 - d * h) * MOMENTUM - h * GRADIENT
        theta = THETA0 + h * p
    else:  # docs/math.md §3: A B O B A
        half = THETA0 + 0.5 * h * MOMENTUM
        p = math.exp(-d * h / 2) * (math.exp(-d * h / 2) * MOMENTUM - h * GRADIENT)
        theta = half + 0.5 * h * p
    np.testing.assert_allclose(viewed.position(state), np.concatenate([theta, p], axis=-1),
                               rtol=1e-14)
    assert viewed.order == plain.order


def test_phase_space_refuses_a_sampler_without_momentum():
    with pytest.raises(InvalidParameter) as error:
        PhaseSpace(SGLD(0.1))
    assert error.value.field == "sampler"


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_replay_through_the_phase_space_view_is_the_plain_replay_bit_for_bit(
        integrator, gaussian_model):
    """Reduction: recording (θ, p) changes nothing about θ, under stale gradients too."""
    schedule = iid_staleness(300, [0.5, 0.3, 0.2], seed=5)
    runs = [replay(schedule, sampler, gaussian_model.minibatch_gradient(), n_updates=300,
                   n_replicates=6, initial_position=0.1, seed=11, batch_size=10,
                   test_functions=(THETA, THETA_SQUARED), checkpoints=[100, 300], thin=50,
                   replicate_block=4)
            for sampler in (SGHMC(1e-3, 5.0, integrator),
                            PhaseSpace(SGHMC(1e-3, 5.0, integrator)))]
    plain, viewed = runs
    d = gaussian_model.dim
    for name in (THETA.name, THETA_SQUARED.name):
        np.testing.assert_array_equal(viewed.averages[name][..., :d], plain.averages[name])
    np.testing.assert_array_equal(viewed.draws[..., :d], plain.draws)
    np.testing.assert_array_equal(viewed.final_position[..., :d], plain.final_position)
    np.testing.assert_array_equal(viewed.diverged_at, plain.diverged_at)
    assert np.all(viewed.averages[THETA_SQUARED.name][..., d:] > 0)  # p² was recorded


# ---------------------------------------------------------------- the exact moments

def _unrolled_square_moments(integrator, h, friction, k, coordinate, length, centre):
    """E and Var of φ̂_L(x²) from rest at the mean, by brute force from the sampler code:
    A and c read off one noise-free / gradient-free SGHMC step, x_l = Σ_j sᵀA^{l−j}c ξ_j
    unrolled into an L×L matrix B, C = BBᵀ; then for Σ(m + x_l)² with Gaussian x:
    mean L m² + tr C and variance 4 m² 1ᵀC1 + 2 tr C²."""
    sampler = SGHMC(h, friction, integrator)

    def one_step(theta, momentum, noise):
        state = sampler.init(np.array([[theta]]), np.array([[momentum]]))
        gradient = k * sampler.gradient_point(state)
        new = sampler.step(state, gradient, np.array([[noise]]))
        return np.array([new.position[0, 0], new.momentum[0, 0]])

    transition = np.column_stack([one_step(1.0, 0.0, 0.0), one_step(0.0, 1.0, 0.0)])
    thermal = one_step(0.0, 0.0, 1.0)
    select = np.array([1.0, 0.0]) if coordinate == "theta" else np.array([0.0, 1.0])
    gains, z = [], thermal
    for _ in range(length):
        gains.append(select @ z)
        z = transition @ z
    b = np.zeros((length, length))
    for row in range(length):
        b[row, :row + 1] = gains[row::-1]
    c = b @ b.T
    mean = (length * centre**2 + np.trace(c)) / length
    variance = (4 * centre**2 * c.sum() + 2 * np.sum(c * c)) / length**2
    return mean, variance


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize(("coordinate", "centre"), [("theta", 0.7), ("momentum", 0.0)])
def test_square_moments_equal_the_unrolled_covariance(integrator, coordinate, centre):
    h, friction, k = 0.3, 1.5, 2.0
    dynamics = dynamics_for({"sampler": f"sghmc-{integrator}", "step_size": h,
                             "friction": friction})
    lengths = [1, 7, 40]
    mean, variance = square_moments(dynamics, k, coordinate, lengths, centre)
    for i, length in enumerate(lengths):
        expected = _unrolled_square_moments(integrator, h, friction, k, coordinate, length,
                                            centre)
        np.testing.assert_allclose([mean[i], variance[i]], expected, rtol=1e-10)


def test_square_moments_negative_control_the_other_integrator():
    """Euler's φ̂_L(p²) is biased at O(h): splitting's oracle does not describe it."""
    h, friction, k = 0.3, 1.5, 2.0
    splitting = dynamics_for({"sampler": "sghmc-splitting", "step_size": h,
                              "friction": friction})
    mean, _ = square_moments(splitting, k, "momentum", [40])
    euler_mean, _ = _unrolled_square_moments("euler", h, friction, k, "momentum", 40, 0.0)
    assert abs(euler_mean - mean[0]) > 0.05


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_asymptotic_parts_are_the_limits_of_the_finite_moments(integrator):
    """E φ̂_L → the stationary value and L·Var φ̂_L → V with an O(1/L) transient: doubling L
    from 10⁴ halves both gaps (ratio in [0.45, 0.55]), and they are already below 1 %. A
    wrong limit would leave a gap that does not shrink."""
    dynamics = dynamics_for({"sampler": f"sghmc-{integrator}", "step_size": 0.1,
                             "friction": 3.0})
    lengths = np.array([10_000, 20_000])
    for coordinate in ("theta", "momentum"):
        stationary, limit, truth = asymptotic_parts(dynamics, 1.0, coordinate)
        assert truth == 1.0
        mean, variance = square_moments(dynamics, 1.0, coordinate, lengths)
        for gap in (mean - stationary, lengths * variance / limit - 1):
            assert np.all(np.abs(gap) < 1e-2)
            assert 0.45 < gap[1] / gap[0] < 0.55


def test_asymptotic_parts_of_theta_are_the_closed_form_stationary_variances():
    h, d, k = 0.1, 3.0, 1.0
    for integrator in INTEGRATORS:
        exact = registry.get(f"exact-sghmc-{integrator}-stationary-variance").evaluate(
            posterior_variance=1 / k, step_size=h, friction=d, gradient_noise_variance=0.0)
        dynamics = dynamics_for({"sampler": f"sghmc-{integrator}", "step_size": h,
                                 "friction": d})
        assert asymptotic_parts(dynamics, k, "theta")[0] == pytest.approx(exact, rel=1e-9)


def test_unstable_dynamics_have_infinite_asymptotic_mse():
    dynamics = dynamics_for({"sampler": "sghmc-euler", "step_size": 5.0, "friction": 3.0})
    assert asymptotic_mse(dynamics, 1.0, "momentum", 1000) == math.inf


@pytest.mark.parametrize(("integrator", "order"), [("euler", 1), ("splitting", 2)])
def test_optimal_step_minimises_and_attains_the_bound_rate(integrator, order):
    """At h*(L) the exact asymptotic MSE is minimal, and along L = 10⁵…10⁷ it falls at the
    bound's rate −2K/(2K + 1) (within 0.01: the next order is O(h*) ≈ L^(−1/(2K+1))).
    Negative control: the Euler slope is not −4/5."""
    def dynamics(step):
        return dynamics_for({"sampler": f"sghmc-{integrator}", "step_size": step,
                             "friction": 3.0})

    lengths = np.array([10**5, 10**6, 10**7])
    steps = [optimal_step(dynamics, 1.0, "momentum", int(n), 1.5) for n in lengths]
    mse = [asymptotic_mse(dynamics(h), 1.0, "momentum", int(n))
           for h, n in zip(steps, lengths, strict=True)]
    for h, n, best in zip(steps, lengths, mse, strict=True):
        for factor in (0.9, 1.1):
            assert asymptotic_mse(dynamics(factor * h), 1.0, "momentum", int(n)) > best
    slope = np.polyfit(np.log(lengths), np.log(mse), 1)[0]
    assert slope == pytest.approx(bound_rate(order), abs=0.01)
    if integrator == "euler":
        assert abs(slope - bound_rate(2)) > 0.1


def test_bound_rates_are_the_registered_exponents():
    """−2K/(2K + 1), the exponents the removed module read as fractions, to the last bit."""
    assert (bound_rate(1), bound_rate(2)) == (float(Fraction(-2, 3)), float(Fraction(-4, 5)))


# ---------------------------------------------------------------- the shipped study

@pytest.mark.parametrize(("overrides", "field"), [
    ({"iterations": [0, 64]}, "n_iterations"),
    ({"iterations": [64, 64]}, "iterations"),
    ({"friction": 0.0}, "friction"),
    ({"n_data": 0}, "n_data"),
    ({"largest_step": -1.0}, "largest_step"),
    ({"n_replicates": 1}, "n_replicates"),
    ({"integrator": ["euler", "leapfrog"]}, "integrator[1]"),
    ({"false_failure_rate": 1.5}, "false_failure_rate"),
])
def test_bad_configuration_names_the_field(overrides, field):
    with pytest.raises(InvalidParameter) as error:
        experiments.get("integrator-order").configure(overrides)
    assert error.value.field == field


@pytest.fixture(scope="module")
def quick():
    """The ``--quick`` configuration: the one whose verdicts the issue asks for."""
    experiment = experiments.get("integrator-order")
    return run_experiment(experiment, experiment.configure(experiment.quick), seed=2016)


def test_quick_verdicts_tell_the_integrators_apart(quick):
    verdicts = {v.check: v for v in experiments.get("integrator-order").checks(quick)}
    oracle = [v for v in verdicts.values() if v.kind == "oracle"]
    assert len(oracle) == 3 * 2 * 4
    assert all(v.verdict == HOLDS for v in oracle), [v for v in oracle if v.verdict != HOLDS]
    assert verdicts["rate/euler/momentum_squared"].verdict == HOLDS
    assert verdicts["rate/splitting/momentum_squared"].verdict == HOLDS
    control = verdicts["rate/euler-against-k2/momentum_squared"]
    assert control.verdict == VIOLATED  # the built-in negative control
    assert control.evidence["exact_slope"] > -0.72  # Euler's own exact rate, not −4/5
    assert not quick["diverged"].any()


def test_oracle_negative_control_measured_euler_against_splittings_oracle(quick):
    """The p² bias of the Euler runs, judged against the splitting runs' exact bias at the
    same L (its own step differs, but so does the order): violated at every L."""
    for length in quick["iterations"].values:
        euler = quick.sel(integrator="euler", iterations=length,
                          test_function="momentum_squared")
        splitting = quick.sel(integrator="splitting", iterations=length,
                              test_function="momentum_squared")
        verdict = oracle_check("control", euler["bias"], euler["bias_se"],
                               splitting["exact_bias"], 4.0, "", n_replicates=3000)
        assert verdict.verdict == VIOLATED, verdict


def test_rate_negative_control_splitting_against_a_steeper_exponent(quick):
    at = quick.sel(integrator="splitting", test_function="momentum_squared")
    samples = at["squared_error"].transpose("iterations", "replicate").values
    verdict = rate_check("control", quick["iterations"].values, samples, -1.0, 4.0,
                         generator(3, "control"), statistic="mean", paired=True,
                         n_resamples=500, margin=0.05)
    assert verdict.verdict == VIOLATED


def test_figure_is_written(quick, tmp_path):
    [path] = experiments.get("integrator-order").figures(quick, tmp_path)
    assert path.exists() and path.stat().st_size > 10_000
