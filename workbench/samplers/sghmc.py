"""Stochastic gradient Hamiltonian Monte Carlo (unit mass, friction D) with stale gradients.

Two integrators, Chen convention (docs/math.md §1, §3):

- ``euler`` (seed 001 Algorithm 1):
  p ← (1 - D h) p - h ∇Ũ + √(2 D h) ξ;  θ ← θ + h p.
  Gradients are evaluated at θ.
- ``splitting`` (symmetric A-B-O-B-A splitting, docs/math.md §3, one gradient per step):
  θ ← θ + p h/2;  p ← e^{-Dh/2} p;  p ← p - h ∇Ũ + √(2 D h) ξ;  p ← e^{-Dh/2} p;  θ ← θ + p h/2.
  The gradient is evaluated at the half-step position θ + p h/2, which is therefore what a
  server would send to its workers: it is this sampler's gradient point.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from simulators import validation

INTEGRATORS = ("euler", "splitting")


class SGHMCState(NamedTuple):
    position: np.ndarray
    momentum: np.ndarray


class SGHMC:
    """SGHMC step with the chosen integrator (module docstring)."""

    def __init__(self, step_size: float, friction: float = 1.0, integrator: str = "euler"):
        self.step_size = validation.positive("step_size", step_size)
        self.friction = validation.positive("friction", friction)
        self.integrator = validation.one_of("integrator", integrator, INTEGRATORS)
        self.name = f"sghmc-{integrator}"
        self.order = 1 if integrator == "euler" else 2
        h, friction = self.step_size, self.friction
        self._noise_scale = math.sqrt(2.0 * friction * h)
        self._damping = 1.0 - friction * h  # Euler
        self._half_decay = math.exp(-0.5 * friction * h)  # splitting

    def init(self, position: np.ndarray, momentum: np.ndarray | None = None) -> SGHMCState:
        position = np.array(position, dtype=float)
        momentum = np.zeros_like(position) if momentum is None else np.array(momentum, float)
        return SGHMCState(position, momentum)

    def gradient_point(self, state: SGHMCState) -> np.ndarray:
        if self.integrator == "euler":
            return state.position
        return state.position + (0.5 * self.step_size) * state.momentum

    def position(self, state: SGHMCState) -> np.ndarray:
        return state.position

    def step(self, state: SGHMCState, gradient: np.ndarray, noise: np.ndarray) -> SGHMCState:
        h = self.step_size
        if self.integrator == "euler":
            momentum = self._damping * state.momentum - h * gradient + self._noise_scale * noise
            return SGHMCState(state.position + h * momentum, momentum)
        half = 0.5 * h
        position = state.position + half * state.momentum
        momentum = self._half_decay * state.momentum - h * gradient + self._noise_scale * noise
        momentum = self._half_decay * momentum
        return SGHMCState(position + half * momentum, momentum)

    def kernel_spec(self):
        """This step for the engine's compiled path (:mod:`workbench.engine.compiled`)."""
        from workbench.core.specs import SamplerSpec

        factor = self._damping if self.integrator == "euler" else self._half_decay
        return SamplerSpec(self.name, self.step_size, self._noise_scale, factor)

    def describe(self) -> dict[str, float | str]:
        return {"sampler": self.name, "step_size": self.step_size, "friction": self.friction}
