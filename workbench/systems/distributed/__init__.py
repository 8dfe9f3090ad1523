"""Shared machinery of the distributed-data experiments (seeds 002 and 004).

- :mod:`.data`: the sharded Gaussian-mean data sets and their parameters;
- :mod:`.windows`: window averages of θ and θθᵀ from a replay, their exact counterparts from
  the sharded oracle, and the verdicts that compare them;
- :mod:`.plots`: sample clouds with posterior ellipses, in the style of the papers' figures.

Step sizes: seeds 002 and 004 quote the Welling-Teh step ε (θ ← θ + (ε/2)∇log p + N(0, ε));
every experiment here takes ``welling_teh_step_size`` = ε from the user, as the papers state
it, and runs the Chen-convention samplers with h = ε/2 (docs/math.md §1).
"""

from workbench.core.parameters import Parameter
from workbench.core.validators import positive

WELLING_TEH_HELP = ("Welling-Teh step size ε as the paper quotes it (θ ← θ + (ε/2)∇log p + "
                    "N(0, ε)); the samplers run with the Chen-convention h = ε/2")
#: ε of every distributed experiment and sharded study (each with its own default)
WELLING_TEH_STEP_SIZE = Parameter("welling_teh_step_size", 1e-4, WELLING_TEH_HELP, positive)


def chen_step_size(welling_teh: float) -> float:
    """h = ε/2 (docs/math.md §1)."""
    return welling_teh / 2
