"""Exact oracle of downpour and elastic SGLD on the Gaussian mean against Monte Carlo.

Every comparison is a z-score of the Monte Carlo estimate against the exact value, with the
Monte Carlo error from the exact variance (means of φ̂(θ)), from the sample spread (means of
φ̂(θ²)), or √(2/(R - 1)) relative (the sample variance of φ̂(θ), Gaussian to a good
approximation). |z| < Z = 4.5 fails a correct run with probability 6.8e-6 per comparison; with
the 9 comparisons of one run the false-failure rate is below 1e-4. The negative controls judge
the same runs against the oracle of a nearby wrong protocol and must give |z| > Z somewhere.
"""

import numpy as np

from simulators.downpour import DownpourSystem
from simulators.elastic import ElasticSystem
from simulators.latency import LatencyModel, WorkerTiming
from workbench.engine.protocols import coupling_steps
from workbench.engine.replay import replay
from workbench.oracles.linear_gaussian import estimator_moments
from workbench.oracles.protocols import downpour_moments, elastic_moments
from workbench.samplers.sgld import SGLD

Z = 4.5
H = 1e-4
START = 0.8
BATCH = 10
REPLICATES = 400
CHECKPOINTS = [20, 100, 400]
TIMING = WorkerTiming(LatencyModel("exponential", 1.0), speed_factors=(1.0, 2.0, 0.5, 1.0))


def _exact(model, moments):
    return estimator_moments(moments, model.posterior_mean, START - model.posterior_mean,
                             model.gradient_noise_variance(BATCH))


def _z_scores(run, exact):
    """|z| of every comparison: (mean θ, variance θ, mean θ²) per checkpoint."""
    theta = run.averages["theta"].mean(axis=2)[..., 0]  # pooled over chains, (L, R)
    square = run.averages["theta_squared"].mean(axis=2)[..., 0]
    mean, variance = exact["theta"]["mean"][:, 0], exact["theta"]["variance"][:, 0]
    r = theta.shape[1]
    z_mean = (theta.mean(axis=1) - mean) / np.sqrt(variance / r)
    z_variance = (theta.var(axis=1, ddof=1) / variance - 1) / np.sqrt(2 / (r - 1))
    z_square = ((square.mean(axis=1) - exact["theta_squared"]["mean"][:, 0])
                / (square.std(axis=1, ddof=1) / np.sqrt(r)))
    return np.abs(np.concatenate([z_mean, z_variance, z_square]))


def _replay(schedule, model):
    return replay(schedule, SGLD(H), model.minibatch_gradient(), n_updates=400,
                  n_replicates=REPLICATES, initial_position=START, seed=21, batch_size=BATCH,
                  checkpoints=CHECKPOINTS)


def test_downpour_sgld_matches_its_exact_oracle(scalar_model):
    k, period = scalar_model.precision, 4
    schedule = DownpourSystem(4, TIMING, period=period).simulate(400, seed=3)
    staleness = schedule.update_staleness(400)[:, 0]
    assert staleness.max() >= 3
    run = _replay(schedule, scalar_model)
    exact = _exact(scalar_model, downpour_moments(H, k, period, staleness, CHECKPOINTS))
    assert _z_scores(run, exact).max() < Z
    # negative controls: the same run judged as if the pushes were fresh, or as π = 1
    fresh = _exact(scalar_model, downpour_moments(H, k, period, 0 * staleness, CHECKPOINTS))
    assert _z_scores(run, fresh).max() > Z
    single = _exact(scalar_model, downpour_moments(H, k, 1, staleness, CHECKPOINTS))
    assert _z_scores(run, single).max() > Z


def test_downpour_period_one_oracle_is_the_stale_sgld_oracle(scalar_model):
    from workbench.oracles.linear_gaussian import finite_moments, sgld_dynamics

    staleness = DownpourSystem(4, TIMING).simulate(400, seed=3).update_staleness()[:, 0]
    k = scalar_model.precision
    ours = downpour_moments(H, k, 1, staleness, CHECKPOINTS)
    stale = finite_moments(sgld_dynamics(H), k, staleness, CHECKPOINTS, fourth_moments=False)
    for name in ("sum_mean", "sum_variance_gradient", "sum_variance_thermal", "e_mean_sq"):
        np.testing.assert_allclose(getattr(ours, name), getattr(stale, name), rtol=1e-10)


def test_elastic_sgld_matches_its_exact_oracle(scalar_model):
    k = scalar_model.precision
    schedule = ElasticSystem(4, period=3, coupling_strength=0.5,
                             timing=TIMING).simulate(400, seed=3)
    run = _replay(schedule, scalar_model)
    coupled = coupling_steps(schedule, 400)
    exact = _exact(scalar_model, elastic_moments(H, k, 4, 0.5, coupled, 400, CHECKPOINTS))
    assert _z_scores(run, exact).max() < Z
    # negative control: judged as independent chains (α = 0)
    uncoupled = _exact(scalar_model, elastic_moments(H, k, 4, 0.0, coupled, 400, CHECKPOINTS))
    assert _z_scores(run, uncoupled).max() > Z


def test_elastic_oracle_with_one_chain_or_no_coupling_is_sgld(scalar_model):
    from workbench.oracles.linear_gaussian import finite_moments, sgld_dynamics

    k = scalar_model.precision
    fresh = finite_moments(sgld_dynamics(H), k, np.zeros(400, int), CHECKPOINTS,
                           fourth_moments=False)
    alone = elastic_moments(H, k, 1, 1.0, {3: [0], 6: [0]}, 400, CHECKPOINTS)
    independent = elastic_moments(H, k, 3, 0.0, {3: [0, 1, 2]}, 400, CHECKPOINTS)
    # one chain coupled with α = 1 swaps with a centre that holds its own past position,
    # which is not SGLD: only the uncoupled pair must agree with the 1-chain formulas
    np.testing.assert_allclose(independent.sum_mean, fresh.sum_mean, rtol=1e-10)
    np.testing.assert_allclose(independent.e_mean_sq, fresh.e_mean_sq, rtol=1e-10)
    np.testing.assert_allclose(3 * independent.sum_variance_gradient,
                               fresh.sum_variance_gradient, rtol=1e-10)
    assert not np.allclose(alone.sum_mean, fresh.sum_mean, rtol=1e-6)
