"""SGLD chains coupled in groups (seed 004 §3.2.3, Eq. 6).

R chains of a group stand at a common state θ. Each makes its own SGLD step from θ with its
own minibatch (from the shard its worker holds) and its own noise, and the group takes the
average of the R new states, which is θ - h·(1/R)Σ_r ∇Ũ_r + √(2h) ξ̄: the gradient estimate is
averaged over R minibatches (its variance falls by R) but the injected noise ξ̄ has variance
1/R only. Seed 004 restores it with extra noise η ~ N(0, (R - 1)/R) (ε (R - 1)/R in the
Welling-Teh convention). Here η = ξ_1 - ξ̄, the first member's deviation from the average: it
is Gaussian with that variance and, being uncorrelated with ξ̄, independent of it; so ξ̄ + η
is exactly N(0, 1) and no extra random stream is needed (the run stays a pure function of the
engine's per-chain noise).

``noise_correction=False`` leaves η out, as seed 004's LDA runs did ("we did not inject any
additional noise"); the group then samples at temperature 1/R and its spread shrinks.

The sampler runs on the chain axis (-2) of the engine's ``(replicate, chain, d)`` arrays;
``groups`` are the consecutive group sizes (1 for an independent chain, so hybrid groups are
any mix). Chains of one group are identical after every step, and start at their average.
"""

from __future__ import annotations

import math

import numpy as np

from simulators import validation
from workbench.samplers.sgld import SGLDState


class CoupledSGLD:
    """SGLD with group averaging and noise correction (module docstring); Chen convention."""

    name = "coupled-sgld"
    order = 1

    def __init__(self, step_size: float, groups, noise_correction: bool = True):
        self.step_size = validation.positive("step_size", step_size)
        self.groups = tuple(validation.sizes("coupling_groups", groups))
        self.noise_correction = bool(noise_correction)
        self._noise_scale = math.sqrt(2.0 * self.step_size)
        n_chains = sum(self.groups)
        first = np.repeat(np.cumsum((0,) + self.groups[:-1]), self.groups)
        self._first_member = first  # chain -> first chain of its group
        average = np.zeros((n_chains, n_chains))
        for start, size in zip(np.cumsum((0,) + self.groups[:-1]), self.groups, strict=True):
            average[start:start + size, start:start + size] = 1.0 / size
        self._average = average

    def _group_mean(self, values: np.ndarray) -> np.ndarray:
        return self._average @ values

    def init(self, position: np.ndarray) -> SGLDState:
        position = np.array(position, dtype=float)
        if position.shape[-2] != len(self._first_member):
            raise validation.InvalidParameter(
                "coupling_groups", list(self.groups),
                f"must add up to the number of chains ({position.shape[-2]})")
        return SGLDState(self._group_mean(position))

    def gradient_point(self, state: SGLDState) -> np.ndarray:
        return state.position

    def position(self, state: SGLDState) -> np.ndarray:
        return state.position

    def step(self, state: SGLDState, gradient: np.ndarray, noise: np.ndarray) -> SGLDState:
        members = state.position - self.step_size * gradient + self._noise_scale * noise
        averaged = self._group_mean(members)
        if not self.noise_correction:
            return SGLDState(averaged)
        correction = noise[..., self._first_member, :] - self._group_mean(noise)
        return SGLDState(averaged + self._noise_scale * correction)

    def describe(self) -> dict[str, float | str]:
        return {"sampler": self.name, "step_size": self.step_size,
                "coupling_groups": ",".join(map(str, self.groups)),
                "noise_correction": int(self.noise_correction)}
