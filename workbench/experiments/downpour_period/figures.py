"""Figure of ``downpour-period``: the MSE of φ̂_L(θ) against π for each P (measured with 95 %
error bars, exact dashed), and the MSE of φ̂_L(θ²) against π(P − 1) beside the fitted E₃
envelope of seed 003's downpour bound."""

from __future__ import annotations

import numpy as np
import xarray as xr

from workbench.experiments.distributed.plots import finish, new
from workbench.experiments.downpour_period.checks import e3_envelope, staleness_bound


def figure_period(dataset: xr.Dataset, path):
    fig, axes = new(1, 2, 11, 4.2)
    final = dataset.isel(checkpoint=-1)
    periods = dataset["period"].values
    ax = axes[0, 0]
    theta = final.sel(test_function="theta")
    for workers in dataset["workers"].values:
        at = theta.sel(workers=workers)
        line = ax.errorbar(periods, at["mse"], yerr=1.96 * at["mse_se"], marker="o",
                           label=f"P = {workers}")
        ax.plot(periods, at["exact_mse"], "--", color=line[0].get_color(), linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("communication period π")
    ax.set_title("MSE of φ̂_L(θ) (exact dashed)", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    envelope, values, observed, errors, held_out = e3_envelope(dataset)
    x = staleness_bound(dataset).broadcast_like(observed)
    ax.errorbar(x.values.ravel(), observed.values.ravel(), yerr=1.96 * errors.values.ravel(),
                fmt="o", label="measured")
    if np.all(np.isfinite(envelope.coefficients)):
        order = np.argsort(x.values.ravel())
        curve = envelope(values).broadcast_like(observed).values.ravel()
        ax.plot(x.values.ravel()[order], curve[order], "k--", label="fitted envelope")
    ax.set_xlabel("π(P − 1)")
    ax.set_yscale("log")
    ax.set_title("MSE of φ̂_L(θ²) and the E₃ envelope", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle("Downpour SGLD on the Gaussian mean (seed 003 Algorithm 1, bound C₁(E₁+E₂+E₃))",
                 fontsize=10)
    return finish(fig, path)
