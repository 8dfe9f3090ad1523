"""The words a bound record uses: provenance tags, quantities and relations, with meanings.

Kept apart from :mod:`bounds.record` (which needs sympy) so that the command line can offer
them as choices without importing sympy (issue 15).
"""

PROVENANCE = {
    "seed": "stated in a seed paper",
    "recon": "reconstructed form of a theorem whose symbols were lost in the seed text: a "
             "hypothesis the workbench tests",
    "derived": "derived here and checked by simulation",
    "code": "read in the authors' public code",
    "user": "written by the user in a study file or the Bound lab: a hypothesis under test",
}
QUANTITIES = {
    "bias": "bias |E φ̂_L − φ̄|",
    "mse": "mean squared error E(φ̂_L − φ̄)²",
    "variance": "estimation variance E(φ̂_L − E φ̂_L)²",
    "stationary_variance": "stationary variance of θ",
    "normalised_stationary_variance": "stationary variance of θ in units of q/(2c)",
    "stability_limit": "largest stable relative step c = h/s²",
    "round_factor": "round factor Φ(a, T) of the between-shard variance",
    "mean": "exact E φ̂_L",
}
RELATIONS = {
    "upper bound": "upper bound up to its hidden constants (an O(·) statement)",
    "optimal rate": "the best rate the bound allows, after optimising the step size",
    "exact": "exact closed form",
    "expansion": "series expansion, exact to the stated order",
}
