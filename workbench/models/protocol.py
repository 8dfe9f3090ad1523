"""The model protocol: what the engine, the samplers and the estimators may ask of any model.

A model is a posterior p(θ | X) ∝ p(θ) Π_i p(x_i | θ) over θ ∈ R^d, written in the Chen
convention of docs/math.md §1 (seed 001 Eq. 1):

    U(θ)  = -log p(θ) - Σ_{i=1}^{N} log p(x_i | θ),
    ∇Ũ(θ) = -∇log p(θ) - (N/n) Σ_{i∈B} ∇log p(x_i | θ)   (minibatch B of n indices).

Every array argument is vectorised over leading axes: a position has shape ``(..., d)`` where
the leading axes are whatever the caller stacks (the engine uses ``(replicate, server)`` and,
for windows of stale updates, ``(width, replicate, server)``).

- ``potential(theta)``: U, shape ``(...,)``; additive constants that do not depend on θ (the
  prior's normaliser) may be dropped, as Metropolis ratios and gradients never see them.
- ``potential_gradient(theta)``: the full-data ∇U, shape ``(..., d)``. A model may declare
  ``positionwise_gradient = True`` when the value at each position is the same bit for bit
  whichever other positions share the call (no matrix product whose order of additions depends
  on the batch's shape); the diagnostics then score every replicate's draws in one call
  (:func:`workbench.stats.diagnostics.diagnose`). Without it they call once per replicate.
- ``minibatch_gradient()``: the estimator the engine replays
  (:func:`workbench.engine.replay.replay`): ``n_data``, ``dim``, ``prepare(indices)`` for indices of
  shape ``(..., n)`` drawn by :func:`workbench.gradients.minibatch.draw_indices`, and
  ``estimator(position, minibatch)`` → ∇Ũ of shape ``(..., d)``, where ``position`` and
  ``minibatch`` share their leading axes. The engine keeps the prepared minibatches of up to 4096
  updates for every replicate and server, so a model whose data do not reduce to a small statistic
  should prepare something compact (the indices themselves, see
  :class:`workbench.models.per_example.PerExampleGradient`) and gather the rows inside the call. An
  estimator may also offer ``kernel_spec()``, describing itself to the engine's compiled path
  (:mod:`workbench.engine.compiled`; the Gaussian mean does).

Models with held-out data also offer ``test_functions()``: :class:`TestFunction` s mapping
positions ``(..., d)`` to ``(..., 1)``, the predictive log-loss and the accuracy of the
classifier with parameters θ on the held-out set (seed 001 §5.1 uses the logistic loss on
a9a's test set; §5.2 the test loss of the networks). Their sample averages φ̂_L are what the
engine accumulates.

The protocol is structural (:class:`typing.Protocol`): a model implements it by having the
attributes, not by inheriting from anything.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from workbench.core.phi import TestFunction


@runtime_checkable
class GradientEstimator(Protocol):
    """``(position, minibatch) -> ∇Ũ(position)`` with the minibatch prepared from indices."""

    n_data: int
    dim: int

    def prepare(self, indices: np.ndarray) -> Any:
        """Turn minibatch indices ``(..., n)`` into what ``__call__`` consumes."""
        ...

    def __call__(self, position: np.ndarray, minibatch: Any) -> np.ndarray:
        """∇Ũ at ``position`` ``(..., d)`` for the prepared minibatch with the same ``...``."""
        ...


@runtime_checkable
class Model(Protocol):
    """A differentiable posterior in the Chen convention (module docstring)."""

    @property
    def n_data(self) -> int:
        """N, the number of likelihood terms (training points)."""
        ...

    @property
    def dim(self) -> int:
        """d, the dimension of θ."""
        ...

    def potential(self, theta: np.ndarray) -> np.ndarray:
        """U(θ) up to a θ-independent constant, shape ``(...,)`` for ``theta`` ``(..., d)``."""
        ...

    def potential_gradient(self, theta: np.ndarray) -> np.ndarray:
        """The full-data gradient ∇U(θ), shape ``(..., d)``."""
        ...

    def minibatch_gradient(self) -> GradientEstimator:
        """The stochastic-gradient estimator ∇Ũ the engine replays."""
        ...


@runtime_checkable
class HeldOutModel(Model, Protocol):
    """A model that can score positions on held-out data (predictive log-loss, accuracy)."""

    def test_functions(self) -> tuple[TestFunction, ...]:
        """Test functions ``(..., d) -> (..., 1)`` on the held-out set."""
        ...
