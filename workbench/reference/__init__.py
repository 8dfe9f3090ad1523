"""Reference posteriors for models without a closed form (docs/architecture.md).

A long full-gradient Metropolis-adjusted run (MALA or HMC) over several chains
(:mod:`~workbench.reference.mala`, :mod:`~workbench.reference.hmc`,
:mod:`~workbench.reference.adaptation`, :mod:`~workbench.reference.chain`) gives posterior
expectations of test functions with their own Monte Carlo error and R-hat
(:mod:`~workbench.reference.summary`), stored once per model, data and settings in the result
store (:mod:`~workbench.reference.stored`), and compared with a sampler's estimates by a check
whose error combines both (:mod:`~workbench.reference.compare`).
"""

from workbench.reference.compare import combined_error, reference_check, reference_value
from workbench.reference.settings import ReferenceSettings
from workbench.reference.stored import (
    REFERENCE_EXPERIMENT,
    array_digest,
    reference_identity,
    reference_posterior,
)

__all__ = ["REFERENCE_EXPERIMENT", "ReferenceSettings", "array_digest", "combined_error",
           "reference_check", "reference_identity", "reference_posterior", "reference_value"]
