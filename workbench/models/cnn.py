"""A small Bayesian convolutional network for 8×8 or 28×28 images, after seed 001's LeNet.

Seed 001 §5.2 samples a Bayesian LeNet on MNIST: two convolutional layers with max pooling and
ReLU, then two fully connected layers, Gaussian priors on every weight. Here, for channel-last
images ``(N, H, W)`` or ``(N, H, W, C)`` with H and W divisible by 4:

    conv k×k (C → F₁, same) → 2×2 max pool → ReLU → conv k×k (F₁ → F₂, same) → 2×2 max pool
    → ReLU → dense (H/4·W/4·F₂ → hidden) → ReLU → dense (hidden → n_classes) → softmax.

(Pooling before the ReLU equals pooling after it, both being monotone, and costs a quarter of
the work.) Defaults suit scikit-learn's 8×8 digits (3×3 kernels, 8 and 16 filters, 64 hidden
units: d = 6,058); LeNet's own sizes for 28×28 are 5×5 kernels, 20 and 50 filters, 500 hidden.
Convolutions are im2col matrix products (:mod:`workbench.models.convolution`: numpy's products,
compiled im2col, pooling and their gradients), batched over replicates;
likelihood, prior and test functions come from :class:`workbench.models.network.NetworkClassifier`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulators import validation
from workbench.models.convolution import (
    convolution_gradients,
    convolve,
    image_columns,
    pool_activate,
    pool_backward,
)
from workbench.models.network import (
    NetworkClassifier,
    ParameterLayout,
    dense_backward,
    dense_forward,
)
from workbench.models.per_example import BLOCK_BUDGET

_DENSE = ["dense0", "dense1"]


@dataclass(frozen=True, eq=False)
class ConvolutionalNetwork(NetworkClassifier):
    """LeNet-style CNN (module docstring) on ``(N, H, W[, C])`` images, labels 0..n_classes-1."""

    kernel_size: int = 3
    filters: tuple[int, int] = (8, 16)
    hidden_size: int = 64

    def _inputs(self, field: str, features) -> np.ndarray:
        images = np.asarray(features, dtype=float)
        if images.ndim == 3:
            images = images[..., None]
        if images.ndim != 4 or images.shape[0] < 1 or images.shape[3] < 1:
            raise validation.InvalidParameter(field, images.shape,
                                              "must be (N, H, W) or (N, H, W, C) images")
        if images.shape[1] % 4 or images.shape[2] % 4 or min(images.shape[1:3]) < 4:
            raise validation.InvalidParameter(
                field, images.shape, "image height and width must be multiples of 4 "
                "(two 2×2 poolings), e.g. 8×8 or 28×28")
        if not np.all(np.isfinite(images)):
            raise validation.InvalidParameter(field, "non-finite values", "must be finite")
        return np.ascontiguousarray(images)

    def _layout(self) -> ParameterLayout:
        kernel = validation.integer("kernel_size", self.kernel_size, minimum=1)
        if kernel % 2 == 0:
            raise validation.InvalidParameter("kernel_size", kernel,
                                              "must be odd (same padding by k // 2)")
        if isinstance(self.filters, int | str) or len(self.filters) != 2:
            raise validation.InvalidParameter("filters", self.filters,
                                              "must be two filter counts (F₁, F₂)")
        first, second = (validation.integer(f"filters[{k}]", f, minimum=1)
                         for k, f in enumerate(self.filters))
        hidden = validation.integer("hidden_size", self.hidden_size, minimum=1)
        object.__setattr__(self, "filters", (first, second))
        _, height, width, channels = self.features.shape
        flat = (height // 4) * (width // 4) * second
        return ParameterLayout([
            ("conv0.weight", (channels * kernel**2, first)), ("conv0.bias", (first,)),
            ("conv1.weight", (first * kernel**2, second)), ("conv1.bias", (second,)),
            ("dense0.weight", (flat, hidden)), ("dense0.bias", (hidden,)),
            ("dense1.weight", (hidden, self.n_classes)), ("dense1.bias", (self.n_classes,)),
        ])

    @property
    def example_cost(self) -> int:
        _, height, width, channels = self.features.shape
        first, second = self.filters
        return height * width * max(channels * self.kernel_size**2, first,
                                    first * self.kernel_size**2 // 4, second // 4)

    def _data_columns(self, images: np.ndarray) -> np.ndarray:
        """im2col of ``images`` for the first convolution; of the model's own training or
        held-out images (every full-data potential and test function passes the same array)
        formed once and kept, if it fits in :data:`BLOCK_BUDGET` elements."""
        for field in ("features", "test_features"):
            if images is getattr(self, field):
                kept = self.__dict__.setdefault("_columns", {})  # frozen: not a field
                if field not in kept:
                    columns = image_columns(images, self.kernel_size)
                    columns.flags.writeable = False  # shared by every later call
                    kept[field] = columns if columns.size <= BLOCK_BUDGET else None
                    return columns
                if kept[field] is not None:
                    return kept[field]
        return image_columns(images, self.kernel_size)

    def _forward(self, weights, images):
        height, width = images.shape[-3:-1]
        columns0 = self._data_columns(images)
        output0 = convolve(columns0, weights["conv0.weight"], (height, width))
        active0, route0 = pool_activate(output0, weights["conv0.bias"])
        columns1 = image_columns(active0, self.kernel_size)
        output1 = convolve(columns1, weights["conv1.weight"], (height // 2, width // 2))
        active1, route1 = pool_activate(output1, weights["conv1.bias"])
        logits, dense_inputs = dense_forward(weights, _DENSE,
                                             active1.reshape(*active1.shape[:2], -1))
        # the convolution outputs' and the second layer's columns' memory takes gradients of
        # their shapes in the backward pass (no large array allocated and faulted in again)
        return logits, (columns0, route0, output0, columns1, route1, output1, dense_inputs)

    def _backward(self, weights, cache, delta):
        columns0, route0, output0, columns1, route1, output1, dense_inputs = cache
        gradients: dict[str, np.ndarray] = {}
        delta = dense_backward(weights, _DENSE, dense_inputs, delta, gradients,
                               input_gradient=True)
        delta, gradients["conv1.bias"] = pool_backward(delta.reshape(route1.shape), route1,
                                                       out=output1)
        gradients["conv1.weight"], delta = convolution_gradients(
            columns1, weights["conv1.weight"], delta, self.kernel_size, input_gradient=True,
            overwrite_columns=True)
        delta, gradients["conv0.bias"] = pool_backward(delta, route0, out=output0)
        gradients["conv0.weight"], _ = convolution_gradients(
            columns0, weights["conv0.weight"], delta, self.kernel_size, input_gradient=False)
        return gradients
