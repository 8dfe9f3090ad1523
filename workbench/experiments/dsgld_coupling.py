"""Figure of ``dsgld-coupling`` (seed 004 §3.2.3, Eq. 6): gradient error and sample spread
against the group size."""

from __future__ import annotations

import numpy as np
import xarray as xr

from workbench.systems.distributed import plots
from workbench.systems.distributed.windows import window_statistics


def group_selection(dataset: xr.Dataset, group_size: int) -> dict:
    """One chain per coupled group at R (the chains of a group are identical)."""
    first = dataset["first_member"].sel(group_size=group_size).values
    return {"group_size": group_size, "chain": np.flatnonzero(first).tolist()}


def figure_coupling(dataset: xr.Dataset, path):
    sizes = dataset["group_size"].values
    fig, axes = plots.new(1, 3, 15.0, 4.2)
    ax = axes[0, 0]
    for name, label, marker in (("gradient_error", "total", "o"),
                                ("gradient_minibatch_error", "minibatch part", "s")):
        values = dataset[name]
        mean = values.mean("gradient_draw").values
        band = 1.96 * values.std("gradient_draw").values / np.sqrt(values.sizes["gradient_draw"])
        ax.errorbar(sizes, mean, yerr=band, fmt=marker, capsize=3, label=f"measured {label}")
        ax.plot(sizes, dataset[f"exact_{name}"].values, ":", color="k", linewidth=1)
    first = float(dataset["exact_gradient_minibatch_error"].isel(group_size=0))
    ax.plot(sizes, first * sizes[0] / sizes, "--", color="tab:gray", label="∝ 1/R")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("group size R")
    ax.set_ylabel("E‖ĝ_R - ∇U(μ)‖²")
    ax.set_title("gradient-estimate error (dotted: exact)", fontsize=10)
    ax.legend(fontsize=8)

    ax = axes[0, 1]
    s2 = float(dataset["posterior_variance"])
    dim = dataset.sizes["component"]
    measured, errors, exact = [], [], []
    for r in sizes.tolist():
        selection = group_selection(dataset, r)
        _, second = window_statistics(dataset, selection)
        _, exact_second = window_statistics(dataset, selection, "exact_")
        traces = np.trace(second, axis1=-2, axis2=-1).ravel() / (dim * s2)
        measured.append(traces.mean())
        errors.append(1.96 * traces.std(ddof=1) / np.sqrt(traces.size))
        exact.append(np.trace(exact_second, axis1=-2, axis2=-1).mean() / (dim * s2))
    ax.errorbar(sizes, measured, yerr=errors, fmt="o", capsize=3, label="measured")
    ax.plot(sizes, exact, "k:", label="exact oracle")
    ax.axhline(1.0, color="tab:red", linewidth=1, label="posterior")
    ax.set_xscale("log")
    ax.set_xlabel("group size R")
    ax.set_ylabel("window E‖θ - μ‖² / (d s²)")
    ax.set_title("spread of the samples", fontsize=10)
    ax.legend(fontsize=8)

    ax = axes[0, 2]
    mu = dataset["posterior_mean"].values
    for r, colour in ((sizes[0], "tab:blue"), (sizes[-1], "tab:orange")):
        chains = group_selection(dataset, int(r))["chain"]
        samples = dataset["samples"].sel(group_size=r).values[chains]
        plots.cloud(ax, samples, colour, size=2, alpha=0.3, label=f"R = {r}")
    plots.ellipse(ax, mu, s2 * np.eye(mu.size), edgecolor="tab:red", linewidth=1.5)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title("samples of replicate 0, one chain per group (red: posterior)", fontsize=10)
    ax.legend(fontsize=8, markerscale=4)
    return plots.finish(fig, path)
