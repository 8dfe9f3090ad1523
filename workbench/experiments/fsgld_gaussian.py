"""Figures of ``fsgld-gaussian`` in the style of seed 002 (el Mekkaoui et al. 2021) Figures 2,
3 and 4, and its Theorems 1-2 over the study's step grid (``[study] figure``: :func:`paper`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from workbench.store.netcdf import config_of
from workbench.systems.distributed import plots

_TITLES = {"dsgld": "DSGLD", "fsgld": "FSGLD"}
#: the theorem each estimator's envelope check judges (the study file's [[check]] entries)
_THEOREMS = {"dsgld": (1, "seed002-theorem-1-dsgld"), "fsgld": (2, "seed002-theorem-2-fsgld")}


def paper(dataset: xr.Dataset, path: Path) -> list[Path]:
    """Seed 002 Figures 2, 3b and 4, and the theorems' envelopes, beside ``path``. Figure 2's
    sample clouds are planar: a run in one dimension (``--set dim=1``) draws the others."""
    stem = path.with_suffix("")
    planar = [figure_samples(dataset, path)] if dataset.sizes["component"] >= 2 else []
    return planar + [figure_error(dataset, Path(f"{stem}-error.png")),
                     figure_constants(dataset, Path(f"{stem}-constants.png")),
                     figure_theorems(dataset, Path(f"{stem}-theorems.png"))]


def figure_samples(dataset: xr.Dataset, path):
    """Figures 2 and 3a: samples of each method per T over the shards' data, and samples of
    the analytic posterior; the posterior's 2-sd ellipse in red."""
    locals_ = dataset["local_updates"].values.tolist()
    methods = dataset["estimator"].values.tolist()
    fig, axes = plots.new(len(methods), len(locals_) + 1, 3.2 * (len(locals_) + 1),
                          3.0 * len(methods))
    data = dataset["data"].values
    sizes = dataset["shard_size"].values.tolist()
    mu = dataset["posterior_mean"].values
    covariance = float(dataset["posterior_variance"]) * np.eye(mu.size)
    for row, method in enumerate(methods):
        for column, local in enumerate(locals_):
            ax = axes[row, column]
            plots.data_by_shard(ax, data, sizes)
            samples = dataset["samples"].sel(estimator=method, local_updates=local).values
            plots.cloud(ax, samples, "k", size=2)
            plots.ellipse(ax, mu, covariance, edgecolor="tab:red", linewidth=1.2)
            ax.set_title(f"{_TITLES.get(method, method)} ({local})", fontsize=9)
        ax = axes[row, -1]
        plots.data_by_shard(ax, data, sizes)
        plots.cloud(ax, dataset["posterior_samples"].values, "k", size=2)
        ax.set_title("analytic posterior", fontsize=9)
    for ax in axes.ravel():
        ax.set_aspect("equal", adjustable="datalim")
    fig.suptitle("Samples of the global mean (black) over the shards' data; red: posterior "
                 "2-sd ellipse. Local updates per round in parentheses.", fontsize=9)
    return plots.finish(fig, path)


def figure_error(dataset: xr.Dataset, path):
    """Figure 3b: ‖μ̂ - μ‖² of the running post-burn-in mean against the number of samples,
    with 95% bands over chains and replicates. Dotted: the exact part of it that comes from
    the clients each chain happened to visit, mean over chains of ‖E[μ̂ | schedule] - μ‖²."""
    fig, axes = plots.new(1, 1, 6.5, 4.2)
    ax = axes[0, 0]
    mu = dataset["posterior_mean"]
    samples = dataset["iterations"].values / config_of(dataset)["thin"]
    styles = {"dsgld": "-", "fsgld": "--"}
    colours = plots.plt.cm.viridis(np.linspace(0, 0.85, dataset.sizes["local_updates"]))
    lowest = np.inf
    for method in dataset["estimator"].values.tolist():
        for colour, local in zip(colours, dataset["local_updates"].values.tolist(),
                                 strict=True):
            running = dataset["running_mean"].sel(estimator=method, local_updates=local)
            error = ((running - mu) ** 2).sum("component").stack(run=("replicate", "chain"))
            mean = error.mean("run").values
            band = 1.96 * error.std("run").values / np.sqrt(error.sizes["run"])
            label = f"{_TITLES.get(method, method)} ({local})"
            ax.plot(samples, mean, styles.get(method, "-"), color=colour, label=label)
            ax.fill_between(samples, np.maximum(mean - band, 1e-300), mean + band, color=colour,
                            alpha=0.15)
            exact = dataset["exact_running_mean"].sel(estimator=method, local_updates=local)
            bias = ((exact - mu) ** 2).sum("component").mean("chain").values
            lowest = min(lowest, float(np.min(mean)))
            ax.plot(samples, np.where(bias > 0, bias, np.nan), ":", color=colour, linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.1 * lowest)
    ax.set_xlabel("number of posterior samples (after burn-in, thinned)")
    ax.set_ylabel("MSE ‖μ̂ - μ‖²")
    ax.set_title("Global-mean error (dotted: the exact part due to the clients visited)",
                 fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    return plots.finish(fig, path)


def figure_constants(dataset: xr.Dataset, path):
    """Figure 4: γ_s² (DSGLD's bound) against ε_s² (FSGLD's) per shard, on the grid."""
    fig, axes = plots.new(1, 1, 6.5, 3.8)
    ax = axes[0, 0]
    shards = dataset["shard"].values
    ax.bar(shards - 0.2, dataset["gamma_squared"].values, 0.4, label="γ_s² (DSGLD, Thm 1)")
    ax.bar(shards + 0.2, dataset["epsilon_squared"].values, 0.4, label="ε_s² (FSGLD, Thm 2)")
    ax.set_yscale("log")
    ax.set_xlabel("shard s")
    ax.set_xticks(shards)
    ax.set_ylabel("grid maximum")
    ax.set_title("Bound constants on a grid over the parameter square", fontsize=9)
    ax.legend(fontsize=8)
    return plots.finish(fig, path)


def figure_theorems(dataset: xr.Dataset, path):
    """Measured MSE of φ̂_T(θ) against T per step factor (points with ±2 SE) and the envelope
    of Theorem 1 (DSGLD) or 2 (FSGLD) fitted at the study's step (lines)."""
    from workbench.studies.step_envelope_judgements import fitted

    config = config_of(dataset)
    locals_ = dataset["local_updates"].values.tolist()
    fig, axes = plots.new(len(_THEOREMS), len(locals_), 3.4 * len(locals_),
                          3.0 * len(_THEOREMS))
    iterations = dataset["iterations"].values
    factors = dataset["step_factor"].values.tolist()
    colours = dict(zip(factors, ("tab:blue", "k", "tab:red", "tab:green", "tab:purple"),
                       strict=False))
    for row, (method, (number, bound)) in enumerate(_THEOREMS.items()):
        envelope, values = fitted(dataset, config, method, bound)
        observed = dataset["bound_mse"].sel(estimator=method)
        upper = (envelope(values).broadcast_like(observed)
                 if np.all(np.isfinite(envelope.coefficients)) else None)
        for column, local in enumerate(locals_):
            ax = axes[row, column]
            for factor in factors:
                at = {"step_factor": factor, "local_updates": local}
                error = dataset["bound_mse_se"].sel(estimator=method, **at).values
                ax.errorbar(iterations, observed.sel(at).values, yerr=2 * error, fmt="o",
                            markersize=3, color=colours.get(factor, "grey"),
                            label=f"h × {factor:g}")
                if upper is not None:
                    ax.plot(iterations, upper.sel(at).values, color=colours.get(factor, "grey"))
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{_TITLES[method]}, T_local = {local}", fontsize=9)
            ax.set_xlabel("window length T")
            if column == 0:
                ax.set_ylabel(f"MSE of φ̂_T(θ); lines: Theorem {number}")
    axes[0, 0].legend(fontsize=7)
    return plots.finish(fig, path)
