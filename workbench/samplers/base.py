"""The sampler protocol the engine replays."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class Sampler(Protocol):
    """One SG-MCMC integrator step over explicit, vectorised state.

    - ``init(position)``: the state at a given position (auxiliary variables at rest).
    - ``gradient_point(state)``: where a fresh gradient for the next step is evaluated; the
      engine stores these as the parameter *versions* that stale gradients read.
    - ``step(state, gradient, noise)``: the next state, given ∇Ũ evaluated at some (possibly
      stale) gradient point and a standard-normal array shaped like the position.
    - ``position(state)``: θ, the coordinates test functions see.
    - optionally ``advance(state, gradients, noise) -> (state, positions, gradient_points)``:
      several steps at once given the gradient of each (a leading axis over steps), for
      updates whose stale reads are all known beforehand. It must be bit-identical to
      repeated ``step``; the engine uses it only when the class defining ``step`` defines it.
    """

    name: str
    step_size: float
    order: int  # weak order K of the integrator (Euler 1, symmetric splitting 2)

    def init(self, position: np.ndarray) -> Any: ...

    def gradient_point(self, state: Any) -> np.ndarray: ...

    def step(self, state: Any, gradient: np.ndarray, noise: np.ndarray) -> Any: ...

    def position(self, state: Any) -> np.ndarray: ...

    def describe(self) -> dict[str, float | str]: ...
