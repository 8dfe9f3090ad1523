"""The reference chain on the Gaussian mean, where the exact posterior is known (docs/math.md §7).

Every comparison is a z-test at z = 4 (two-sided false-failure rate 6.3e-5 each; the largest
family here, eight comparisons, fails a correct reference with probability below 6e-4), with the
reference's own stated Monte Carlo error: no seed is tuned to pass.
"""

import numpy as np
import pytest

from bounds.checks import oracle_check
from bounds.verdict import HOLDS, VIOLATED
from simulators.seeding import generator
from workbench.core.phi import THETA, THETA_SQUARED
from workbench.models.gaussian import GaussianMeanModel
from workbench.reference import ReferenceSettings, reference_check
from workbench.reference.stored import compute_reference

Z = 4.0
#: 8 chains × 5000 kept draws: the variance's relative MC error is about 1 % (ESS ≈ 2 · 10⁴)
SETTINGS = ReferenceSettings(chains=8, draws=5_000, warmup=1_000)


class _Tempered:
    """A deliberately wrong reference target: U/1.1, whose posterior (for the Gaussian mean)
    has the same mean and 1.1 times the variance."""

    def __init__(self, model, factor):
        self.model, self.factor, self.dim = model, factor, model.dim

    def potential(self, theta):
        return self.model.potential(theta) / self.factor

    def potential_gradient(self, theta):
        return self.model.potential_gradient(theta) / self.factor


@pytest.fixture(scope="module")
def model():
    return GaussianMeanModel.generate(generator(31, "test-data"), 200, dim=2, true_mean=1.0)


@pytest.fixture(scope="module")
def reference(model):
    return compute_reference(model, [THETA, THETA_SQUARED], SETTINGS, seed=7)


@pytest.fixture(scope="module")
def wrong_reference(model):
    return compute_reference(_Tempered(model, 1.1), [THETA, THETA_SQUARED], SETTINGS, seed=8)


def exact(model, statistic, function):
    mean, variance = model.posterior_mean, model.posterior_variance
    if function == "theta":
        return mean if statistic == "mean" else np.full(model.dim, variance)
    second = mean**2 + variance  # E θ², and Var θ² = 4μ²s² + 2s⁴ for a Gaussian
    return second if statistic == "mean" else 4 * mean**2 * variance + 2 * variance**2


def verdicts(reference, model, statistics, functions=("theta",)):
    """oracle_check of every reference value against the exact one, margin 0: ``violated``
    exactly when |reference - exact| > Z·σ_ref."""
    out = {}
    for statistic in statistics:
        for function in functions:
            values = reference[statistic].sel(test_function=function).values
            errors = reference[f"{statistic}_mc_error"].sel(test_function=function).values
            for j, (value, error, target) in enumerate(
                    zip(values, errors, exact(model, statistic, function), strict=True)):
                out[(statistic, function, j)] = oracle_check(
                    f"{statistic}/{function}[{j}]", value, error, target, Z, margin=0.0)
    return out


def test_reference_reproduces_the_exact_posterior_within_its_own_error(reference, model):
    results = verdicts(reference, model, ("mean", "variance"), ("theta", "theta_squared"))
    assert all(v.verdict != VIOLATED for v in results.values()), {
        k: (v.observed, v.expected, v.mc_error) for k, v in results.items()}
    assert float(reference["rhat"].max()) < 1.01
    assert 0.45 < reference.attrs["mean_acceptance_rate"] < 0.7  # dual averaging's 0.574
    # the stated error is what makes the comparison meaningful: ~1 % of the variance here
    relative = reference["variance_mc_error"] / reference["variance"]
    assert float(relative.sel(test_function="theta").max()) < 0.02


def test_a_reference_with_variance_times_1_1_is_caught(wrong_reference, model):
    """Power: the variance is off by 10 % and its relative error is about 1.1 %, so the
    difference sits about 9σ away and is declared ``violated`` (beyond 4σ) with probability
    about Φ(5) ≈ 1 - 3e-7 per coordinate; the mean, which tempering leaves unchanged, is not."""
    results = verdicts(wrong_reference, model, ("mean", "variance"))
    assert all(results[("variance", "theta", j)].verdict == VIOLATED for j in range(2))
    assert all(results[("mean", "theta", j)].verdict != VIOLATED for j in range(2))


def test_reference_check_decides_a_run_against_the_reference(reference, wrong_reference,
                                                             model):
    """An exact "run" (σ_run = 0) against the correct reference holds within 10 % and is
    violated at margin 0 against the wrong one (their variances differ by 10 %)."""
    variance = model.posterior_variance
    correct = reference_check("variance", variance, 0.0, reference, "theta", 0, Z,
                              statistic="variance", relative=True, margin=0.1)
    assert correct.verdict == HOLDS
    wrong = reference_check("variance", variance, 0.0, wrong_reference, "theta", 0, Z,
                            statistic="variance", relative=True, margin=0.0)
    assert wrong.verdict == VIOLATED
    assert wrong.evidence["reference_mc_error"] > 0


def test_the_same_seed_gives_bit_identical_references(model):
    settings = ReferenceSettings(chains=2, draws=200, warmup=50)
    first = compute_reference(model, [THETA], settings, seed=3)
    second = compute_reference(model, [THETA], settings, seed=3)
    assert first.identical(second)
