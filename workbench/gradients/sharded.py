"""Gradient estimators on sharded data: D-SGLD scaling and conducive gradients.

Chen convention throughout (docs/math.md §1): an estimator returns ∇Ũ, the minibatch estimate of
-∇log p(θ) - Σ_i ∇log p(x_i | θ). A *shard-aware* estimator (what the engine needs for a
sharded schedule, :mod:`workbench.engine.replay`) has ``shard_sizes`` and
``prepare(indices, shards, frequencies)``, which receives per update and server the local
minibatch indices, the shard id and the shard's selection frequency from the schedule, and
returns :class:`ShardBatches`; ``__call__(position, batch)`` then gets one
:class:`ShardBatch` per update.

A base estimator (for example :class:`workbench.models.sharded_gaussian.ShardLocalGradient`)
also exposes ``prior_gradient(θ)`` = -∇log p(θ) and ``likelihood_gradient(θ, batch)`` =
-N ḡ(θ; B), the plain SGLD estimate of the likelihood term from a shard-local minibatch,
which is biased unless shards are visited in proportion to their size. The wrappers here turn it
into a valid estimator:

- :class:`ShardScaled` (D-SGLD, seed 004 Eq. 2-3; seed 002 Eq. 4): the likelihood term times
  N_s/(N q_s), q_s the shard's selection frequency;
- :class:`ShardLikelihood`: the likelihood term alone, N_s/(N q_s)·(-N ḡ(θ; B)), no prior: with
  every server of a schedule kept to its own shard and q_s = 1, each server samples shard s's
  local likelihood p_s ∝ p(X_s | θ), the target surrogates are fitted to (seed 002 §3.1);
- :class:`Conducive` (FSGLD, seed 002 Eq. 5 and 7): adds α g_s(θ) to the D-SGLD estimate,
  g_s = ∇log q(θ) - ∇log q_s(θ)/f_s with q = Π_s q_s the product of per-shard surrogates of
  the shard likelihoods (:mod:`workbench.gradients.surrogates`); E_s[g_s] = 0, so it stays unbiased.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import numpy as np

from simulators import validation


class ShardBatch(NamedTuple):
    """One update's minibatch: shard ids and frequencies ``(1, server)``, and the batch."""

    shard: np.ndarray
    frequency: np.ndarray
    batch: Any


class ShardBatches:
    """A chunk of :class:`ShardBatch`, indexed by update within the chunk."""

    __slots__ = ("shard", "frequency", "batch")

    def __init__(self, shard: np.ndarray, frequency: np.ndarray, batch: np.ndarray):
        self.shard, self.frequency, self.batch = shard, frequency, batch

    def __getitem__(self, update: int) -> ShardBatch:
        return ShardBatch(self.shard[update], self.frequency[update], self.batch[update])

    @classmethod
    def concatenate(cls, pieces: list[ShardBatches], axis: int) -> ShardBatches:
        """Join chunks along an update (0) or replicate (1) axis, as the engine assembles
        its per-call draws. Shards and frequencies are shared by the replicates of a call
        (their replicate axis has length 1), so along axis 1 they are kept, not joined."""
        if len(pieces) == 1:
            return pieces[0]
        first = pieces[0]
        if axis == 0:
            return cls(*(np.concatenate([getattr(p, name) for p in pieces], axis=0)
                         for name in cls.__slots__))
        return cls(first.shard, first.frequency,
                   np.concatenate([p.batch for p in pieces], axis=axis))


def _call_elements(inner, extra: int, positions: int, batch_size: int) -> int:
    """``inner``'s count of a call's elements and ``extra`` arrays of the positions' size."""
    return inner.call_elements(positions, batch_size) + extra * positions * inner.dim


def count_memory_as(wrapper, inner, extra: int) -> None:
    """Give ``wrapper`` ``inner``'s memory counts where ``inner`` has them (a per-example
    likelihood: its prepared minibatches are indices, :func:`workbench.engine.replay_setup.
    evaluation_elements`), a call holding ``extra`` more arrays of the positions' size (the
    wrapper's own terms and sums); else the engine's default count applies to both."""
    if getattr(inner, "prepared_elements", None) is not None:
        wrapper.prepared_elements = inner.prepared_elements
        wrapper.call_elements = partial(_call_elements, inner, extra)


class ShardScaled:
    """D-SGLD: -∇log p(θ) + (N_s/(N q_s))·(-N ḡ(θ; B_s)) (module docstring)."""

    def __init__(self, base):
        self.base = base
        self.n_data, self.dim, self.shard_sizes = base.n_data, base.dim, base.shard_sizes
        self._size_share = np.asarray(base.shard_sizes, dtype=float) / base.n_data
        self.prepare = base.prepare
        count_memory_as(self, base, 1)  # the weighted likelihood term beside the base's own

    def weights(self, shard: np.ndarray, frequency: np.ndarray) -> np.ndarray:
        """N_s/(N q_s) per element, with a trailing axis for the coordinates."""
        return (self._size_share[shard] / frequency)[..., None]

    def __call__(self, position: np.ndarray, minibatch: ShardBatch) -> np.ndarray:
        base = self.base
        return (base.prior_gradient(position) + self.weights(minibatch.shard, minibatch.frequency)
                * base.likelihood_gradient(position, minibatch.batch))

    def kernel_spec(self):
        """The base's description for the engine's compiled path (:mod:`workbench.engine.compiled`)
        with this weight's N_s/N added, if the base describes itself as an unweighted
        shard-local linear estimator; else None (the generic path)."""
        from workbench.core.specs import ShardLinearSpec

        describe = getattr(self.base, "kernel_spec", None)
        spec = None if describe is None else describe()
        if not isinstance(spec, ShardLinearSpec) or spec.size_share is not None:
            return None
        return spec._replace(size_share=self._size_share)


class ShardLikelihood(ShardScaled):
    """-N_s/(N q_s)·N ḡ(θ; B_s): D-SGLD's likelihood term without the prior (module docstring).

    On :func:`workbench.engine.local_samples.local_sgld_samples`'s schedule (server s on shard
    s, q_s = 1) it is -(N_s/n) Σ_{i∈B_s} ∇log p(x_i | θ), the minibatch estimate of
    -∇log p(X_s | θ).
    """

    def __call__(self, position: np.ndarray, minibatch: ShardBatch) -> np.ndarray:
        return (self.weights(minibatch.shard, minibatch.frequency)
                * self.base.likelihood_gradient(position, minibatch.batch))

    def kernel_spec(self):
        """None: the compiled path's shard-linear estimator always adds the prior."""
        return None


class Conducive:
    """FSGLD: ``inner`` minus α g_s(θ) (a ∇Ũ, so the conducive gradient enters with a minus).

    g_s(θ) = ∇log q(θ) - ∇log q_s(θ)/f_s (seed 002 §3), f_s the shard's frequency in the
    schedule, α the exploration scale of seed 002 Eq. 7 (α = 1 is FSGLD proper).
    """

    def __init__(self, inner, surrogates, alpha: float = 1.0):
        self.inner = inner
        self.surrogates = surrogates
        self.alpha = validation.positive("alpha", alpha)
        self.n_data, self.dim, self.shard_sizes = inner.n_data, inner.dim, inner.shard_sizes
        if surrogates.n_shards != len(inner.shard_sizes):
            raise validation.InvalidParameter(
                "surrogates", surrogates.n_shards,
                f"needs one surrogate per shard ({len(inner.shard_sizes)})")
        self.prepare = inner.prepare
        # the shard's difference and score, the total score, g_s, α g_s and the difference
        count_memory_as(self, inner, 6)

    def conducive_gradient(self, position: np.ndarray, minibatch: ShardBatch) -> np.ndarray:
        surrogates = self.surrogates
        return (surrogates.total_score(position)
                - surrogates.score(position, minibatch.shard) / minibatch.frequency[..., None])

    def __call__(self, position: np.ndarray, minibatch: ShardBatch) -> np.ndarray:
        return (self.inner(position, minibatch)
                - self.alpha * self.conducive_gradient(position, minibatch))

    def kernel_spec(self):
        """This estimator for the engine's compiled path (:mod:`workbench.engine.compiled`) when
        the inner one describes itself as shard-local and linear and the surrogates are
        Gaussian with diagonal precisions (scores elementwise); else None (the generic path)."""
        from workbench.core.specs import ConduciveSpec, ShardLinearSpec
        from workbench.gradients.surrogates import GaussianSurrogates

        surrogates = self.surrogates
        describe = getattr(self.inner, "kernel_spec", None)
        inner = None if describe is None else describe()
        if (not isinstance(inner, ShardLinearSpec) or not isinstance(surrogates, GaussianSurrogates)
                or not surrogates.diagonal):
            return None
        return ConduciveSpec(inner, self.alpha, surrogates.means,
                             np.diagonal(surrogates.precisions, 0, 1, 2), surrogates.total_natural,
                             surrogates.total_precision)
