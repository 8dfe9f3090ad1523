"""A model whose likelihood is a product over examples, its rows split into shards: the
shard-aware base of D-SGLD and FSGLD (seed 002 Eq. 4 and 7) on any such model.

The rows are stored shard after shard, shard s holding ``shard_sizes[s]`` of them. The base
(:class:`ShardedPerExample`) has what :mod:`workbench.gradients.sharded` wraps: ``prepare``
turns the engine's shard-local minibatch indices into the model's rows, ``prior_gradient`` is
θ/σ₀² and ``likelihood_gradient`` is -(N/n) Σ_{i∈B} ∇log p(x_i | θ) over a batch drawn from one
shard (:class:`~workbench.models.per_example.PerExampleGradient`'s, on the model's own
``log_likelihood_gradient_sum``). :class:`~workbench.gradients.sharded.ShardScaled` scales it by
N_s/(N f_s), the D-SGLD estimate; :class:`~workbench.gradients.sharded.Conducive` adds the
conducive gradient of the surrogates.

:class:`~workbench.gradients.sharded.ShardLikelihood` of it estimates -∇log p(X_s | θ) (no
prior: the local likelihood that FSGLD's surrogates q_s approximate, seed 002 §3.1), which
:func:`workbench.engine.local_samples.local_sgld_samples` samples from;
:meth:`ShardedPerExample.point_scores` gives ∇log p(x_i | θ) for every example of a shard, from
which :mod:`workbench.oracles.gradient_noise` computes γ_s² and ε_s² (seed 002 Theorem 2).
"""

from __future__ import annotations

import numpy as np

from simulators import validation
from workbench.gradients.sharded import ShardBatches, count_memory_as
from workbench.models.per_example import PerExampleGradient


class ShardedPerExample:
    """The shard-aware per-example estimator base (module docstring)."""

    def __init__(self, model, shard_sizes):
        self.model = model
        self._inner = PerExampleGradient(model)
        self.n_data, self.dim = self._inner.n_data, self._inner.dim
        self.shard_sizes = tuple(validation.sizes("shard_sizes", list(shard_sizes)))
        if sum(self.shard_sizes) != self.n_data:
            raise validation.InvalidParameter(
                "shard_sizes", self.shard_sizes,
                f"must add up to the model's {self.n_data} examples")
        self.offsets = np.concatenate([[0], np.cumsum(self.shard_sizes)[:-1]]).astype(np.int64)
        self.prior_gradient = self._inner.prior_gradient
        self.likelihood_gradient = self._inner.likelihood_gradient
        # a prepared batch is its rows' indices (its shards and frequencies are shared by
        # the replicates of an update); a call is the inner estimator's
        count_memory_as(self, self._inner, 0)

    @property
    def n_shards(self) -> int:
        return len(self.shard_sizes)

    def rows(self, shard: int) -> np.ndarray:
        """The model's rows of ``shard``."""
        start = self.offsets[shard]
        return np.arange(start, start + self.shard_sizes[shard])

    def prepare(self, indices: np.ndarray, shards: np.ndarray,
                frequencies: np.ndarray) -> ShardBatches:
        """The rows of shard-local ``indices`` ``(..., n)``, batch b from ``shards[b]``."""
        rows = self.offsets[np.asarray(shards)][..., None] + np.asarray(indices)
        return ShardBatches(shards, frequencies, self._inner.prepare(rows))

    def __call__(self, position: np.ndarray, minibatch) -> np.ndarray:
        return self.prior_gradient(position) + self.likelihood_gradient(position, minibatch.batch)

    def point_scores(self, theta: np.ndarray, shard: int) -> np.ndarray:
        """∇log p(x_i | θ) for every example i of ``shard`` at each of ``theta`` ``(G, d)``:
        ``(G, N_s, d)``."""
        theta = np.atleast_2d(np.asarray(theta, dtype=float))
        rows = self.rows(shard)
        return np.stack([self.model.log_likelihood_gradient_sum(
            np.broadcast_to(position, (rows.size, self.dim)), rows[:, None])
            for position in theta])
