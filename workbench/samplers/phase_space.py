"""A view of a momentum sampler that records its whole state (θ, p), not θ alone.

The convergence results for higher-order integrators (Chen, Ding & Carin 2015; docs/math.md §3) are
stated for test functions of the diffusion's state, which for SGHMC includes the momentum. On
the Gaussian mean the position moments of both SGHMC integrators are biased only at O(h²),
while Euler's momentum moments are biased at O(h) (the exact stationary covariances of
:mod:`workbench.oracles.linear_gaussian`): the integrator order shows in φ(θ, p) = p². Wrapping
a sampler in :class:`PhaseSpace` makes the engine record ``concatenate(θ, p)`` (last axis 2d)
so that test functions can read the momentum; stepping is the wrapped sampler's, unchanged.
"""

from __future__ import annotations

import numpy as np

from simulators.validation import InvalidParameter


class PhaseSpace:
    """``sampler`` with ``position(state)`` = (θ, p) along the last axis (module docstring)."""

    def __init__(self, sampler):
        if not hasattr(sampler, "init") or "momentum" not in type(
                sampler.init(np.zeros(1)))._fields:
            raise InvalidParameter("sampler", getattr(sampler, "name", type(sampler).__name__),
                                   "has no momentum to record (SGHMC or SGNHT)")
        self.sampler = sampler
        self.name = f"{sampler.name}-phase-space"
        self.order = sampler.order

    def init(self, position):
        return self.sampler.init(position)

    def gradient_point(self, state):
        return self.sampler.gradient_point(state)

    def position(self, state):
        return np.concatenate([state.position, state.momentum], axis=-1)

    def step(self, state, gradient, noise):
        return self.sampler.step(state, gradient, noise)

    def describe(self):
        return {**self.sampler.describe(), "recorded": "position,momentum"}
