"""Figure of ``elastic-vs-downpour`` (seed 003, Algorithm 1 and Appendix B): MSE of φ̂_L(θ)
against the messages exchanged for each π (measured with 95 % error bars, exact dashed), and the
MSE at the end against π."""

from __future__ import annotations

import xarray as xr

from workbench.systems.distributed.plots import finish, mse_with_exact, new


def figure_budget(dataset: xr.Dataset, path):
    fig, axes = new(1, 2, 11, 4.2)
    theta = dataset.sel(test_function="theta")
    ax = axes[0, 0]
    for protocol, style in (("downpour", "-"), ("elastic", ":")):
        for k, period in enumerate(dataset["period"].values):
            at = theta.sel(protocol=protocol, period=period)
            sent = at["messages"] > 0  # a log axis: the runs before their first message
            ax.plot(at["messages"][sent], at["mse"][sent], style, marker="o", markersize=3,
                    color=f"C{k}", label=f"{protocol}, π = {period}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("messages exchanged")
    ax.set_title("MSE of φ̂(θ) against communication", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    ax = axes[0, 1]
    final = theta.isel(checkpoint=-1)
    periods = dataset["period"].values
    for protocol in dataset["protocol"].values:
        at = final.sel(protocol=protocol)
        mse_with_exact(ax, periods, at, protocol)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("communication period π (same local steps and messages)")
    ax.set_title("MSE of φ̂_L(θ) (exact dashed)", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle("Elastic against downpour SGLD at one communication budget (seed 003)",
                 fontsize=10)
    return finish(fig, path)
