"""Experiment ``stale-nn-workers``: seed 001 §5.2, Figure 3 — test loss against workers.

Stale SGHMC on the digits networks (:mod:`..asynchronous.models`: the MLP and the LeNet-style
CNN; the paper's LeNet on MNIST) in the single-server asynchronous system with P = 1, 2, 4, 6,
9 workers. Every worker computes the same number of gradients (``iterations_per_worker``), so
P workers apply P times as many updates in about the same wall-clock time, each staler
(τ̄ ≈ P − 1). The held-out cross-entropy φ̂_L is drawn against iterations per worker, averaged
over replicates with intervals. Check (:mod:`.checks`): at the common per-worker budget the
loss falls with P until staleness costs more accuracy than the extra samples win; the verdicts
say where.
"""

from __future__ import annotations

from dataclasses import replace

from simulators import validation
from workbench.core.parameters import Parameter
from workbench.core.validators import at_least_one
from workbench.run.experiment import Experiment
from workbench.run.parameters import ORDERING_MARGIN
from workbench.systems.asynchronous.models import NETWORK_PARAMETERS, NETWORKS, network_model
from workbench.systems.asynchronous.run import (
    at_point,
    check_sizes,
    held_out_run,
    run_parameters,
)
from workbench.systems.asynchronous.summaries import held_out_summary
from workbench.systems.asynchronous.system import SYSTEM_PARAMETERS, WORKERS

# the checks and figures (sympy, scipy.stats, matplotlib) are imported by the methods that
# use them, and the shared run code imports the engine where a point runs: describing and
# configuring the experiment (`workbench show`, argument errors) stays light (issue 15)


def network_list(name, value):
    chosen = [validation.one_of(f"{name}[{i}]", v, NETWORKS) for i, v in enumerate(value)]
    if len(set(chosen)) != len(chosen):
        raise validation.InvalidParameter(name, value, "must not repeat a network")
    return chosen


PARAMETERS = (
    Parameter("networks", list(NETWORKS), "networks to train: mlp, cnn", network_list),
    *NETWORK_PARAMETERS,
    *SYSTEM_PARAMETERS,
    replace(WORKERS, default=[1, 2, 4, 6, 9], help="worker counts P (seed 001 Figure 3: 1-9)"),
    Parameter("iterations_per_worker", 300, "gradients each worker computes (L = P × this)",
              at_least_one),
    *run_parameters(
        sampler={"default": "sghmc-euler"}, step_size={"default": 0.001},
        friction={"default": 10.0, "help": "SGHMC friction D (momentum kept per step: 1 − Dh)"},
        batch_size={"default": 20}, n_replicates={"default": 16}, n_evaluations={"default": 50}),
    replace(ORDERING_MARGIN,
            help="loss decrease between consecutive P: shown above −this (absolute, nats)"),
)


class StaleNnWorkers(Experiment):
    parameters = PARAMETERS
    quick = {"iterations_per_worker": 50, "n_replicates": 4, "n_evaluations": 25,
             "n_checkpoints": 10, "n_test_points": 100}
    sweep_dims = ("network", "workers")

    def points(self, config):
        check_sizes(config, config["iterations_per_worker"], "iterations_per_worker")
        return [{"network": n, "workers": p} for n in config["networks"]
                for p in config["workers"]]

    def work(self, config, point):
        return config["iterations_per_worker"] * point["workers"] * config["n_replicates"]

    def run_point(self, config, point, seed):
        model = network_model(self.name, config, seed, point["network"])
        run = held_out_run(self.name, config, point, seed, model, n_workers=point["workers"],
                           n_servers=1,
                           n_updates=config["iterations_per_worker"] * point["workers"])
        run = run.merge(held_out_summary(run["estimate"], config["confidence"]))
        return at_point(run, point, self.sweep_dims)

    def combine(self, config, datasets):
        import xarray as xr

        size = len(config["workers"])
        per_network = [xr.concat(datasets[k:k + size], dim="workers", data_vars="minimal",
                                 coords="minimal", compat="equals", join="exact")
                       for k in range(0, len(datasets), size)]
        return xr.concat(per_network, dim="network", data_vars="minimal", coords="minimal",
                         compat="equals", join="exact")

    def checks(self, dataset):
        from workbench.experiments.stale_nn_workers.checks import nn_workers_checks

        return nn_workers_checks(dataset)

    def figures(self, dataset, out_dir):
        from workbench.experiments.stale_nn_workers.figures import figure_workers

        return [figure_workers(dataset, out_dir / f"{self.name}.png")]
