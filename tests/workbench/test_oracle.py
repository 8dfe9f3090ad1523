"""The exact oracle: closed forms, the fresh-SGLD finite-L formulas, and Monte Carlo agreement.

Monte Carlo comparisons use ``bounds.checks.oracle_check`` with a Bonferroni z: each test
names its family-wise false-failure rate (the chance that a correct sampler and a correct
oracle fail the test) and the number of comparisons it makes.
"""

import math

import numpy as np
import pytest

from bounds import registry
from bounds.checks import oracle_check
from bounds.verdict import HOLDS, VIOLATED, z_for_family
from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.static import constant_staleness, iid_staleness
from workbench.engine.replay import replay
from workbench.oracles.linear_gaussian import (
    dynamics_for,
    estimator_moments,
    finite_moments,
    is_stable,
    sghmc_euler_dynamics,
    sghmc_splitting_dynamics,
    sgld_dynamics,
    stationary_variance,
)
from workbench.samplers import SGHMC, SGLD
from workbench.stats.estimators import summarize

FAMILY_RATE = 1e-3  # per test: probability that a correct system fails it


def test_lyapunov_equals_sgld_closed_form():
    for s2, h, v in ((1e-3, 1e-4, 1e5), (1.0, 0.3, 0.0), (2.0, 1.0, 3.0)):
        exact = registry.get("exact-sgld-stationary-variance").evaluate(
            posterior_variance=s2, step_size=h, gradient_noise_variance=v)
        np.testing.assert_allclose(stationary_variance(sgld_dynamics(h), 1 / s2, v), exact,
                                   rtol=1e-10)


def test_lyapunov_equals_sghmc_euler_closed_form():
    for s2, h, d, v in ((1.0, 0.01, 2.0, 0.5), (0.5, 0.1, 1.0, 0.0), (1e-3, 1e-3, 10.0, 1e5)):
        exact = registry.get("exact-sghmc-euler-stationary-variance").evaluate(
            posterior_variance=s2, step_size=h, friction=d, gradient_noise_variance=v)
        np.testing.assert_allclose(stationary_variance(sghmc_euler_dynamics(h, d), 1 / s2, v),
                                   exact, rtol=1e-9)


def test_lyapunov_equals_sghmc_splitting_closed_form():
    for s2, h, d, v in ((1.0, 0.04, 2.0, 0.5), (0.3, 0.01, 2.0, 5.0), (1.0, 0.2, 0.5, 0.0)):
        exact = registry.get("exact-sghmc-splitting-stationary-variance").evaluate(
            posterior_variance=s2, step_size=h, friction=d, gradient_noise_variance=v)
        np.testing.assert_allclose(
            stationary_variance(sghmc_splitting_dynamics(h, d), 1 / s2, v), exact, rtol=1e-12)


@pytest.mark.parametrize("dynamics, order", [
    (lambda h, d: sgld_dynamics(h), 1),
    (sghmc_splitting_dynamics, 2),
    # Seed 001's Euler SGHMC updates θ with the new momentum (symplectic Euler); on a
    # Gaussian its position variance is second-order accurate, although the scheme is a
    # first-order integrator in general: Var_∞/s² = (4 - 2Dh)/(4 - 2Dh - h²/s²).
    (sghmc_euler_dynamics, 2),
])
def test_stationary_variance_error_order(dynamics, order):
    """With exact gradients (V = 0), Var_∞ - s² = O(h^order): halving h divides it by 2^order."""
    gaps = [abs(stationary_variance(dynamics(h, 2.0), 1.0, 0.0)[0] - 1.0)
            for h in (0.04, 0.02, 0.01)]
    ratios = np.array(gaps[:-1]) / np.array(gaps[1:])
    np.testing.assert_allclose(ratios, 2.0**order, rtol=0.05)


@pytest.mark.parametrize("tau", [0, 1, 2, 5, 10])
def test_stale_expansion_gap_shrinks_like_c_cubed(tau):
    """The registered second-order expansion of 2cG against the Lyapunov solution: halving c
    divides the gap by 2³ (within 7 to 9), so the expansion is exact to second order."""
    expansion = registry.get("exact-stale-sgld-second-order")
    gaps = []
    for c in (0.02, 0.01, 0.005):
        g = stationary_variance(sgld_dynamics(c), 1.0, 0.0, staleness=tau)[0] / (2 * c)
        gaps.append(abs(2 * c * g - float(expansion.evaluate(relative_step=c, staleness=tau))))
    ratios = np.array(gaps[:-1]) / np.array(gaps[1:])
    assert np.all((ratios > 7.0) & (ratios < 9.0)), ratios


@pytest.mark.parametrize("tau", [0, 1, 2, 5, 10])
def test_stability_limit_of_stale_sgld(tau):
    limit = float(registry.get("exact-stale-sgld-stability-limit").evaluate(staleness=tau))
    assert is_stable(sgld_dynamics(0.99 * limit), 1.0, tau)
    assert not is_stable(sgld_dynamics(1.01 * limit), 1.0, tau)


def test_stacked_recursion_reproduces_the_fresh_sgld_finite_length_formulas():
    """docs/math.md §7, staleness 0: the registered bias, Var φ̂(θ) and E φ̂(θ²) closed forms."""
    s2, h, v, mu, e0 = 0.5, 0.05, 2.0, 0.3, 1.7
    lengths = np.array([1, 2, 7, 40, 300])
    moments = estimator_moments(
        finite_moments(sgld_dynamics(h), 1 / s2, np.zeros(300, dtype=int), lengths), mu, e0, v)
    common = {"posterior_variance": s2, "step_size": h, "n_iterations": lengths}
    bias = registry.get("exact-sgld-finite-bias").evaluate(initial_error=e0, **common)
    variance = registry.get("exact-sgld-finite-variance").evaluate(
        gradient_noise_variance=v, **common)
    square = registry.get("exact-sgld-finite-square-mean").evaluate(
        gradient_noise_variance=v, initial_error=e0, posterior_mean=mu, **common)
    np.testing.assert_allclose(moments["theta"]["mean"][:, 0], mu + bias, rtol=1e-12)
    np.testing.assert_allclose(moments["theta"]["variance"][:, 0], variance, rtol=1e-10)
    np.testing.assert_allclose(moments["theta_squared"]["mean"][:, 0], square, rtol=1e-12)


def _agreement(model, schedule, sampler, n_updates, checkpoints, replicates=400,
               replacement=True, batch_size=10, theta0=0.6):
    """Oracle checks for E φ̂(θ), Var φ̂(θ), E φ̂(θ²) at each checkpoint and coordinate."""
    run = replay(schedule, sampler, model.minibatch_gradient(), n_updates=n_updates,
                 n_replicates=replicates, initial_position=theta0, seed=77,
                 batch_size=batch_size, replacement=replacement, checkpoints=checkpoints)
    assert np.all(run.diverged_at < 0)
    import xarray as xr

    mu, s2 = model.posterior_mean, model.posterior_variance
    exact = estimator_moments(
        finite_moments(dynamics_for(sampler.describe()), model.precision,
                       schedule.update_staleness(n_updates)[:, 0], np.asarray(checkpoints)),
        mu, theta0 - mu, model.gradient_noise_variance(batch_size, replacement))
    comparisons = []
    for name, truth in (("theta", mu), ("theta_squared", mu**2 + s2)):
        values = xr.DataArray(run.averages[name][:, :, 0, :],
                              dims=("checkpoint", "replicate", "component"))
        summary = summarize(values, xr.DataArray(truth, dims="component"))
        comparisons.append((name, "mean", summary["mean"].values, summary["bias_se"].values))
        if name == "theta":
            comparisons.append((name, "variance", summary["variance"].values,
                                summary["variance_se"].values))
    n = sum(values.size for *_, values, _ in comparisons)
    z = z_for_family(FAMILY_RATE, n)
    replicates = run.averages["theta"].shape[1]
    verdicts = [oracle_check(f"{name}/{moment}/{index}", observed[index], error[index],
                             exact[name][moment][index], z, n_replicates=replicates,
                             relative=moment == "variance")
                for name, moment, observed, error in comparisons
                for index in np.ndindex(observed.shape)]
    return verdicts


def _assert_all_hold(verdicts):
    failed = [(v.check, v.observed, v.expected, v.mc_error) for v in verdicts
              if v.verdict != HOLDS]
    assert not failed, failed


def test_stale_sgld_constant_staleness_matches_oracle_in_two_dimensions(gaussian_model):
    tau, n_updates = 5, 2000
    h = 0.5 / tau / gaussian_model.precision  # c·τ = 0.5
    _assert_all_hold(_agreement(gaussian_model, constant_staleness(n_updates, tau), SGLD(h),
                                n_updates, [10, 200, n_updates]))


def test_stale_sgld_iid_staleness_without_replacement_matches_oracle(scalar_model):
    n_updates = 1500
    schedule = iid_staleness(n_updates, [0.1, 0.2, 0.3, 0.4], seed=4)
    h = 0.15 / scalar_model.precision
    _assert_all_hold(_agreement(scalar_model, schedule, SGLD(h), n_updates, [50, n_updates],
                                replacement=False, batch_size=50))


def test_stale_sgld_on_a_simulated_asynchronous_schedule_matches_oracle(scalar_model):
    n_updates = 1500
    system = AsyncServerSystem(6, WorkerTiming(LatencyModel("exponential", 1.0),
                                               straggler_probability=0.1,
                                               straggler_slowdown=4.0))
    schedule = system.simulate(n_updates, seed=21)
    assert schedule.update_staleness().max() > 6
    h = 0.05 / scalar_model.precision
    _assert_all_hold(_agreement(scalar_model, schedule, SGLD(h), n_updates, [100, n_updates]))


@pytest.mark.parametrize("integrator", ["euler", "splitting"])
def test_stale_sghmc_matches_oracle(scalar_model, integrator):
    n_updates = 3000
    sampler = SGHMC(0.003, 5.0, integrator)
    _assert_all_hold(_agreement(scalar_model, constant_staleness(n_updates, 3), sampler,
                                n_updates, [300, n_updates]))


@pytest.mark.parametrize("tau", [5, 10])
def test_fresh_gradients_are_caught_by_the_stale_oracle(scalar_model, tau):
    """Negative control: a sampler that silently ignores the staleness is `violated`, while
    the honest stale sampler on the same settings and seed holds. The margin is half the
    exact effect of staleness on E φ̂(θ²): the check is meant to see the staleness."""
    n_updates = 1000 * tau
    h = 0.5 / tau / scalar_model.precision
    stale = constant_staleness(n_updates, tau)
    model = scalar_model
    mu = model.posterior_mean

    def exact_mean(schedule):
        return estimator_moments(
            finite_moments(sgld_dynamics(h), model.precision, schedule.update_staleness()[:, 0],
                           np.array([n_updates])), mu, 1.0 - mu,
            model.gradient_noise_variance(10))["theta_squared"]["mean"][-1, 0]

    expected = exact_mean(stale)
    margin = 0.5 * abs(expected - exact_mean(stale.without_staleness()))
    verdicts = {}
    for label, schedule in (("stale", stale), ("fresh", stale.without_staleness())):
        run = replay(schedule, SGLD(h), model.minibatch_gradient(), n_updates=n_updates,
                     n_replicates=1000, initial_position=1.0, seed=3, batch_size=10,
                     checkpoints=[n_updates])
        estimates = run.averages["theta_squared"][-1, :, 0, 0]
        verdicts[label] = oracle_check(
            f"{label} vs stale oracle", estimates.mean(),
            estimates.std(ddof=1) / math.sqrt(estimates.size), expected,
            z_for_family(FAMILY_RATE, 2), n_replicates=estimates.size, margin=margin)
    assert verdicts["stale"].verdict == HOLDS, verdicts["stale"]
    assert verdicts["fresh"].verdict == VIOLATED, verdicts["fresh"]


def test_iid_staleness_stationary_variance_matches_monte_carlo(scalar_model):
    """Lyapunov mean-square value for i.i.d. staleness vs runs over many staleness draws.

    Each of 400 schedules (independent staleness sequences) drives 5 replicates started at the
    posterior mean, so the conditional mean is μ for every schedule and the variance of the
    final positions over all 2000 runs is the staleness-averaged stationary variance.
    """
    probabilities = [0.25, 0.25, 0.25, 0.25]
    n_updates = 400
    h = 0.2 / scalar_model.precision
    finals = []
    for schedule_seed in range(400):
        run = replay(iid_staleness(n_updates, probabilities, seed=schedule_seed), SGLD(h),
                     scalar_model.minibatch_gradient(), n_updates=n_updates, n_replicates=5,
                     initial_position=scalar_model.posterior_mean, seed=1000 + schedule_seed,
                     batch_size=10, checkpoints=[n_updates])
        finals.append(run.final_position[:, 0, 0])
    final = np.concatenate(finals)
    sample = final.var(ddof=1)
    centred = final - final.mean()
    error = math.sqrt((np.mean(centred**4) - sample**2) / final.size)
    lyapunov = stationary_variance(sgld_dynamics(h), scalar_model.precision,
                                   scalar_model.gradient_noise_variance(10),
                                   probabilities=probabilities)[0]
    constant = stationary_variance(sgld_dynamics(h), scalar_model.precision,
                                   scalar_model.gradient_noise_variance(10), staleness=3)[0]
    # relative margin 10 %: the stationary variances of i.i.d. and constant staleness differ
    # by more than that, and 2,000 runs measure the variance to about 3 %
    verdict = oracle_check("iid stationary variance", sample, error, lyapunov,
                           z_for_family(FAMILY_RATE, 1), relative=True, margin=0.1)
    assert verdict.verdict == HOLDS, verdict
    # and the check has the power to tell i.i.d. staleness from constant staleness 3
    assert oracle_check("constant", sample, error, constant, z_for_family(FAMILY_RATE, 1),
                        relative=True, margin=0.1).verdict == VIOLATED
