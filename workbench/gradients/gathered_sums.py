"""Sums over gathered minibatch rows, compiled, in numpy's own order of additions.

The engine's compiled path (:mod:`workbench.engine.compiled`), the sharded Gaussian model's
minibatch means (:func:`shard_batch_means`) and the sparse logistic kernels
(:mod:`workbench.models.csr_kernels`) add the rows of a minibatch without gathering them first;
to stay bit-identical to the numpy path (:func:`workbench.gradients.minibatch.batch_sum`, which
gathers and calls ``sum``) they add in numpy's pairwise order (:func:`pairwise_total`).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def block_total(data, batch, start, count):
    """Σ data[batch[start:start+count], 0] for count <= 128 in numpy's pairwise order: in
    sequence below 8 terms, else 8 interleaved partial sums combined as a tree, then the tail.

    Callers here and in :mod:`workbench.engine.compiled` and :mod:`workbench.models.
    csr_kernels` pass ``start`` as int64, never a literal 0: numba compiles a helper called
    with a literal once more for it (seconds of a cold start)."""
    if count < 8:
        total = data[batch[start], 0]
        for k in range(start + 1, start + count):
            total += data[batch[k], 0]
        return total
    p0 = data[batch[start], 0]
    p1 = data[batch[start + 1], 0]
    p2 = data[batch[start + 2], 0]
    p3 = data[batch[start + 3], 0]
    p4 = data[batch[start + 4], 0]
    p5 = data[batch[start + 5], 0]
    p6 = data[batch[start + 6], 0]
    p7 = data[batch[start + 7], 0]
    tail = count - count % 8
    for k in range(start + 8, start + tail, 8):
        p0 += data[batch[k], 0]
        p1 += data[batch[k + 1], 0]
        p2 += data[batch[k + 2], 0]
        p3 += data[batch[k + 3], 0]
        p4 += data[batch[k + 4], 0]
        p5 += data[batch[k + 5], 0]
        p6 += data[batch[k + 6], 0]
        p7 += data[batch[k + 7], 0]
    total = (p0 + p1) + (p2 + p3)
    total += (p4 + p5) + (p6 + p7)
    for k in range(start + tail, start + count):
        total += data[batch[k], 0]
    return total


@numba.njit(cache=True)
def pairwise_total(data, batch, start, count):
    """Σ data[batch[start:start+count], 0] in :func:`workbench.gradients.minibatch.batch_sum`'s
    order.

    Above 128 terms that order halves the batch (the first half rounded down to a multiple of
    8) and adds the halves' sums; the recursion is walked here with an explicit stack (numba's
    on-disk cache does not handle recursive functions), left before right, so the additions
    are the same.
    """
    if count <= 128:
        return block_total(data, batch, start, count)
    starts = np.empty(128, np.int64)
    counts = np.empty(128, np.int64)
    joins = np.empty(128, np.bool_)
    values = np.empty(64)
    starts[0], counts[0], joins[0] = start, count, False
    top, n_values = 1, 0
    while top > 0:
        top -= 1
        first, size, join = starts[top], counts[top], joins[top]
        if join:  # both halves are done: left + right
            values[n_values - 2] = values[n_values - 2] + values[n_values - 1]
            n_values -= 1
        elif size <= 128:
            values[n_values] = block_total(data, batch, first, size)
            n_values += 1
        else:
            half = size // 2
            half -= half % 8
            starts[top], counts[top], joins[top] = first, size, True
            starts[top + 1], counts[top + 1], joins[top + 1] = first + half, size - half, False
            starts[top + 2], counts[top + 2], joins[top + 2] = first, half, False
            top += 3
    return values[0]


def shard_batch_means(data: np.ndarray, offsets: np.ndarray, sizes: np.ndarray,
                      shards: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Minibatch means x̄_B of shard-local ``indices`` ``(..., n)``, batch b drawn from shard
    ``shards[b]`` (broadcast to ``indices.shape[:-1]``) whose rows start at ``offsets[s]``:
    ``(..., d)``, compiled (issue 15: the generic path's sharded minibatches, as
    :class:`~workbench.models.sharded_gaussian.ShardLocalGradient` prepares them).

    Bit-identical to :func:`workbench.gradients.minibatch.batch_means` on the global rows
    ``offsets[shards] + indices`` (the additions of ``data.take(rows, axis=0).mean(axis=-2)``:
    pairwise as :func:`pairwise_total` for d = 1, in sequence for d > 1, then the division by
    n), without building the rows or the gathered array. A local index outside its shard's
    ``0 .. sizes[s] - 1`` raises IndexError.
    """
    indices = np.asarray(indices)
    shards = np.asarray(shards)
    batch_shape = np.broadcast_shapes(shards.shape, indices.shape[:-1])
    n = indices.shape[-1]
    local = np.ascontiguousarray(np.broadcast_to(indices, batch_shape + (n,)), dtype=np.int64)
    shard = np.broadcast_to(shards, batch_shape).reshape(-1)
    means = np.empty(batch_shape + (data.shape[1],))
    _shard_means(np.ascontiguousarray(data, dtype=np.float64), offsets[shard], sizes[shard],
                 local.reshape(-1, n), means.reshape(-1, data.shape[1]))
    return means


@numba.njit(cache=True)
def _shard_means(data, starts, sizes, indices, out):
    """:func:`shard_batch_means` on flat batches: ``indices`` ``(batch, n)``, ``starts`` and
    ``sizes`` ``(batch,)``, ``out`` ``(batch, d)``."""
    n_batches, n = indices.shape
    dim = data.shape[1]
    rows = np.empty(n, np.int64)
    for b in range(n_batches):
        start, size = starts[b], sizes[b]
        for k in range(n):
            local = indices[b, k]
            if local < 0 or local >= size:
                raise IndexError("minibatch index outside its shard")
            rows[k] = start + local
        if dim == 1:
            out[b, 0] = pairwise_total(data, rows, np.int64(0), n) / n
            continue
        for i in range(dim):  # each coordinate's additions in sequence, as numpy's
            total = data[rows[0], i]
            for k in range(1, n):
                total += data[rows[k], i]
            out[b, i] = total / n
