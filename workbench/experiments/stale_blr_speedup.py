"""Figure of ``stale-blr-speedup`` in the style of seed 001 Figure 2: the variance of the
held-out loss against iterations per worker and against simulated time, and the iteration and
time speed-ups against workers beside the linear and the latency model's predictions."""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds.verdict import z_for_family
from workbench.store.netcdf import config_of
from workbench.systems.asynchronous.figures import bands, finish, new
from workbench.systems.asynchronous.speedup import FAMILY_SIZE, speedup_verdicts
from workbench.systems.asynchronous.system import predicted_time_speedup, saturation_workers


def figure_speedup(dataset: xr.Dataset, path):
    config = config_of(dataset)
    loss = dataset.sel(test_function="log_loss")
    workers = dataset["workers"].values
    labels = [f"{p} worker{'s' if p > 1 else ''}" for p in workers]
    fig, axes = new(1, 3, 14.5, 4.2)
    curves = [loss[n].values for n in ("variance", "variance_lower", "variance_upper")]
    for ax, axis, name in ((axes[0, 0], "iterations_per_worker", "iterations per worker"),
                           (axes[0, 1], "time", "simulated wall-clock time")):
        bands(ax, loss[axis].values, *curves, labels)
        ax.set_xlabel(name)
        ax.set_ylabel("variance of the test loss φ̂_L")
    [iteration_verdict, *_] = speedup_verdicts(
        "speed-up", workers, *(loss[name].values for name in (
            "iterations_per_worker", "variance", "variance_se", "time")),
        z_for_family(config["false_failure_rate"], FAMILY_SIZE), bend=saturation_workers(config))
    iteration = iteration_verdict.evidence
    ax = axes[0, 2]
    ax.plot(workers, workers, "k:", label="linear")
    fine = np.linspace(1, workers.max(), 200)
    ax.plot(fine, predicted_time_speedup(config, fine), "k--", linewidth=0.9,
            label="latency model min(P, P*)")
    if "iteration_speedup" in iteration:
        errors = np.asarray(iteration["iteration_speedup_log_se"])
        speedups = np.asarray(iteration["iteration_speedup"])
        ax.errorbar(workers, speedups, yerr=1.96 * errors * speedups, marker="o",
                    label="iteration speed-up")
        ax.errorbar(workers, iteration["time_speedup"],
                    yerr=1.96 * errors * np.asarray(iteration["time_speedup"]), marker="s",
                    label="time speed-up")
    ax.set_xlabel("workers P")
    ax.set_ylabel("speed-up")
    ax.legend(fontsize=7)
    fig.suptitle("Stale SGLD, Bayesian logistic regression (seed 001 Figure 2)", fontsize=10)
    return finish(fig, path)
