"""The ``time-to-target`` check of a traveling-chains study: which of two arms brings the chains
to a target accuracy sooner in simulated time (seed 004 §3.2.2, Figure 7: adaptive trajectory
lengths against block-by-the-slowest).

The chains start ``initial_offset`` posterior standard deviations from μ
(:mod:`.sharded_point`). The error of a chain at simulated time t is ‖θ - μ‖² of its current
state, pooled over the chains (each chain's error curve interpolated on a common grid of
``n_time_points`` times) and expressed in units of d·s²; the time to ``target_error`` is the
first crossing of the pooled curve, linearly interpolated. Replicates and chains are
independent given the schedules, so the Monte Carlo error of a crossing time, or of a ratio of
two, is a jackknife over (replicate, chain) units with Student critical values. At every value
of the other sweep dims (``over`` compares the baseline, its first value, with the second):

- ``speed-up/<point>``: the baseline's time over the second arm's, against the same ratio from
  the exact error curves;
- ``sooner/<point>``, kind ``ordering``, unless the exact curves put the second arm no sooner: the
  measured speed-up minus 1 exceeds its critical value times its error; inconclusive in
  between, violated if significantly later;
- ``accuracy/<point>``: both arms settle at the same error after the burn-in (window average
  of ‖θ - μ‖², chain means), an invariance check; the exact floors are the evidence.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from bounds.checks import invariance_check, oracle_check, ordering_check
from bounds.verdict import Verdict, student_z_for_family
from workbench.studies.sharded_judgements import label, slices
from workbench.systems.distributed.windows import about, with_student_rate


def time_grid(at: xr.Dataset, points: int) -> np.ndarray:
    """A grid up to the time every chain of the arm has made all its updates (the arms run
    the same number of updates, so a faster one covers less simulated time)."""
    return np.linspace(0.0, float(at["update_time"].isel(step=-1).min()), points)


def _scale(dataset: xr.Dataset) -> float:
    return dataset.sizes["component"] * float(dataset["posterior_variance"])


def unit_curves(dataset: xr.Dataset, at: xr.Dataset, grid: np.ndarray) -> np.ndarray:
    """Measured ‖θ - μ‖²/(d s²) per (replicate, chain) unit on the time grid."""
    times, errors = at["update_time"].values, at["squared_error"].values / _scale(dataset)
    return np.stack([np.interp(grid, times[c], errors[r, c])
                     for r in range(errors.shape[0]) for c in range(errors.shape[1])])


def exact_curve(dataset: xr.Dataset, at: xr.Dataset, grid: np.ndarray) -> np.ndarray:
    times, errors = at["update_time"].values, at["exact_squared_error"].values / _scale(dataset)
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


def times_to_target(dataset: xr.Dataset, selection: dict, over: str, config: dict) -> dict:
    """Measured and exact crossing times per arm, and leave-one-unit-out crossing times."""
    target = config["target_error"]
    result = {"measured": {}, "exact": {}, "leave_one_out": {}}
    for arm in dataset[over].values.tolist():
        at = dataset.sel({**selection, over: arm})
        grid = time_grid(at, config["n_time_points"])
        units = unit_curves(dataset, at, grid)
        total = units.sum(axis=0)
        result["measured"][arm] = crossing(grid, total / units.shape[0], target)
        result["exact"][arm] = crossing(grid, exact_curve(dataset, at, grid), target)
        result["leave_one_out"][arm] = np.array([
            crossing(grid, (total - unit) / (units.shape[0] - 1), target) for unit in units])
    return result


def speedup_checks(dataset: xr.Dataset, name: str, selection: dict, over: str, config: dict,
                   z_of) -> list[Verdict]:
    """``speed-up/<name>`` and, where the exact curves put the second arm sooner,
    ``sooner/<name>``; ``z_of(n_units)``: the family's Student critical value."""
    baseline, contender = dataset[over].values.tolist()
    times = times_to_target(dataset, selection, over, config)
    ratio = times["measured"][baseline] / times["measured"][contender]
    exact = times["exact"][baseline] / times["exact"][contender]
    loo = times["leave_one_out"][baseline] / times["leave_one_out"][contender]
    n_units = loo.size
    error = math.sqrt((n_units - 1) * np.mean((loo - loo.mean()) ** 2))
    z = z_of(n_units)
    evidence = {"time_to_target": times["measured"], "exact_time_to_target": times["exact"],
                "target_error_in_d_s2": config["target_error"]}
    where = ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}"
                      for k, v in selection.items())
    detail = (f"{where}: reaching E‖θ - μ‖² = {config['target_error']:g}·d·s² takes "
              f"{times['measured'][baseline]:.4g} ({baseline}) and "
              f"{times['measured'][contender]:.4g} ({contender}) (exact "
              f"{times['exact'][baseline]:.4g} and {times['exact'][contender]:.4g})")
    verdicts = [with_student_rate(oracle_check(f"speed-up/{name}", ratio, error, exact, z,
                                               detail=detail, evidence=evidence,
                                               n_replicates=n_units, relative=True), n_units)]
    if not exact <= 1:  # NaN (a target the exact curves never reach) stays a claim to judge
        verdicts.append(with_student_rate(ordering_check(
            f"sooner/{name}", ratio - 1, error, exact - 1, z, detail=detail,
            evidence=evidence, n_replicates=n_units), n_units))
    return verdicts


def floor_values(dataset: xr.Dataset, at: xr.Dataset, prefix: str = "") -> np.ndarray:
    """Window average of ‖θ - μ‖²/(d s²): measured ``(R, C)`` or exact ``(C,)``."""
    mu = dataset["posterior_mean"].values
    second = about(mu, at[f"{prefix}window_mean"].values, at[f"{prefix}window_second"].values)
    return np.trace(second, axis1=-2, axis2=-1) / _scale(dataset)


def accuracy_check(dataset: xr.Dataset, name: str, selection: dict, over: str, rate: float,
                   n_family: int) -> Verdict:
    arms = dataset[over].values.tolist()
    values, errors, exact = [], [], {}
    for arm in arms:
        at = dataset.sel({**selection, over: arm})
        chains = floor_values(dataset, at).mean(axis=0)
        values.append(chains.mean())
        errors.append(chains.std(ddof=1) / math.sqrt(chains.size))
        exact[arm] = float(floor_values(dataset, at, "exact_").mean())
    n_chains = dataset.sizes["chain"]
    return with_student_rate(invariance_check(
        f"accuracy/{name}", values, errors, arms, student_z_for_family(rate, n_family, n_chains),
        detail="error after the burn-in, E‖θ - μ‖²/(d s²): exact "
               + ", ".join(f"{k} {v:.4g}" for k, v in exact.items())
               + " (paired arms share their random numbers, so the check is conservative)",
        evidence={"exact_floor": exact}), n_chains)


def time_to_target_checks(dataset: xr.Dataset, dims, symbols, options: dict, rate: float,
                          config: dict) -> list[Verdict]:
    """Every slice along ``over``: its speed-up and sooner verdicts (one family, two per
    slice), then its accuracy verdict (one family, one per slice)."""
    over = options["over"]
    rest = [(selection, label(selection, symbols)) for _, selection in
            slices(dataset, dims, over, symbols)]
    verdicts = []
    for selection, name in rest:
        verdicts += speedup_checks(dataset, name, selection, over, config,
                                   lambda n: student_z_for_family(rate, 2 * len(rest), n))
    return verdicts + [accuracy_check(dataset, name, selection, over, rate, len(rest))
                       for selection, name in rest]
