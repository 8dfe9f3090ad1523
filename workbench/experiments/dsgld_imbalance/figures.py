"""Figure of ``dsgld-imbalance`` in the style of seed 004 Figure 2(a)-(b)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from workbench.experiments.distributed import plots
from workbench.experiments.distributed.windows import pooled


def figure_bias(dataset: xr.Dataset, path):
    """Each arm: the local targets p(θ) p(X_s|θ)^(N/N_s) of the shards (what the uncorrected
    estimator pulls towards on shard s; dotted for small shards, dash-dot for large), the
    posterior (red), the samples, their empirical ellipse (blue dashed) and the exact
    oracle's (green)."""
    arms = dataset["correction"].values.tolist()
    fig, axes = plots.new(1, len(arms), 5.2 * len(arms), 5.0)
    mu = dataset["posterior_mean"].values
    s2 = float(dataset["posterior_variance"])
    for ax, arm in zip(axes[0], arms, strict=True):
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
    fig.suptitle("2-sd ellipses. Black: each shard's p(θ)p(X_s|θ)^(N/N_s) (dotted: small "
                 "shards, dash-dot: large shards)", fontsize=9)
    return plots.finish(fig, path)
