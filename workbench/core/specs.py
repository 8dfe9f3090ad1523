"""How a sampler or a gradient estimator describes itself to the engine's compiled path.

A sampler or estimator opts in to :mod:`workbench.engine.compiled` with a ``kernel_spec()``
method returning one of these records (that module's docstring gives the formulas each one
stands for). They are plain data, so models, gradient estimators and samplers import them
without pulling in the engine.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: the kernels' code of each :attr:`SamplerSpec.kind` (numba's and JAX's branch on it)
SAMPLER_KINDS = {"sgld": 0, "sghmc-euler": 1, "sghmc-splitting": 2}


def spec_of(obj, owner_method: str | None = None):
    """``obj.kernel_spec()`` if it opts in, else None; with ``owner_method`` (a sampler's
    ``"step"``) only where the class defining that method defines ``kernel_spec`` too, so that a
    subclass changing the step is not run by a backend that writes the parent's formula."""
    if owner_method is not None:
        owner = next((c for c in type(obj).__mro__ if owner_method in c.__dict__), None)
        if owner is None or "kernel_spec" not in owner.__dict__:
            return None
    method = getattr(obj, "kernel_spec", None)
    return None if method is None else method()


class SamplerSpec(NamedTuple):
    """A sampler's step for the kernel: ``kind`` (a key of :mod:`workbench.engine.compiled`'s list),
    step size h, noise scale s and, for SGHMC, the momentum factor (1 - Dh for Euler,
    e^{-Dh/2} for splitting; unused by SGLD)."""

    kind: str
    step_size: float
    noise_scale: float
    momentum_factor: float = 0.0


class LinearMeanSpec(NamedTuple):
    """∇Ũ(θ) = precision·θ - (offset + scale·(Σ_{i∈B} data_i)/n)."""

    data: np.ndarray  # (N, d)
    precision: float
    offset: float
    scale: float


class ShardLinearSpec(NamedTuple):
    """∇Ũ(θ) = (prior_precision·θ - prior_term) + w·(data_precision·(θ - x̄_B)), B drawn from
    shard s, whose rows start at ``offsets[s]``; w = ``size_share[s]``/q_s, q_s the shard's
    frequency in the schedule, or w = 1 when ``size_share`` is None."""

    data: np.ndarray  # (N, d), shard after shard
    offsets: np.ndarray  # (S,) first row of each shard
    prior_precision: float
    prior_term: float
    data_precision: float
    size_share: np.ndarray | None = None  # (S,) N_s/N, for D-SGLD's weight


class ConduciveSpec(NamedTuple):
    """FSGLD: ``inner``'s ∇Ũ - α g_s(θ), g_s(θ) = (total_natural - total_precision θ) -
    (-precisions[s] (θ - means[s]))/f_s, as :class:`~workbench.gradients.sharded.Conducive` and
    :class:`~workbench.gradients.surrogates.GaussianSurrogates` (diagonal) compute it
    (:mod:`workbench.engine.compiled`'s docstring)."""

    inner: ShardLinearSpec
    alpha: float
    means: np.ndarray  # (S, d) surrogate means m_s
    precisions: np.ndarray  # (S, d) diagonals of the surrogate precisions P_s
    total_natural: np.ndarray  # (d,) Σ_s P_s m_s
    total_precision: np.ndarray  # (d, d) Σ_s P_s (diagonal)
