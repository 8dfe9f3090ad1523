"""Figures of ``stale-gaussian`` (``[study] figure``): seed 001 Figure 1 with the oracle drawn
in, and beside it the bound designs' figure (:mod:`.bound_figures`, Theorems 3 and 4)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from workbench.store.atomic import save_figure  # noqa: E402
from workbench.store.netcdf import config_of  # noqa: E402

_LABELS = {"theta": "θ", "theta_squared": "θ²"}


def _plottable(values) -> np.ndarray:
    """Finite positive values only (log axes; a diverged or unstable point is left out)."""
    values = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(values) & (values > 0) & (values < 1e150), values, np.nan)


def figure_mse(dataset: xr.Dataset, path: Path) -> Path:
    """(a) MSE vs iterations per τ with confidence bands and the exact MSE; (b) final MSE vs
    τ with the exact MSE and the exact split by source of the term staleness moves."""
    function = config_of(dataset)["test_function"]
    data = dataset.sel(test_function=function).sum("component", min_count=1)
    label = _LABELS[function]
    taus = dataset["staleness"].values
    colours = plt.cm.viridis(np.linspace(0, 0.9, taus.size))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for tau, colour in zip(taus, colours, strict=True):
        row = data.sel(staleness=tau)
        iterations = dataset["iterations"].sel(staleness=tau).values
        ax.plot(iterations, _plottable(row["mse"]), color=colour, label=f"τ = {tau}")
        ax.fill_between(iterations, _plottable(row["mse_lower"]), _plottable(row["mse_upper"]),
                        color=colour, alpha=0.2)
        ax.plot(iterations, _plottable(row["exact_mse"]), color=colour, linestyle="--",
                linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("# iterations L")
    ax.set_ylabel(f"MSE of φ̂ for φ = {label}")
    ax.set_title("(a) MSE vs iterations; dashed: exact MSE")
    ax.legend(fontsize=8)

    final = data.isel(checkpoint=-1)
    mse = _plottable(final["mse"])
    bx.errorbar(taus, mse, yerr=[np.abs(mse - _plottable(final["mse_lower"])),
                                 np.abs(_plottable(final["mse_upper"]) - mse)],
                fmt="o-", color="k", capsize=3,
                label=f"Monte Carlo MSE ({config_of(dataset)['confidence']:.0%} CI)")
    bx.plot(taus, _plottable(final["exact_mse"]), "s--", color="tab:red", label="exact MSE")
    # the parts of the term staleness moves: the variance for θ, the squared bias for θ²
    bias_term = function != "theta"
    term = "bias" if bias_term else "variance"
    parts = final[f"exact_{term}_by_source"]
    markers = {"exact_gradients": "x:", "staleness": "v:", "minibatch_noise": "^:",
               "interaction": "d:"}
    for source, style in markers.items():
        part = np.abs(parts.sel(error_source=source).values)
        with np.errstate(over="ignore"):
            part = part**2 if bias_term else part
        bx.plot(taus, _plottable(part), style, linewidth=1,
                label=f"|{source.replace('_', ' ')} part of the exact {term}|"
                      + ("²" if bias_term else ""))
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xlabel("staleness τ")
    bx.set_ylabel(f"MSE of φ̂ at L = L0·τ (φ = {label})")
    bx.set_title("(b) seed 001 predicts a flat line")
    bx.legend(fontsize=8)
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def figures(dataset: xr.Dataset, path: Path) -> list[Path]:
    """Figure 1 at ``path``, and the bound designs' at ``<stem>-bounds.png`` where they ran."""
    from workbench.experiments.stale_gaussian.bound_figures import figure_bounds

    drawn = [figure_mse(dataset, path)]
    if "rate_estimate" in dataset and "envelope_estimate" in dataset:
        drawn.append(figure_bounds(dataset, path.with_name(f"{path.stem}-bounds.png")))
    return drawn
