"""Stochastic gradient Nosé-Hoover thermostat (Ding, Fang, Babbush, Chen, Skeel & Neven 2014).

Ding et al. 2014, Algorithm 1 (the Euler discretisation), unit mass, in the Chen convention
(docs/math.md §1), with g = ∇Ũ the (possibly stale) stochastic gradient read at θ and d the
dimension:

    p ← (1 - ξ h) p - h g + √(2 A h) η,   η ~ N(0, I),
    θ ← θ + h p,
    ξ ← ξ + h (pᵀp/d - 1).

The thermostat ξ (one per chain) is a friction that adapts until the kinetic energy per
coordinate is 1: unknown gradient noise heats the momentum, and ξ rises to remove the excess,
which is what lets SGNHT sample near the posterior without an estimate of that noise. A is the
diffusion of the injected noise and the thermostat's starting value (Ding et al. initialise
ξ = A; they draw p ~ N(0, I), while ``init`` starts p at rest like the other samplers unless a
momentum is given). Ding et al. write the friction as p - ξ p h; it is formed here as
(1 - ξ h) p, so that ``thermostat=False`` (ξ frozen at its initial value A) is SGHMC's Euler
step with friction A (seed 001 Algorithm 1, :mod:`workbench.samplers.sghmc`) bit for bit: the
negative control without the thermostat.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from simulators import validation


class SGNHTState(NamedTuple):
    position: np.ndarray
    momentum: np.ndarray
    thermostat: np.ndarray  # ξ, shaped like the position with a last axis of length 1


class SGNHT:
    """SGNHT step (module docstring); first-order integrator."""

    name = "sgnht"
    order = 1

    def __init__(self, step_size: float, diffusion: float = 1.0, thermostat: bool = True):
        self.step_size = validation.positive("step_size", step_size)
        self.diffusion = validation.positive("diffusion", diffusion)
        if not isinstance(thermostat, bool):
            raise validation.InvalidParameter("thermostat", thermostat, "must be True or False")
        self.thermostat = thermostat
        self._noise_scale = math.sqrt(2.0 * self.diffusion * self.step_size)

    def init(self, position: np.ndarray, momentum: np.ndarray | None = None,
             thermostat: np.ndarray | None = None) -> SGNHTState:
        position = np.array(position, dtype=float)
        momentum = np.zeros_like(position) if momentum is None else np.array(momentum, float)
        shape = position.shape[:-1] + (1,)
        thermostat = (np.full(shape, self.diffusion) if thermostat is None
                      else np.broadcast_to(np.asarray(thermostat, dtype=float), shape).copy())
        return SGNHTState(position, momentum, thermostat)

    def gradient_point(self, state: SGNHTState) -> np.ndarray:
        return state.position

    def position(self, state: SGNHTState) -> np.ndarray:
        return state.position

    def step(self, state: SGNHTState, gradient: np.ndarray, noise: np.ndarray) -> SGNHTState:
        h = self.step_size
        damping = 1.0 - state.thermostat * h
        momentum = damping * state.momentum - h * gradient + self._noise_scale * noise
        position = state.position + h * momentum
        thermostat = state.thermostat
        if self.thermostat:
            kinetic = np.mean(momentum * momentum, axis=-1, keepdims=True)  # pᵀp/d
            thermostat = thermostat + h * (kinetic - 1.0)
        return SGNHTState(position, momentum, thermostat)

    def describe(self) -> dict[str, float | str]:
        return {"sampler": self.name, "step_size": self.step_size,
                "diffusion": self.diffusion, "thermostat": int(self.thermostat)}
