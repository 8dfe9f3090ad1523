"""Figure of ``stale-nn-workers`` in the style of seed 001 Figure 3: held-out cross-entropy
against iterations per worker for each worker count (mean over replicates with its interval),
one panel per network, and the loss at the common budget against workers."""

from __future__ import annotations

import xarray as xr

from workbench.systems.asynchronous.figures import bands, finish, new


def figure_workers(dataset: xr.Dataset, path):
    networks = dataset["network"].values.tolist()
    workers = dataset["workers"].values
    labels = [f"{p} worker{'s' if p > 1 else ''}" for p in workers]
    loss = dataset.sel(test_function="log_loss")
    fig, axes = new(1, len(networks) + 1, 5.0 * (len(networks) + 1), 4.2)
    for ax, network in zip(axes[0, :-1], networks, strict=True):
        at = loss.sel(network=network)
        bands(ax, at["iterations_per_worker"].values,
              *(at[name].values for name in ("mean", "mean_lower", "mean_upper")), labels,
              log=False)
        ax.set_xlabel("iterations per worker")
        ax.set_ylabel("test cross-entropy φ̂_L")
        ax.set_title(f"{network.upper()}, stale SGHMC", fontsize=9)
    ax = axes[0, -1]
    final = loss.isel(checkpoint=-1)
    for network in networks:
        at = final.sel(network=network)
        ax.errorbar(workers, at["mean"], yerr=[at["mean"] - at["mean_lower"],
                                               at["mean_upper"] - at["mean"]],
                    marker="o", label=network.upper())
    ax.set_xlabel("workers P")
    ax.set_ylabel("test cross-entropy at the per-worker budget")
    ax.legend(fontsize=7)
    fig.suptitle("Stale SGHMC on digits networks (seed 001 Figure 3)", fontsize=10)
    return finish(fig, path)
