"""Stochastic gradient Langevin dynamics with (possibly stale) gradients.

Seed 001 §3.1 with the Euler integrator, Chen convention (docs/math.md §1):
θ_{l+1} = θ_l - h ∇Ũ(θ_{l-τ_l}) + √(2h) ξ_l, ξ_l ~ N(0, I).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from simulators import validation


class SGLDState(NamedTuple):
    position: np.ndarray


class SGLD:
    """SGLD step (module docstring); first-order integrator."""

    name = "sgld"
    order = 1

    def __init__(self, step_size: float):
        self.step_size = validation.positive("step_size", step_size)
        self._noise_scale = math.sqrt(2.0 * self.step_size)

    def init(self, position: np.ndarray) -> SGLDState:
        return SGLDState(np.array(position, dtype=float))

    def gradient_point(self, state: SGLDState) -> np.ndarray:
        return state.position

    def position(self, state: SGLDState) -> np.ndarray:
        return state.position

    def step(self, state: SGLDState, gradient: np.ndarray, noise: np.ndarray) -> SGLDState:
        return SGLDState(state.position - self.step_size * gradient + self._noise_scale * noise)

    def advance(self, state: SGLDState, gradients: np.ndarray,
                noise: np.ndarray) -> tuple[SGLDState, np.ndarray, np.ndarray]:
        """``len(gradients)`` steps at once, bit-identical to as many calls of :meth:`step`.

        ``step`` computes (θ - h∇) + sξ: two additions per update, in that order. Writing
        θ, -h∇_0, sξ_0, -h∇_1, sξ_1, ... one after the other and taking the running sum
        (``cumsum`` along the first axis adds strictly in sequence) performs exactly those
        additions, since θ - x and θ + (-x) round alike and (-h)·∇ is -(h·∇). Returns the
        final state, and the positions and gradient points after each step.
        """
        steps = gradients.shape[0]
        terms = np.empty((2 * steps + 1,) + state.position.shape)
        terms[0] = state.position
        np.multiply(gradients, -self.step_size, out=terms[1::2])
        np.multiply(noise, self._noise_scale, out=terms[2::2])
        np.cumsum(terms, axis=0, out=terms)
        positions = terms[2::2]
        return SGLDState(positions[-1].copy()), positions, positions

    def kernel_spec(self):
        """This step for the engine's compiled path (:mod:`workbench.engine.compiled`)."""
        from workbench.core.specs import SamplerSpec

        return SamplerSpec(self.name, self.step_size, self._noise_scale)

    def describe(self) -> dict[str, float | str]:
        return {"sampler": self.name, "step_size": self.step_size}
