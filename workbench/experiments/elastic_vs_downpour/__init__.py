"""Experiment ``elastic-vs-downpour``: the two protocols of seed 003 at one communication
budget.

P workers, communication period π. Downpour (:mod:`simulators.downpour`) runs L pushes: Lπ
local steps in all and 2L messages (push and pull). Elastic (:mod:`simulators.elastic`) runs
Lπ/P local steps on each of the P chains, coupling every π steps: the same Lπ local steps and
the same 2L messages (state and reply). On the Gaussian mean (:mod:`..protocols.run`) every
point is judged against its exact oracle, and so is the difference of the two protocols' MSE
of φ̂(θ) at each π (:mod:`.checks`); the figure shows MSE against messages.
"""

from __future__ import annotations

from dataclasses import replace

from simulators import validation
from workbench.core.validators import at_least_one
from workbench.run.experiment import Experiment
from workbench.systems.asynchronous.run import at_point, combine_grid
from workbench.systems.asynchronous.system import WORKERS
from workbench.systems.protocols.run import (
    COUPLING_STRENGTH,
    PERIOD,
    RUN_PARAMETERS,
    run_protocol,
)

# the checks and figures (sympy, scipy.stats, matplotlib) are imported by the methods that
# use them, and the shared run code imports the engine where a point runs: describing and
# configuring the experiment (`workbench show`, argument errors) stays light (issue 15)

PROTOCOLS = ("downpour", "elastic")


PARAMETERS = (
    PERIOD,
    replace(WORKERS, default=4, help="workers P (chains, for elastic)", validate=at_least_one),
    COUPLING_STRENGTH,
    *RUN_PARAMETERS,
)


def local_steps(config: dict, protocol: str, period: int) -> int:
    """Updates of a run: pushes for downpour, local steps per chain for elastic (docstring)."""
    if protocol == "downpour":
        return config["iterations"]
    steps = config["iterations"] * period // config["workers"]
    if steps < config["n_checkpoints"]:
        raise validation.InvalidParameter(
            "iterations", config["iterations"],
            f"elastic chains get iterations·π/P = {steps} steps at π = {period}, fewer than "
            f"n_checkpoints = {config['n_checkpoints']}")
    return steps


class ElasticVsDownpour(Experiment):
    parameters = PARAMETERS
    quick = {"iterations": 600, "n_replicates": 300}
    sweep_dims = ("protocol", "period")

    def points(self, config):
        for period in config["period"]:
            local_steps(config, "elastic", period)
        return [{"protocol": p, "period": q} for p in PROTOCOLS for q in config["period"]]

    def work(self, config, point):
        return config["iterations"] * point["period"] * config["n_replicates"]

    def run_point(self, config, point, seed):
        protocol, period = point["protocol"], point["period"]
        run_config = {**config, "iterations": local_steps(config, protocol, period)}
        run = run_protocol(self.name, run_config, point, seed, protocol, config["workers"],
                           period, config["coupling_strength"])
        return at_point(run, point, self.sweep_dims)

    def combine(self, config, datasets):
        return combine_grid(datasets, {"protocol": len(PROTOCOLS),
                                       "period": len(config["period"])})

    def checks(self, dataset):
        from workbench.experiments.elastic_vs_downpour.checks import elastic_vs_downpour_checks

        return elastic_vs_downpour_checks(dataset)

    def figures(self, dataset, out_dir):
        from workbench.experiments.elastic_vs_downpour.figures import figure_budget

        return [figure_budget(dataset, out_dir / f"{self.name}.png")]
