"""Checks of ``dsgld-load-balancing``.

The error of a chain at simulated time t is E‖θ - μ‖² of its current state, pooled over the
chains (each chain's error curve interpolated on a common time grid) and expressed in units of
d·s². ``target_error`` fixes the accuracy to reach; the time to reach it is the first crossing
of the pooled curve, linearly interpolated. Replicates and chains are independent given the
schedules, so the Monte Carlo error of a crossing time (or of a ratio of two) is a jackknife over
(replicate, chain) units with Student critical values.

- ``oracle/D=<D>/<balancing>/...``: window mean and second moment about μ after the burn-in
  against the exact oracle given the schedule.
- ``speed-up/D=<D>``: time to the target without balancing over time to it with adaptive
  trajectory lengths, against the same ratio from the exact error curves.
- ``sooner/D=<D>`` (D > 1), kind ``ordering``: the balanced run reaches the target sooner: the
  measured speed-up minus 1 exceeds its critical value times its error (seed 004 §3.2.2,
  Figure 7). Inconclusive in between, violated if significantly later.
- ``accuracy/D=<D>``: both runs settle at the same error after the burn-in (window average of
  ‖θ - μ‖², chain means), an invariance check; the exact floors are the evidence.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from bounds.checks import invariance_check, oracle_check, ordering_check
from bounds.verdict import Verdict
from workbench.store.netcdf import config_of
from workbench.systems.distributed.windows import (
    about,
    student_threshold,
    window_oracle_checks,
    with_student_rate,
)


def time_grid(dataset: xr.Dataset, slowdown: float, balancing: str,
              points: int) -> np.ndarray:
    """A grid up to the time every chain of the arm has made all its updates (the arms run
    the same number of updates, so the balanced one covers less simulated time)."""
    at = dataset["update_time"].sel(slowdown=slowdown, balancing=balancing)
    return np.linspace(0.0, float(at.isel(step=-1).min()), points)


def unit_curves(dataset: xr.Dataset, slowdown: float, balancing: str,
                grid: np.ndarray) -> np.ndarray:
    """Measured ‖θ - μ‖²/(d s²) per (replicate, chain) unit on the time grid."""
    at = dataset.sel(slowdown=slowdown, balancing=balancing)
    scale = dataset.sizes["component"] * float(dataset["posterior_variance"])
    times, errors = at["update_time"].values, at["squared_error"].values / scale
    return np.stack([np.interp(grid, times[c], errors[r, c])
                     for r in range(errors.shape[0]) for c in range(errors.shape[1])])


def exact_curve(dataset: xr.Dataset, slowdown: float, balancing: str,
                grid: np.ndarray) -> np.ndarray:
    at = dataset.sel(slowdown=slowdown, balancing=balancing)
    scale = dataset.sizes["component"] * float(dataset["posterior_variance"])
    times, errors = at["update_time"].values, at["exact_squared_error"].values / scale
    return np.mean([np.interp(grid, times[c], errors[c]) for c in range(times.shape[0])],
                   axis=0)


def crossing(grid: np.ndarray, curve: np.ndarray, target: float) -> float:
    """First time the curve is at or below ``target`` (linear between grid points)."""
    below = np.flatnonzero(curve <= target)
    if below.size == 0:
        return math.nan
    i = int(below[0])
    if i == 0:
        return float(grid[0])
    fraction = (curve[i - 1] - target) / (curve[i - 1] - curve[i])
    return float(grid[i - 1] + fraction * (grid[i] - grid[i - 1]))


def times_to_target(dataset: xr.Dataset, slowdown: float, config: dict) -> dict:
    """Measured and exact crossing times per arm, and leave-one-unit-out speed-ups."""
    target = config["target_error"]
    result = {"measured": {}, "exact": {}, "leave_one_out": {}}
    for balancing in dataset["balancing"].values.tolist():
        grid = time_grid(dataset, slowdown, balancing, config["n_time_points"])
        units = unit_curves(dataset, slowdown, balancing, grid)
        total = units.sum(axis=0)
        result["measured"][balancing] = crossing(grid, total / units.shape[0], target)
        result["exact"][balancing] = crossing(grid, exact_curve(dataset, slowdown, balancing,
                                                                grid), target)
        result["leave_one_out"][balancing] = np.array([
            crossing(grid, (total - unit) / (units.shape[0] - 1), target) for unit in units])
    return result


def _speedup_parts(dataset, slowdown, config):
    times = times_to_target(dataset, slowdown, config)
    ratio = times["measured"]["fixed"] / times["measured"]["adaptive"]
    exact = times["exact"]["fixed"] / times["exact"]["adaptive"]
    loo = times["leave_one_out"]["fixed"] / times["leave_one_out"]["adaptive"]
    n = loo.size
    error = math.sqrt((n - 1) * np.mean((loo - loo.mean()) ** 2))
    return times, ratio, exact, error, n


def speedup_checks(dataset: xr.Dataset, slowdown: float, config: dict, rate: float,
                   n_family: int) -> list[Verdict]:
    times, ratio, exact, error, n_units = _speedup_parts(dataset, slowdown, config)
    z = student_threshold(rate, n_family, n_units)
    evidence = {"time_to_target": times["measured"], "exact_time_to_target": times["exact"],
                "target_error_in_d_s2": config["target_error"]}
    detail = (f"D = {slowdown:g}: reaching E‖θ - μ‖² = {config['target_error']:g}·d·s² takes "
              f"{times['measured']['fixed']:.4g} without balancing and "
              f"{times['measured']['adaptive']:.4g} with adaptive trajectory lengths (exact "
              f"{times['exact']['fixed']:.4g} and {times['exact']['adaptive']:.4g})")
    verdicts = [with_student_rate(oracle_check(f"speed-up/D={slowdown:g}", ratio, error, exact,
                                               z, detail=detail, evidence=evidence,
                                               n_replicates=n_units, relative=True), n_units)]
    if slowdown > 1:
        verdicts.append(with_student_rate(ordering_check(
            f"sooner/D={slowdown:g}", ratio - 1, error, exact - 1, z, detail=detail,
            evidence=evidence, n_replicates=n_units), n_units))
    return verdicts


def floor_values(dataset: xr.Dataset, slowdown: float, balancing: str,
                 prefix: str = "") -> np.ndarray:
    """Window average of ‖θ - μ‖²/(d s²): measured ``(R, C)`` or exact ``(C,)``."""
    at = dataset.sel(slowdown=slowdown, balancing=balancing)
    mu = dataset["posterior_mean"].values
    second = about(mu, at[f"{prefix}window_mean"].values, at[f"{prefix}window_second"].values)
    scale = dataset.sizes["component"] * float(dataset["posterior_variance"])
    return np.trace(second, axis1=-2, axis2=-1) / scale


def accuracy_check(dataset: xr.Dataset, slowdown: float, rate: float,
                   n_family: int) -> Verdict:
    arms = dataset["balancing"].values.tolist()
    values, errors, exact = [], [], {}
    for balancing in arms:
        chains = floor_values(dataset, slowdown, balancing).mean(axis=0)
        values.append(chains.mean())
        errors.append(chains.std(ddof=1) / math.sqrt(chains.size))
        exact[balancing] = float(floor_values(dataset, slowdown, balancing, "exact_").mean())
    n_chains = dataset.sizes["chain"]
    return with_student_rate(invariance_check(
        f"accuracy/D={slowdown:g}", values, errors, arms,
        student_threshold(rate, n_family, n_chains),
        detail="error after the burn-in, E‖θ - μ‖²/(d s²): exact "
               + ", ".join(f"{k} {v:.4g}" for k, v in exact.items())
               + " (the runs are on common random numbers, so the check is conservative)",
        evidence={"exact_floor": exact}), n_chains)


def load_balancing_checks(dataset: xr.Dataset) -> list[Verdict]:
    config = config_of(dataset)
    rate = config["false_failure_rate"]
    slowdowns = dataset["slowdown"].values.tolist()
    verdicts = window_oracle_checks(
        dataset, [(f"D={d:g}/{b}", {"slowdown": d, "balancing": b}) for d in slowdowns
                  for b in dataset["balancing"].values.tolist()], rate)
    n_family = 2 * len(slowdowns)
    for slowdown in slowdowns:
        verdicts += speedup_checks(dataset, slowdown, config, rate, n_family)
    verdicts += [accuracy_check(dataset, d, rate, len(slowdowns)) for d in slowdowns]
    return verdicts
