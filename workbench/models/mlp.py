"""A Bayesian multilayer perceptron classifier of any layer sizes (seed 001 §5.2).

Layers: input (p features) → hidden layers of ``hidden_sizes`` units with ReLU → ``n_classes``
logits → softmax. θ holds, layer after layer, the weight matrix ``(fan_in, fan_out)`` then the
bias ``(fan_out,)``, so d = Σ_l (fan_in_l + 1) fan_out_l. Prior N(0, σ₀² I) on all of θ
(seed 001: zero-mean, unit-variance Gaussian priors on the weights). The likelihood, batched
back-propagation and held-out test functions are those of
:class:`workbench.models.network.NetworkClassifier`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulators import validation
from workbench.models.network import (
    NetworkClassifier,
    ParameterLayout,
    dense_backward,
    dense_forward,
)


@dataclass(frozen=True, eq=False)
class MultilayerPerceptron(NetworkClassifier):
    """A ReLU MLP with softmax output on ``(N, p)`` features and labels in 0..n_classes-1."""

    hidden_sizes: tuple[int, ...] = (50,)

    def _inputs(self, field: str, features) -> np.ndarray:
        features = np.ascontiguousarray(features, dtype=float)
        if features.ndim != 2 or features.shape[0] < 1 or features.shape[1] < 1:
            raise validation.InvalidParameter(field, features.shape,
                                              "must be an (N, p) array with N, p >= 1")
        if not np.all(np.isfinite(features)):
            raise validation.InvalidParameter(field, "non-finite values", "must be finite")
        return features

    def _layout(self) -> ParameterLayout:
        if isinstance(self.hidden_sizes, int | str):
            raise validation.InvalidParameter("hidden_sizes", self.hidden_sizes,
                                              "must be a sequence of layer sizes")
        hidden = [validation.integer(f"hidden_sizes[{k}]", size, minimum=1)
                  for k, size in enumerate(self.hidden_sizes)]
        object.__setattr__(self, "hidden_sizes", tuple(hidden))
        sizes = [self.features.shape[1], *hidden, self.n_classes]
        shapes = []
        for k, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            shapes += [(f"dense{k}.weight", (fan_in, fan_out)), (f"dense{k}.bias", (fan_out,))]
        return ParameterLayout(shapes)

    @property
    def _names(self) -> list[str]:
        return [f"dense{k}" for k in range(len(self.hidden_sizes) + 1)]

    @property
    def example_cost(self) -> int:
        return max(self.features.shape[1], *self.hidden_sizes, self.n_classes)

    def _forward(self, weights, inputs):
        return dense_forward(weights, self._names, inputs)

    def _backward(self, weights, cache, delta):
        gradients: dict[str, np.ndarray] = {}
        dense_backward(weights, self._names, cache, delta, gradients)
        return gradients
