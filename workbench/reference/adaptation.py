"""Warm-up adaptation for the reference chain: a starting step, dual averaging of the step, and
the windows in which a diagonal metric is estimated.

The step follows Hoffman & Gelman (2014), "The No-U-Turn Sampler", JMLR 15: Algorithm 4
finds a starting step by doubling or halving until the acceptance probability crosses 1/2, and
Algorithm 5's dual averaging (Nesterov 2009) drives the mean acceptance probability to a target,

    H̄_m = (1 - 1/(m + t₀)) H̄_{m-1} + (δ - α_m)/(m + t₀),
    log h_m = μ - (√m/γ) H̄_m,   log h̄_m = m^{-κ} log h_m + (1 - m^{-κ}) log h̄_{m-1},

with μ = log(10 h₀), γ = 0.05, t₀ = 10, κ = 0.75 (their recommended values). The step used
after warm-up is the averaged h̄, then held fixed: adapting during sampling would break the
chain's invariance. For MALA the target δ ≈ 0.574 is the acceptance rate that maximises
efficiency in high dimension (Roberts & Rosenthal 1998, "Optimal scaling of discrete
approximations to Langevin diffusions", JRSS B 60(1)), and for HMC δ ≈ 0.651 (Beskos et al.
2013, "Optimal tuning of the hybrid Monte Carlo algorithm", Bernoulli 19(5A)).

The metric follows Stan's windowed adaptation (Stan Reference Manual, "Automatic parameter
tuning"): after an initial buffer of 75 steps, the positions of windows of 25, 50, 100, ...
steps (the last stretched to the terminal buffer of 50 steps; 15 %, 75 % and 10 % of a warm-up
shorter than 150) give a diagonal inverse metric, the posterior variance per coordinate, shrunk
as Stan does towards 10⁻³, (n/(n + 5)) v + 10⁻³ · 5/(n + 5). After every window the step is
searched and its averaging restarted, since a new metric changes the acceptance of every step.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

MALA_TARGET_ACCEPTANCE = 0.574
HMC_TARGET_ACCEPTANCE = 0.651
MAX_STEP_SEARCH = 200
"""Doublings or halvings tried before the starting-step search gives up."""
INITIAL_BUFFER, TERMINAL_BUFFER, FIRST_WINDOW = 75, 50, 25
METRIC_SHRINKAGE, METRIC_SHRINKAGE_WEIGHT = 1e-3, 5.0


def starting_step_size(acceptance: Callable[[float], float], initial: float = 1.0) -> float:
    """Hoffman & Gelman's Algorithm 4: from ``initial``, double (if the mean acceptance
    probability ``acceptance(h)`` exceeds 1/2) or halve (otherwise) until it crosses 1/2."""
    step = float(initial)
    probability = acceptance(step)
    direction = 1.0 if probability > 0.5 else -1.0
    for _ in range(MAX_STEP_SEARCH):
        if (probability > 0.5) != (direction > 0):  # crossed 1/2 (p^a > 2^-a no longer)
            return step
        step *= 2.0**direction
        probability = acceptance(step)
    raise RuntimeError(f"no starting step size found after {MAX_STEP_SEARCH} "
                       f"{'doublings' if direction > 0 else 'halvings'} (last step {step:.3g}, "
                       f"acceptance {probability:.3g}): is the potential finite at the start?")


class DualAveraging:
    """Hoffman & Gelman's Algorithm 5 (module docstring); ``update`` takes the mean acceptance
    probability of the last step and returns the next step size, ``final`` is h̄."""

    def __init__(self, initial_step_size: float, target: float, gamma: float = 0.05,
                 t0: float = 10.0, kappa: float = 0.75):
        self.target = target
        self.gamma, self.t0, self.kappa = gamma, t0, kappa
        self.mu = math.log(10.0 * initial_step_size)
        self.iteration = 0
        self.h_bar = 0.0
        self.log_step = math.log(initial_step_size)
        self.log_step_bar = 0.0

    def update(self, acceptance_probability: float) -> float:
        self.iteration += 1
        m = self.iteration
        alpha = float(acceptance_probability) if np.isfinite(acceptance_probability) else 0.0
        weight = 1.0 / (m + self.t0)
        self.h_bar = (1.0 - weight) * self.h_bar + weight * (self.target - alpha)
        self.log_step = self.mu - math.sqrt(m) / self.gamma * self.h_bar
        decay = m ** -self.kappa
        self.log_step_bar = decay * self.log_step + (1.0 - decay) * self.log_step_bar
        return math.exp(self.log_step)

    @property
    def final(self) -> float:
        """The averaged step h̄ to use after warm-up (the last step before any update)."""
        return math.exp(self.log_step_bar if self.iteration else self.log_step)


def metric_windows(warmup: int) -> list[tuple[int, int]]:
    """The warm-up steps ``[start, end)`` whose positions estimate the metric (module
    docstring); none when the warm-up is too short to hold a window of 10 steps."""
    initial, terminal, size = INITIAL_BUFFER, TERMINAL_BUFFER, FIRST_WINDOW
    if initial + terminal + size > warmup:
        initial, terminal = int(0.15 * warmup), int(0.1 * warmup)
        size = warmup - initial - terminal
    if size < 10:
        return []
    windows, start, last = [], initial, warmup - terminal
    while start < last:
        end = start + size
        if end + 2 * size > last:
            end = last
        windows.append((start, end))
        start, size = end, 2 * size
    return windows


def regularised_variance(positions: np.ndarray) -> np.ndarray:
    """The diagonal inverse metric from ``positions`` ``(n, d)``: the variance per coordinate
    shrunk towards 10⁻³ with weight 5/(n + 5), as Stan does (module docstring)."""
    n = positions.shape[0]
    variance = positions.var(axis=0, ddof=1)
    return (n / (n + METRIC_SHRINKAGE_WEIGHT)) * variance + METRIC_SHRINKAGE * (
        METRIC_SHRINKAGE_WEIGHT / (n + METRIC_SHRINKAGE_WEIGHT))
