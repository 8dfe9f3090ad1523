"""Figure of ``stale-gaussian``'s bound designs: Theorem 3's rate and envelope, Theorem 4."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from workbench.experiments.stale_gaussian.bound_checks import (  # noqa: E402
    calibration_mask,
    envelope_data,
    exact_error,
    fit_theorem_3,
    grid_values,
    squared_errors,
)
from workbench.experiments.stale_gaussian.bound_design import (  # noqa: E402
    INTEGRATOR_ORDER,
    optimal_design,
)
from workbench.stats.estimators import summarize  # noqa: E402
from workbench.store.atomic import save_figure  # noqa: E402
from workbench.store.netcdf import config_of  # noqa: E402

_LABELS = {"theta": "θ", "theta_squared": "θ²"}
Z95 = 1.959964


def _rate_panel(ax, dataset: xr.Dataset, function: str, config: dict) -> None:
    design = optimal_design(INTEGRATOR_ORDER[config["sampler"]])
    lengths = dataset["rate_iterations"].values
    colours = plt.cm.viridis(np.linspace(0, 0.85, dataset.sizes["rate_staleness"]))
    for tau, colour in zip(dataset["rate_staleness"].values, colours, strict=True):
        at = dataset.sel(rate_staleness=tau)
        squared = squared_errors(at, "rate", function)
        mse = squared.mean("replicate").values
        error = (squared.std("replicate", ddof=1) / np.sqrt(squared.count("replicate"))).values
        ax.errorbar(lengths, mse, yerr=Z95 * error, fmt="o-", color=colour, capsize=3,
                    label=f"τ = {tau}")
        ax.plot(lengths, exact_error(at, "rate", function).values, "--", color=colour,
                linewidth=1)
        ax.plot(lengths, mse[0] * (lengths / lengths[0]) ** design.rate, ":", color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("# iterations L (h at Theorem 3's optimum)")
    ax.set_ylabel(f"MSE of φ̂ (φ = {_LABELS[function]})")
    ax.set_title(f"(a) rate: dotted L^({design.rate:.3g}); dashed exact MSE", fontsize=9)
    ax.legend(fontsize=8)


def _envelope_panel(ax, dataset: xr.Dataset, function: str, config: dict) -> None:
    envelope = fit_theorem_3(dataset, function, config)
    observed, errors = envelope_data(dataset, function)
    if not np.all(np.isfinite(envelope.coefficients)):
        ax.set_title("(b) envelope: too few calibration points to fit")
        return
    upper = envelope(grid_values(dataset))
    upper, observed, errors = xr.broadcast(upper, observed, errors)
    calibration = calibration_mask(dataset, config["envelope_split"]).broadcast_like(observed)
    for mask, style, label in ((calibration, "o", "calibration"), (~calibration, "s",
                                                                    "held out")):
        keep = mask.values
        ax.errorbar(upper.values[keep], observed.values[keep], yerr=Z95 * errors.values[keep],
                    fmt=style, markersize=4, capsize=2, linestyle="none", label=label,
                    mfc="none" if label == "calibration" else None)
    low, high = float(observed.min()) / 2, float(upper.max()) * 2
    ax.plot([low, high], [low, high], "k-", linewidth=1, label="measured = envelope")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("fitted envelope " + " + ".join(
        f"{c:.2g}·{t}" for c, t in zip(envelope.coefficients, envelope.terms, strict=True)),
        fontsize=7)
    ax.set_ylabel(f"MSE of φ̂ (φ = {_LABELS[function]})")
    ax.set_title("(b) Theorem 3 envelope over (τ, h, L): points below the line hold",
                 fontsize=9)
    ax.legend(fontsize=8)


def _variance_panel(ax, dataset: xr.Dataset, function: str, config: dict) -> None:
    final = dataset.isel(envelope_iterations=-1)
    summary = summarize(final["envelope_estimate"], final["posterior_value"],
                        confidence=config["confidence"]).sel(test_function=function)
    variance = summary["variance"].sum("component")
    error = np.sqrt((summary["variance_se"] ** 2).sum("component"))
    exact = final["envelope_exact_variance"].sel(test_function=function).sum("component",
                                                                              min_count=1)
    taus = dataset["envelope_staleness"].values
    colours = plt.cm.plasma(np.linspace(0, 0.8, dataset.sizes["envelope_relative_step"]))
    for c, colour in zip(dataset["envelope_relative_step"].values, colours, strict=True):
        ax.errorbar(taus, variance.sel(envelope_relative_step=c).values,
                    yerr=Z95 * error.sel(envelope_relative_step=c).values, fmt="o-",
                    color=colour, capsize=3, label=f"c = h/s² = {c:g}")
        ax.plot(taus, exact.sel(envelope_relative_step=c).values, "--", color=colour,
                linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("staleness τ")
    ax.set_ylabel(f"variance of φ̂ at L = {int(final['envelope_iterations'])}")
    ax.set_title("(c) Theorem 4: flat in τ at fixed h, L (dashed: exact)", fontsize=9)
    ax.legend(fontsize=8)


def figure_bounds(dataset: xr.Dataset, path: Path) -> Path:
    config = config_of(dataset)
    function = config["test_function"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6), constrained_layout=True)
    _rate_panel(axes[0], dataset, function, config)
    _envelope_panel(axes[1], dataset, function, config)
    _variance_panel(axes[2], dataset, function, config)
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path
