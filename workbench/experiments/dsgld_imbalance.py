"""Figure of ``dsgld-imbalance`` in the style of seed 004 Figure 2(a)-(b)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from workbench.studies.limit_judgements import richardson_weights, step_ladder
from workbench.systems.distributed import plots
from workbench.systems.distributed.windows import pooled


def figure_bias(dataset: xr.Dataset, path):
    """Each arm: the local targets p(θ) p(X_s|θ)^(N/N_s) of the shards (what the uncorrected
    estimator pulls towards on shard s; dotted for small shards, dash-dot for large), the
    posterior (red), the samples, their empirical ellipse (blue dashed) and the exact
    oracle's (green). Last panel: the step-size ladder of the ``limit`` checks."""
    arms = dataset["correction"].values.tolist()
    fig, axes = plots.new(1, len(arms) + 1, 5.2 * (len(arms) + 1), 5.0)
    mu = dataset["posterior_mean"].values
    s2 = float(dataset["posterior_variance"])
    for ax, arm in zip(axes[0][:-1], arms, strict=True):
        sizes = dataset["shard_size"].values
        for mean, variance, size in zip(dataset["local_posterior_mean"].values,
                                        dataset["local_posterior_variance"].values, sizes,
                                        strict=True):
            plots.ellipse(ax, mean, variance * np.eye(mean.size), edgecolor="k",
                          linestyle=":" if size < np.median(sizes) else "-.", linewidth=0.8)
        samples = dataset["samples"].sel(correction=arm).values
        plots.cloud(ax, samples, "tab:blue", size=1.5, alpha=0.15)
        plots.ellipse(ax, mu, s2 * np.eye(mu.size), edgecolor="tab:red", linewidth=1.6,
                      label="posterior")
        centre, covariance = pooled(dataset, {"correction": arm})
        plots.ellipse(ax, centre, covariance, edgecolor="tab:blue", linestyle="--",
                      linewidth=1.6, label="samples")
        centre, covariance = pooled(dataset, {"correction": arm}, "exact_")
        plots.ellipse(ax, centre, covariance, edgecolor="tab:green", linewidth=1.0,
                      label="exact oracle")
        ax.set_aspect("equal", adjustable="datalim")
        ax.autoscale_view()
        ax.set_title(f"D-SGLD {arm}", fontsize=10)
        ax.legend(fontsize=7, loc="upper right")
    step_ladder_panel(axes[0][-1], dataset, arms)
    fig.suptitle("2-sd ellipses. Black: each shard's p(θ)p(X_s|θ)^(N/N_s) (dotted: small "
                 "shards, dash-dot: large shards)", fontsize=9)
    return plots.finish(fig, path)


def step_ladder_panel(ax, dataset: xr.Dataset, arms) -> None:
    """E|θ - μ|²/(d s²) of each arm's exact oracle at ε/k against the step, with the
    interpolating polynomial the limit checks extrapolate to ε → 0, and the posterior's 1."""
    s2 = float(dataset["posterior_variance"])
    dim = dataset.sizes["component"]
    step = float(dataset["step_size"])
    grid = np.linspace(0.0, 1.0, 50)
    for arm, colour in zip(arms, ("tab:blue", "tab:orange", "tab:green"), strict=False):
        divisors, _, seconds = step_ladder(dataset, {"correction": arm})
        fractions = 1 / np.asarray(divisors, dtype=float)
        values = np.trace(seconds.mean(axis=1), axis1=-2, axis2=-1) / (dim * s2)
        curve = np.polynomial.polynomial.Polynomial.fit(fractions, values, len(values) - 1)
        limit = float(richardson_weights(fractions) @ values)
        ax.plot(fractions * step, values, "o", color=colour, label=f"{arm}: exact oracle")
        ax.plot(grid * step, curve(grid), "--", color=colour, linewidth=1,
                label=f"{arm}: ε → 0 limit {limit:.3g}")
    ax.axhline(1.0, color="tab:red", linewidth=1.2, label="posterior")
    ax.set_xlim(left=0)
    ax.set_xlabel("step h (Chen convention; the run's is the largest)")
    ax.set_ylabel("E|θ - μ|² / (d s²)")
    ax.set_title("Step-size ladder of the limit checks", fontsize=10)
    ax.legend(fontsize=7)
