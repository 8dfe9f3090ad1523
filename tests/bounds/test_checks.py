"""Every check kind holds on a correct input and is `violated` on its negative control."""

import math

import numpy as np
import pytest
import xarray as xr

from bounds import registry
from bounds.checks import (
    envelope_check,
    fit_envelope,
    invariance_check,
    loglog_slope,
    oracle_check,
    rate_check,
    slope_check,
    speedup_check,
)
from bounds.verdict import (
    HOLDS,
    INCONCLUSIVE,
    VIOLATED,
    Verdict,
    one_sided_z_for_family,
    two_sided_rate,
    z_for_family,
)


def test_oracle_check_holds_inside_its_margin_and_is_violated_beyond():
    assert oracle_check("ok", 1.01, 0.01, 1.0, 3.0, margin=0.04).verdict == HOLDS
    wrong = oracle_check("wrong exact value", 1.10, 0.01, 1.0, 3.0, margin=0.04)
    assert wrong.verdict == VIOLATED and wrong.margin == pytest.approx(0.04)
    assert wrong.difference == pytest.approx(0.10)
    assert wrong.evidence["z_score"] == pytest.approx(10.0)
    # default margin: half a replicate's standard deviation, 0.5 · 0.01 · √100 = 0.05
    default = oracle_check("default", 1.0, 0.01, 1.0, 3.0, n_replicates=100)
    assert default.margin == pytest.approx(0.05) and default.verdict == HOLDS
    with pytest.raises(ValueError, match="n_replicates"):
        oracle_check("no margin, no R", 1.0, 0.01, 1.0, 3.0)


def test_relative_oracle_check_judges_the_log_ratio():
    same = oracle_check("variance", 1.05, 0.05, 1.0, 3.0, relative=True, margin=0.5)
    assert same.scale == "log-ratio" and same.verdict == HOLDS
    assert same.difference == pytest.approx(math.log(1.05))
    double = oracle_check("variance twice the exact", 2.0, 0.1, 1.0, 3.0, relative=True,
                          margin=0.5)
    assert double.verdict == VIOLATED


def test_non_finite_inputs_are_inconclusive_not_a_pass():
    for observed, error, expected in ((math.nan, 0.1, 1.0), (1.0, math.inf, 1.0),
                                      (1.0, 0.1, math.inf)):
        assert oracle_check("x", observed, error, expected, 3.0,
                            margin=0.1).verdict == INCONCLUSIVE


def test_invariance_check_negative_control():
    errors = np.full(4, 0.01)
    assert invariance_check("flat", [1.0, 1.02, 0.97, 1.01], errors, list("abcd"),
                            3.29).verdict == HOLDS
    trend = invariance_check("trend", [1.0, 1.2, 1.4, 1.6], errors, list("abcd"), 3.29)
    assert trend.verdict == VIOLATED
    assert set(trend.evidence["deciding_pair"]) == {"a", "d"}
    assert trend.observed == pytest.approx(1.6)
    noisy = invariance_check("flat but noisy", [1.0, 1.02, 0.97, 1.01], np.full(4, 0.2),
                             list("abcd"), 3.29)
    assert noisy.verdict == INCONCLUSIVE and noisy.detectable > noisy.margin
    assert invariance_check("one value", [1.0], [0.1], ["a"], 3.0).verdict == INCONCLUSIVE


def test_invariance_check_uses_the_covariance_of_common_random_numbers():
    """Two values 10 % apart with 8 % errors each: undecided when independent, shown beyond a
    5 % margin when their logs are correlated 0.999 (common random numbers)."""
    values, errors = [1.0, 1.1], [0.08, 0.088]
    independent = invariance_check("independent", values, errors, ["a", "b"], 3.29,
                                   margin=0.05)
    assert independent.verdict == INCONCLUSIVE
    log_sd = 0.08
    covariance = log_sd**2 * np.array([[1.0, 0.999], [0.999, 1.0]])
    paired = invariance_check("paired", values, errors, ["a", "b"], 3.29, margin=0.05,
                              log_covariance=covariance)
    assert paired.verdict == VIOLATED


def test_slope_check_catches_a_swapped_exponent():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    y = 3.0 * x ** (-2 / 3)
    errors = 0.01 * y
    assert slope_check("right", x, y, errors, -2 / 3, 3.29).verdict == HOLDS
    assert slope_check("swapped", x, y, errors, -3 / 2, 3.29).verdict == VIOLATED
    noisy = slope_check("too noisy to tell", x, y, 0.5 * y, -2 / 3, 3.29)
    assert noisy.verdict == INCONCLUSIVE
    slope, error, intercept = loglog_slope(x, y, errors)
    assert slope == pytest.approx(-2 / 3) and intercept == pytest.approx(math.log(3.0))
    assert error > 0


def test_bonferroni_z_and_its_rate():
    assert z_for_family(0.05, 1) == pytest.approx(1.959964, rel=1e-6)
    assert two_sided_rate(z_for_family(1e-3, 18)) == pytest.approx(1e-3 / 18)


def test_verdict_refuses_unknown_verdicts_and_serialises_non_finite_values():
    with pytest.raises(ValueError):
        Verdict("x", "oracle", "maybe", 0, 0, 0, 0, 3, 0.003)
    record = Verdict("x", "oracle", HOLDS, math.nan, math.inf, 0.1, 0.2, 3, 0.003).to_dict()
    assert record["observed"] is None and record["expected"] == "inf"


# ---------------------------------------------------------------- rate
FAMILY = 1e-3  # each test's false-failure rate for a correct claim (one-sided)
Z_ONE = one_sided_z_for_family(FAMILY, 1)


def _squared_errors(rng, lengths, exponent, replicates=400):
    """Per-replicate squared errors e² with e ~ N(0, L^exponent): MSE = L^exponent exactly."""
    scale = np.sqrt(np.asarray(lengths, dtype=float) ** exponent)[:, None]
    return (scale * rng.standard_normal((len(lengths), replicates))) ** 2


def test_rate_check_holds_for_the_true_exponent_and_catches_a_wrong_one():
    lengths = [1000, 2000, 4000, 8000, 16000]
    samples = _squared_errors(np.random.default_rng(11), lengths, -2 / 3)
    right = rate_check("right", lengths, samples, -2 / 3, Z_ONE, np.random.default_rng(1))
    assert right.verdict == HOLDS and right.kind == "rate"
    assert right.observed == pytest.approx(-2 / 3, abs=0.1)
    ev = right.evidence
    assert ev["bootstrap_se"] == pytest.approx(ev["delta_method_se"], rel=0.3)
    assert ev["percentile_interval_95"][0] < right.observed < ev["percentile_interval_95"][1]
    wrong = rate_check("MSE bound with a wrong exponent", lengths, samples, -4 / 3, Z_ONE,
                       np.random.default_rng(1))
    assert wrong.verdict == VIOLATED and wrong.difference - wrong.z_threshold * wrong.mc_error > 0.1
    # an upper bound only promises a rate: a faster decay satisfies it
    faster = _squared_errors(np.random.default_rng(12), lengths, -1.0)
    assert rate_check("faster", lengths, faster, -2 / 3, Z_ONE,
                      np.random.default_rng(1)).verdict == HOLDS
    again = rate_check("right", lengths, samples, -2 / 3, Z_ONE, np.random.default_rng(1))
    assert again == right  # deterministic given the generator


def test_paired_variance_rate_keeps_the_checkpoints_correlation():
    """Running means of i.i.d. N(0, 1) read at checkpoints of the same runs: Var = 1/L.
    1,000 replicates put the slope's standard error near 0.025, so 'holds' within the rate
    margin 0.1 can be shown (with 300 the same data are inconclusive)."""
    rng = np.random.default_rng(5)
    checkpoints = np.array([250, 500, 1000, 2000, 4000])
    draws = rng.standard_normal((1000, checkpoints[-1]))
    means = (np.cumsum(draws, axis=1)[:, checkpoints - 1] / checkpoints).T  # (L, replicate)
    one = rate_check("1/L", checkpoints, means, -1.0, Z_ONE, np.random.default_rng(2),
                     statistic="variance", paired=True)
    assert one.verdict == HOLDS
    claimed = rate_check("variance claimed to fall like 1/L²", checkpoints, means, -2.0, Z_ONE,
                         np.random.default_rng(2), statistic="variance", paired=True)
    assert claimed.verdict == VIOLATED


def test_rate_check_leaves_diverged_replicates_out_and_says_so():
    samples = _squared_errors(np.random.default_rng(3), [1000, 2000, 4000, 8000], -1.0)
    samples[1, 4] = np.nan
    verdict = rate_check("diverged", [1000, 2000, 4000, 8000], samples, -1.0, Z_ONE,
                         np.random.default_rng(0))
    assert verdict.evidence["replicates_left_out"] == 1
    assert verdict.evidence["n_replicates"] == samples.shape[1] - 1
    assert "1 diverged replicates left out" in verdict.detail
    assert verdict.verdict == HOLDS


def _excess(rng, means, replicates, spread=1.0):
    """Per-replicate values at four x whose means are ``means`` (an excess over a baseline:
    it can be negative where the baseline is the better run)."""
    return np.asarray(means, float)[:, None] + spread * rng.standard_normal((len(means),
                                                                             replicates))


def test_a_rate_of_a_quantity_shown_negative_somewhere_says_no_replicates_decide_it():
    """A power of x is positive: where the excess is shown below 0 (-1 ± 0.1 at x = 1), no
    slope is fitted, and the reason names x, the value and its error, with no replicate
    factor (the sequential checks then stop asking)."""
    x = [1, 2, 4, 8]
    samples = _excess(np.random.default_rng(4), [-1.0, 4.0, 16.0, 64.0], 100)
    verdict = rate_check("excess", x, samples, 2.0, Z_ONE, np.random.default_rng(0))
    assert verdict.verdict == INCONCLUSIVE and math.isinf(verdict.replicate_factor)
    assert "shown negative at x = 1 " in verdict.evidence["cannot_decide"]
    assert "x = 1: -1" in verdict.detail and "whatever the replicates" in verdict.detail
    assert verdict.evidence["values"][0] < 0 < verdict.evidence["values"][1]
    assert verdict.evidence["value_errors"][0] == pytest.approx(0.1, rel=0.2)


def test_a_rate_of_a_quantity_whose_sign_is_not_shown_asks_for_the_replicates_to_show_it():
    """-0.05 ± 0.1 at x = 1: its sign is not shown, so the check asks for (z·0.1/0.05)²
    times the replicates (about 38 at z = 3.09), with no ``cannot_decide``; the same data with
    the value 0.05 above 0 fit a slope (the negative control of the refusal)."""
    x = [1, 2, 4, 8]
    noise = _excess(np.random.default_rng(5), [0.0, 0.0, 0.0, 0.0], 100)
    noise -= noise.mean(axis=1, keepdims=True)
    low = noise + np.array([-0.05, 4.0, 16.0, 64.0])[:, None]
    verdict = rate_check("excess", x, low, 2.0, Z_ONE, np.random.default_rng(0))
    assert verdict.verdict == INCONCLUSIVE and "cannot_decide" not in verdict.evidence
    expected = (Z_ONE * verdict.evidence["value_errors"][0] / 0.05) ** 2
    assert verdict.replicate_factor == pytest.approx(expected)
    assert 10 < verdict.replicate_factor < 100 and "its sign not shown" in verdict.detail
    assert verdict.detail.endswith(f"about {verdict.replicates_needed:.0f} replicates (now 100) "
                                   "would tell more.")
    high = noise + np.array([0.05, 4.0, 16.0, 64.0])[:, None]
    fitted = rate_check("excess", x, high, 2.0, Z_ONE, np.random.default_rng(0))
    assert "not positive" not in fitted.detail and math.isfinite(fitted.observed)


def test_a_rate_whose_resamples_cross_zero_asks_for_the_replicates_that_show_the_sign():
    """+0.01 ± 0.1 at x = 1: the value is positive, so a slope is fitted, but about half its
    resamples are not, so the slope's error is undefined; the check asks for the replicates
    that keep the value above 0 by the resamples' reach (3.39 errors for 2000 resamples, more
    than z = 3.09), (3.39·0.1/0.01)² times (about 1,150), instead of calling itself
    undecidable. Negative control: at 0.5 ± 0.1 no resample crosses 0 and the slope's own
    error decides."""
    from bounds.rate import resampled_reach

    x = [1, 2, 4, 8]
    noise = _excess(np.random.default_rng(5), [0.0, 0.0, 0.0, 0.0], 100)
    noise -= noise.mean(axis=1, keepdims=True)
    near = noise + np.array([0.01, 4.0, 16.0, 64.0])[:, None]
    verdict = rate_check("excess", x, near, 2.0, Z_ONE, np.random.default_rng(0))
    assert verdict.verdict == INCONCLUSIVE and math.isfinite(verdict.observed)
    reach = resampled_reach(Z_ONE, 2000)
    assert reach == pytest.approx(3.392, abs=1e-3) and resampled_reach(4.0, 2000) == 4.0
    expected = (reach * verdict.evidence["value_errors"][0] / 0.01) ** 2
    assert verdict.replicate_factor == pytest.approx(expected) and verdict.replicate_factor > 100
    assert "resamples give a statistic <= 0" in verdict.detail
    assert "times the replicates would keep every value above 0 by 3.39 errors" in verdict.detail
    far = noise + np.array([0.5, 4.0, 16.0, 64.0])[:, None]
    fitted = rate_check("excess", x, far, 2.0, Z_ONE, np.random.default_rng(0))
    assert "resamples give" not in fitted.detail and math.isfinite(fitted.mc_error)


def test_a_crossing_by_chance_asks_for_the_next_look():
    """Every value above 0 by more than the resamples' reach (here 4 and 5 errors against
    3.39): a resample that crossed 0 did so by chance, and the next look's replicates are asked
    (twice), not "1 times"; a value 2 errors above 0 asks (3.39/2)² times."""
    from bounds.rate import undefined_error

    why, factor = undefined_error(np.array([0.4, 0.5]), np.array([0.1, 0.1]), 3.39)
    assert factor == 2.0 and "the crossing is chance" in why
    why, factor = undefined_error(np.array([0.2, 0.5]), np.array([0.1, 0.1]), 3.39)
    assert factor == pytest.approx((3.39 / 2) ** 2) and "about 2.87 times" in why


def _paired_curves(speeds, replicates=200, seed=6):
    """Per-replicate estimates of curves (worker, checkpoint, replicate) whose variance over
    replicates is 1/(L·speed) at L iterations per worker, every curve and checkpoint from the
    same normals (common random numbers, and running averages correlated along the run as a
    chain's are), with each curve's iterations, variances and their errors."""
    iterations = np.array([10.0, 20, 40, 80, 160, 320])
    normals = np.random.default_rng(seed).standard_normal(replicates)
    samples = np.stack([normals / np.sqrt(iterations * speed)[:, None] for speed in speeds])
    variances = samples.var(axis=-1, ddof=1)
    squares = (samples - samples.mean(axis=-1, keepdims=True)) ** 2
    errors = squares.std(axis=-1, ddof=1) / np.sqrt(replicates)
    return np.tile(iterations, (len(speeds), 1)), variances, errors, samples


@pytest.mark.parametrize(("speeds", "verdict"), [((1.0, 2.0, 4.0), HOLDS),
                                                 ((1.0, 1.8, 3.6), VIOLATED)])
def test_a_paired_speed_up_takes_the_paired_crossings_error(speeds, verdict):
    """Curves from the same normals, the iteration speed-up exactly P (holds) or 10 % short of
    it, just beyond the margin log 1.1 (violated): the paired crossings' covariance makes
    their log-ratios exact to rounding; independent errors cannot tell the short one."""
    from bounds.speedup import paired_crossing_covariance

    workers = [1, 2, 4]
    iterations, variances, errors, samples = _paired_curves(speeds)
    covariance, resamples = paired_crossing_covariance(iterations, samples,
                                                       np.random.default_rng(1))
    assert resamples == 1000
    z = z_for_family(FAMILY, 2)
    paired = speedup_check("speed-up", workers, iterations, variances, errors, z,
                           log_covariance=covariance)
    assert paired.verdict == verdict
    assert max(paired.evidence["iteration_speedup_log_se"]) < 1e-6
    assert paired.evidence["crossing_log_covariance"] == covariance.tolist()
    independent = speedup_check("speed-up", workers, iterations, variances, errors, z)
    assert min(independent.evidence["iteration_speedup_log_se"][1:]) > 0.05
    if verdict == VIOLATED:
        assert independent.verdict == INCONCLUSIVE


# ---------------------------------------------------------------- envelope
def _grid():
    h = xr.DataArray([1e-3, 3e-3, 1e-2, 3e-2, 0.1], dims="step_size")
    length = xr.DataArray([100, 300, 1000, 3000], dims="n_iterations")
    return h, length


def _measured(h, length, scale, rng):
    """A quantity of the form 2/(L h) + 5 h² (inside the K = 1 MSE bound's terms), measured
    with 2% Monte Carlo error."""
    truth = scale * (2 / (length * h) + 5 * h**2)
    error = 0.02 * truth
    return truth + error * rng.standard_normal(truth.shape), error


def test_envelope_fitted_on_the_calibration_cells_holds_on_the_held_out_ones():
    h, length = _grid()
    observed, error = _measured(h, length, 1.0, np.random.default_rng(8))
    bound = registry.get("chen2015-mse-fixed-k1")
    calibration = (xr.DataArray(np.arange(5), dims="step_size")
                   + xr.DataArray(np.arange(4), dims="n_iterations")) % 2 == 0
    values = {"step_size": h, "n_iterations": length}
    envelope = fit_envelope(bound, values, observed, calibration)
    assert np.all(envelope.coefficients >= 0) and envelope.n_calibration == 10
    above = envelope(values) >= observed * (1 - 1e-12)
    assert bool(above.where(calibration, True).all())  # an envelope of the calibration points
    z = one_sided_z_for_family(FAMILY, 10)
    verdict = envelope_check("envelope", envelope, values, observed, error, z, ~calibration)
    assert verdict.verdict == HOLDS and verdict.kind == "envelope"
    assert verdict.evidence["n_held_out"] == 10
    assert 0 < verdict.evidence["ratio_median"] <= 1


def test_envelope_whose_constants_were_fitted_on_a_different_model_is_violated():
    h, length = _grid()
    values = {"step_size": h, "n_iterations": length}
    bound = registry.get("chen2015-mse-fixed-k1")
    other, _ = _measured(h, length, 0.1, np.random.default_rng(9))  # ten times smaller errors
    envelope = fit_envelope(bound, values, other, label="a different model")
    observed, error = _measured(h, length, 1.0, np.random.default_rng(8))
    verdict = envelope_check("fitted elsewhere", envelope, values, observed, error,
                             one_sided_z_for_family(FAMILY, 20))
    assert verdict.verdict == VIOLATED
    assert verdict.observed > 5 and verdict.evidence["envelope"]["fitted_on"] == "a different model"


def test_envelope_of_a_bound_missing_a_term_fails_when_extrapolated():
    """Bias form 1/(Lh) + h fitted where 1/(Lh) dominates cannot follow 5h² at large h."""
    h, length = _grid()
    values = {"step_size": h, "n_iterations": length}
    observed, error = _measured(h, length, 1.0, np.random.default_rng(8))
    observed, error = observed * 0 + (2 / (length * h) + 50 * h**2), error
    small_steps = h <= 3e-3
    envelope = fit_envelope(registry.get("chen2015-bias-fixed-k1"), values, observed, small_steps)
    verdict = envelope_check("missing h² term", envelope, values, observed, error,
                             one_sided_z_for_family(FAMILY, 12), ~small_steps)
    assert verdict.verdict == VIOLATED
    assert verdict.evidence["worst_point"]["step_size"] == 4  # the largest step (index)


# ---------------------------------------------------------------- speed-up
def _curves(workers, law, rng):
    """Variance curves against iterations per worker: law(P) is the speed-up, 1% errors."""
    iterations = np.tile(np.geomspace(10, 10_000, 13), (len(workers), 1))
    values = 1.0 / (iterations * np.array([law(p) for p in workers])[:, None])
    errors = 0.01 * values
    return iterations, values * (1 + 0.01 * rng.standard_normal(values.shape)), errors


def test_linear_iteration_speedup_holds_and_time_speedup_is_reported():
    workers = [1, 2, 4, 8]
    iterations, values, errors = _curves(workers, float, np.random.default_rng(4))
    times = iterations * np.array([1.0, 1.2, 1.5, 2.5])[:, None]  # latency grows with P
    verdict = speedup_check("linear", workers, iterations, values, errors,
                            z_for_family(FAMILY, 3), times=times)
    assert verdict.verdict == HOLDS and verdict.kind == "speed-up"
    np.testing.assert_allclose(verdict.evidence["iteration_speedup"], workers, rtol=0.05)
    np.testing.assert_allclose(verdict.evidence["time_speedup"],
                               np.array(workers) / [1.0, 1.2, 1.5, 2.5], rtol=0.05)


def test_sublinear_speedup_is_violated_and_an_uncrossed_target_is_inconclusive():
    workers = [1, 2, 4, 8]
    iterations, values, errors = _curves(workers, np.sqrt, np.random.default_rng(4))
    verdict = speedup_check("sqrt(P) claimed linear", workers, iterations, values, errors,
                            z_for_family(FAMILY, 3))
    assert verdict.verdict == VIOLATED
    assert verdict.expected == 8 and verdict.observed == pytest.approx(np.sqrt(8), rel=0.05)
    uncrossed = speedup_check("too low", workers, iterations, values, errors,
                              z_for_family(FAMILY, 3), target=1e-9)
    assert uncrossed.verdict == INCONCLUSIVE


def test_envelope_of_seed_002_theorem_2_from_per_shard_values():
    """The API other experiments use: FSGLD's bound with data-derived ε_s² per shard (dim
    ``shard``), constants fitted on short runs and judged on long ones."""
    bound = registry.get("seed002-theorem-2-fsgld")
    shards = {"shard_size": xr.DataArray([200.0] * 10, dims="shard"),
              "selection_probability": xr.DataArray([0.1] * 10, dims="shard"),
              "surrogate_error_sq": xr.DataArray(np.linspace(1e-3, 1e-2, 10), dims="shard")}
    grid = {"n_iterations": xr.DataArray([1e3, 3e3, 1e4, 3e4, 1e5], dims="n_iterations"),
            "step_size_wt": xr.DataArray([1e-4, 3e-4, 1e-3], dims="step_size_wt"),
            "batch_size": 10, **shards}
    truth = bound.evaluate(C=0.3, **grid)
    assert set(truth.dims) == {"n_iterations", "step_size_wt"}  # the shard dim is summed
    error = 0.02 * truth
    observed = truth + error * xr.DataArray(np.random.default_rng(6).standard_normal(
        truth.shape), dims=truth.dims)
    short = grid["n_iterations"] <= 3e3
    envelope = fit_envelope(bound, grid, observed, short)
    assert envelope.terms == ["h**2", "1/(T*h)", "E²/(T*m)"]  # the seed's letters
    verdict = envelope_check("fsgld", envelope, grid, observed, error,
                             one_sided_z_for_family(FAMILY, 9), ~short)
    assert verdict.verdict == HOLDS


def test_a_slope_of_values_sharing_a_common_error_is_fitted_with_their_covariance():
    """log y with covariance σ²((1 − ρ)I + ρ11ᵀ) (values sharing random numbers: a common
    shift, which the intercept absorbs): the fitted slope has error σ·√((1 − ρ)/Sxx) exactly,
    against σ/√Sxx for independent errors (negative control); a diagonal covariance gives
    the weighted fit's error; values sharing every random number (ρ = 1, no error of their
    own) a slope known exactly."""
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    y = 3.0 * x ** (-2 / 3)
    sigma, rho = 0.2, 0.9
    sxx = float(((np.log(x) - np.log(x).mean()) ** 2).sum())
    shared = sigma**2 * ((1 - rho) * np.eye(5) + rho * np.ones((5, 5)))
    slope, error, _ = loglog_slope(x, y, sigma * y, shared)
    assert slope == pytest.approx(-2 / 3)
    assert error == pytest.approx(sigma * math.sqrt((1 - rho) / sxx))
    assert loglog_slope(x, y, sigma * y)[1] == pytest.approx(sigma / math.sqrt(sxx))
    diagonal = np.diag((0.01 * np.arange(1, 6)) ** 2)
    assert loglog_slope(x, y, 0.01 * np.arange(1, 6) * y, diagonal) == pytest.approx(
        loglog_slope(x, y, 0.01 * np.arange(1, 6) * y))
    common = sigma**2 * np.ones((5, 5))
    assert loglog_slope(x, y, np.zeros(5), common)[:2] == pytest.approx((-2 / 3, 0.0))
    # shared errors decide what independent ones cannot, and carry into slope_check
    assert slope_check("independent", x, y, sigma * y, -2 / 3, 3.29,
                       margin=0.1).verdict == INCONCLUSIVE
    assert slope_check("paired", x, y, sigma * y, -2 / 3, 3.29, margin=0.1,
                       log_covariance=shared).verdict == HOLDS


def test_invariance_whose_errors_stay_says_what_would_decide_it():
    """A ratio 1.3 against the margin 1.25 with 5 % errors: more replicates would decide it
    when the errors shrink with them, never when they stay (a fixed set of chains' spread);
    then the reason is the one given."""
    args = ("c", [1.0, 1.3], [0.05, 0.065], ["a", "b"], 3.29)
    shrinking = invariance_check(*args)
    assert shrinking.verdict == INCONCLUSIVE and 1 < shrinking.replicate_factor < math.inf
    staying = invariance_check(*args, fixed_errors=[0.05, 0.065], cannot="{joint} times the chains")
    assert staying.verdict == INCONCLUSIVE and staying.replicate_factor == math.inf
    assert staying.evidence["cannot_decide"].endswith("times the chains")
    tenth = invariance_check(*args, fixed_errors=[0.005, 0.0065], cannot="x")
    assert shrinking.replicate_factor < tenth.replicate_factor < math.inf
