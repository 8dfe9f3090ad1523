"""Minibatch index draws, vectorised over any leading shape.

- With replacement: n independent indices, exactly uniform (``Generator.integers``).
- Without replacement, small batches (n² <= N): Floyd's algorithm (Bentley & Floyd 1987),
  vectorised: for ``j = N - n, ..., N - 1`` draw ``t`` uniform on ``{0..j}`` and take ``t``
  unless already taken, else ``j``; O(n²) work and n uniforms per batch.
- Without replacement, large batches: the n smallest of N uniform keys (a uniformly random
  n-subset); O(N) work and N uniforms per batch.

Either way every n-subset is equally likely; the order within a batch is irrelevant to an
average. The method is a function of (N, n) only, so it never varies within a run. The draws
are a deterministic function of the generator's state and the sequence of requested shapes;
the engine always requests the same shapes (see :mod:`workbench.engine`).
"""

from __future__ import annotations

import numpy as np

from simulators import validation


def check_batch(n_data: int, batch_size: int, replacement: bool) -> None:
    validation.integer("batch_size", batch_size, minimum=1)
    if not replacement and batch_size > n_data:
        raise validation.InvalidParameter(
            "batch_size", batch_size,
            f"must be <= n_data = {n_data} when drawing without replacement",
        )


def draw_indices(rng: np.random.Generator, n_data: int, batch_size: int,
                 shape: tuple[int, ...], replacement: bool) -> np.ndarray:
    """Integer indices of shape ``shape + (batch_size,)`` into a data set of ``n_data``."""
    if replacement:
        return rng.integers(0, n_data, shape + (batch_size,))
    if batch_size * batch_size > n_data:
        keys = rng.random(shape + (n_data,))
        if batch_size == n_data:
            return np.argsort(keys, axis=-1)
        return np.argpartition(keys, batch_size - 1, axis=-1)[..., :batch_size]
    uniforms = rng.random(shape + (batch_size,))
    chosen = np.empty(shape + (batch_size,), dtype=np.int64)
    for k, j in enumerate(range(n_data - batch_size, n_data)):
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
