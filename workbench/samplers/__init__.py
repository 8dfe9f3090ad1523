"""Samplers as pure ``init`` / ``step`` functions over explicit state (DESIGN.md).

A sampler draws no minibatches, reads no clocks and owns no loop: the engine hands it the
(possibly stale) gradient and the standard-normal noise for each step. Every array is
vectorised over leading axes (replicate, server). Step sizes follow the Chen convention,
θ ← θ - h∇Ũ + √(2h) ξ (math.md §1); experiments quoting ε = 2h convert at their edge.
"""

from workbench.samplers.base import Sampler
from workbench.samplers.sghmc import SGHMC, SGHMCState
from workbench.samplers.sgld import SGLD, SGLDState

SAMPLER_NAMES = ("sgld", "sghmc-euler", "sghmc-splitting")


def make_sampler(name: str, step_size: float, friction: float = 1.0) -> Sampler:
    """A sampler by its configuration name (``sampler`` key, ``--set sampler=...``)."""
    if name == "sgld":
        return SGLD(step_size)
    if name in ("sghmc-euler", "sghmc-splitting"):
        return SGHMC(step_size, friction, integrator=name.removeprefix("sghmc-"))
    from simulators.validation import InvalidParameter

    raise InvalidParameter("sampler", name, f"must be one of {', '.join(SAMPLER_NAMES)}")


__all__ = ["SAMPLER_NAMES", "SGHMC", "SGHMCState", "SGLD", "SGLDState", "Sampler", "make_sampler"]
