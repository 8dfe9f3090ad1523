"""Figure of ``downpour-period`` (seed 003, Li et al. 2019, Algorithm 1 and its bound
C₁(E₁ + E₂ + E₃)). Gaussian mean (top): the MSE of φ̂_L(θ) against π for each P (measured with
95 % error bars, exact dashed), and the MSE of φ̂_L(θ²) against π(P − 1) beside the envelope its
``envelope`` check fits (:mod:`workbench.studies.protocol_judgements`). Logistic regression
(bottom): the MSE of φ̂_L(held-out log-loss) against π for each P, its error bars including the
reference posterior's error, and the excess over the synchronous run and its staleness part
(φ̂_P − φ̂_1)² against π(P − 1) beside a line of slope 2 (E₃ ∝ π²(P − 1)²), as its ``rate``
checks read them (:mod:`workbench.studies.paired_protocol_judgements`)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from workbench import experiments
from workbench.studies.excess import x_grid
from workbench.studies.paired_protocol_judgements import deviation, excess, mse_error
from workbench.studies.protocol_judgements import envelope_fit
from workbench.systems.distributed.plots import finish, mse_with_exact, new


def _part(experiment, dataset: xr.Dataset, index: int, kind: str):
    """(the part's slice, its context, the options of its first check of ``kind``)."""
    part = experiment.study.parts[index]
    own = experiment.part_dataset(dataset, part)
    options = next(c.options for c in part.study.checks if c.kind == kind)
    return own, experiment.experiments[part.name].context(own), options


def figure_period(dataset: xr.Dataset, path):
    fig, axes = new(2, 2, 11, 8.4)
    final = dataset.isel(checkpoint=-1)
    periods = dataset["period"].values
    ax = axes[0, 0]
    theta = final.sel(test_function="theta")
    for workers in dataset["workers"].values:
        at = theta.sel(workers=workers)
        mse_with_exact(ax, periods, at, f"P = {workers}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("communication period π")
    ax.set_title("Gaussian mean: MSE of φ̂_L(θ) (exact dashed)", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    experiment = experiments.for_dataset(dataset)
    gaussian, ctx, options = _part(experiment, dataset, 0, "envelope")
    fit = envelope_fit(gaussian, ctx, options)
    x = x_grid(gaussian, ctx.dims, options["against"], ctx.config).broadcast_like(fit.observed)
    ax.errorbar(x.values.ravel(), fit.observed.values.ravel(),
                yerr=1.96 * fit.errors.values.ravel(), fmt="o", label="measured")
    if np.all(np.isfinite(fit.envelope.coefficients)):
        order = np.argsort(x.values.ravel())
        curve = fit.envelope(fit.values).broadcast_like(fit.observed).values.ravel()
        ax.plot(x.values.ravel()[order], curve[order], "k--", label="fitted envelope")
    ax.set_xlabel("π(P − 1)")
    ax.set_yscale("log")
    ax.set_title("Gaussian mean: MSE of φ̂_L(θ²) and the E₃ envelope", fontsize=9)
    ax.legend(fontsize=7)
    logistic_panels(*_part(experiment, dataset, 1, "rate"), axes[1, 0], axes[1, 1])
    fig.suptitle("Downpour SGLD (seed 003 Algorithm 1, bound C₁(E₁+E₂+E₃)): Gaussian mean (top), "
                 "logistic regression against a reference posterior (bottom)", fontsize=10)
    return finish(fig, path)


def logistic_panels(dataset: xr.Dataset, ctx, options: dict, mse_axis, excess_axis):
    """The logistic part's MSE against π and its excess over P = 1 against π(P − 1)
    (``dataset``: its slice, ``options``: its excess ``rate`` check's)."""
    periods = dataset["period"].values
    error = mse_error(dataset)
    for workers in dataset["workers"].values:
        mse_axis.errorbar(periods, dataset["mse"].sel(workers=workers),
                          yerr=1.96 * error.sel(workers=workers), marker="o",
                          label=f"P = {workers}")
    mse_axis.set_xscale("log", base=2)
    mse_axis.set_yscale("log")
    mse_axis.set_xlabel("communication period π")
    mse_axis.set_title("Logistic regression: MSE of φ̂_L(held-out log-loss) against the "
                       "reference", fontsize=9)
    mse_axis.legend(fontsize=7)
    x, samples, target_error = excess(dataset, ctx, options)
    finite = np.all(np.isfinite(samples), axis=0)
    mean = samples[:, finite].mean(axis=1)
    spread = np.hypot(samples[:, finite].std(axis=1, ddof=1) / np.sqrt(finite.sum()),
                      target_error)
    positive = mean > 0
    excess_axis.errorbar(x[positive], mean[positive], yerr=1.96 * spread[positive], fmt="o",
                         label="excess > 0")
    deviations = deviation(dataset, ctx, options)[0][:, finite]
    excess_axis.errorbar(x, deviations.mean(axis=1), fmt="s", mfc="none",
                         yerr=1.96 * deviations.std(axis=1, ddof=1) / np.sqrt(finite.sum()),
                         label="staleness part (φ̂_P − φ̂_1)²")
    if (~positive).any():
        excess_axis.text(0.02, 0.02, f"{int((~positive).sum())} points with excess ≤ 0 "
                         "(not drawn on the log scale)", transform=excess_axis.transAxes,
                         fontsize=7)
    if positive.any():
        anchor = int(np.argmin(np.where(positive, x, np.inf)))
        line = np.sort(x)
        excess_axis.plot(line, mean[anchor] * (line / x[anchor]) ** 2, "k--",
                         linewidth=0.8, label="slope 2 (E₃)")
    excess_axis.set_xscale("log")
    excess_axis.set_yscale("log")
    excess_axis.set_xlabel("π(P − 1)")
    excess_axis.set_title("Logistic regression: excess MSE over P = 1 (same π) and its "
                          "staleness part", fontsize=9)
    excess_axis.legend(fontsize=7)
