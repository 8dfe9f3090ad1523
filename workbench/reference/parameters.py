"""The settings of a reference posterior as configuration parameters (``reference_*``), declared
once for every experiment and study that computes one, and the
:class:`~workbench.reference.settings.ReferenceSettings` they give: HMC chains, whose number,
kept draws, warm-up and leapfrog steps are part of the reference's identity."""

from __future__ import annotations

from simulators import validation
from workbench.core.parameters import Parameter
from workbench.core.validators import at_least_one, at_least_two
from workbench.reference.settings import ReferenceSettings


def at_least_hundred(name, value):
    """Reference draws per chain: batch means need batches (:class:`ReferenceSettings`)."""
    return validation.integer(name, value, minimum=100)


REFERENCE_PARAMETERS = (
    Parameter("reference_chains", 8, "reference posterior: HMC chains", at_least_two),
    Parameter("reference_draws", 2000, "reference posterior: kept draws per chain",
              at_least_hundred),
    Parameter("reference_warmup", 500, "reference posterior: adaptation steps per chain",
              at_least_one),
    Parameter("reference_leapfrog_steps", 10, "reference posterior: HMC leapfrog steps",
              at_least_one),
)
REFERENCE_KEYS = tuple(p.name for p in REFERENCE_PARAMETERS)


def reference_settings(config: dict) -> ReferenceSettings:
    """HMC with the configuration's ``reference_*`` values."""
    return ReferenceSettings(method="hmc", chains=config["reference_chains"],
                             draws=config["reference_draws"],
                             warmup=config["reference_warmup"],
                             leapfrog_steps=config["reference_leapfrog_steps"])
