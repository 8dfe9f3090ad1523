"""Figures of ``dsgld-load-balancing``: error against simulated time (seed 004 Figure 7's
comparison) and the workers' first rounds as a Gantt chart (seed 004 Figure 1)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from workbench.store.netcdf import config_of
from workbench.studies.time_to_target import exact_curve, time_grid, times_to_target, unit_curves
from workbench.systems.distributed import plots

_STYLES = {"fixed": "--", "adaptive": "-"}


def figures(dataset: xr.Dataset, path) -> list:
    """Both figures: the error against simulated time at ``path``, the Gantt chart beside it."""
    return [figure_error(dataset, path),
            figure_gantt(dataset, path.with_name(f"{path.stem}-gantt{path.suffix}"))]


def figure_error(dataset: xr.Dataset, path):
    config = config_of(dataset)
    slowdowns = dataset["slowdown"].values.tolist()
    fig, axes = plots.new(1, len(slowdowns), 4.4 * len(slowdowns), 3.8)
    for ax, slowdown in zip(axes[0], slowdowns, strict=True):
        crossings = times_to_target(dataset, {"slowdown": slowdown}, "balancing", config)
        for balancing in dataset["balancing"].values.tolist():
            at = dataset.sel(slowdown=slowdown, balancing=balancing)
            grid = time_grid(at, config["n_time_points"])
            units = unit_curves(dataset, at, grid)
            mean = units.mean(axis=0)
            band = 1.96 * units.std(axis=0, ddof=1) / np.sqrt(units.shape[0])
            line, = ax.plot(grid, mean, _STYLES[balancing], label=f"{balancing} τ")
            ax.fill_between(grid, np.maximum(mean - band, 1e-3), mean + band,
                            color=line.get_color(), alpha=0.2)
            ax.plot(grid, exact_curve(dataset, at, grid), ":", linewidth=1,
                    color=line.get_color())
            ax.axvline(crossings["measured"][balancing], color=line.get_color(),
                       linewidth=0.8, alpha=0.6)
        ax.axhline(config["target_error"], color="k", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("simulated time")
        ax.set_ylabel("E‖θ - μ‖² / (d s²)")
        ax.set_title(f"half the workers {slowdown:g}× slower", fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle("Error of the chains' current state against simulated time (dotted: exact; "
                 "black: target; vertical: time to reach it)", fontsize=9)
    return plots.finish(fig, path)


def figure_gantt(dataset: xr.Dataset, path):
    """Workers (rows) over the first rounds, coloured by chain; white is idle or blocked."""
    slowdown = max(dataset["slowdown"].values.tolist())
    arms = dataset["balancing"].values.tolist()
    fig, axes = plots.new(len(arms), 1, 9.0, 2.6 * len(arms))
    n_chains = dataset.sizes["chain"]
    colours = plots.shard_colours(n_chains)
    end = float(np.nanmax(dataset["gantt_end"].sel(slowdown=slowdown).values))
    for ax, balancing in zip(axes[:, 0], arms, strict=True):
        at = dataset.sel(slowdown=slowdown, balancing=balancing)
        for chain, worker, begin, finish in zip(at["gantt_chain"].values,
                                                at["gantt_worker"].values,
                                                at["gantt_begin"].values, at["gantt_end"].values,
                                                strict=True):
            ax.barh(int(worker), finish - begin, left=begin, height=0.8,
                    color=colours[int(chain)], edgecolor="k", linewidth=0.3)
        ax.set_xlim(0, end)
        ax.set_ylabel("worker")
        ax.set_title(f"{balancing} trajectory lengths, half the workers {slowdown:g}× slower",
                     fontsize=9)
    axes[-1, 0].set_xlabel("simulated time")
    return plots.finish(fig, path)
