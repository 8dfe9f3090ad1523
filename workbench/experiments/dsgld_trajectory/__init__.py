"""Experiment ``dsgld-trajectory``: seed 004 §3.2.1 and §4.1, Figure 2(c)-(d).

Four workers with 2,000 points each, one chain per worker rotating cyclically, the same
trajectory length τ on every worker, ε = 2·10⁻⁶ (Welling-Teh; h = 10⁻⁶), minibatch 300 (the
seed's value for Figure 2(a)-(b); it does not state one for (c)-(d)). With τ = 10,000 a chain
settles on each shard's own stationary law before it moves, so the samples follow the mixture
of local posteriors; with τ = 200 they stay much nearer the standard SGLD posterior. The sample
distribution's distance to both is measured (2-Wasserstein between moment-matched Gaussians)
and compared with the exact oracle. The window covers two full rotations of the longest
trajectories (burn-in one rotation), so every chain visits every shard equally often.
"""

from __future__ import annotations

from workbench.config import Parameter
from workbench.experiments.base import Experiment
from workbench.experiments.distributed import WELLING_TEH_HELP
from workbench.experiments.distributed.data import CHECK_PARAMETERS, data_parameters
from workbench.experiments.distributed.traveling import run_parameters, system_parameters
from workbench.experiments.dsgld_trajectory.checks import trajectory_checks
from workbench.experiments.dsgld_trajectory.figures import figure_trajectories
from workbench.experiments.dsgld_trajectory.point import run_point
from workbench.experiments.validators import distinct_positive_ints, positive

PARAMETERS = (
    *data_parameters([2000] * 4, "iid"),
    Parameter("trajectory_length", [10_000, 200],
              "τ: updates per visit, the same on every worker (seed 004: 10,000 and 200)",
              distinct_positive_ints),
    *system_parameters("cyclic"),
    Parameter("welling_teh_step_size", 2e-6, WELLING_TEH_HELP + " (seed 004: 2·10⁻⁶)",
              positive),
    *run_parameters(burn_in=40_000, n_iterations=80_000, n_replicates=6, batch_size=300,
                    thin=50),
    *CHECK_PARAMETERS,
)


class DsgldTrajectory(Experiment):
    name = "dsgld-trajectory"
    summary = ("Trajectory length: D-SGLD samples drift from the SGLD posterior to the "
               "mixture of local posteriors as τ grows (seed 004 Fig. 2c-d)")
    source = "seed 004 (Ahn et al. 2014) §3.2.1, §4.1 Figure 2(c)-(d); math.md §4"
    parameters = PARAMETERS
    quick = {"burn_in": 10_000, "n_iterations": 40_000, "n_replicates": 4}
    sweep_dims = ("trajectory_length",)

    def points(self, config):
        return [{"trajectory_length": t} for t in config["trajectory_length"]]

    def run_point(self, config, point, seed):
        return run_point(self.name, config, point, seed)

    def checks(self, dataset):
        return trajectory_checks(dataset)

    def figures(self, dataset, out_dir):
        return [figure_trajectories(dataset, out_dir / f"{self.name}.png")]
