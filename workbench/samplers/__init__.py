"""Samplers as pure ``init`` / ``step`` functions over explicit state (docs/architecture.md).

A sampler draws no minibatches, reads no clocks and owns no loop: the engine hands it the
(possibly stale) gradient and the standard-normal noise for each step. Every array is
vectorised over leading axes (replicate, server). Step sizes follow the Chen convention,
θ ← θ - h∇Ũ + √(2h) ξ (docs/math.md §1); experiments quoting ε = 2h convert at their edge.
"""

from workbench.samplers.base import Sampler
from workbench.samplers.psgld import PSGLD, PSGLDState
from workbench.samplers.sghmc import SGHMC, SGHMCState
from workbench.samplers.sgld import SGLD, SGLDState
from workbench.samplers.sgnht import SGNHT, SGNHTState

#: samplers that are linear on a linear-Gaussian target (the exact oracle covers them)
LINEAR_SAMPLER_NAMES = ("sgld", "sghmc-euler", "sghmc-splitting")
SAMPLER_NAMES = LINEAR_SAMPLER_NAMES + ("psgld", "sgnht")

_PSGLD_OPTIONS = ("decay", "regularizer", "correction", "curvature", "adaptation_steps",
                  "initial_second_moment")


def make_sampler(name: str, step_size: float, friction: float = 1.0, **options) -> Sampler:
    """A sampler by its configuration name (``sampler`` key, ``--set sampler=...``).

    ``friction`` is SGHMC's D and SGNHT's diffusion A (its thermostat starts there); pSGLD
    takes its own ``options`` (:class:`~workbench.samplers.psgld.PSGLD`). An option the named
    sampler does not have is refused.
    """
    from simulators.validation import InvalidParameter

    allowed = _PSGLD_OPTIONS if name == "psgld" else ()
    for option in options:
        if option not in allowed:
            raise InvalidParameter(option, options[option], f"is not an option of {name!r}")
    if name == "sgld":
        return SGLD(step_size)
    if name in ("sghmc-euler", "sghmc-splitting"):
        return SGHMC(step_size, friction, integrator=name.removeprefix("sghmc-"))
    if name == "psgld":
        return PSGLD(step_size, **options)
    if name == "sgnht":
        return SGNHT(step_size, diffusion=friction)
    raise InvalidParameter("sampler", name, f"must be one of {', '.join(SAMPLER_NAMES)}")


__all__ = ["LINEAR_SAMPLER_NAMES", "PSGLD", "PSGLDState", "SAMPLER_NAMES", "SGHMC", "SGHMCState",
           "SGLD", "SGLDState", "SGNHT", "SGNHTState", "Sampler", "make_sampler"]
