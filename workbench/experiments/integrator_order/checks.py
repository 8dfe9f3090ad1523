"""Checks of ``integrator-order``, one family (Bonferroni over all comparisons):

- ``oracle/mse/momentum_squared/...`` (relative), ``oracle/bias/momentum_squared/...`` and
  ``oracle/bias/theta_squared/...`` (absolute) at every point: the measurement against the
  exact moments of φ̂_L at the run's own step (the bias of φ̂_L(θ²) is the stationary variance
  of θ, minus the posterior's, up to the transient from rest);
- ``rate/euler/momentum_squared``: the MSE of φ̂_L(p²) at the optimal step against L, at
  least as steep as the K = 1 bound's L^(−2/3) (registry ``chen2015-mse-fixed-k1``);
- ``rate/splitting/momentum_squared``: at least as steep as K = 2's L^(−4/5);
- ``rate/euler-against-k2/momentum_squared``: the Euler run judged against L^(−4/5), the
  built-in negative control: it must come out ``violated`` (the rate check tells the two
  integrators apart) — or say with its numbers why it cannot.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import numpy as np
import xarray as xr

from bounds import registry
from bounds.analysis import analyse
from bounds.checks import oracle_check, rate_check
from bounds.verdict import Verdict, one_sided_z_for_family, z_for_family
from simulators.seeding import generator
from workbench.store.netcdf import config_of

ORDER = {"euler": 1, "splitting": 2}


@cache
def bound_rate(order: int) -> Fraction:
    """The MSE exponent at the optimal step of the fixed-step bound of order K (−2K/(2K + 1),
    derived by :func:`bounds.analysis.analyse` from the registered bound)."""
    return Fraction(analyse(registry.get(f"chen2015-mse-fixed-k{order}"))["optimum"]["rate"])


def exact_slope(lengths, exact_mse) -> float:
    """Least-squares slope of log exact MSE against log L: the rate the oracle predicts for
    this grid, beside the bound's asymptotic one."""
    return float(np.polyfit(np.log(lengths), np.log(exact_mse), 1)[0])


def integrator_order_checks(dataset: xr.Dataset) -> list[Verdict]:
    config = config_of(dataset)
    n = config["n_replicates"]
    lengths = dataset["iterations"].values
    n_oracle = 3 * dataset.sizes["integrator"] * lengths.size
    z = z_for_family(config["false_failure_rate"], n_oracle + 3)
    z_one = one_sided_z_for_family(config["false_failure_rate"], n_oracle + 3)
    verdicts = []
    for integrator in dataset["integrator"].values:
        for length in lengths:
            at = dataset.sel(integrator=integrator, iterations=length)
            label = f"{integrator},L={length}"
            kinetic, square = (at.sel(test_function="momentum_squared"),
                               at.sel(test_function="theta_squared"))
            verdicts += [
                oracle_check(f"oracle/mse/momentum_squared/{label}", kinetic["mse"],
                             kinetic["mse_se"], kinetic["exact_mse"], z,
                             f"MSE of φ̂_L(p²) at h* = {float(at['step_size']):.4g} against "
                             "the exact value.", n_replicates=n, relative=True),
                oracle_check(f"oracle/bias/momentum_squared/{label}", kinetic["bias"],
                             kinetic["bias_se"], kinetic["exact_bias"], z,
                             "Bias of φ̂_L(p²) against the exact value.", n_replicates=n,
                             evidence={"stationary_bias": float(kinetic["stationary_bias"])}),
                oracle_check(f"oracle/bias/theta_squared/{label}", square["bias"],
                             square["bias_se"], square["exact_bias"], z,
                             "Bias of φ̂_L(θ²) (the stationary variance of θ) against the "
                             "exact value.", n_replicates=n,
                             evidence={"stationary_bias": float(square["stationary_bias"])}),
            ]
    for integrator, order, name in (("euler", 1, "euler"), ("splitting", 2, "splitting"),
                                    ("euler", 2, "euler-against-k2")):
        at = dataset.sel(integrator=integrator, test_function="momentum_squared")
        samples = at["squared_error"].transpose("iterations", "replicate").values
        check = f"rate/{name}/momentum_squared"
        expected = bound_rate(order)
        verdicts.append(rate_check(
            check, lengths, samples, float(expected), z_one,
            generator(int(dataset.attrs["seed"]), "integrator-order", "check", check),
            statistic="mean", paired=True, n_resamples=config["bootstrap_resamples"],
            margin=config["rate_margin"],
            detail=(f"MSE of φ̂_L(p²) of SGHMC {integrator} at its optimal step against L, "
                    f"judged against the K = {order} bound's L^({expected})"
                    + (" — the negative control: Euler is first order, so this must fail."
                       if order != ORDER[integrator] else ".")),
            evidence={"exact_slope": exact_slope(lengths, at["exact_mse"].values),
                      "step_size": at["step_size"].values.tolist(),
                      "exact_mse": at["exact_mse"].values.tolist()}))
    return verdicts
