"""The model protocol: the Gaussian mean satisfies it, and the engine replays any model."""

import hashlib

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.static import constant_staleness
from simulators.validation import InvalidParameter
from workbench.data.digits import digits
from workbench.engine.replay import replay
from workbench.models.cnn import ConvolutionalNetwork
from workbench.models.gaussian import GaussianMeanModel
from workbench.models.logistic import LogisticRegression
from workbench.models.mlp import MultilayerPerceptron
from workbench.models.protocol import GradientEstimator, Model
from workbench.samplers import SGHMC, SGLD

from .checks import assert_gradient_matches, scores_positionwise


def test_gaussian_mean_satisfies_the_protocol(gaussian_model):
    assert isinstance(gaussian_model, Model)
    assert isinstance(gaussian_model.minibatch_gradient(), GradientEstimator)


def test_gaussian_potential_matches_its_gradient_and_the_direct_sum():
    model = GaussianMeanModel.generate(generator(7, "protocol"), 30, 3, 0.5, 1.5, 2.0, 0.2)
    theta = generator(8, "protocol").standard_normal((2, 4, 3))
    direct = (np.sum((theta - 0.2) ** 2, axis=-1) / (2 * 2.0**2)
              + np.sum((model.data - theta[..., None, :]) ** 2, axis=(-2, -1)) / (2 * 1.5**2))
    # U is defined up to an additive constant (the protocol): compare differences
    potential = model.potential(theta)
    np.testing.assert_allclose(potential - potential[0, 0], direct - direct[0, 0],
                               rtol=1e-10, atol=1e-9)
    assert_gradient_matches(model, theta.reshape(-1, 3))


def _logistic():
    rng = generator(9, "protocol")
    features = rng.standard_normal((60, 4))
    labels = (features @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.logistic(size=60) > 0)
    return LogisticRegression(features, labels.astype(int), 1.0, features[:10],
                              labels[:10].astype(int))


def test_models_declaring_positionwise_gradients_have_them(monkeypatch):
    """``positionwise_gradient``: a position's ∇U is the same bit for bit alone, in the whole
    call and in other blocks (the diagnostics then score all replicates at once). The Gaussian
    mean is elementwise; a CSR logistic model's SciPy products loop over non-zeros with the
    positions innermost, checked here across the full-data position blocks too (a budget of 5
    positions per block). A dense design declares no such thing. Negative control: a gradient
    that reads the other positions of its call is caught."""
    from scipy import sparse

    from workbench.models import per_example

    rng = generator(21, "positionwise")
    gaussian = GaussianMeanModel.generate(rng, 30, 3, 0.5, 1.5, 2.0, 0.2)
    features = (rng.random((60, 9)) < 0.3) * rng.standard_normal((60, 9))
    labels = rng.integers(0, 2, 60)
    csr = LogisticRegression(sparse.csr_matrix(features), labels)
    monkeypatch.setattr(per_example, "BLOCK_BUDGET", 5 * csr.n_data)  # its (B, N) blocks
    for model in (gaussian, csr):
        assert model.positionwise_gradient
        assert scores_positionwise(model.potential_gradient,
                                   3.0 * rng.standard_normal((42, model.dim)))
    assert not LogisticRegression(features, labels).positionwise_gradient
    theta = rng.standard_normal((42, 9))
    assert not scores_positionwise(lambda t: t - t.mean(axis=-2, keepdims=True), theta)


def test_engine_replays_a_logistic_model_with_held_out_test_functions():
    model = _logistic()
    schedule = constant_staleness(150, 2)
    run = replay(schedule, SGLD(1e-3), model.minibatch_gradient(), n_updates=150,
                 n_replicates=6, initial_position=0.0, seed=3, batch_size=8,
                 test_functions=model.test_functions(), checkpoints=[50, 150],
                 replicate_block=4)
    assert run.averages["log_loss"].shape == (2, 6, 1, 1)
    assert np.all(np.isfinite(run.averages["log_loss"]))
    assert np.all((run.averages["accuracy"] >= 0) & (run.averages["accuracy"] <= 1))
    assert np.all(run.diverged_at == -1)


def test_a_batch_larger_than_the_data_without_replacement_is_refused():
    model = _logistic()
    with pytest.raises(InvalidParameter, match="batch_size"):
        replay(constant_staleness(10, 0), SGLD(1e-3), model.minibatch_gradient(), n_updates=10,
               n_replicates=2, initial_position=0.0, seed=3, batch_size=61, replacement=False)


def test_gaussian_mean_results_are_bit_identical_to_before_the_protocol():
    """Stale SGLD and SGHMC replays of the Gaussian mean hash to the digest computed with the
    code of commit 5fbf07a (before ``potential`` and the protocol were added)."""
    model = GaussianMeanModel.generate(generator(2026, "hash"), 1000, 2, 0.5)
    digest = hashlib.sha256()
    for sampler in (SGLD(2e-4), SGHMC(2e-3, friction=5.0)):
        run = replay(constant_staleness(300, 4), sampler, model.minibatch_gradient(),
                     n_updates=300, n_replicates=10, initial_position=1.0, seed=7,
                     batch_size=10, checkpoints=[100, 300], replicate_block=4)
        for name in sorted(run.averages):
            digest.update(np.ascontiguousarray(run.averages[name]).tobytes())
        digest.update(np.ascontiguousarray(run.final_position).tobytes())
    assert digest.hexdigest() == (
        "7c127feb7f682fe7ed0105dc31c7c00d6e6a8441c56118a335efe7411b36d3b3")


@pytest.mark.parametrize("network", ["mlp", "cnn"])
def test_engine_replays_networks_in_stale_windows(network):
    """Staleness 3 makes the engine evaluate windows of (width, replicate, server, d)."""
    data = digits()
    rows = slice(0, 120)
    if network == "mlp":
        model = MultilayerPerceptron(data.train_features[rows], data.train_labels[rows],
                                     test_features=data.test_features[:40],
                                     test_labels=data.test_labels[:40], hidden_sizes=(16,))
    else:
        images, test_images = (f.reshape(-1, 8, 8) for f in (data.train_features[rows],
                                                             data.test_features[:40]))
        model = ConvolutionalNetwork(images, data.train_labels[rows], test_features=test_images,
                                     test_labels=data.test_labels[:40], filters=(4, 4),
                                     hidden_size=16)
    estimator = model.minibatch_gradient()
    shapes = []

    def recording(position, minibatch):
        shapes.append(position.shape)
        return estimator(position, minibatch)

    recording.n_data, recording.dim, recording.prepare = (estimator.n_data, estimator.dim,
                                                          estimator.prepare)
    start = model.initial_position(generator(1, "start"), (3, 1))
    run = replay(constant_staleness(128, 3), SGLD(2e-4), recording, n_updates=128,
                 n_replicates=3, initial_position=start, seed=4, batch_size=10,
                 replacement=False, test_functions=model.test_functions(),
                 checkpoints=[1, 128])
    assert (4, 3, 1, model.dim) in shapes  # windows of τ + 1 = 4 updates at once
    first, last = run.averages["log_loss"][:, :, 0, 0]
    assert np.all(np.isfinite(last)) and np.all(last < first)
