"""The engine's compiled fast path: one chunk of a replay in a numba loop (issue 15, item 1).

For every update of a chunk and every replicate and server, the kernel reads the stale
gradient point from the engine's ring buffer, gathers the minibatch and forms its mean, evaluates
the gradient, takes the sampler step and writes the new position (and gradient point). It is
the loop of :func:`workbench.engine.replay.replay`, compiled, and it is BIT-IDENTICAL to it:

- the random numbers are those of the generic path (:func:`workbench.engine.replay_setup.draw`): the
  same streams, the same ``DRAW_STEPS`` calls, in the same order. They are drawn inside the
  kernel from the same ``Generator`` objects: numba compiles numpy's own algorithms (the
  ziggurat of ``standard_normal``, the bounded Lemire draw of ``integers``) over the
  generator's bit generator, so the numbers are the same, and about three times faster than
  numpy's vectorised calls (the Lemire draw is numba's translation,
  ``numba.np.random.random_methods``; tests/workbench/test_engine_kernel.py would see any
  drift between the two libraries). Minibatches without replacement are drawn by numpy
  (:func:`~workbench.gradients.minibatch.draw_indices`) and handed to the kernel;
- every floating-point operation is the generic path's, in its order, without fastmath (so no
  reassociation and no fused multiply-add): the minibatch sum in
  :func:`workbench.gradients.minibatch.batch_sum`'s pairwise order for d = 1 and in sequence for d >
  1 (as ``GaussianMeanGradient.prepare``), the gradient ``k θ - (a + c (Σ/n))``, and the
  sampler's update as its ``step`` writes it;
- the running sums of the built-in test functions θ and θ² are kept in place, one addition
  per update in update order like the accumulator's ``cumsum``; other test functions are left
  to :class:`workbench.engine.replay_setup.Accumulator`, fed the positions the kernel writes.

Protocol: a sampler and a gradient estimator opt in with a ``kernel_spec()`` method.

- Sampler (defined on the class that defines ``step``, so a subclass that changes the step is
  not run by the kernel): :class:`SamplerSpec`, one of ``sgld`` (seed 001 §3.1:
  θ ← (θ - h∇) + sξ), ``sghmc-euler`` (seed 001 Algorithm 1: p ← ((1 - Dh) p - h∇) + sξ;
  θ ← θ + h p) and ``sghmc-splitting`` (docs/math.md §3, A-B-O-B-A with gradient point
  θ + (h/2) p). Its state is a NamedTuple with ``position`` (and ``momentum``).
- Gradient: :class:`LinearMeanSpec`, for estimators of the form ∇Ũ(θ) = k θ - (a + c x̄_B),
  x̄_B the minibatch mean of the data rows (the Gaussian mean, seed 001 §5.1, docs/math.md §7); or,
  on sharded schedules, :class:`ShardLinearSpec`: ∇Ũ(θ) = (k₀ θ - a) + w (c (θ - x̄_B)) with
  B drawn from the shard the schedule names for the update and server, and w = N_s/(N q_s)
  (D-SGLD, seed 004 Eq. 2-3; :class:`~workbench.gradients.sharded.ShardScaled` over
  :class:`~workbench.models.sharded_gaussian.ShardLocalGradient`) or w = 1 (the uncorrected
  shard-local estimator: 1·x is x, so one formula serves both); and FSGLD over either,
  :class:`ConduciveSpec` (:class:`~workbench.gradients.sharded.Conducive`, seed 002 Eq. 5 and 7,
  with diagonal Gaussian surrogates: ∇Ũ - α ((Σ_s P_s m_s - (Σ_s P_s) θ) - (-P_s (θ - m_s))/f_s),
  the matrix product as a sum over coordinates in order, whose off-diagonal terms are exact
  zeros, so that any order or fusion of numpy's matmul gives the same bits on finite values).
  The shard's indices are drawn
  as :func:`workbench.engine.replay_setup.draw` draws them: ``draw_indices`` with the per-update
  shard sizes N_s (numpy's Lemire draw per element, whether numpy takes its scalar-bound path, all
  sizes of a call equal, or :func:`workbench.gradients.bounded_draws.bounded_integers`), local to
  the shard and offset to its rows.

Anything else (other samplers or estimators, full-covariance surrogates, protocols) keeps the
generic numpy path. ``ENABLED = False`` forces the generic path everywhere (the tests compare them).

The generic path's sharded minibatch means are compiled too (:func:`shard_batch_means`, the
sums above without the sampler step): samplers the kernel does not run on shards, such as
:class:`~workbench.samplers.coupled.CoupledSGLD` (its group mean is numpy's matmul, computed by
OpenBLAS in its own order of fused multiply-adds, which differs from an in-order sum in the
last bit for groups of 3 or more), get them from
:meth:`~workbench.models.sharded_gaussian.ShardLocalGradient.prepare` without the gathered copy.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.np.random.random_methods import buffered_bounded_lemire_uint32

from workbench.core.phi import THETA, THETA_SQUARED
from workbench.core.specs import (
    SAMPLER_KINDS,
    ConduciveSpec,
    LinearMeanSpec,
    SamplerSpec,
    ShardLinearSpec,
    spec_of,
)
from workbench.engine.replay_setup import DRAW_STEPS
from workbench.gradients.gathered_sums import block_total, pairwise_total
from workbench.gradients.minibatch import draw_indices

ENABLED = True  # False: every replay takes the generic numpy path

_BUILTIN = [THETA, THETA_SQUARED]  # the test functions the kernel sums itself, in this order


class KernelReplay:
    """The compiled stepping of one replay (one group of blocks): it owns copies of the
    sampler's state arrays, advances them chunk by chunk, feeds the replay's
    :class:`~workbench.engine.replay_setup.Accumulator` and hands the state back.

    With the built-in test functions (θ and θ²) the kernel keeps their running sums itself,
    adding each new value in update order, as the accumulator's ``cumsum`` does, and writes the
    checkpoint averages (sum / count), the divergence flags and the thinned draws straight
    into the accumulator, so no array of positions is built. With any other test function
    it writes the positions and the accumulator takes them as on the generic path.
    """

    def __init__(self, sampler_spec: SamplerSpec,
                 gradient_spec: LinearMeanSpec | ShardLinearSpec | ConduciveSpec,
                 state, run, accumulator, replacement: bool, shards=None):
        self.kind = SAMPLER_KINDS[sampler_spec.kind]
        self.sampler = sampler_spec
        conducive = gradient_spec if isinstance(gradient_spec, ConduciveSpec) else None
        if conducive is not None:
            gradient_spec = conducive.inner
        self.gradient = gradient_spec
        self.data = np.ascontiguousarray(gradient_spec.data, dtype=np.float64)
        # α and the surrogates' arrays, or None (numba then compiles the kernel without them)
        self.surrogates = None if conducive is None else (float(conducive.alpha),) + tuple(
            np.ascontiguousarray(a, dtype=np.float64) for a in conducive[2:])
        self.run, self.replacement = run, replacement
        self.shards = shards  # the engine's ShardDraws on a sharded schedule, else None
        if shards is None:
            self.constants = (gradient_spec.precision, gradient_spec.offset, gradient_spec.scale)
            largest = self.data.shape[0]
        else:
            self.constants = (gradient_spec.prior_precision, gradient_spec.prior_term,
                              gradient_spec.data_precision)
            largest = int(shards.sizes.max())
        # with replacement the indices are drawn in the kernel (numpy's bounded Lemire draw on
        # 32 bits, as numba compiles it: the same numbers as Generator.integers(0, N, shape))
        self.indices_inside = replacement and largest <= 0xFFFFFFFF
        self.state = state
        self.position = np.array(state.position, dtype=np.float64)
        momentum = getattr(state, "momentum", None)
        self.momentum = (np.zeros((0, 0, 0)) if momentum is None
                         else np.array(momentum, dtype=np.float64))
        self.accumulator = accumulator
        self.in_place = all(f in _BUILTIN for f in accumulator.test_functions)
        self.sums = np.zeros((len(_BUILTIN),) + self.position.shape)
        # the accumulator's flags when the kernel feeds it, else scratch (it marks them itself)
        self.diverged_at = (accumulator.diverged_at if self.in_place
                            else np.full(self.position.shape[:2], -1, dtype=np.int64))

    @classmethod
    def plan(cls, sampler, gradient, state, shards, run, accumulator,
             replacement: bool) -> KernelReplay | None:
        """The kernel for this replay (``run``: its
        :class:`~workbench.engine.replay_setup.ReplaySetup`; ``shards``: its ``ShardDraws``, None
        unless sharded), or None when the generic path
        must run it."""
        if not ENABLED:
            return None
        sampler_spec = spec_of(sampler, "step")
        gradient_spec = spec_of(gradient)
        if sampler_spec is None or gradient_spec is None:
            return None
        expected = LinearMeanSpec if shards is None else (ShardLinearSpec, ConduciveSpec)
        if sampler_spec.kind not in SAMPLER_KINDS or not isinstance(gradient_spec, expected):
            return None
        return cls(sampler_spec, gradient_spec, state, run, accumulator, replacement, shards)

    def _sizes(self, start: int):
        """The data-set size(s) bounding the indices of the draw call from update ``start``:
        N, or the shard sizes N_s ``(DRAW_STEPS, 1, server)`` (as
        :func:`~workbench.engine.replay_setup.draw`
        draws them)."""
        return self.data.shape[0] if self.shards is None else self.shards.sizes_for(start)

    def _chunk_shards(self, first: int, length: int) -> tuple[np.ndarray, ...] | None:
        """Per ``(update, server)`` of the chunk: the weight w, the first data row of the shard
        drawn from, the largest local index (N_s - 1), the shard and its frequency f_s (module
        docstring); None when the schedule is not sharded."""
        if self.shards is None:
            return None
        shard = np.ascontiguousarray(self.shards.shards[first:first + length], dtype=np.int64)
        frequency = np.ascontiguousarray(self.shards.frequencies[first:first + length],
                                         dtype=np.float64)
        size_share = self.gradient.size_share
        # the same division as ShardScaled.weights, element by element
        weights = np.ones(shard.shape) if size_share is None else size_share[shard] / frequency
        return (np.ascontiguousarray(weights, dtype=np.float64),
                np.ascontiguousarray(self.gradient.offsets[shard], dtype=np.int64),
                np.ascontiguousarray(self.shards.sizes[shard] - 1, dtype=np.int64),
                shard, frequency)

    def _block_indices(self, batch_rng, first: int, row_offsets: np.ndarray | None,
                       out: np.ndarray) -> np.ndarray:
        """Minibatch rows ``out`` = ``(update, replicate, server, n)`` of one block for the
        chunk from update ``first``, drawn by the same
        :func:`~workbench.gradients.minibatch.draw_indices` calls, on the same stream, as
        :func:`workbench.engine.replay_setup.draw` makes (DRAW_STEPS updates
        a call); local shard indices are offset to data rows by ``row_offsets``, if any."""
        length, size, n_servers, batch_size = out.shape
        for start in range(0, length, DRAW_STEPS):
            stop = min(start + DRAW_STEPS, length)
            drawn = draw_indices(batch_rng, self._sizes(first + start), batch_size,
                                 (DRAW_STEPS, size, n_servers), self.replacement)
            if row_offsets is None:
                out[start:stop] = drawn[:stop - start]
            else:
                np.add(drawn[:stop - start], row_offsets[start:stop, None, :, None],
                       out=out[start:stop])
        return out

    def advance(self, ring: np.ndarray, read_slots: np.ndarray, write_slots: np.ndarray,
                first: int, length: int) -> None:
        """Step every replicate and server through the updates ``first + 1 .. first +
        length`` (``ring`` updated in place) and feed the accumulator.

        read_slots: ``(update, server)`` ring slot of the version each update reads;
        write_slots: ``(update,)`` slot its gradient point is written to. The Gaussian noise
        is drawn inside the kernel, block by block from the block's noise stream, in the
        order of the generic path's ``standard_normal((DRAW_STEPS, block, server, d))`` calls
        (numba's ``Generator.standard_normal`` is numpy's algorithm on the same bit
        generator, so the numbers are the same); so are the minibatch indices when drawn with
        replacement (``integers(0, N, (DRAW_STEPS, block, server, n))``); without, numpy
        draws them (:meth:`_block_indices`). The surplus of a last, partial call is drawn and
        dropped as there.
        """
        shape = self.position.shape
        accumulator = self.accumulator
        counts = np.arange(first + 1, first + length + 1)
        average_at = np.full(length, -1, dtype=np.int64)
        draw_at = np.full(length, -1, dtype=np.int64)
        inside = np.zeros(0, dtype=np.int64)
        kept = np.zeros(length, dtype=bool)
        if self.in_place:
            checkpoints = accumulator.checkpoints
            inside = checkpoints[(checkpoints > first) & (checkpoints <= first + length)]
            average_at[inside - first - 1] = np.arange(inside.size)
            if accumulator.kept.size:
                kept = np.isin(counts, accumulator.kept)
                draw_at[kept] = np.arange(np.count_nonzero(kept))
            positions = np.empty((0, 0, 0, 0))
        else:
            positions = np.empty((length,) + shape)
        averages = np.empty((inside.size, len(_BUILTIN)) + shape)
        draws = np.empty((np.count_nonzero(kept),) + shape)
        spec = self.sampler
        read_slots = np.ascontiguousarray(read_slots)
        write_slots = np.ascontiguousarray(write_slots)
        surplus = -length % DRAW_STEPS
        run, buffers, row = self.run, {}, 0
        batch_size, n_servers = run.batch_size, shape[1]
        chunk_shards = self._chunk_shards(first, length)
        row_offsets = None if chunk_shards is None else chunk_shards[1]
        for noise_rng, batch_rng, size in zip(run.noise_rngs, run.batch_rngs, run.block_sizes,
                                              strict=True):
            if self.indices_inside:
                indices = np.empty((0, 0, 0, 0), np.int64)
            else:  # drawn block by block, so that they are still in cache when it steps
                if size not in buffers:
                    buffers[size] = np.empty((length, size, n_servers, batch_size), np.int64)
                indices = self._block_indices(batch_rng, first, row_offsets, buffers[size])
            _chunk(self.kind, spec.step_size, spec.noise_scale, spec.momentum_factor,
                   self.data, *self.constants, chunk_shards, self.surrogates, self.position,
                   self.momentum, ring, read_slots, write_slots, noise_rng, batch_rng, row,
                   size, batch_size, length, indices, first, self.sums,
                   float(accumulator.threshold), self.diverged_at, average_at, averages,
                   draw_at, draws, positions)
            if surplus:  # the unused rest of the last DRAW_STEPS call, drawn and dropped
                noise_rng.standard_normal((surplus, size, n_servers, shape[2]))
                if self.indices_inside:
                    sizes = self._sizes(first + length + surplus - DRAW_STEPS)
                    draw_indices(batch_rng, sizes if np.ndim(sizes) == 0 else sizes[-surplus:],
                                 batch_size, (surplus, size, n_servers), True)
            row += size
        if not self.in_place:
            accumulator.add(positions, first)
            return
        for c in range(inside.size):
            for f in accumulator.test_functions:
                accumulator.averages[f.name].append(averages[c, _BUILTIN.index(f)].copy())
        if accumulator.kept.size:
            accumulator.draws.append(draws)
            accumulator.draw_iterations.append(counts[kept])

    def final_state(self):
        """The sampler's state after the last chunk (its NamedTuple type, fresh arrays)."""
        if self.momentum.size:
            return self.state._replace(position=self.position, momentum=self.momentum)
        return self.state._replace(position=self.position)


@numba.njit(cache=True)
def _chunk(kind, h, s, factor, data, c0, c1, c2, shards, surrogates, position, momentum,
           ring, read_slots, write_slots, noise_rng, batch_rng, row_start, n_rows, n, length,
           indices, first, sums, threshold, diverged_at, average_at, averages, draw_at, draws,
           positions):
    """:meth:`KernelReplay.advance`, compiled (the generic path's operations, in its order).

    Steps one block, the ``n_rows`` replicates from ``row_start`` on, through ``length``
    updates: ``noise_rng`` is its noise stream, ``indices`` its minibatches' data rows
    ``(update, block replicate, server, n)``, or, if empty, they are drawn here from
    ``batch_rng`` (uniform on 0 .. N - 1 by numpy's algorithm, none drawn when N = 1, as
    numpy; on shards, for update j and server q, ``row_offsets[j, q]`` plus a local index on
    0 .. ``tops[j, q]``). ``shards``: None, or ``(weights, row_offsets, tops, shard,
    frequency)`` per ``(update, server)`` (:meth:`KernelReplay._chunk_shards`); ``surrogates``:
    None, or ``(α, means, precisions, total_natural, total_precision)``. Each is None or not
    for a whole replay, and numba compiles the kernel for that case, dropping the other's
    branches (so the unsharded path pays nothing for the sharded one). The gradient:
    ``c0 θ - (c1 + c2 x̄)`` (LinearMeanSpec), or, on shards, ``(c0 θ - c1) + weights[j, q]
    (c2 (θ - x̄))`` (ShardLinearSpec), less, with surrogates, α times the conducive gradient
    of shard ``shard[j, q]`` with frequency ``frequency[j, q]`` (ConduciveSpec). sums:
    ``(2, replicate, server, d)`` running Σθ and Σθ²; ``average_at[j]`` /
    ``draw_at[j]``: where update j's averages / position go in ``averages`` / ``draws`` (-1:
    nowhere); positions: every update's position, or an empty array to record none.
    """
    n_servers, dim = position.shape[1], position.shape[2]
    row_stop = row_start + n_rows
    inside = indices.shape[0] == 0
    batches = indices.reshape(-1)  # no per-batch views (they cost reference counting)
    drawn = np.empty(n, np.int64)  # one minibatch drawn here
    bitgen = batch_rng.bit_generator
    record = positions.shape[0] > 0
    total = np.empty(dim)
    xis = np.empty(dim)  # this (update, replicate, server)'s normals, drawn before the step
    products = np.empty(dim)  # (Σ_s P_s) θ at the stale point, before the ring is overwritten
    half = 0.5 * h
    every_row = numba.uint32(data.shape[0] - 1)
    if shards is not None:
        weights, row_offsets, tops, shard, frequency = shards
    if surrogates is not None:
        alpha, surrogate_means, surrogate_precisions, total_natural, total_precision = surrogates
    for j in range(length):
        write = write_slots[j]
        count = first + j + 1
        average, kept = average_at[j], draw_at[j]
        for r in range(row_start, row_stop):
            for q in range(n_servers):
                read = read_slots[j, q]
                if inside:
                    if shards is None:
                        top, start = every_row, 0
                    else:
                        top, start = numba.uint32(tops[j, q]), row_offsets[j, q]
                    for k in range(n):
                        drawn[k] = start + (0 if top == 0 else
                                            buffered_bounded_lemire_uint32(bitgen, top))
                    batch, base = drawn, np.int64(0)  # not a literal (block_total)
                else:
                    batch, base = batches, ((j * n_rows + r - row_start) * n_servers + q) * n
                if dim == 1 and n <= 128:  # (one call less: pairwise_total allocates above)
                    total[0] = block_total(data, batch, base, n)
                elif dim == 1:
                    total[0] = pairwise_total(data, batch, base, n)
                else:
                    row = batch[base]
                    for i in range(dim):
                        total[i] = data[row, i]
                    for k in range(base + 1, base + n):
                        row = batch[k]
                        for i in range(dim):
                            total[i] += data[row, i]
                for i in range(dim):  # in the generic path's order (..., server, coordinate)
                    xis[i] = noise_rng.standard_normal()
                bad = False
                if surrogates is not None:  # θ @ total_precision.T, every coordinate
                    for i in range(dim):
                        products[i] = ring[read, r, q, 0] * total_precision[i, 0]
                        for k in range(1, dim):
                            products[i] += ring[read, r, q, k] * total_precision[i, k]
                for i in range(dim):
                    stale = ring[read, r, q, i]
                    if shards is None:
                        grad = c0 * stale - (c1 + c2 * (total[i] / n))
                    else:  # ShardScaled: prior_gradient + weight · likelihood_gradient
                        grad = (c0 * stale - c1) + weights[j, q] * (c2 * (stale - total[i] / n))
                    if surrogates is not None:  # Conducive: inner - α (total_score - score / f)
                        at = shard[j, q]
                        score = (-surrogate_precisions[at, i]) * (stale - surrogate_means[at, i])
                        grad = grad - alpha * ((total_natural[i] - products[i])
                                               - score / frequency[j, q])
                    xi = xis[i]
                    if kind == 0:  # SGLD
                        theta = (position[r, q, i] - h * grad) + s * xi
                        point = theta
                    elif kind == 1:  # SGHMC, Euler
                        p = (factor * momentum[r, q, i] - h * grad) + s * xi
                        theta = position[r, q, i] + h * p
                        momentum[r, q, i] = p
                        point = theta
                    else:  # SGHMC, symmetric splitting
                        theta = position[r, q, i] + half * momentum[r, q, i]
                        p = (factor * momentum[r, q, i] - h * grad) + s * xi
                        p = factor * p
                        theta = theta + half * p
                        momentum[r, q, i] = p
                        point = theta + half * p
                    position[r, q, i] = theta
                    ring[write, r, q, i] = point
                    sums[0, r, q, i] += theta
                    sums[1, r, q, i] += theta * theta
                    if not abs(theta) <= threshold:  # NaN counts as bad
                        bad = True
                    if record:
                        positions[j, r, q, i] = theta
                    if average >= 0:
                        averages[average, 0, r, q, i] = sums[0, r, q, i] / count
                        averages[average, 1, r, q, i] = sums[1, r, q, i] / count
                    if kept >= 0:
                        draws[kept, r, q, i] = theta
                if bad and diverged_at[r, q] < 0:
                    diverged_at[r, q] = count


