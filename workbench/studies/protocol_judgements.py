"""The ``oracle`` checks of a study of seed 003's protocols on the Gaussian mean.

Seed 003 (Li, Chen, Pu, Henao & Carin, AAAI 2019), Algorithm 1 (downpour) and Appendix B
(elastic averaging), at the last checkpoint of every point (:mod:`.protocol_point`):

- ``oracle/.../<dim>=<value>,...``: the bias and variance of φ̂_L(θ) and the bias of φ̂_L(θ²)
  against the exact oracle of the point's own schedule
  (:func:`workbench.systems.protocols.checks.oracle_checks`);
- with ``difference = "<dim>"`` (a dim of two values, ``protocol`` over downpour and elastic,
  say), ``oracle/mse-difference/theta/<the other dims>``: the MSE of φ̂_L(θ) at the second
  value minus the first against the exact difference. The points are independent schedules
  on common random numbers, so the error of the difference is that of the per-replicate
  differences of squared errors.

One family, Bonferroni over all comparisons.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from bounds.checks import oracle_check
from bounds.verdict import Verdict, z_for_family
from workbench.studies.gaussian_judgements import sweep_points
from workbench.systems.protocols.checks import ORACLE_CHECKS
from workbench.systems.protocols.checks import oracle_checks as point_checks


def point_label(point: dict) -> str:
    """A point's values as ``dim=value`` joined by commas (seed 003's check names)."""
    return ",".join(f"{k}={v}" for k, v in point.items())


def mse_difference(dataset: xr.Dataset, dim: str, point: dict) -> tuple[float, float, float]:
    """(measured, its standard error, exact) MSE of φ̂_L(θ) at the second value of ``dim``
    minus the first, at ``point`` (a value of every other sweep dim) and the last checkpoint."""
    final = dataset.sel(point).sel(test_function="theta").isel(checkpoint=-1)
    first, second = dataset[dim].values.tolist()
    errors = final["squared_error"]
    difference = (errors.sel({dim: second}) - errors.sel({dim: first})).values
    difference = difference[np.isfinite(difference)]
    exact = final["exact_mse"]
    return (float(difference.mean()), float(difference.std(ddof=1) / np.sqrt(difference.size)),
            float(exact.sel({dim: second}) - exact.sel({dim: first})))


def oracle_checks(dataset: xr.Dataset, dims: Sequence[str], false_failure_rate: float,
                  difference: str | None = None) -> list[Verdict]:
    """Every point against its oracle, then the ``difference`` checks (module docstring)."""
    n = dataset.sizes["replicate"]
    points = sweep_points(dataset, dims)
    others = sweep_points(dataset, [d for d in dims if d != difference]) if difference else []
    z = z_for_family(false_failure_rate, ORACLE_CHECKS * len(points) + len(others))
    verdicts = []
    for point in points:
        final = dataset.sel(point).isel(checkpoint=-1)
        verdicts += point_checks(final, point_label(point), z, n)
    for point in others:
        observed, error, exact = mse_difference(dataset, difference, point)
        values = dataset[difference].values.tolist()
        evidence = {}
        if "messages" in dataset:
            messages = dataset["messages"].sel(point).isel(checkpoint=-1).values.tolist()
            evidence["messages"] = dict(zip(values, messages, strict=True))
        name = "/".join(["oracle/mse-difference/theta", point_label(point)]).rstrip("/")
        verdicts.append(oracle_check(
            name, observed, error, exact, z,
            f"MSE of φ̂_L(θ), {difference} = {values[1]} minus {values[0]}, against the exact "
            "difference (per-replicate differences: common random numbers).", n_replicates=n,
            evidence=evidence))
    return verdicts
