"""The minibatch estimator shared by models whose likelihood is a product over examples.

For a Gaussian prior N(0, σ₀² I) and i.i.d. examples, Chen's estimator (docs/math.md §1; seed 001
Eq. 1) is

    ∇Ũ(θ) = θ/σ₀² - (N/n) Σ_{i∈B} ∇_θ log p(x_i | θ).

Unlike the Gaussian mean, such a minibatch does not reduce to a small statistic, so
:meth:`PerExampleGradient.prepare` keeps only the indices (as 32-bit integers when N allows):
the engine stores prepared minibatches for up to 4096 updates × replicates × servers, and
gathering the rows of a batch inside the call costs little next to the gradient itself.

A model plugs in by offering ``n_data``, ``dim``, ``prior_scale``, ``example_cost`` (elements
of its widest intermediate per example, so that a window of many positions is evaluated in
blocks of bounded memory) and ``log_likelihood_gradient_sum(theta, rows)``: for ``theta``
``(R, d)`` and ``rows`` ``(R, n)`` (replicate r's batch in row r) the sums
Σ_{i∈rows[r]} ∇log p(x_i | theta[r]), shape ``(R, d)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from simulators import validation

BLOCK_BUDGET = 1 << 22  # float64 elements of the largest intermediate in position blocks (32 MiB)


class PerExampleGradient:
    """``(position, indices) -> ∇Ũ(position)`` for a per-example likelihood (module docstring)."""

    def __init__(self, model):
        self.model = model
        self.n_data = int(model.n_data)
        self.dim = int(model.dim)
        self._prior_precision = 1.0 / model.prior_scale**2
        self._index_type = np.int32 if self.n_data <= np.iinfo(np.int32).max else np.int64

    def prepare(self, indices: np.ndarray) -> np.ndarray:
        """The indices themselves, compactly typed; rows are gathered in :meth:`__call__`."""
        indices = np.asarray(indices)
        if indices.ndim < 1 or indices.shape[-1] < 1:
            raise validation.InvalidParameter("indices", indices.shape,
                                              "must have shape (..., batch_size), batch_size >= 1")
        if indices.size and (indices.min() < 0 or indices.max() >= self.n_data):
            raise validation.InvalidParameter(
                "indices", (int(indices.min()), int(indices.max())),
                f"must lie in [0, n_data = {self.n_data})")
        return indices.astype(self._index_type, copy=False)

    def prepared_elements(self, batch_size: int) -> float:
        """Float64 elements a prepared minibatch holds per replicate and server (the engine's
        memory estimate, :func:`workbench.engine.replay_setup.memory_need`): its indices."""
        return batch_size * np.dtype(self._index_type).itemsize / 8

    def call_elements(self, positions: int, batch_size: int) -> int:
        """Float64 elements a call on ``positions`` positions holds at most beyond its
        arguments (the engine's memory estimate): four intermediates of a block of positions
        (``example_cost`` elements an example, at most :data:`BLOCK_BUDGET` each) and four
        arrays of the positions' size (the blocks' scores, their concatenation, the prior's
        part and the sum). Measured traced peaks of the digits MLP (one hidden layer of 50,
        or two of 400) and CNN, 4-256 positions, minibatches of 100 and 1,000: 0.46-0.94 of it
        (benchmarks/README.md, *Engine memory*)."""
        block = min(positions, self._block(batch_size))
        return 4 * block * batch_size * self.model.example_cost + 4 * positions * self.dim

    def _block(self, batch_size: int) -> int:
        """Positions a call scores at once: their intermediates stay under BLOCK_BUDGET."""
        return max(1, BLOCK_BUDGET // (batch_size * self.model.example_cost))

    def flat(self, position: np.ndarray, minibatch: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``position`` as floats, and it and ``minibatch`` as ``(R, d)`` and ``(R, n)``
        (checked: the same leading shape)."""
        position = np.asarray(position, dtype=float)
        if position.shape[-1:] != (self.dim,) or minibatch.shape[:-1] != position.shape[:-1]:
            raise validation.InvalidParameter(
                "minibatch", (position.shape, minibatch.shape),
                f"position must be (..., d = {self.dim}) and the minibatch (..., batch_size) "
                "with the same leading shape")
        return (position, position.reshape(-1, self.dim),
                minibatch.reshape(-1, minibatch.shape[-1]))

    def prior_gradient(self, position: np.ndarray) -> np.ndarray:
        """-∇log p(θ) = θ/σ₀², the part of ∇Ũ no minibatch touches."""
        return self._prior_precision * np.asarray(position, dtype=float)

    def likelihood_gradient(self, position: np.ndarray, minibatch: np.ndarray) -> np.ndarray:
        """-(N/n) Σ_{i∈B} ∇log p(x_i | θ), shape ``(..., d)`` (wrappers such as D-SGLD's
        shard scaling act on this part alone, as on :mod:`workbench.models.sharded_gaussian`'s).
        """
        position, theta, rows = self.flat(position, minibatch)
        batch_size = rows.shape[1]
        block = self._block(batch_size)
        scores = [self.model.log_likelihood_gradient_sum(theta[start:start + block],
                                                         rows[start:start + block])
                  for start in range(0, len(theta), block)]
        return (-(self.n_data / batch_size) * np.concatenate(scores)).reshape(position.shape)

    def __call__(self, position: np.ndarray, minibatch: np.ndarray) -> np.ndarray:
        return self.prior_gradient(position) + self.likelihood_gradient(position, minibatch)


def flat_positions(theta: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(..., d)`` as a float64 array and its ``(B, d)`` view; ``theta`` is named
    in the error when its last axis is not ``dim``."""
    theta = np.asarray(theta, dtype=float)
    if theta.shape[-1:] != (dim,):
        raise validation.InvalidParameter("theta", theta.shape, f"must have shape (..., {dim})")
    return theta, theta.reshape(-1, dim)


def over_positions(function: Callable[[np.ndarray], np.ndarray], theta: np.ndarray,
                   dim: int, cost_per_position: int) -> np.ndarray:
    """Apply ``function`` (``(B, d) -> (B, ...)``) to positions ``(..., d)`` in blocks.

    Full-data potentials and held-out test functions form a ``(B, N)`` (or ``(B, N, K)``)
    intermediate; blocks are sized so that ``B * cost_per_position`` stays under
    :data:`BLOCK_BUDGET`, which bounds memory when the engine passes a chunk of 4096 updates.
    """
    theta, flat = flat_positions(theta, dim)
    block = max(1, BLOCK_BUDGET // max(1, cost_per_position))
    pieces = [function(flat[start:start + block]) for start in range(0, len(flat), block)]
    values = np.concatenate(pieces) if pieces else function(flat)
    return values.reshape(theta.shape[:-1] + values.shape[1:])
