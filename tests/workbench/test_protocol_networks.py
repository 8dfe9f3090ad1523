"""Seed 003's protocols on networks (Li et al. 2019, Algorithm 1 and Appendix B; issue 32): the
engine replays downpour and elastic schedules on the digits MLP and CNN, vectorised over
replicates, and each reduces bit for bit to its serial sampler — downpour pSGLD with π = 1 and
one worker is pSGLD (the worker's preconditioner is the serial chain's), and elastic SGHMC with
α = 0 is independent SGHMC chains."""

import numpy as np
import pytest

from simulators.async_server import AsyncServerSystem
from simulators.downpour import DownpourSystem
from simulators.elastic import ElasticSystem
from simulators.latency import LatencyModel, WorkerTiming
from workbench.data.digits import DIGITS_SHAPE, digits
from workbench.engine.replay import replay
from workbench.models.cnn import ConvolutionalNetwork
from workbench.models.mlp import MultilayerPerceptron
from workbench.samplers.psgld import PSGLD
from workbench.samplers.sghmc import SGHMC

TIMING = WorkerTiming(LatencyModel("exponential", 1.0))
UPDATES = 60


def _networks():
    data = digits()
    features, labels = data.train_features[:200], data.train_labels[:200]
    common = {"labels": labels, "n_classes": 10, "test_features": data.test_features[:50],
              "test_labels": data.test_labels[:50]}
    images = (-1, *DIGITS_SHAPE)
    return {
        "mlp": MultilayerPerceptron(features, hidden_sizes=(8,), **common),
        "cnn": ConvolutionalNetwork(features.reshape(images), filters=(2, 3), hidden_size=8,
                                    **{**common, "test_features":
                                       common["test_features"].reshape(images)}),
    }


NETWORKS = _networks()


def _run(schedule, sampler, model, n_servers=1):
    start = 0.1 * np.random.default_rng(5).standard_normal((6, n_servers, model.dim))
    return replay(schedule, sampler, model.minibatch_gradient(), n_updates=UPDATES,
                  n_replicates=6, initial_position=start, seed=11, batch_size=20,
                  checkpoints=[10, UPDATES], replicate_block=3)


def _assert_same(a, b):
    assert np.all(np.isfinite(a.final_position))
    np.testing.assert_array_equal(a.final_position, b.final_position)
    for name in ("theta", "theta_squared"):
        np.testing.assert_array_equal(a.averages[name], b.averages[name])


@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_downpour_psgld_with_one_worker_and_period_one_is_psgld(network):
    model = NETWORKS[network]
    downpour = DownpourSystem(1, TIMING, period=1).simulate(UPDATES, seed=3)
    serial = AsyncServerSystem(1, TIMING).simulate(UPDATES, seed=3)
    assert serial.update_staleness(UPDATES).max() == 0
    _assert_same(_run(downpour, PSGLD(1e-3), model), _run(serial, PSGLD(1e-3), model))


@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_elastic_sghmc_without_coupling_is_independent_sghmc_chains(network):
    model = NETWORKS[network]
    elastic = ElasticSystem(3, period=4, coupling_strength=0.0,
                            timing=TIMING).simulate(UPDATES, seed=3)
    independent = AsyncServerSystem(1, n_servers=3).simulate(UPDATES, seed=9)
    sampler = SGHMC(1e-3, 10.0, "euler")
    _assert_same(_run(elastic, sampler, model, 3), _run(independent, sampler, model, 3))


@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_the_reductions_have_negative_controls(network):
    """Four workers (stale reads) and coupled chains (α = 1) are other chains."""
    model = NETWORKS[network]
    serial = _run(AsyncServerSystem(1, TIMING).simulate(UPDATES, seed=3), PSGLD(1e-3), model)
    four = _run(DownpourSystem(4, TIMING, period=1).simulate(UPDATES, seed=3), PSGLD(1e-3),
                model)
    assert not np.array_equal(four.final_position, serial.final_position)
    sampler = SGHMC(1e-3, 10.0, "euler")
    coupled = _run(ElasticSystem(3, period=4, coupling_strength=1.0,
                                 timing=TIMING).simulate(UPDATES, seed=3), sampler, model, 3)
    alone = _run(AsyncServerSystem(1, n_servers=3).simulate(UPDATES, seed=9), sampler, model, 3)
    assert not np.array_equal(coupled.final_position, alone.final_position)
