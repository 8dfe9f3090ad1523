"""Experiment ``stale-blr-speedup``: seed 001 §5.1, Figure 2 — the variance speed-up on a9a.

Bayesian logistic regression (a9a-shaped data by default, ``--set data=PATH`` for a LIBSVM
pair) sampled by stale SGLD in the single-server asynchronous system with P = 1, 2, 4, 6, 9
workers (simulated latencies, server update time and network delay as parameters). Every P
runs the same number L of applied updates; the test function is the logistic loss on held-out
data, and its variance over replicates is drawn against iterations per worker and against
simulated wall-clock time. Checks (:mod:`.checks`): the iteration speed-up is linear in P
(each S_P against P, and the fitted slope against Corollary 5's 1), the time speed-up bends
where the latency model predicts, and the variance at the common L is free of τ ≈ P
(Theorem 4).
"""

from __future__ import annotations

from dataclasses import replace

from simulators import validation
from workbench.run.experiment import Experiment
from workbench.run.parameters import (
    INVARIANCE_MARGIN,
    N_UPDATES,
    SLOPE_MARGIN,
    SPEEDUP_MARGIN,
)
from workbench.systems.asynchronous.models import LOGISTIC_PARAMETERS, logistic_model
from workbench.systems.asynchronous.run import (
    at_point,
    check_sizes,
    held_out_run,
    run_parameters,
)
from workbench.systems.asynchronous.speedup import TIME_BEND_MARGIN
from workbench.systems.asynchronous.summaries import held_out_summary
from workbench.systems.asynchronous.system import SYSTEM_PARAMETERS, WORKERS

# the checks and figures (sympy, scipy.stats, matplotlib) are imported by the methods that
# use them, and the shared run code imports the engine where a point runs: describing and
# configuring the experiment (`workbench show`, argument errors) stays light (issue 15)


def at_least_ten(name, value):
    return validation.integer(name, value, minimum=10)


PARAMETERS = (
    *LOGISTIC_PARAMETERS,
    *SYSTEM_PARAMETERS,
    replace(WORKERS, default=[1, 2, 4, 6, 9], help="worker counts P (seed 001 Figure 2: 1-9)"),
    replace(N_UPDATES, default=20_000,
            help="applied updates L of every run (seed 001's code: 20,000)"),
    *run_parameters(
        step_size={"default": 1.5e-6},
        n_replicates={"default": 200, "help": "independent runs R (seed 001: 10; at least 10)",
                      "validate": at_least_ten}),
    replace(SPEEDUP_MARGIN, default=0.1,
            help="iteration speed-up: S_P within this fraction of P"),
    replace(SLOPE_MARGIN, default=0.1, help="speed-up slope: within this of 1 (log-log units)"),
    TIME_BEND_MARGIN,
    replace(INVARIANCE_MARGIN, default=0.25,
            help="Theorem 4: variances at the common L within this ratio of each other"),
)


class StaleBlrSpeedup(Experiment):
    parameters = PARAMETERS
    quick = {"n_train": 8000, "n_test": 2000, "n_test_points": 300, "n_updates": 3000,
             "n_replicates": 24, "n_evaluations": 150, "step_size": 6e-6}
    sweep_dims = ("workers",)

    def points(self, config):
        check_sizes(config, config["n_updates"], "n_updates")
        return [{"workers": p} for p in config["workers"]]

    def work(self, config, point):
        return config["n_updates"] * config["n_replicates"]

    def run_point(self, config, point, seed):
        model = logistic_model(self.name, config, seed)
        run = held_out_run(self.name, config, point, seed, model, n_workers=point["workers"],
                           n_servers=1, n_updates=config["n_updates"])
        run = run.merge(held_out_summary(run["estimate"], config["confidence"]))
        run.attrs["data_source"] = config["data"]
        return at_point(run, point, self.sweep_dims)

    def checks(self, dataset):
        from workbench.experiments.stale_blr_speedup.checks import blr_speedup_checks

        return blr_speedup_checks(dataset)

    def figures(self, dataset, out_dir):
        from workbench.experiments.stale_blr_speedup.figures import figure_speedup

        return [figure_speedup(dataset, out_dir / f"{self.name}.png")]
