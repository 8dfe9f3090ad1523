"""Oracle checks every protocol run gets: the measured bias and variance of φ̂_L(θ) and the
bias of φ̂_L(θ²) at the last checkpoint against the exact values of :mod:`.run` (the oracle of
the run's own schedule, :mod:`workbench.oracles.protocols`)."""

from __future__ import annotations

import xarray as xr

from bounds.checks import oracle_check
from bounds.verdict import Verdict

#: oracle comparisons per sweep point (for the family's Bonferroni count)
ORACLE_CHECKS = 3


def oracle_checks(final: xr.Dataset, label: str, z: float, n_replicates: int) -> list[Verdict]:
    """``final``: one point's Dataset at its last checkpoint."""
    theta, square = final.sel(test_function="theta"), final.sel(test_function="theta_squared")
    where = f"({label})"
    return [
        oracle_check(f"oracle/bias/theta/{label}", theta["bias"], theta["bias_se"],
                     theta["exact_bias"], z, f"Bias of φ̂_L(θ) against the exact value {where}.",
                     n_replicates=n_replicates),
        oracle_check(f"oracle/variance/theta/{label}", theta["variance"],
                     theta["variance_se"], theta["exact_variance"], z,
                     f"Variance of φ̂_L(θ) against the exact value {where}.",
                     n_replicates=n_replicates, relative=True),
        oracle_check(f"oracle/bias/theta_squared/{label}", square["bias"], square["bias_se"],
                     square["exact_bias"], z,
                     f"Bias of φ̂_L(θ²) against the exact value {where}.",
                     n_replicates=n_replicates),
    ]
