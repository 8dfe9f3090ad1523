"""The parameters of downpour-period's logistic-regression half (:mod:`.logistic`), in a module
of their own: ``workbench show`` and argument checks read them without importing the half's
run (the engine, the reference posterior, xarray; issue 15)."""

from __future__ import annotations

from dataclasses import replace

from workbench.core.parameters import Parameter
from workbench.core.validators import at_least_one, at_least_two, positive
from workbench.reference.parameters import REFERENCE_PARAMETERS
from workbench.systems.asynchronous.models import LOGISTIC_PARAMETERS

DATA_KEYS = ("data_source", "n_train", "n_test", "prior_scale", "n_test_points")
#: smaller than a9a's sizes: the reference chains run on the whole training set
DATA_DEFAULTS = {"n_train": 2000, "n_test": 1000, "n_test_points": 300}


LOGISTIC_RUN_PARAMETERS = (
    *(replace(p, default=DATA_DEFAULTS.get(p.name, p.default))
      for p in LOGISTIC_PARAMETERS if p.name in DATA_KEYS),
    Parameter("logistic_step_size", 5e-5, "logistic regression: SGLD step h (Chen convention)",
              positive),
    Parameter("logistic_iterations", 1000, "logistic regression: master versions L",
              at_least_one),
    Parameter("logistic_replicates", 100, "logistic regression: independent runs R",
              at_least_two),
    *REFERENCE_PARAMETERS,
)
