"""Figure of ``integrator-order`` (Chen, Ding & Carin 2015): MSE of φ̂_L(p²) at the optimal
step against L for both integrators (measured with 95 % error bars, exact dashed, the bounds'
slopes dotted), and the optimal steps h*(L)."""

from __future__ import annotations

from fractions import Fraction

import xarray as xr

from bounds import registry
from bounds.analysis import analyse
from workbench.samplers import SGHMC
from workbench.systems.distributed.plots import finish, new


def order(integrator: str) -> int:
    """K of SGHMC's ``integrator``, as the sampler declares it."""
    return SGHMC(1.0, 1.0, integrator).order


def bound_rate(order: int) -> Fraction:
    """The MSE exponent at the optimal step of the fixed-step bound of order K, −2K/(2K + 1)
    (registry ``chen2015-mse-fixed-k1``/``-k2``, derived by :func:`bounds.analysis.analyse`)."""
    return Fraction(analyse(registry.get(f"chen2015-mse-fixed-k{order}"))["optimum"]["rate"])


def _log_log(ax, title: str) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("samples L")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


def figure_order(dataset: xr.Dataset, path):
    fig, axes = new(1, 2, 11, 4.2)
    lengths = dataset["iterations"].values
    ax = axes[0, 0]
    for integrator in dataset["integrator"].values:
        at = dataset.sel(integrator=integrator, test_function="momentum_squared")
        line = ax.errorbar(lengths, at["mse"], yerr=1.96 * at["mse_se"], marker="o",
                           label=f"{integrator} (K = {order(integrator)})")
        color = line[0].get_color()
        ax.plot(lengths, at["exact_mse"], "--", color=color, linewidth=0.8)
        exponent = bound_rate(order(integrator))
        ax.plot(lengths, float(at["exact_mse"][0]) * (lengths / lengths[0]) ** float(exponent),
                ":", color=color, label=f"L^({exponent})")
    _log_log(ax, "MSE of φ̂_L(p²) at the optimal step (exact dashed)")
    ax = axes[0, 1]
    for integrator in dataset["integrator"].values:
        ax.plot(lengths, dataset["step_size"].sel(integrator=integrator), marker="o",
                label=integrator)
    _log_log(ax, "optimal step h*(L)")
    fig.suptitle("SGHMC: Euler against symmetric splitting, full gradients (Chen et al. 2015)",
                 fontsize=10)
    return finish(fig, path)
