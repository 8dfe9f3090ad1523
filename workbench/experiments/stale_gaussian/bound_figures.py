"""Figure of ``stale-gaussian``'s bound designs (seed 001 §4): Theorem 3's rate and envelope,
Theorem 4's variance across τ, each from its design's view and checks
(:mod:`workbench.studies.design_judgements`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from workbench import experiments  # noqa: E402
from workbench.stats.estimators import summarize  # noqa: E402
from workbench.store.atomic import save_figure  # noqa: E402
from workbench.studies.design_judgements import (  # noqa: E402
    bound_of,
    envelope_data,
    envelope_fit,
    exact_error,
    grid_values,
    held_out,
    view,
)
from workbench.studies.gaussian_judgements import Context, bound_rate, squared_errors  # noqa: E402

_LABELS = {"theta": "θ", "theta_squared": "θ²"}
Z95 = 1.959964


def _rate_panel(ax, data: xr.Dataset, function: str, ctx: Context, design) -> None:
    rate, _ = bound_rate(*bound_of(ctx, design.checks[0]))
    lengths = data["iterations"].values
    colours = plt.cm.viridis(np.linspace(0, 0.85, data.sizes["staleness"]))
    for tau, colour in zip(data["staleness"].values, colours, strict=True):
        at = data.sel(staleness=tau)
        squared = squared_errors(at, function)
        mse = squared.mean("replicate").values
        error = (squared.std("replicate", ddof=1) / np.sqrt(squared.count("replicate"))).values
        ax.errorbar(lengths, mse, yerr=Z95 * error, fmt="o-", color=colour, capsize=3,
                    label=f"τ = {tau}")
        ax.plot(lengths, exact_error(at, function).values, "--", color=colour, linewidth=1)
        ax.plot(lengths, mse[0] * (lengths / lengths[0]) ** rate, ":", color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("# iterations L (h at Theorem 3's optimum)")
    ax.set_ylabel(f"MSE of φ̂ (φ = {_LABELS[function]})")
    ax.set_title(f"(a) rate: dotted L^({rate:.3g}); dashed exact MSE", fontsize=9)
    ax.legend(fontsize=8)


def _envelope_panel(ax, data: xr.Dataset, function: str, ctx: Context, design) -> None:
    check = next(c for c in design.checks if c.kind == "envelope")
    split = ctx.config[design.parameter("split")]
    envelope = envelope_fit(data, design, ctx, check, function, split)
    observed, errors = envelope_data(data, function)
    if not np.all(np.isfinite(envelope.coefficients)):
        ax.set_title("(b) envelope: too few calibration points to fit")
        return
    upper = envelope(grid_values(data, design, ctx.bounds[check.bound].bound))
    upper, observed, errors = xr.broadcast(upper, observed, errors)
    calibration = (~held_out(data, design, split)).broadcast_like(observed)
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


def _variance_panel(ax, data: xr.Dataset, function: str, ctx: Context) -> None:
    final = data.isel(iterations=-1)
    summary = summarize(final["estimate"], final["posterior_value"],
                        confidence=ctx.config["confidence"]).sel(test_function=function)
    variance = summary["variance"].sum("component")
    error = np.sqrt((summary["variance_se"] ** 2).sum("component"))
    exact = final["exact_variance"].sel(test_function=function).sum("component", min_count=1)
    taus = data["staleness"].values
    colours = plt.cm.plasma(np.linspace(0, 0.8, data.sizes["relative_step"]))
    for c, colour in zip(data["relative_step"].values, colours, strict=True):
        ax.errorbar(taus, variance.sel(relative_step=c).values,
                    yerr=Z95 * error.sel(relative_step=c).values, fmt="o-",
                    color=colour, capsize=3, label=f"c = h/s² = {c:g}")
        ax.plot(taus, exact.sel(relative_step=c).values, "--", color=colour, linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("staleness τ")
    ax.set_ylabel(f"variance of φ̂ at L = {int(final['iterations'])}")
    ax.set_title("(c) Theorem 4: flat in τ at fixed h, L (dashed: exact)", fontsize=9)
    ax.legend(fontsize=8)


def figure_bounds(dataset: xr.Dataset, path: Path) -> Path:
    """(a) the rate design, (b) the envelope grid's fit, (c) its variances across τ."""
    experiment = experiments.for_dataset(dataset)
    ctx = experiment.context(dataset)
    rate, envelope = experiment.study.designs
    function = ctx.config["test_function"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6), constrained_layout=True)
    _rate_panel(axes[0], view(dataset, rate), function, ctx, rate)
    _envelope_panel(axes[1], view(dataset, envelope), function, ctx, envelope)
    _variance_panel(axes[2], view(dataset, envelope), function, ctx)
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path
