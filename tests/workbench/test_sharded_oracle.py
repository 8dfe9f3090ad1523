"""The sharded-Gaussian oracle: the scan against a plain recursion, the engine against the
oracle on federated, traveling and coupled schedules, docs/math.md §7's closed forms, the
gradient-noise identity of docs/math.md §5, and negative controls.

Monte Carlo comparisons use ``bounds.checks.oracle_check`` with a Bonferroni z; each test
names its family-wise false-failure rate and counts its comparisons.
"""

import math

import numpy as np
import pytest

from bounds.checks import oracle_check
from bounds.verdict import HOLDS, VIOLATED, z_for_family
from simulators.federated import FederatedRounds
from simulators.latency import LatencyModel, WorkerTiming
from simulators.seeding import generator
from simulators.traveling_chains import TravelingChains
from workbench.data.sharding import gaussian_blobs, iid_shards
from workbench.engine.replay import replay
from workbench.gradients import surrogates
from workbench.gradients.sharded import Conducive, ShardScaled
from workbench.models.gaussian import GaussianMeanModel
from workbench.models.sharded_gaussian import ShardedGaussianMean
from workbench.oracles.federated import (
    dsgld_stationary_variance,
    phi,
    round_stationary,
    shard_round_maps,
)
from workbench.oracles.gradient_noise import (
    coupled_gradient_noise,
    epsilon_squared,
    gamma_squared,
    gradient_noise,
    theta_grid,
)
from workbench.oracles.sharded_gaussian import (
    ShardedGaussianOracle,
    StepMaps,
    conditional_moments,
)
from workbench.samplers import SGLD
from workbench.samplers.coupled import CoupledSGLD

FAMILY_RATE = 1e-3


@pytest.fixture(scope="module")
def unequal():
    """Six IID shards of 50 and 150 points (seed 004's imbalance, scaled down)."""
    rng = generator(2, "data")
    sizes = [50] * 3 + [150] * 3
    x = 0.5 + rng.standard_normal((sum(sizes), 2))
    sharding = iid_shards(rng, sum(sizes), sizes)
    model = GaussianMeanModel(sharding.arrange(x), 1.0, 1.0, 0.0)
    return ShardedGaussianMean(model, tuple(sizes))


@pytest.fixture(scope="module")
def blobs():
    """Five non-IID shards of 40 points around their own centres (seed 002 §5.1, scaled)."""
    rng = generator(3, "data")
    data, sharding = gaussian_blobs(rng, rng.uniform(-3, 3, (5, 2)), [40] * 5, 1.0)
    return ShardedGaussianMean(GaussianMeanModel(data), tuple(sharding.sizes))


@pytest.mark.parametrize("diagonal", [True, False])
def test_the_scan_equals_the_step_by_step_recursion(diagonal):
    rng = generator(4)
    n, chains, dim = 37, 3, 2
    a = rng.uniform(0.5, 1.0, (n, chains, dim))
    if not diagonal:
        a = a[..., None] * np.eye(dim) + 0.05 * rng.standard_normal((n, chains, dim, dim))
    b = rng.standard_normal((n, chains, dim))
    root = rng.standard_normal((n, chains, dim, dim))
    q = root @ np.swapaxes(root, -1, -2)
    start = rng.standard_normal((chains, dim))
    moments = conditional_moments(StepMaps(a, b, q, diagonal), start, [1, 5, 36, 37])
    mean, cov = start.copy(), np.zeros((chains, dim, dim))
    sums, seconds = [], []
    total_mean, total_second = 0, 0
    for step in range(n):
        matrix = a[step][..., None] * np.eye(dim) if diagonal else a[step]
        mean = np.einsum("cij,cj->ci", matrix, mean) + b[step]
        cov = matrix @ cov @ np.swapaxes(matrix, -1, -2) + q[step]
        total_mean = total_mean + mean
        total_second = total_second + cov + mean[..., :, None] * mean[..., None, :]
        if step + 1 in (1, 5, 36, 37):
            sums.append(total_mean)
            seconds.append(total_second)
    np.testing.assert_allclose(moments.sum_mean, np.stack(sums), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(moments.sum_second, np.stack(seconds), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(moments.final_covariance, cov, rtol=1e-12, atol=1e-12)


def _window_verdicts(sharded, schedule, sampler, estimator, oracle, n_updates, burn_in,
                     replicates=300, groups=None, replacement=True, batch_size=5, rate=None):
    """Oracle checks of the window averages of θ and θ² per chain and coordinate."""
    run = replay(schedule, sampler, estimator, n_updates=n_updates, n_replicates=replicates,
                 initial_position=1.0, seed=8, batch_size=batch_size, replacement=replacement,
                 checkpoints=[burn_in, n_updates])
    maps = oracle.step_maps(schedule.update_shards(n_updates),
                            schedule.update_column("shard_frequency", n_updates),
                            sampler.step_size, groups=groups)
    exact_mean, exact_second = conditional_moments(maps, np.ones(2), [burn_in, n_updates]) \
        .window(burn_in, n_updates)
    width = n_updates - burn_in
    chains = (np.cumsum([0] + list(groups[:-1])) if groups
              else np.arange(schedule.n_servers))
    measured = {name: (n_updates * run.averages[name][1] - burn_in * run.averages[name][0])
                / width for name in ("theta", "theta_squared")}
    exact = {"theta": exact_mean, "theta_squared": np.diagonal(exact_second, 0, -2, -1)}
    n_comparisons = 2 * chains.size * 2
    z = z_for_family(rate or FAMILY_RATE, n_comparisons)
    verdicts = []
    for name in measured:
        values = measured[name][:, chains]
        for c in range(chains.size):
            for j in range(2):
                column = values[:, c, j]
                verdicts.append(oracle_check(
                    f"{name}/chain={c}/{j}", column.mean(),
                    column.std(ddof=1) / math.sqrt(column.size), exact[name][c, j], z,
                    n_replicates=column.size))
    return verdicts


def _assert_hold(verdicts):
    failed = [(v.check, v.observed, v.expected, v.mc_error) for v in verdicts
              if v.verdict != HOLDS]
    assert not failed, failed


TIMING = WorkerTiming(LatencyModel("exponential", 1.0))


@pytest.mark.parametrize("correction, replacement", [(True, True), (False, True),
                                                     (True, False)])
def test_traveling_dsgld_matches_its_oracle(unequal, correction, replacement):
    schedule = TravelingChains(6, trajectory_lengths=(7, 7, 7, 1, 1, 1),
                               assignment="permutation", timing=TIMING).simulate(2000, seed=1)
    base = unequal.shard_gradient()
    estimator = ShardScaled(base) if correction else base
    oracle = ShardedGaussianOracle.for_model(unequal, 5, replacement, correction)
    _assert_hold(_window_verdicts(unequal, schedule, SGLD(1e-4), estimator, oracle, 2000, 400,
                                  replacement=replacement))


def test_coupled_groups_match_their_oracle(unequal):
    schedule = TravelingChains(6, trajectory_lengths=3, coupling_groups=(3, 2, 1),
                               timing=TIMING).simulate(2000, seed=1)
    _assert_hold(_window_verdicts(unequal, schedule, CoupledSGLD(1e-4, (3, 2, 1)),
                                  ShardScaled(unequal.shard_gradient()),
                                  ShardedGaussianOracle.for_model(unequal, 5), 2000, 400,
                                  groups=(3, 2, 1)))


@pytest.mark.parametrize("alpha, full", [(1.0, False), (0.6, True)])
def test_federated_fsgld_matches_its_oracle(blobs, alpha, full):
    schedule = FederatedRounds((0.1, 0.2, 0.3, 0.15, 0.25), local_updates=20, n_chains=3,
                               timing=TIMING).simulate(2000, seed=2)
    fitted = surrogates.analytic(blobs)
    if full:  # an imperfect surrogate with correlated coordinates
        fitted = surrogates.GaussianSurrogates(fitted.means + 0.1,
                                               fitted.covariances + 0.004 * (1 - np.eye(2))
                                               + 0.01 * np.eye(2))
    estimator = Conducive(ShardScaled(blobs.shard_gradient()), fitted, alpha)
    oracle = ShardedGaussianOracle.for_model(blobs, 5, surrogates=fitted, alpha=alpha)
    assert oracle.diagonal != full
    _assert_hold(_window_verdicts(blobs, schedule, SGLD(2e-4), estimator, oracle, 2000, 400))


def test_negative_controls_uncorrected_dsgld_and_dsgld_against_fsgld_are_violated(unequal,
                                                                                  blobs):
    """The same checks, judged against the wrong oracle, must find the difference."""
    traveling = TravelingChains(6, trajectory_lengths=(7, 7, 7, 1, 1, 1),
                                assignment="permutation", timing=TIMING).simulate(2000, seed=1)
    uncorrected = _window_verdicts(unequal, traveling, SGLD(1e-4), unequal.shard_gradient(),
                                   ShardedGaussianOracle.for_model(unequal, 5), 2000, 400)
    assert any(v.verdict == VIOLATED for v in uncorrected)
    federated = FederatedRounds((0.2,) * 5, local_updates=20, n_chains=3,
                                timing=TIMING).simulate(2000, seed=2)
    dsgld_vs_fsgld = _window_verdicts(
        blobs, federated, SGLD(2e-4), ShardScaled(blobs.shard_gradient()),
        ShardedGaussianOracle.for_model(blobs, 5, surrogates=surrogates.analytic(blobs)),
        2000, 400)
    assert any(v.verdict == VIOLATED for v in dsgld_vs_fsgld)


def test_round_stationary_reduces_to_math_md_closed_forms(blobs):
    model = blobs.model
    h, batch = 5e-4, 5
    within = model.n_data**2 * blobs.shard_variances.mean(axis=0) / batch
    between = model.n_data**2 * blobs.shard_means.var(axis=0)
    f = [0.2] * 5
    for fsgld in (False, True):
        oracle = ShardedGaussianOracle.for_model(
            blobs, batch, surrogates=surrogates.analytic(blobs) if fsgld else None)
        a, c, q = shard_round_maps(oracle, f, h, model.posterior_mean)
        for local in (1, 7, 60):
            mean, second = round_stationary(a, c, q, f, local)
            np.testing.assert_allclose(mean, 0.0, atol=1e-12)
            closed = [dsgld_stationary_variance(h, model.precision, within[j], between[j],
                                                local, fsgld) for j in range(2)]
            np.testing.assert_allclose(second, closed, rtol=1e-10)


def test_phi_limits():
    a = np.array([0.5, 0.9, 0.99])
    np.testing.assert_allclose(phi(a, 1), 1 / (1 - a**2), rtol=1e-14)
    np.testing.assert_allclose(phi(0.5, 400), 1 / (1 - 0.5) ** 2, rtol=1e-2)
    assert np.all(np.diff([phi(0.9, t) for t in (1, 2, 5, 20, 100)]) > 0)


def test_round_stationary_matches_a_long_federated_run(blobs):
    """Unequal client probabilities: time-averaged second moment of 3 chains × 40 replicates
    after a burn-in, against the exact stationary value; SE from the 120 chain-replicate
    values (independent given their own schedules) with a Student margin at rate 1e-3."""
    from scipy import stats

    f = (0.1, 0.2, 0.3, 0.15, 0.25)
    h, local, n_updates, burn_in = 5e-4, 10, 6000, 1000
    chains, replicates = 30, 4
    schedule = FederatedRounds(f, local_updates=local, n_chains=chains,
                               timing=TIMING).simulate(n_updates, seed=6)
    run = replay(schedule, SGLD(h), ShardScaled(blobs.shard_gradient()), n_updates=n_updates,
                 n_replicates=replicates, initial_position=0.0, seed=9, batch_size=5,
                 checkpoints=[burn_in, n_updates])
    mu = blobs.model.posterior_mean
    width = n_updates - burn_in
    window = {name: (n_updates * run.averages[name][1] - burn_in * run.averages[name][0]) / width
              for name in ("theta", "theta_squared")}
    second = window["theta_squared"] - 2 * mu * window["theta"] + mu**2  # avg (θ - μ)²
    per_chain = second.mean(axis=0)  # (chain, d): chains carry independent schedules
    a, c, q = shard_round_maps(ShardedGaussianOracle.for_model(blobs, 5), f, h, mu)
    _, exact = round_stationary(a, c, q, f, local)
    t = stats.t.isf(FAMILY_RATE / 4, chains - 1)
    for j in range(2):
        verdict = oracle_check("stationary", per_chain[:, j].mean(),
                               per_chain[:, j].std(ddof=1) / math.sqrt(chains), exact[j], t,
                               n_replicates=chains, relative=True, margin=0.1)
        assert verdict.verdict == HOLDS, verdict


def test_gradient_noise_identity_matches_monte_carlo(blobs):
    """E‖ĝ - ∇‖² of DSGLD and of FSGLD with α = 1/2, at a fixed θ, over 40,000 draws of
    (shard, minibatch); z = 3.3 (Bonferroni over 2, family rate 1e-3)."""
    theta = np.array([0.4, -1.2])
    f = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    batch = 4
    rng = generator(10)
    scores = [blobs.point_scores(theta, s) for s in range(5)]
    full = sum(s.sum(axis=0) for s in scores)
    fitted = surrogates.GaussianSurrogates(blobs.shard_means + 0.2,
                                           np.array([np.eye(2) * 0.02] * 5))
    surrogate_scores = np.stack([fitted.score(theta, s) for s in range(5)])
    z = z_for_family(1e-3, 2)
    for alpha in (0.0, 0.5):
        draws = 40_000
        shards = rng.choice(5, size=draws, p=f)
        errors = np.empty(draws)
        for s in range(5):
            chosen = np.flatnonzero(shards == s)
            picks = rng.integers(0, 40, (chosen.size, batch))
            estimate = (40 / (f[s] * batch)) * scores[s][picks].sum(axis=1)
            if alpha:
                estimate = estimate + alpha * (surrogate_scores.sum(axis=0)
                                               - surrogate_scores[s] / f[s])
            errors[chosen] = np.sum((estimate - full) ** 2, axis=1)
        exact = gradient_noise(scores, f, batch, surrogate_scores if alpha else None, alpha)
        verdict = oracle_check(f"alpha={alpha}", errors.mean(),
                               errors.std(ddof=1) / math.sqrt(draws), exact["total"], z,
                               relative=True, margin=0.05)
        assert verdict.verdict == HOLDS, verdict


def test_coupled_gradient_noise_falls_by_the_group_size(blobs):
    """Groups of R distinct uniformly random shards: Monte Carlo against W/R + B(S-R)/(R(S-1));
    z = 3.5 (Bonferroni over 3 group sizes, family rate 1e-3)."""
    theta = np.array([0.1, 0.3])
    scores = [blobs.point_scores(theta, s) for s in range(5)]
    full = sum(s.sum(axis=0) for s in scores)
    rng = generator(11)
    z = z_for_family(1e-3, 3)
    single = coupled_gradient_noise(scores, 3, 1)
    for group in (1, 2, 4):
        draws = 30_000
        subsets = np.argsort(rng.random((draws, 5)), axis=1)[:, :group]
        estimate = np.zeros((draws, 2))
        for member in range(group):
            picks = rng.integers(0, 40, (draws, 3))
            member_scores = np.stack(scores)[subsets[:, member][:, None], picks]
            estimate += 5 * (40 / 3) * member_scores.sum(axis=1) / group
        errors = np.sum((estimate - full) ** 2, axis=1)
        exact = coupled_gradient_noise(scores, 3, group)
        verdict = oracle_check(f"R={group}", errors.mean(),
                               errors.std(ddof=1) / math.sqrt(draws), exact["total"], z,
                               relative=True, margin=0.05)
        assert verdict.verdict == HOLDS, verdict
        assert exact["minibatch"] == pytest.approx(single["minibatch"] / group, rel=1e-12)
    assert single["total"] == pytest.approx(gradient_noise(scores, [0.2] * 5, 3)["total"],
                                            rel=1e-12)


def test_epsilon_squared_of_exact_surrogates_is_the_shard_spread(blobs):
    """With q_s the exact shard likelihood, ∇log p(x_i|θ) - ∇log q_s(θ)/N_s = x_i - x̄_s for
    every θ, so ε_s² = mean ‖x_i - x̄_s‖²; γ_s² is the largest ‖x_i - θ‖² on the grid."""
    grid = theta_grid(7.0, 15)
    eps = epsilon_squared(blobs.point_scores, blobs.shard_sizes, grid, surrogates.analytic(blobs))
    np.testing.assert_allclose(eps, blobs.shard_variances.sum(axis=1), rtol=1e-10)
    gamma = gamma_squared(blobs.point_scores, 5, grid)
    for s in range(5):
        corners = np.array([[x, y] for x in (-7, 7) for y in (-7, 7)])
        distances = np.sum((blobs.shard_data(s)[:, None] - corners) ** 2, axis=-1)
        assert gamma[s] == pytest.approx(distances.max(), rel=1e-12)
    assert np.all(eps < gamma)
