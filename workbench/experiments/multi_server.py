"""Figure of ``multi-server`` in the style of seed 001 Figure 4: the Gaussian mean's variance
and bias against iterations per server (measured bands, exact dashed) and the variance at L
against S beside 1/S; the logistic model's held-out loss and its variance against iterations
for each S."""

from __future__ import annotations

import numpy as np
import xarray as xr

from workbench.systems.asynchronous.figures import bands, finish, new


def figure_servers(dataset: xr.Dataset, path):
    servers = dataset["servers"].values
    labels = [f"{s} server{'s' if s > 1 else ''}" for s in servers]
    fig, axes = new(1, 5, 22, 4.2)
    x = np.broadcast_to(dataset["iterations"].values, (servers.size,
                                                        dataset.sizes["checkpoint"]))
    for ax, name, log in ((axes[0, 0], "variance", True), (axes[0, 1], "bias", False)):
        bands(ax, x, *(dataset[f"{name}{end}"].values for end in ("", "_lower", "_upper")),
              labels, log=log)
        for k in range(servers.size):
            ax.plot(x[k], dataset[f"exact_{name}"].values[k], "k--", linewidth=0.8)
        ax.set_xlabel("iterations per server")
        ax.set_title(f"Gaussian mean: {name} of pooled φ̂_L(θ) (exact dashed)", fontsize=9)
    ax = axes[0, 2]
    final = dataset.isel(checkpoint=-1)
    ax.errorbar(servers, final["variance"], yerr=1.96 * final["variance_se"], marker="o",
                label="measured")
    ax.plot(servers, final["exact_variance"], "k--", label="exact")
    ax.plot(servers, final["exact_variance"].values[0] / servers, "k:", label="1/S")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("servers S")
    ax.set_title("variance at L against servers", fontsize=9)
    ax.legend(fontsize=7)
    loss = dataset.sel(logistic_test_function="log_loss")
    logistic = loss["logistic_servers"].values
    names = [f"{s} server{'s' if s > 1 else ''}" for s in logistic]
    iterations = loss["logistic_iterations"].values
    for ax, name, log in ((axes[0, 3], "mean", False), (axes[0, 4], "variance", True)):
        bands(ax, iterations, *(loss[f"logistic_{name}{end}"].values
                                for end in ("", "_lower", "_upper")), names, log=log)
        ax.set_xlabel("iterations per server")
        ax.set_title(f"logistic regression: {name} of the test loss", fontsize=9)
    fig.suptitle("Multiple servers pooled at test time (seed 001 Figure 4, Theorems 6-7)",
                 fontsize=10)
    return finish(fig, path)
