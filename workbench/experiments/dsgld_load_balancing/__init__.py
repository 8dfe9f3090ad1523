"""Experiment ``dsgld-load-balancing``: seed 004 §3.2.2 and Figure 7's setting, on the
Gaussian mean.

20 workers, half of them D ∈ {1, 5, 10} times slower; one chain per worker, random permutation
rounds, a hop cost of one fast update. Without balancing every worker runs trajectories of τ̄
and the fast workers' chains wait for the slow ones (block-by-the-slowest). With adaptive
balancing the master measures the response delays and sets τ_s = q_s τ̄ S with q_s ∝ 1/d_s, so
that the slow workers run ``slow_trajectory_length`` (seed 004: 10 on the slow workers, 10·D on
the fast ones) and every visit takes about as long. Both plans have the same mean τ̄, both
estimators are corrected (q_s = τ_s/Σ τ), and both arms use the same random numbers. The chains
start ``initial_offset`` posterior standard deviations from μ; the time to bring
E‖θ - μ‖² down to ``target_error``·d·s² is compared with the exact oracle's.

Seed 004 ran this on LDA, which has no exact oracle; the Gaussian mean keeps the system
(workers, delays, plans) and makes every curve checkable. N = 4,000 (20 shards of 200),
minibatch 50 and ε = 2.5·10⁻⁷ make a chain relax in about 2,000 updates while minibatch noise
adds only a few percent to the error floor.
"""

from __future__ import annotations

from dataclasses import replace

from simulators import validation
from workbench.core.parameters import Parameter
from workbench.core.validators import (
    at_least_one,
    at_least_two,
    finite,
    non_negative_int,
    positive,
)
from workbench.run.experiment import Experiment
from workbench.systems.distributed import WELLING_TEH_STEP_SIZE
from workbench.systems.distributed.data import CHECK_PARAMETERS, data_parameters
from workbench.systems.distributed.traveling import run_parameters, system_parameters

# the per-point run, checks and figures (engine, sympy, matplotlib, xarray) are imported
# by the methods that use them: describing and configuring the experiment (`workbench
# show`, argument errors) stays light (issue 15)


def _slowdowns(name, value):
    grid = [validation.positive(f"{name}[{i}]", v) for i, v in enumerate(value)]
    for i, v in enumerate(grid):
        if v < 1:
            raise validation.InvalidParameter(f"{name}[{i}]", v, "must be >= 1 (a slowdown)")
    if len(set(grid)) != len(grid):
        raise validation.InvalidParameter(name, value, "must not repeat a value")
    return sorted(grid)


PARAMETERS = (
    *data_parameters([200] * 20, "iid"),
    Parameter("slowdown", [1.0, 5.0, 10.0], "D: the slow workers take D times longer per update",
              _slowdowns),
    Parameter("n_slow_workers", 10, "how many workers are slow (the last ones)",
              non_negative_int),
    Parameter("slow_trajectory_length", 10,
              "τ on a slow worker under balancing; τ̄ follows (seed 004: 10)", at_least_one),
    *system_parameters("permutation"),
    replace(WELLING_TEH_STEP_SIZE, default=2.5e-7),
    *run_parameters(burn_in=15_000, n_iterations=15_000, n_replicates=6, batch_size=50,
                    thin=10),
    Parameter("initial_offset", 20.0,
              "start this many posterior standard deviations from μ in every coordinate",
              finite),
    Parameter("target_error", 2.0, "accuracy to reach: E‖θ - μ‖² = target·d·s²", positive),
    Parameter("n_time_points", 400, "time grid for the pooled error curves", at_least_two),
    Parameter("gantt_rounds", 4, "rounds shown in the Gantt chart", at_least_one),
    *CHECK_PARAMETERS,
)


def _check(config: dict) -> dict:
    if config["n_slow_workers"] > len(config["shard_sizes"]):
        raise validation.InvalidParameter("n_slow_workers", config["n_slow_workers"],
                                          "must not exceed the number of workers")
    return config


class DsgldLoadBalancing(Experiment):
    parameters = PARAMETERS
    quick = {"burn_in": 10_000, "n_iterations": 5_000, "n_replicates": 3}
    sweep_dims = ("slowdown",)

    def configure(self, overrides=None, quick=False):
        return _check(super().configure(overrides, quick))

    def points(self, config):
        return [{"slowdown": d} for d in config["slowdown"]]

    def run_point(self, config, point, seed):
        from workbench.experiments.dsgld_load_balancing.point import run_point

        return run_point(self.name, config, point, seed)

    def checks(self, dataset):
        from workbench.experiments.dsgld_load_balancing.checks import load_balancing_checks

        return load_balancing_checks(dataset)

    def figures(self, dataset, out_dir):
        from workbench.experiments.dsgld_load_balancing.figures import figure_error, figure_gantt

        return [figure_error(dataset, out_dir / f"{self.name}.png"),
                figure_gantt(dataset, out_dir / f"{self.name}-gantt.png")]
