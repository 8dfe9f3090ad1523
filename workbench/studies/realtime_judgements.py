"""The ``real-vs-simulated`` check of a real-processes study (:mod:`.realtime_point`), one
family (Bonferroni over all its verdicts).

Seed 001 (Chen et al. 2016) Appendix A describes the asynchronous parameter server whose
simulator the workbench runs; these checks judge that simulator, calibrated on a real run,
against the run, at every worker count P of the study's one sweep dim:

- ``staleness/mean/P=p``: the real run's mean staleness against the calibrated simulation's,
  within ``staleness_margin`` updates (errors by batch means, both runs); the chi-square test
  of the staleness counts (:func:`workbench.realtime.calibration.staleness_test`) is evidence;
- ``speedup/time/P=p`` (P > 1): log T_P real against simulated, within
  log(1 + ``speedup_margin``); the evidence carries both fitted bends
  (:func:`workbench.systems.asynchronous.speedup.fitted_bend`) and the calibrated P*.

``P`` is the dim's symbol (``[study] symbols``), the dim's name without one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from bounds.equivalence import decide, verdict_from
from bounds.verdict import Verdict, z_for_family
from workbench.systems.asynchronous.speedup import fitted_bend
from workbench.systems.asynchronous.system import saturation_workers

if TYPE_CHECKING:
    from workbench.studies.gaussian_judgements import Context

KIND = "real-vs-simulated"


def speedup_errors(dataset: xr.Dataset, kind: str, dim: str) -> np.ndarray:
    """Standard error of log T_P: the run's and the baseline's log-throughput errors (0 at
    P = 1, where T_1 = 1 by definition)."""
    errors = dataset[f"{kind}_log_throughput_se"]
    combined = np.hypot(errors.values, float(errors.sel({dim: 1})))
    return np.where(dataset[dim].values == 1, 0.0, combined)


def calibrated_bend(dataset: xr.Dataset, dim: str) -> float:
    """P* = (μ + 2δ + u)/u of the system calibrated on the largest real run."""
    largest = dataset.isel({dim: -1})
    return saturation_workers({name: float(largest[name]) for name in
                               ("latency_mean", "network_delay", "server_update_time")})


def real_vs_simulated_checks(dataset: xr.Dataset, dim: str, symbols: Mapping[str, str],
                             options: Mapping, rate: float) -> list[Verdict]:
    """The verdicts of the module docstring along ``dim``, at false-failure ``rate``."""
    workers = dataset[dim].values
    symbol = symbols.get(dim, dim)
    z = z_for_family(rate, 2 * workers.size - 1)
    verdicts = []
    for p in workers:
        at = dataset.sel({dim: p})
        real, simulated = float(at["real_mean_staleness"]), float(at["simulated_mean_staleness"])
        error = math.hypot(float(at["real_mean_staleness_se"]),
                           float(at["simulated_mean_staleness_se"]))
        if p == 1 and real == simulated:
            error = 0.0  # both never stale: nothing random to compare
        verdicts.append(verdict_from(
            f"staleness/mean/{symbol}={p}", KIND,
            decide(real - simulated, error, options["staleness_margin"], z), real, simulated, z,
            "absolute", detail="Mean staleness of the real run against the calibrated "
            "simulation.", evidence={
                "chi_square": float(at["staleness_chi2"]),
                "chi_square_dof": int(at["staleness_chi2_dof"]),
                "chi_square_p_value": float(at["staleness_p_value"]),
                "test": dataset.attrs.get("staleness_test", "")}))
    real_errors, simulated_errors = (speedup_errors(dataset, kind, dim)
                                     for kind in ("real", "simulated"))
    bends = {kind: fitted_bend(workers, dataset[f"{kind}_time_speedup"].values, errors)
             for kind, errors in (("real", real_errors), ("simulated", simulated_errors))}
    evidence = {"fitted_bend_real": bends["real"], "fitted_bend_simulated": bends["simulated"],
                "calibrated_saturation_workers": calibrated_bend(dataset, dim)}
    for k, p in enumerate(workers):
        if p == 1:
            continue
        real = float(dataset["real_time_speedup"].values[k])
        simulated = float(dataset["simulated_time_speedup"].values[k])
        difference = math.log(real / simulated) if real > 0 and simulated > 0 else math.nan
        verdicts.append(verdict_from(
            f"speedup/time/{symbol}={p}", KIND,
            decide(difference, math.hypot(real_errors[k], simulated_errors[k]),
                   math.log1p(options["speedup_margin"]), z),
            real, simulated, z, "log-ratio", detail="Time speed-up T_P of the real runs "
            "against the calibrated simulations.", evidence=evidence))
    return verdicts


def judge(kind: str, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """The verdicts of one ``real-vs-simulated`` check of a real-processes study
    (:mod:`.realtime_point`), along its one sweep dim."""
    return real_vs_simulated_checks(dataset, ctx.dims[0], ctx.symbols, options,
                                    ctx.config["false_failure_rate"])
