"""Bayesian neural-network classifiers: what the MLP and the CNN share.

Seed 001 §5.2 puts zero-mean, unit-variance Gaussian priors on every weight of its networks and
samples them with stale SGHMC. Here a network with parameters θ ∈ R^d (all weights and biases,
flattened by a :class:`ParameterLayout`) defines a softmax classifier,

    log p(y | x, θ) = f_y(x; θ) - log Σ_k exp f_k(x; θ),
    U(θ) = ‖θ‖²/(2σ₀²) - Σ_i log p(y_i | x_i, θ)      (docs/math.md §1, without normalisers).

Everything is vectorised over positions: θ of shape ``(R, d)`` is unpacked into per-replicate
weights ``(R, fan_in, fan_out)`` and each layer is one batched ``matmul``; examples are either
a per-replicate minibatch ``(R, n, ...)`` (the engine's estimator) or the whole data set
``(N, ...)`` shared by every replicate (full-data potential, held-out test functions), which
``matmul`` broadcasts. Back-propagation runs on the same batched arrays; the weight gradient of
a layer, inputᵀ · δ, sums the per-example gradients over the batch in the product itself
(seed 001's per-example gradients, reduced as Chen's estimator needs them).

A subclass defines the architecture: its :class:`ParameterLayout`, ``_inputs(features)`` and
``_forward(weights, inputs) -> (logits, cache)`` / ``_backward(weights, cache, delta)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import log_softmax

from simulators import validation
from workbench.core.phi import TestFunction
from workbench.models.classification import (
    averaged_prediction_scores,
    class_indices,
    held_out_test_functions,
    labelled_examples,
)
from workbench.models.per_example import PerExampleGradient, over_positions


class ParameterLayout:
    """Named weight arrays laid end to end in θ (row-major, in the order given)."""

    def __init__(self, shapes: list[tuple[str, tuple[int, ...]]]):
        self.shapes = dict(shapes)
        sizes = [int(np.prod(shape)) for _, shape in shapes]
        ends = np.cumsum(sizes)
        self.slices = {name: slice(int(end - size), int(end))
                       for (name, _), size, end in zip(shapes, sizes, ends, strict=True)}
        self.dim = int(ends[-1])

    def unpack(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """Views ``(R, *shape)`` of every array in positions ``theta`` ``(R, d)``."""
        return {name: theta[:, self.slices[name]].reshape((-1,) + shape)
                for name, shape in self.shapes.items()}

    def pack(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """The inverse of :meth:`unpack`: ``(R, d)`` from arrays ``(R, *shape)``."""
        return np.concatenate([arrays[name].reshape(len(arrays[name]), -1)
                               for name in self.shapes], axis=1)


def dense_forward(weights: dict[str, np.ndarray], names: list[str], inputs: np.ndarray):
    """Dense layers ``names`` (ReLU between them, none after the last) on ``inputs``.

    ``inputs``: ``(R, n, fan_in)`` or shared ``(N, fan_in)``; returns the logits ``(R, n, K)``
    and the layer inputs needed by :func:`dense_backward`.
    """
    layer_inputs = []
    activation = inputs
    for k, name in enumerate(names):
        layer_inputs.append(activation)
        activation = (_shared_matmul(activation, weights[f"{name}.weight"])
                      + weights[f"{name}.bias"][:, None, :])
        if k < len(names) - 1:
            activation = np.maximum(activation, 0.0)
    return activation, layer_inputs


def _shared_matmul(inputs: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``inputs @ weight`` for per-replicate weights ``(R, fan_in, fan_out)``.

    Inputs shared by every replicate ``(N, fan_in)`` go through one 2-d product with the
    replicates' weights side by side: numpy's broadcast ``matmul`` of a 2-d by a stacked 3-d
    array takes a slow non-BLAS path (about 25 times slower for the held-out test functions).
    """
    if inputs.ndim != 2:
        return np.matmul(inputs, weight)
    n_replicates, fan_in, fan_out = weight.shape
    product = inputs @ weight.transpose(1, 0, 2).reshape(fan_in, n_replicates * fan_out)
    return product.reshape(len(inputs), n_replicates, fan_out).transpose(1, 0, 2)


def dense_backward(weights, names: list[str], layer_inputs: list[np.ndarray],
                   delta: np.ndarray, gradients: dict[str, np.ndarray],
                   input_gradient: bool = False) -> np.ndarray | None:
    """Back-propagate ``delta`` (∂/∂logits) through the dense layers, summing over examples.

    Fills ``gradients`` with ``(R, *shape)`` sums; returns ∂/∂inputs ``(R, n, fan_in)`` when
    ``input_gradient`` (a network with layers below the dense ones needs it), else None.
    """
    for k in range(len(names) - 1, -1, -1):
        name, inputs = names[k], layer_inputs[k]
        gradients[f"{name}.weight"] = np.matmul(np.swapaxes(inputs, -1, -2), delta)
        gradients[f"{name}.bias"] = delta.sum(axis=-2)
        if k == 0 and not input_gradient:
            return None
        delta = np.matmul(delta, np.swapaxes(weights[f"{name}.weight"], -1, -2))
        if k > 0:
            delta = delta * (inputs > 0)  # ReLU'(z) through the activation it produced
    return delta


@dataclass(frozen=True, eq=False)
class NetworkClassifier:
    """A softmax network with prior N(0, σ₀² I) on θ (module docstring); see subclasses."""

    features: Any
    labels: Any
    prior_scale: float = 1.0
    test_features: Any = None
    test_labels: Any = None
    n_classes: int = 10

    def __post_init__(self) -> None:
        n_classes = validation.integer("n_classes", self.n_classes, minimum=2)
        object.__setattr__(self, "n_classes", n_classes)
        validation.positive("prior_scale", self.prior_scale)
        examples = labelled_examples(
            self._inputs, lambda field, labels: class_indices(field, labels, n_classes),
            self.features, self.labels, self.test_features, self.test_labels)
        for name, value in zip(("features", "labels", "test_features", "test_labels"),
                               examples, strict=True):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "layout", self._layout())

    # ------------------------------------------------------------------ architecture hooks
    def _inputs(self, field: str, features) -> np.ndarray:
        raise NotImplementedError

    def _layout(self) -> ParameterLayout:
        raise NotImplementedError

    def _forward(self, weights, inputs) -> tuple[np.ndarray, Any]:
        raise NotImplementedError

    def _backward(self, weights, cache, delta) -> dict[str, np.ndarray]:
        raise NotImplementedError

    @property
    def example_cost(self) -> int:
        """Elements of the widest per-example intermediate (bounds memory in blocks)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ sizes
    @property
    def n_data(self) -> int:
        return int(self.features.shape[0])

    @property
    def dim(self) -> int:
        return self.layout.dim

    def initial_position(self, rng: np.random.Generator, shape: tuple[int, ...] = ()):
        """He-normal weights (variance 2/fan_in), zero biases: a start where ReLUs are alive."""
        draws, size = {}, int(np.prod(shape))
        for name, layer_shape in self.layout.shapes.items():
            if name.endswith(".bias"):
                draws[name] = np.zeros((size,) + layer_shape)
            else:
                fan_in = int(np.prod(layer_shape[:-1]))
                draws[name] = (np.sqrt(2.0 / fan_in)
                               * rng.standard_normal((size,) + layer_shape))
        return self.layout.pack(draws).reshape(tuple(shape) + (self.dim,))

    # ------------------------------------------------------------------ likelihood
    def _log_likelihood(self, theta: np.ndarray, inputs, labels, gradient: bool):
        """Σ log p(y | x, θ) over the examples, ``(R,)``, and its gradient ``(R, d)``."""
        weights = self.layout.unpack(theta)
        logits, cache = self._forward(weights, inputs)
        log_probabilities = log_softmax(logits, axis=-1)
        labels = np.broadcast_to(labels, logits.shape[:-1])
        chosen = np.take_along_axis(log_probabilities, labels[..., None], axis=-1)[..., 0]
        total = chosen.sum(axis=-1)
        if not gradient:
            return total, None
        delta = -np.exp(log_probabilities)
        np.put_along_axis(delta, labels[..., None],
                          np.take_along_axis(delta, labels[..., None], axis=-1) + 1.0, axis=-1)
        return total, self.layout.pack(self._backward(weights, cache, delta))

    def potential(self, theta: np.ndarray) -> np.ndarray:
        """U(θ) without the prior's normaliser, shape ``(...,)``."""
        def block(rows):
            total, _ = self._log_likelihood(rows, self.features, self.labels, gradient=False)
            return np.sum(rows**2, axis=1) / (2 * self.prior_scale**2) - total
        return over_positions(block, theta, self.dim, self.n_data * self.example_cost)

    def potential_gradient(self, theta: np.ndarray) -> np.ndarray:
        """The full-data ∇U(θ), shape ``(..., d)``."""
        def block(rows):
            _, scores = self._log_likelihood(rows, self.features, self.labels, gradient=True)
            return rows / self.prior_scale**2 - scores
        return over_positions(block, theta, self.dim, self.n_data * self.example_cost)

    def log_likelihood_gradient_sum(self, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Σ_{i∈rows[r]} ∇log p(y_i | x_i, θ_r), ``(R, d)``, by batched back-propagation."""
        _, scores = self._log_likelihood(theta, self.features[rows], self.labels[rows],
                                         gradient=True)
        return scores

    def minibatch_gradient(self) -> PerExampleGradient:
        return PerExampleGradient(self)

    # ------------------------------------------------------------------ held-out data
    def test_functions(self) -> tuple[TestFunction, TestFunction]:
        """Held-out ``log_loss`` (test cross-entropy, seed 001 Figure 3) and ``accuracy``."""
        if self.test_features is None:
            raise validation.InvalidParameter("test_features", None,
                                              "the model was built without held-out data")
        test = self.test_features

        def log_probabilities(rows):
            logits, _ = self._forward(self.layout.unpack(rows), test)
            return log_softmax(logits, axis=-1)

        return held_out_test_functions(log_probabilities, self.test_labels, self.dim,
                                       test.shape[0] * self.example_cost)

    def held_out_predictions(self, theta: np.ndarray) -> np.ndarray:
        """p(k | x_j, θ) on the held-out examples: ``(..., d) -> (..., M, K)``."""
        test = self.test_features

        def block(rows):
            logits, _ = self._forward(self.layout.unpack(rows), test)
            return np.exp(log_softmax(logits, axis=-1))

        return over_positions(block, theta, self.dim, test.shape[0] * self.example_cost)

    def averaged_prediction_scores(self, mean_probabilities: np.ndarray) -> dict:
        """The averaged prediction's held-out scores
        (:func:`~workbench.models.classification.averaged_prediction_scores`)."""
        return averaged_prediction_scores(mean_probabilities, self.test_labels)
