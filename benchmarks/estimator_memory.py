"""What one call of a per-example estimator holds beyond its arguments, traced, against what
the engine's memory estimate counts for it (``PerExampleGradient.call_elements``): the digits
MLP (one hidden layer of 50, two of 400) and CNN, 4-256 positions, minibatches of 100 and 1,000.

    python benchmarks/estimator_memory.py

Prints each case's traced peak beyond the positions, the estimate and their ratio (at most 1:
the estimate bounds the call), then the worst ratio.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from workbench.data.digits import DIGITS_SHAPE, digits
from workbench.models.cnn import ConvolutionalNetwork
from workbench.models.mlp import MultilayerPerceptron

MIB = 1 << 20


def main() -> None:
    data = digits()
    images = data.train_features.reshape(-1, *DIGITS_SHAPE)
    models = {
        "mlp 50": MultilayerPerceptron(data.train_features, data.train_labels,
                                       hidden_sizes=(50,)),
        "mlp 400-400": MultilayerPerceptron(data.train_features, data.train_labels,
                                            hidden_sizes=(400, 400)),
        "cnn 8-16, 32": ConvolutionalNetwork(images, data.train_labels, filters=(8, 16),
                                             hidden_size=32),
    }
    worst = 0.0
    for name, model in models.items():
        gradient = model.minibatch_gradient()
        for positions, batch in ((4, 100), (16, 100), (256, 100), (4, 1000)):
            theta = 0.1 * np.random.default_rng(0).standard_normal((positions, model.dim))
            minibatch = gradient.prepare(
                np.random.default_rng(1).integers(0, model.n_data, (positions, batch)))
            gradient(theta, minibatch)  # imports and compiled kernels outside the trace
            tracemalloc.start()
            gradient(theta, minibatch)
            peak = tracemalloc.get_traced_memory()[1] - theta.nbytes
            tracemalloc.stop()
            estimate = 8 * gradient.call_elements(positions, batch)
            worst = max(worst, peak / estimate)
            print(f"{name:13s} d = {model.dim:7d}  positions {positions:4d}  batch {batch:5d}: "
                  f"traced {peak / MIB:8.1f} MiB  estimate {estimate / MIB:8.1f} MiB  "
                  f"ratio {peak / estimate:.2f}")
    print(f"worst ratio {worst:.2f}")


if __name__ == "__main__":
    main()
