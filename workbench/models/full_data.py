"""The full-data gradient ∇U(θ) as a gradient estimator: no minibatch noise (V_ζ = 0).

Any model with ``n_data``, ``dim`` and ``potential_gradient(θ)`` (the exact ∇U of docs/math.md §1)
becomes an estimator the engine can replay. The engine still draws minibatch indices; this
estimator ignores them, so the only randomness left is the injected noise √(2h)ξ and the
staleness of the gradient point. Teaching pages use it to show staleness on its own (the
README's "exact gradients" setting of ``stale-gaussian`` obtains the same with
``batch_size = n_data`` without replacement, at the cost of drawing full permutations).
"""

from __future__ import annotations

import numpy as np


class FullDataGradient:
    """``(position, minibatch) -> ∇U(position)`` for ``model`` (module docstring)."""

    def __init__(self, model):
        self.model = model
        self.n_data = model.n_data
        self.dim = model.dim

    def prepare(self, indices: np.ndarray) -> np.ndarray:
        """An empty array per update: the batch does not enter the gradient."""
        return np.zeros(indices.shape[:-1] + (0,))

    def __call__(self, position: np.ndarray, minibatch: np.ndarray) -> np.ndarray:
        return self.model.potential_gradient(position)
