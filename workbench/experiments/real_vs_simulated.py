"""Figure of ``real-vs-simulated`` (seed 001 Appendix A): real and calibrated simulated time and
iteration speed-ups against P beside min(P, P*), and the two staleness histograms for every P."""

from __future__ import annotations

import numpy as np
import xarray as xr

from workbench.studies.realtime_judgements import calibrated_bend, speedup_errors
from workbench.systems.asynchronous.figures import finish, new

DIM = "workers"


def figure_real_vs_simulated(dataset: xr.Dataset, path):
    workers = dataset[DIM].values
    fig, axes = new(1, 2 + workers.size, 5 * (2 + workers.size), 4.2)
    ax = axes[0, 0]
    for kind, style in (("real", "o"), ("simulated", "s--")):
        speedup = dataset[f"{kind}_time_speedup"].values
        errors = speedup * speedup_errors(dataset, kind, DIM)
        ax.errorbar(workers, speedup, yerr=1.96 * errors, fmt=style, label=kind, capsize=3)
    bend = calibrated_bend(dataset, DIM)
    ax.plot(workers, np.minimum(workers, bend), "k:", label=f"min(P, P*), P* = {bend:.2g}")
    ax.plot(workers, workers, color="0.7", linewidth=0.8, label="P")
    ax.set_xlabel("workers P")
    ax.set_title("time speed-up T_P", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    for kind, style in (("real", "o"), ("simulated", "s--")):
        ax.plot(workers, dataset[f"{kind}_iteration_speedup"].values, style, label=kind)
    ax.set_xlabel("workers P")
    ax.set_title("iteration speed-up (updates per worker iteration)", fontsize=9)
    ax.legend(fontsize=7)
    staleness = dataset["staleness"].values
    for k, p in enumerate(workers):
        ax = axes[0, 2 + k]
        at = dataset.sel({DIM: p})
        for kind, style in (("real", {"alpha": 0.5}), ("simulated", {"histtype": "step"})):
            counts = at[f"{kind}_staleness_count"].values
            ax.hist(staleness, bins=np.arange(staleness.size + 1) - 0.5, weights=counts
                    / max(counts.sum(), 1), label=kind, **style)
        ax.set_xlabel("staleness")
        ax.set_title(f"P = {p}: χ² = {float(at['staleness_chi2']):.1f} "
                     f"(dof {int(at['staleness_chi2_dof'])}), "
                     f"p = {float(at['staleness_p_value']):.2f}", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("Real parameter server against the simulator calibrated on it", fontsize=10)
    return finish(fig, path)
