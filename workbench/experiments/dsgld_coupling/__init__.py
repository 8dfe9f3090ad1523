"""Experiment ``dsgld-coupling``: chain coupling, seed 004 §3.2.3 (Eq. 6).

20 workers with IID shards of 1,000 points, one chain per worker, random-permutation rounds with
trajectories of 10. Chains are coupled in groups of R (the remainder forms a smaller group, so
e.g. R = 7 gives seed 004's hybrid 7, 7, 6): every update, each member steps from the group's
common state on its own worker's minibatch, the group averages the new states and adds the
noise correction N(0, ((R - 1)/R) ε). Measured: the gradient estimate's error at the posterior
mean, which the averaging over R shards should divide by R (Cov/n → Cov/(Rn)); and whether the
coupled chains still sample the posterior, against the exact oracle and the posterior itself.
``noise_correction = false`` reproduces seed 004's LDA practice (no extra noise), which narrows
the samples.

Scaling: N = 20,000, minibatch 100 and ε = 5·10⁻⁸ keep the minibatch-noise inflation of SGLD at
about 5% for R = 1, so that coupling's effect on the gradient is measured directly and the
posterior comparison is not dominated by it; a chain relaxes in about 1/(hN) = 2,000 updates.
"""

from __future__ import annotations

from dataclasses import replace

from workbench.core.parameters import Parameter
from workbench.core.validators import at_least_two, distinct_positive_ints, non_negative
from workbench.run.experiment import Experiment
from workbench.systems.distributed import WELLING_TEH_STEP_SIZE
from workbench.systems.distributed.data import CHECK_PARAMETERS, data_parameters
from workbench.systems.distributed.traveling import (
    TRAJECTORY_LENGTH,
    run_parameters,
    system_parameters,
)

# the per-point run, checks and figures (engine, sympy, matplotlib, xarray) are imported
# by the methods that use them: describing and configuring the experiment (`workbench
# show`, argument errors) stays light (issue 15)

PARAMETERS = (
    *data_parameters([1000] * 20, "iid"),
    Parameter("group_size", [1, 2, 4, 5, 10, 20],
              "R: chains per coupled group (remainder in a smaller group: hybrid groups)",
              distinct_positive_ints),
    replace(TRAJECTORY_LENGTH, default=10),
    Parameter("noise_correction", True,
              "add N(0, ((R - 1)/R) ε) after averaging (seed 004 Eq. 6); false: seed 004's "
              "LDA runs"),
    Parameter("coupling_time", 0.5, "time to exchange and average a group's states",
              non_negative),
    *system_parameters("permutation"),
    replace(WELLING_TEH_STEP_SIZE, default=5e-8),
    *run_parameters(burn_in=6000, n_iterations=12_000, n_replicates=4, batch_size=100,
                    thin=20),
    Parameter("gradient_draws", 20_000, "group gradient estimates drawn at θ = μ per R",
              at_least_two),
    *CHECK_PARAMETERS,
)


class DsgldCoupling(Experiment):
    parameters = PARAMETERS
    quick = {"burn_in": 4000, "n_iterations": 4000, "n_replicates": 3, "gradient_draws": 4000}
    sweep_dims = ("group_size",)

    def points(self, config):
        return [{"group_size": r} for r in config["group_size"]]

    def run_point(self, config, point, seed):
        from workbench.experiments.dsgld_coupling.point import run_point

        return run_point(self.name, config, point, seed)

    def checks(self, dataset):
        from workbench.experiments.dsgld_coupling.checks import coupling_checks

        return coupling_checks(dataset)

    def figures(self, dataset, out_dir):
        from workbench.experiments.dsgld_coupling.figures import figure_coupling

        return [figure_coupling(dataset, out_dir / f"{self.name}.png")]



