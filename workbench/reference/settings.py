"""The settings of a reference chain, validated once: they are part of its stored identity."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from simulators import validation
from workbench.reference.adaptation import HMC_TARGET_ACCEPTANCE, MALA_TARGET_ACCEPTANCE

METHODS = ("mala", "hmc")
METRICS = ("diagonal", "identity")
TARGET_ACCEPTANCE = {"mala": MALA_TARGET_ACCEPTANCE, "hmc": HMC_TARGET_ACCEPTANCE}
DEFAULT_LEAPFROG_STEPS = 10


@dataclass(frozen=True)
class ReferenceSettings:
    """Which kernel, how long and how many chains to run (:mod:`workbench.reference.chain`).

    method: ``"mala"`` (:mod:`~workbench.reference.mala`) or ``"hmc"``
        (:mod:`~workbench.reference.hmc`).
    leapfrog_steps: L, HMC's leapfrog steps per transition (>= 1, default 10); MALA takes
        none (``None`` or 1: MALA is HMC with one leapfrog step).
    chains: independent chains (>= 2, so that R-hat compares chains).
    draws: kept draws per chain after warm-up (>= 100, so that batch means have batches).
    thin: steps per kept draw (>= 1); the chain runs draws·thin steps after warm-up. Only the
        kept draws' test-function values are held in memory, (chains, draws, m) floats.
    warmup: steps per chain during which the step size adapts (dual averaging) and which are
        discarded; 0 runs at ``step_size`` from the start.
    target_acceptance: the mean acceptance probability warm-up aims at, in (0, 1); by default
        the optimum in high dimension: 0.574 for MALA (Roberts & Rosenthal 1998), 0.651 for HMC
        (Beskos, Pillai, Roberts, Sanz-Serna & Stuart 2013, "Optimal tuning of the hybrid Monte
        Carlo algorithm", Bernoulli 19(5A)).
    metric: ``"diagonal"`` (default) adapts a diagonal inverse metric M in warm-up, so that
        coordinates on very different scales mix alike; ``"identity"`` keeps M = I.
    step_size: MALA's h in θ' = θ - hM∇U + √(2h)M^{1/2}ξ, HMC's leapfrog ε; with warm-up,
        where adaptation starts (``None``: Hoffman & Gelman's doubling search from 1),
        without, the fixed step (then required, and M = I).
    initial, initial_spread: chains start at ``initial`` + ``initial_spread``·N(0, I), spread
        out so that R-hat can see chains that have not forgotten their start.
    """

    method: str = "mala"
    leapfrog_steps: int | None = None
    chains: int = 8
    draws: int = 5_000
    thin: int = 1
    warmup: int = 1_000
    target_acceptance: float | None = None
    metric: str = "diagonal"
    step_size: float | None = None
    initial: float = 0.0
    initial_spread: float = 1.0

    def __post_init__(self) -> None:
        method = validation.one_of("method", self.method, METHODS)
        object.__setattr__(self, "method", method)
        if method == "mala":
            if self.leapfrog_steps not in (None, 1):
                raise validation.InvalidParameter("leapfrog_steps", self.leapfrog_steps,
                                                  "MALA takes one (use method = 'hmc')")
            object.__setattr__(self, "leapfrog_steps", 1)
        else:
            object.__setattr__(self, "leapfrog_steps", validation.integer(
                "leapfrog_steps", DEFAULT_LEAPFROG_STEPS if self.leapfrog_steps is None
                else self.leapfrog_steps, minimum=1))
        object.__setattr__(self, "chains", validation.integer("chains", self.chains, minimum=2))
        object.__setattr__(self, "draws", validation.integer("draws", self.draws, minimum=100))
        object.__setattr__(self, "thin", validation.integer("thin", self.thin, minimum=1))
        object.__setattr__(self, "warmup", validation.integer("warmup", self.warmup, minimum=0))
        target = self.target_acceptance
        target = validation.probability("target_acceptance", TARGET_ACCEPTANCE[method]
                                        if target is None else target)
        if not 0.0 < target < 1.0:
            raise validation.InvalidParameter("target_acceptance", target,
                                              "must lie strictly between 0 and 1")
        object.__setattr__(self, "target_acceptance", target)
        object.__setattr__(self, "metric", validation.one_of("metric", self.metric, METRICS))
        if self.step_size is not None:
            object.__setattr__(self, "step_size",
                               validation.positive("step_size", self.step_size))
        elif self.warmup == 0:
            raise validation.InvalidParameter("step_size", None,
                                              "is required (> 0) when warmup = 0")
        object.__setattr__(self, "initial", validation.finite("initial", self.initial))
        object.__setattr__(self, "initial_spread",
                           validation.non_negative("initial_spread", self.initial_spread))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
