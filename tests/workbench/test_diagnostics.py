"""Diagnostics (:mod:`workbench.stats.diagnostics`) against exact values, each with a negative
control.

Every statistical check is a z-test of the mean of a diagnostic over S independent data sets
against its exact expectation, with z = 4 (two-sided false-failure rate 6e-5 per check if the
diagnostic's mean were exactly the value; estimator biases measured here are below 2 standard
errors). Seeds are fixed and were not searched.
"""

import numpy as np
import pytest
import sympy as sp

from simulators.validation import InvalidParameter
from workbench.stats.diagnostics import (
    IMQ_EXPONENT,
    IMQ_SCALE,
    chain_diagnostics,
    diagnose,
    imq_stein_kernel,
    kernel_stein_discrepancies,
    kernel_stein_discrepancy,
    spaced,
)

Z = 4.0
RHO = 0.5
CHAINS = 4
DRAWS = 1000
SETS = 200


def ar1(rho: float, sets: int, chains: int, draws: int, rng) -> np.ndarray:
    """Stationary AR(1) chains x_t = ρ x_{t-1} + √(1-ρ²) ε_t, x_0 ~ N(0, 1):
    ``(set, chain, draw)``."""
    x = np.empty((sets, chains, draws))
    x[..., 0] = rng.standard_normal((sets, chains))
    noise = rng.standard_normal((sets, chains, draws)) * np.sqrt(1 - rho**2)
    for t in range(1, draws):
        x[..., t] = rho * x[..., t - 1] + noise[..., t]
    return x


def mean_variance_factor(rho: float, n: int) -> float:
    """Var(mean of n stationary unit-variance AR(1) draws) = v_n, exactly:
    (1/n)[(1+ρ)/(1-ρ) - 2ρ(1-ρⁿ)/(n(1-ρ)²)]."""
    return ((1 + rho) / (1 - rho) - 2 * rho * (1 - rho**n) / (n * (1 - rho) ** 2)) / n


def exact_rhat_squared(rho: float, chains: int, draws: int) -> float:
    """E[R̂²] of the split R-hat of stationary AR(1) chains to first order: the 2m half-chains
    of length n give R̂² = (n-1)/n + (B/n)/W with E[B/n] = v_n and E[W] = n/(n-1)(1 - v_n)."""
    n = draws // 2
    v = mean_variance_factor(rho, n)
    return (n - 1) / n + v / (n / (n - 1) * (1 - v))


@pytest.fixture(scope="module")
def ar_diagnostics():
    rng = np.random.default_rng(20261124)
    chains = ar1(RHO, SETS, CHAINS, DRAWS, rng)
    rows = [chain_diagnostics({"theta": c[..., None]}) for c in chains]
    table = {key: np.array([float(r[key][0, 0]) for r in rows])
             for key in ("ess_bulk", "ess_tail", "rhat", "mcse_mean")}
    table["grand_mean"] = chains.mean(axis=(1, 2))
    return table


def z_score(values: np.ndarray, exact: float) -> float:
    return (values.mean() - exact) / (values.std(ddof=1) / np.sqrt(values.size))


def test_ess_bulk_of_ar1_chains_is_the_exact_ess(ar_diagnostics):
    exact = CHAINS / mean_variance_factor(RHO, DRAWS)  # m N / τ_N
    assert abs(z_score(ar_diagnostics["ess_bulk"], exact)) < Z
    # negative control: the ESS of independent draws (or of ρ = 0.7) is refuted
    assert abs(z_score(ar_diagnostics["ess_bulk"], CHAINS * DRAWS)) > Z
    assert abs(z_score(ar_diagnostics["ess_bulk"],
                       CHAINS / mean_variance_factor(0.7, DRAWS))) > Z


def test_split_rhat_of_stationary_ar1_chains(ar_diagnostics):
    exact = exact_rhat_squared(RHO, CHAINS, DRAWS)
    assert abs(z_score(ar_diagnostics["rhat"] ** 2, exact)) < Z
    assert 1 < exact < 1.01  # stationary chains pass the 1.01 rule


def test_rhat_flags_chains_that_disagree():
    """Negative control: one chain of four centred 0.5 sd away is refuted against the
    stationary value and fails the 1.01 rule."""
    rng = np.random.default_rng(7)
    chains = ar1(RHO, 50, CHAINS, DRAWS, rng)
    chains[:, 0] += 0.5
    rhat = np.array([float(chain_diagnostics({"theta": c[..., None]})["rhat"][0, 0])
                     for c in chains])
    assert z_score(rhat**2, exact_rhat_squared(RHO, CHAINS, DRAWS)) > Z
    assert np.all(rhat > 1.01)


def test_mcse_of_ar1_mean_is_the_exact_standard_error(ar_diagnostics):
    exact = np.sqrt(mean_variance_factor(RHO, DRAWS) / CHAINS)
    assert abs(z_score(ar_diagnostics["mcse_mean"], exact)) < Z
    # the spread of the grand means across sets agrees (the MC truth behind the MCSE)
    observed = ar_diagnostics["grand_mean"].std(ddof=1)
    assert abs(observed / exact - 1) < Z * np.sqrt(1 / (2 * (SETS - 1)))
    # negative control: the i.i.d. standard error 1/√(mN) is refuted
    assert abs(z_score(ar_diagnostics["mcse_mean"], 1 / np.sqrt(CHAINS * DRAWS))) > Z


def test_ess_tail_is_finite_and_below_the_draw_count(ar_diagnostics):
    assert np.all(np.isfinite(ar_diagnostics["ess_tail"]))
    assert np.all(ar_diagnostics["ess_tail"] < 2 * CHAINS * DRAWS)


def test_stein_kernel_matches_symbolic_differentiation():
    d = 2
    xs, ys = sp.symbols("x0:2"), sp.symbols("y0:2")
    sx, sy = sp.symbols("s0:2"), sp.symbols("t0:2")
    c, beta = sp.Rational(IMQ_SCALE), sp.Rational(IMQ_EXPONENT)
    k = (c**2 + sum((a - b) ** 2 for a, b in zip(xs, ys, strict=True))) ** beta
    k0 = (sum(sx[i] * sy[i] for i in range(d)) * k
          + sum(sx[i] * sp.diff(k, ys[i]) + sy[i] * sp.diff(k, xs[i]) for i in range(d))
          + sum(sp.diff(k, xs[i], ys[i]) for i in range(d)))
    x, y = np.array([[0.3, -1.2]]), np.array([[1.1, 0.4]])
    s, t = np.array([[0.5, 2.0]]), np.array([[-1.5, 0.7]])
    values = dict(zip(xs + ys + sx + sy, [*x[0], *y[0], *s[0], *t[0]], strict=True))
    expected = float(k0.subs(values))
    assert imq_stein_kernel(x, y, s, t)[0, 0] == pytest.approx(expected, rel=1e-12)
    # negative control: a swapped score changes the value
    assert imq_stein_kernel(x, y, t, s)[0, 0] != pytest.approx(expected, rel=1e-3)


def straightforward_stein_kernel(x, y, score_x, score_y, scale=IMQ_SCALE,
                                 exponent=IMQ_EXPONENT):
    """The IMQ Stein kernel as plain numpy with an (n, m, d) temporary (the formula the
    compiled :func:`imq_stein_kernel` must reproduce bit for bit)."""
    difference = x[:, None, :] - y[None, :, :]
    squared = np.einsum("ijk,ijk->ij", difference, difference)
    u = scale**2 + squared
    base = u**exponent
    lower = base / u
    cross = (np.einsum("jk,ijk->ij", score_y, difference)
             - np.einsum("ik,ijk->ij", score_x, difference))
    trace = -2 * exponent * lower * (x.shape[1] + 2 * (exponent - 1) * squared / u)
    return (score_x @ score_y.T) * base + 2 * exponent * lower * cross + trace


@pytest.mark.parametrize("dim", [1, 2, 3, 7, 8, 9, 16, 17, 63, 1722])
@pytest.mark.parametrize("n, m, same", [(1, 1, True), (25, 25, True), (12, 12, False),
                                        (30, 11, False)])
def test_stein_kernel_is_the_straightforward_formula_bit_for_bit(dim, n, m, same):
    """``same``: y is x (the KSD's case, computed on one triangle and mirrored)."""
    rng = np.random.default_rng(1000 * dim + n)
    x, s = 3 * rng.standard_normal((n, dim)), rng.standard_normal((n, dim))
    y, t = (x, s) if same else (3 * rng.standard_normal((m, dim)),
                                rng.standard_normal((m, dim)))
    expected = straightforward_stein_kernel(x, y, s, t)
    assert np.array_equal(imq_stein_kernel(x, y, s, t), expected)
    # the KSD is the formula's mean
    if same:
        assert kernel_stein_discrepancy(x, s) == np.sqrt(max(expected.mean(), 0.0))


def test_stein_kernel_sums_in_numpy_order_not_in_sequence():
    """Negative control for the bit-for-bit test: ‖r‖² summed in plain sequence (as a naive
    loop would) differs from numpy's einsum in the last bits for some pairs at d = 63, so the
    comparison above can detect an order that is merely close."""
    rng = np.random.default_rng(7)
    x = 3 * rng.standard_normal((25, 63))
    difference = x[:, None, :] - x[None, :, :]
    sequential = np.zeros((25, 25))
    for k in range(63):
        sequential = sequential + difference[..., k] ** 2
    numpy_order = np.einsum("ijk,ijk->ij", difference, difference)
    assert np.allclose(sequential, numpy_order, rtol=1e-13)
    assert not np.array_equal(sequential, numpy_order)


def test_ksd_of_exact_draws_is_its_exact_small_sample_value_and_biased_draws_are_not():
    """For x ~ π, E[KSD²] = E[k₀(x, x)]/n (the off-diagonal terms have mean 0); for
    π = N(0, I_d) and c = 1, β = -1/2: k₀(x, x) = ‖x‖² + d, so E[KSD²] = 2d/n."""
    rng = np.random.default_rng(11)
    n, d, sets = 100, 2, 300
    exact = [kernel_stein_discrepancy(x, -x) ** 2
             for x in rng.standard_normal((sets, n, d))]
    assert abs(z_score(np.array(exact), 2 * d / n)) < Z
    biased = np.array([kernel_stein_discrepancy(x, -x) ** 2
                       for x in rng.standard_normal((sets, n, d)) + 0.5])
    assert z_score(biased, 2 * d / n) > Z  # negative control: a biased sample is refuted
    # and its discrepancy does not vanish with more draws, while the exact one does
    many = rng.standard_normal((4 * n, d))
    assert kernel_stein_discrepancy(many, -many) < 0.6 * np.sqrt(np.mean(exact))
    assert kernel_stein_discrepancy(many + 0.5, -(many + 0.5)) > 0.8 * np.sqrt(biased.mean())


def numpy_ksd(x, s):
    """One chain's KSD as plain numpy forms it: the straightforward Gram matrix and its
    ``mean`` (the value before issue 15)."""
    return np.sqrt(max(straightforward_stein_kernel(x, x, s, s).mean(), 0.0))


@pytest.mark.parametrize("n, dim", [(1, 1), (2, 1), (7, 1), (8, 2), (25, 1), (91, 3),
                                    (129, 1), (200, 1), (200, 10), (137, 63)])
@pytest.mark.parametrize("chains_per_block", [None, 2])
def test_ksd_of_many_chains_is_each_chains_numpy_value_bit_for_bit(n, dim, chains_per_block,
                                                                   monkeypatch):
    """kernel_stein_discrepancies over ``(chain, n, d)`` = numpy's mean of each chain's Gram
    matrix, chain by chain, bit for bit, in one block or in blocks of 2 chains (5 chains: a
    short last block), and = the single-chain API."""
    from workbench.stats import diagnostics

    if chains_per_block is not None:
        monkeypatch.setattr(diagnostics, "GRAM_BUDGET", chains_per_block * n * n)
    rng = np.random.default_rng(100 * n + dim)
    x, s = 3 * rng.standard_normal((5, n, dim)), rng.standard_normal((5, n, dim))
    s[1] = -x[1]  # the exact score of N(0, I): a small KSD
    batched = kernel_stein_discrepancies(x, s)
    expected = np.array([numpy_ksd(x[c], s[c]) for c in range(5)])
    assert np.array_equal(batched, expected)
    assert [kernel_stein_discrepancy(x[c], s[c]) for c in range(5)] == expected.tolist()
    with pytest.raises(InvalidParameter, match="draws"):
        kernel_stein_discrepancies(x[0], s[0])


@pytest.mark.parametrize("dim", [1, 2])
def test_ksd_of_many_chains_keeps_numpys_zeros_and_repeated_draws(dim):
    """Scores that are exactly 0 or -0 (so products and sums of either zero) and repeated
    draws (r = 0 off the diagonal) give each chain's numpy value bit for bit too."""
    rng = np.random.default_rng(30 + dim)
    x = np.round(rng.standard_normal((6, 40, dim)), 1)  # many repeated positions
    s = np.where(rng.random(x.shape) < 0.3, 0.0, rng.standard_normal(x.shape))
    s[rng.random(x.shape) < 0.2] = -0.0
    s[2] = -0.0
    x[3] = 0.0
    assert np.array_equal(kernel_stein_discrepancies(x, s),
                          [numpy_ksd(x[c], s[c]) for c in range(6)])


def test_gram_mean_is_numpys_pairwise_order_not_a_running_sum():
    """Negative control for the bit-for-bit test above: the mean of the Gram matrix as one
    running sum differs from numpy's pairwise ``mean`` in the last bits for some chains at
    n = 200, so that test can tell an order that is merely close."""
    rng = np.random.default_rng(8)
    differ = 0
    for _ in range(5):
        x, s = 3 * rng.standard_normal((200, 2)), rng.standard_normal((200, 2))
        gram = imq_stein_kernel(x, x, s, s)
        running = np.cumsum(gram.ravel())[-1] / gram.size
        assert running == pytest.approx(gram.mean(), rel=1e-10, abs=1e-12)
        differ += running != gram.mean()
    assert differ > 0


def test_diagnose_scores_every_replicate_at_once_only_when_told_positionwise():
    """The KSD of each kept replicate is its pooled draws' single-chain KSD bit for bit, with
    one score call for all (positionwise) or one per replicate; a diverged replicate is left
    out (NaN) and never scored. Negative control: a score that reads the other positions of
    its call changes the KSD when called once for all, so the flag is what keeps it exact."""
    rng = np.random.default_rng(4)
    draws = rng.standard_normal((6, 2, 60, 3))  # (replicate, server, draw, d)
    draws[3, 0, 5, 1] = np.inf
    calls = []

    def score(theta):
        assert np.isfinite(theta).all()
        calls.append(theta.shape)
        return -1.5 * theta

    values = {"theta": draws}
    per_replicate = diagnose(draws, values, score, ksd_draws=40)["ksd"].values
    assert calls == [(40, 3)] * 5
    calls.clear()
    at_once = diagnose(draws, values, score, ksd_draws=40, positionwise=True)["ksd"].values
    assert calls == [(5, 40, 3)]
    assert np.isnan(at_once[3]) and np.isfinite(np.delete(at_once, 3)).all()
    pooled = draws[:, :, spaced(60, 20)].reshape(6, 40, 3)
    expected = [kernel_stein_discrepancy(p, -1.5 * p) for p in pooled]
    for replicate in (0, 1, 2, 4, 5):
        assert at_once[replicate] == expected[replicate] == per_replicate[replicate]

    def centred(theta):  # about the mean of every position in the call
        return -(theta - theta.reshape(-1, theta.shape[-1]).mean(axis=0))

    batch_dependent = diagnose(draws, values, centred, ksd_draws=40, positionwise=True)
    one_by_one = diagnose(draws, values, centred, ksd_draws=40)
    assert not np.array_equal(batch_dependent["ksd"], one_by_one["ksd"], equal_nan=True)


def test_diagnose_leaves_out_diverged_chains_and_names_bad_input():
    rng = np.random.default_rng(3)
    draws = rng.standard_normal((5, 2, 50, 2))  # (replicate, server, draw, d)
    draws[2, 1, 10] = np.nan
    result = diagnose(draws, {"theta": draws, "theta_squared": draws**2}, lambda x: -x)
    assert int(result["diagnostic_chains"]) == 8  # 4 replicates of 2 servers each
    assert np.isnan(result["ksd"][2]) and np.isfinite(result["ksd"]).sum() == 4
    assert result["ksd"].dims == ("replicate",)
    assert result["rhat"].dims == ("test_function", "component")
    assert result["test_function"].values.tolist() == ["theta", "theta_squared"]
    assert np.isnan(diagnose(draws, {"theta": draws}, None)["ksd"]).all()
    # a replicate's KSD is that of its servers' pooled draws
    pooled = draws[0].reshape(-1, 2)
    assert float(result["ksd"][0]) == pytest.approx(kernel_stein_discrepancy(pooled, -pooled))
    with pytest.raises(InvalidParameter, match="draws"):
        diagnose(draws[0], {"theta": draws[0]}, None)
    with pytest.raises(InvalidParameter, match="exponent"):
        kernel_stein_discrepancy(draws[0, 0], -draws[0, 0], exponent=-1.5)


def test_spaced_keeps_the_last_draw():
    assert spaced(10, 3).tolist() == [0, 4, 9]
    assert spaced(5, 10).tolist() == [0, 1, 2, 3, 4]


STORED = {"staleness": [1, 2], "base_iterations": 2000, "n_replicates": 40,
          "replicate_block": 20, "n_checkpoints": 5, "designs": False,
          "initial_position": 0.0, "step_size_constant": 0.0005}


def test_stale_gaussian_stores_diagnostics_with_named_dims(tmp_path):
    from workbench import experiments
    from workbench.run.runner import run_experiment
    from workbench.store.netcdf import read_netcdf, write_netcdf

    experiment = experiments.get("stale-gaussian")
    dataset = run_experiment(experiment, experiment.configure(STORED), seed=5)
    stored = read_netcdf(write_netcdf(dataset, tmp_path / "result.nc"))
    for name in ("ess_bulk", "ess_tail", "rhat", "mcse_mean"):
        assert stored[name].dims == ("staleness", "test_function", "component"), name
    assert stored["ksd"].dims == ("staleness", "replicate")
    assert stored["diagnostic_chains"].values.tolist() == [40, 40]
    assert "Gorham & Mackey 2017" in stored.attrs["diagnostics"]
    assert "draws" not in stored  # n_draws = 0: draws feed the diagnostics, are not stored
    assert np.isfinite(stored["ksd"]).all() and (stored["ess_bulk"] > 0).all()
    # a step 10 times larger (a more biased sampler: its exact stationary variance is 3.5
    # times larger at τ = 1) has a larger Stein discrepancy (negative control for the KSD)
    biased = run_experiment(experiment, experiment.configure(
        {**STORED, "step_size_constant": 0.005}), seed=5)
    assert (biased["exact_stationary_variance"] > 3 * stored["exact_stationary_variance"]).all()
    assert (biased["ksd"].median("replicate") > 2 * stored["ksd"].median("replicate")).all()
