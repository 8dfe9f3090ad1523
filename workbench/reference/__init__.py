"""Reference posteriors for models without a closed form (docs/architecture.md).

A long full-gradient Metropolis-adjusted run (MALA or HMC) over several chains
(:mod:`~workbench.reference.mala`, :mod:`~workbench.reference.hmc`,
:mod:`~workbench.reference.adaptation`, :mod:`~workbench.reference.chain`) gives posterior
expectations of test functions with their own Monte Carlo error and R-hat
(:mod:`~workbench.reference.summary`), stored once per model, data and settings in the result
store (:mod:`~workbench.reference.stored`), and compared with a sampler's estimates by a check
whose error combines both (:mod:`~workbench.reference.compare`). Its settings as configuration
parameters are :mod:`~workbench.reference.parameters`.

The names below are resolved on first use: a study reads the ``reference_*`` parameters
without importing xarray or arviz-stats (issue 15).
"""

import importlib

_HOMES = {"combined_error": "compare", "reference_check": "compare",
          "reference_value": "compare", "ReferenceSettings": "settings",
          "REFERENCE_EXPERIMENT": "stored", "array_digest": "stored",
          "reference_identity": "stored", "reference_posterior": "stored"}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(f"workbench.reference.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'workbench.reference' has no attribute {name!r}")
