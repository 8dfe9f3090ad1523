"""Minibatch index draws, vectorised over any leading shape.

- With replacement: n independent indices, exactly uniform (``Generator.integers``, drawn bit
  for bit as numpy would by :mod:`workbench.gradients.bounded_draws`).
- Without replacement, small batches (n² <= N): Floyd's algorithm (Bentley & Floyd 1987),
  vectorised: for ``j = N - n, ..., N - 1`` draw ``t`` uniform on ``{0..j}`` and take ``t``
  unless already taken, else ``j``; O(n²) work and n uniforms per batch.
- Without replacement, large batches: the n smallest of N uniform keys (a uniformly random
  n-subset); O(N) work and N uniforms per batch.

Either way every n-subset is equally likely; the order within a batch is irrelevant to an
average. The method is a function of (N, n) only, so it never varies within a run. The draws
are a deterministic function of the generator's state and the sequence of requested shapes;
the engine always requests the same shapes (see :mod:`workbench.engine.replay`).

Sharded data: N may be an integer array broadcastable to the batch shape, each batch drawing
from its own shard of N_s points (indices local to the shard). The methods are the same, per
element: ``Generator.integers`` with per-element bounds, drawn bit for bit as numpy would by
:func:`workbench.gradients.bounded_draws.bounded_integers` (or with one scalar bound when every
shard in the call has the same size: numpy then draws the same numbers, faster); Floyd's algorithm
with per-element ``j`` when n² <= min N_s; otherwise keys over max N_s with the keys beyond
each N_s set to +inf.
"""

from __future__ import annotations

import numpy as np

from simulators import validation
from workbench.gradients.bounded_draws import bounded_integers, uniform_integers


def check_batch(n_data: int, batch_size: int, replacement: bool) -> None:
    validation.integer("batch_size", batch_size, minimum=1)
    if not replacement and batch_size > n_data:
        raise validation.InvalidParameter(
            "batch_size", batch_size,
            f"must be <= n_data = {n_data} when drawing without replacement",
        )


def draw_indices(rng: np.random.Generator, n_data, batch_size: int,
                 shape: tuple[int, ...], replacement: bool) -> np.ndarray:
    """Integer indices of shape ``shape + (batch_size,)`` into data sets of ``n_data`` points.

    ``n_data``: an integer, or an integer array broadcastable to ``shape`` (sharded data).
    """
    one_size = np.ndim(n_data) == 0
    sizes = int(n_data) if one_size else np.broadcast_to(np.asarray(n_data, np.int64), shape)
    if replacement:
        if not one_size and sizes.size and sizes.min() == sizes.max():
            # One bound for all: the scalar-bound draw is several times faster than the
            # per-element one and gives the same numbers (the same bounded method per element).
            return uniform_integers(rng, int(sizes.flat[0]), shape + (batch_size,))
        if one_size:
            return uniform_integers(rng, sizes, shape + (batch_size,))
        return bounded_integers(rng, np.broadcast_to(sizes[..., None], shape + (batch_size,)))
    if batch_size * batch_size > int(np.min(sizes)):
        keys = rng.random(shape + (int(np.max(sizes)),))
        if one_size and batch_size == sizes:
            return np.argsort(keys, axis=-1)
        if not one_size:
            keys[np.arange(keys.shape[-1]) >= sizes[..., None]] = np.inf
        return np.argpartition(keys, batch_size - 1, axis=-1)[..., :batch_size]
    uniforms = rng.random(shape + (batch_size,))
    chosen = np.empty(shape + (batch_size,), dtype=np.int64)
    for k in range(batch_size):
        j = sizes - batch_size + k
        candidate = (uniforms[..., k] * (j + 1)).astype(np.int64)
        taken = (chosen[..., :k] == candidate[..., None]).any(axis=-1)
        chosen[..., k] = np.where(taken, j, candidate)
    return chosen


def batch_sum(columns: np.ndarray) -> np.ndarray:
    """Sum over the first axis (``columns[k]``: the k-th member of every batch).

    The additions are those ``np.sum(x, axis=-1)`` performs on a contiguous last axis
    (numpy's pairwise summation: one running sum below 8 terms, 8 interleaved partial sums up
    to 128, halves above), done column by column so that they are vectorised across batches.
    For small batches this is several times faster than a reduction over a short last axis,
    and the sums are bit-identical (tests compare with ``np.sum``).
    """
    n = columns.shape[0]
    if n < 8:
        total = columns[0].copy()
        for k in range(1, n):
            total += columns[k]
        return total
    if n <= 128:
        partial = columns[:8].copy()
        tail = n - n % 8
        for start in range(8, tail, 8):
            partial += columns[start:start + 8]
        total = (partial[0] + partial[1]) + (partial[2] + partial[3])
        total += (partial[4] + partial[5]) + (partial[6] + partial[7])
        for k in range(tail, n):
            total += columns[k]
        return total
    half = n // 2
    half -= half % 8
    return batch_sum(columns[:half]) + batch_sum(columns[half:])


def batch_means(data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Means of the rows of ``data`` (N, d) over each batch of ``indices`` (..., n): (..., d).

    Bit-identical to ``data.take(indices, axis=0).mean(axis=-2)``, whose additions are
    pairwise for d = 1 (the batch axis is then the contiguous one, summed as such here) and
    in sequence for d > 1 (done here with batch members as leading columns, so that each
    addition is vectorised across batches instead of numpy reducing a short strided axis).
    """
    if data.shape[1] == 1:
        return data[:, 0].take(indices).sum(axis=-1)[..., None] / indices.shape[-1]
    columns = data.take(np.moveaxis(indices, -1, 0), axis=0)
    total = columns[0].copy()
    for column in columns[1:]:
        total += column
    return total / indices.shape[-1]
