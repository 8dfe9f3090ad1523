"""Experiment ``downpour-period``: seed 003 Algorithm 1 and its MSE bound C₁(E₁ + E₂ + E₃).

P workers run SGLD locally and push their accumulated moves to the master every π local
steps (:mod:`simulators.downpour`); the master's versions are the samples. On the Gaussian mean
(:mod:`..protocols.run`) every point (π, P) of the grid is judged against its exact oracle, and
the growth of the MSE with π(P − 1), the staleness bound in local steps, against E₃ =
π²(P − 1)²(Σε²)²/S_L² (:mod:`.checks`). With P = 1 there is no staleness, E₃ = 0, and the bound
is the standard B₀ = C(E₁ + E₂).

The logistic-regression half (:mod:`.logistic`) runs the same systems with SGLD on Bayesian
logistic regression (a9a-shaped data or a LIBSVM pair): the MSE of the held-out log-loss
estimate φ̂_L against a reference posterior (HMC, :mod:`workbench.reference`) whose own Monte
Carlo error enters every comparison, and the excess over the synchronous run at the same π
checked for growth in π(P − 1) as E₃ says (:mod:`.checks`).
"""

from __future__ import annotations

from dataclasses import replace

from workbench.core.parameters import Parameter
from workbench.core.validators import positive
from workbench.experiments.downpour_period.parameters import LOGISTIC_RUN_PARAMETERS
from workbench.run.experiment import Experiment
from workbench.run.parameters import RATE_MARGIN
from workbench.systems.asynchronous.run import at_point, combine_grid
from workbench.systems.asynchronous.system import WORKERS
from workbench.systems.protocols.run import PERIOD, RUN_PARAMETERS, run_protocol

# the per-point run, checks and figures (engine, sympy, matplotlib, xarray) are imported
# by the methods that use them: describing and configuring the experiment (`workbench
# show`, argument errors) stays light (issue 15)

PARAMETERS = (
    PERIOD,
    replace(WORKERS, default=[1, 2, 4], help="worker counts P (1 is the synchronous baseline)"),
    *RUN_PARAMETERS,
    *LOGISTIC_RUN_PARAMETERS,
    Parameter("envelope_margin", 0.1, "E₃ envelope: held-out MSE at most this fraction above",
              positive),
    replace(RATE_MARGIN, default=0.1,
            help="excess MSE against π(P − 1): slope at most this above 2"),
)


class DownpourPeriod(Experiment):
    parameters = PARAMETERS
    quick = {"iterations": 600, "n_replicates": 300, "period": [1, 2, 4, 8],
             "workers": [1, 2, 4], "n_train": 300, "n_test": 200, "n_test_points": 100,
             "logistic_step_size": 2e-3, "logistic_iterations": 200,
             "logistic_replicates": 40, "reference_chains": 4, "reference_draws": 400,
             "reference_warmup": 200}
    sweep_dims = ("period", "workers")

    def points(self, config):
        return [{"period": p, "workers": w} for p in config["period"]
                for w in config["workers"]]

    def work(self, config, point):
        return point["period"] * (config["iterations"] * config["n_replicates"]
                                  + config["logistic_iterations"]
                                  * config["logistic_replicates"])

    def run_point(self, config, point, seed):
        from workbench.experiments.downpour_period.logistic import run_logistic

        run = run_protocol(self.name, config, point, seed, "downpour", point["workers"],
                           point["period"])
        run = run.merge(run_logistic(self.name, config, point, seed, point["workers"],
                                     point["period"]))
        return at_point(run, point, self.sweep_dims)

    def combine(self, config, datasets):
        return combine_grid(datasets, {"period": len(config["period"]),
                                       "workers": len(config["workers"])})

    def checks(self, dataset):
        from workbench.experiments.downpour_period.checks import downpour_period_checks

        return downpour_period_checks(dataset)

    def figures(self, dataset, out_dir):
        from workbench.experiments.downpour_period.figures import figure_period

        return [figure_period(dataset, out_dir / f"{self.name}.png")]
