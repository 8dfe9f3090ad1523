"""Figure of ``dsgld-trajectory`` in the style of seed 004 Figure 2(c)-(d)."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from workbench.studies.sharded_judgements import distances
from workbench.systems.distributed import plots
from workbench.systems.distributed.windows import pooled


def figure_trajectories(dataset: xr.Dataset, path):
    """One panel per τ: samples, the local components (dotted), the SGLD posterior (red), the
    sample ellipse (blue dashed); last panel: distances to each reference, measured (bars)
    and exact (dots), in posterior sd."""
    lengths = dataset["trajectory_length"].values.tolist()
    fig, axes = plots.new(1, len(lengths) + 1, 4.6 * (len(lengths) + 1), 4.4)
    reference = dataset.sel(reference="sgld_posterior")
    for ax, length in zip(axes[0, :-1], lengths, strict=True):
        for mean, covariance in zip(dataset["local_mean"].values,
                                    dataset["local_covariance"].values, strict=True):
            plots.ellipse(ax, mean, covariance, edgecolor="k", linestyle=":", linewidth=0.9)
        plots.cloud(ax, dataset["samples"].sel(trajectory_length=length).values, "tab:blue",
                    size=1.5, alpha=0.2)
        plots.ellipse(ax, reference["reference_mean"].values,
                      reference["reference_covariance"].values, edgecolor="tab:red",
                      linewidth=1.6, label="SGLD posterior")
        centre, covariance = pooled(dataset, {"trajectory_length": length})
        plots.ellipse(ax, centre, covariance, edgecolor="tab:blue", linestyle="--",
                      linewidth=1.6, label="samples")
        ax.set_aspect("equal", adjustable="datalim")
        ax.autoscale_view()
        ax.set_title(f"τ = {length}", fontsize=10)
        ax.legend(fontsize=7, loc="upper right")
    ax = axes[0, -1]
    sd = math.sqrt(float(dataset["posterior_variance"]))
    names = dataset["reference"].values.tolist()
    width = 0.8 / len(lengths)
    for i, length in enumerate(lengths):
        at = {"trajectory_length": length}
        measured = distances(dataset, at)
        exact = distances(dataset, at, "exact_")
        x = np.arange(len(names)) + (i - (len(lengths) - 1) / 2) * width
        ax.bar(x, [measured[n] / sd for n in names], width, label=f"τ = {length}")
        ax.plot(x, [exact[n] / sd for n in names], "k.", markersize=8)
    ax.set_xticks(np.arange(len(names)), [n.replace("_", " ") for n in names], fontsize=8)
    ax.set_ylabel("W₂ from the samples, in posterior sd")
    ax.set_title("distance to each reference (dots: exact)", fontsize=10)
    ax.legend(fontsize=8)
    fig.suptitle("Dotted: each shard's stationary law p_ε(θ | X_s); the mixture of them is "
                 "what long trajectories sample", fontsize=9)
    return plots.finish(fig, path)
