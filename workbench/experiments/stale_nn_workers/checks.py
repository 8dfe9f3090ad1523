"""Checks of ``stale-nn-workers`` (seed 001 §5.2, Figure 3).

At the common per-worker budget B, P workers have applied P·B updates: more samples, each
staler. Seed 001's Figure 3 shows the test loss falling with P; staleness must eventually cost
accuracy (the stale dynamics lose stability as τ grows, docs/math.md §2). For each network and each
consecutive pair (P_k, P_{k+1}) an ``ordering`` verdict asks whether the mean held-out
cross-entropy falls, gap = loss(P_k) − loss(P_{k+1}) with the two runs' independent errors,
shown above −``ordering_margin``. The detail of every verdict names where the fall stops: the
first pair whose fall is not shown (``violated``: the loss rises; ``inconclusive``: cannot
tell), or "not within the grid".
"""

from __future__ import annotations

import xarray as xr

from bounds.checks import ordering_sequence
from bounds.verdict import Verdict, one_sided_z_for_family
from workbench.store.netcdf import config_of


def nn_workers_checks(dataset: xr.Dataset) -> list[Verdict]:
    config = config_of(dataset)
    workers = dataset["workers"].values.tolist()
    networks = dataset["network"].values.tolist()
    z = one_sided_z_for_family(config["false_failure_rate"],
                               len(networks) * (len(workers) - 1))
    final = dataset.sel(test_function="log_loss").isel(checkpoint=-1)
    budget = config["iterations_per_worker"]
    verdicts = []
    for network in networks:
        at = final.sel(network=network)
        loss, error = at["mean"].values, at["mean_se"].values

        def where(stop, pairs, network=network, at=at):
            if stop is None:
                return (f"{network}: the loss at {budget} iterations per worker falls over "
                        f"the whole grid (P = {workers[0]}..{workers[-1]}).")
            return (f"{network}: the loss falls with P up to P = {workers[stop]}; from "
                    f"P = {workers[stop]} to {workers[stop + 1]} the fall is "
                    f"{pairs[stop].verdict} (staleness τ̄ = "
                    f"{float(at['mean_staleness'].values[stop + 1]):.2g}).")

        verdicts += ordering_sequence(
            [f"{network}/loss-falls/P={workers[k]}->{workers[k + 1]}"
             for k in range(len(workers) - 1)], workers, loss, error, z,
            margin=config["ordering_margin"], n_replicates=config["n_replicates"],
            evidence=[{"loss": [float(loss[k]), float(loss[k + 1])],
                       "budget_per_worker": budget} for k in range(len(workers) - 1)],
            where=where)
    return verdicts
