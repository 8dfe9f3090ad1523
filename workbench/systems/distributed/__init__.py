"""Shared machinery of the distributed-data experiments (seeds 002 and 004).

- :mod:`.data`: the sharded Gaussian-mean data sets and their parameters;
- :mod:`.windows`: window averages of θ and θθᵀ from a replay, their exact counterparts from
  the sharded oracle, and the verdicts that compare them;
- :mod:`.plots`: sample clouds with posterior ellipses, in the style of the papers' figures.

Step sizes: seeds 002 and 004 quote the Welling-Teh step ε (θ ← θ + (ε/2)∇log p + N(0, ε));
every experiment here takes ``welling_teh_step_size`` = ε from the user, as the papers state
it, and runs the Chen-convention samplers with h = ε/2 (docs/math.md §1).
"""

WELLING_TEH_HELP = ("Welling-Teh step size ε as the paper quotes it (θ ← θ + (ε/2)∇log p + "
                    "N(0, ε)); the samplers run with the Chen-convention h = ε/2")


def chen_step_size(welling_teh: float) -> float:
    """h = ε/2 (docs/math.md §1)."""
    return welling_teh / 2
