"""Experiment ``integrator-order``: SGHMC with the Euler integrator (K = 1) against symmetric
splitting (K = 2) with full gradients on the Gaussian mean (docs/math.md §3; Chen, Ding & Carin
2015, cited by seeds 001 and 003).

For each L of the grid each integrator runs at its optimal step h*(L) — the minimiser of its
exact asymptotic MSE (:func:`workbench.oracles.phase_space.optimal_step`) — and the MSE of
φ̂_L is measured over ``n_replicates`` replicates. The fixed-step bounds (registry
``chen2015-mse-fixed-k1``/``-k2``) give MSE ∝ L^(−2K/(2K+1)) at the optimal step: L^(−2/3)
for Euler, L^(−4/5) for splitting.

Test function: φ(θ, p) = p², the kinetic energy (the bounds are stated for functions of the
diffusion's state; the engine records (θ, p) through
:class:`workbench.samplers.phase_space.PhaseSpace`). On this linear target the position
moments of both integrators are biased only at O(h²) — φ(θ) = θ² cannot tell them apart —
while Euler's momentum variance is biased at O(h). θ² is measured too and judged against its
oracle. Full gradients: the minibatch is the whole data set drawn without replacement, so the
gradient is exact (V_ζ = 0); the default data set is one point.

The design follows the exact oracle, not the seed: the rates are asymptotic, and how soon the
finite-L MSE at the optimal step follows them depends on the friction. With D = 1 the exact
local slopes over L = 64…4096 are −0.70…−0.72 (Euler) and −0.82…−0.84 (splitting), still on
their way; with D = 3 they are −0.68…−0.70 and −0.80…−0.81, so the measured slopes sit at the
bounds' exponents and the Euler run is 0.11 shallower than L^(−4/5) — more than the margin plus
z·σ at 3000 replicates over six octaves of L. The figure draws the exact MSE beside the
measured one, and each rate verdict carries the exact slope as evidence.
"""

from __future__ import annotations

from dataclasses import replace

from workbench.core.parameters import Parameter
from workbench.core.validators import distinct_positive_ints, positive
from workbench.experiments.integrator_order.point import INTEGRATORS, run_integrator
from workbench.run.experiment import Experiment
from workbench.run.parameters import (
    BOOTSTRAP_RESAMPLES,
    CONFIDENCE,
    FALSE_FAILURE_RATE,
    FRICTION,
    ITERATIONS,
    N_DATA,
    N_REPLICATES,
    RATE_MARGIN,
)
from workbench.systems.asynchronous.run import at_point, combine_grid

# the checks and figures (sympy, scipy.stats, matplotlib) are imported by the methods that
# use them, and the shared run code imports the engine where a point runs: describing and
# configuring the experiment (`workbench show`, argument errors) stays light (issue 15)

PARAMETERS = (
    replace(ITERATIONS, default=[64, 256, 1024, 4096, 16384],
            help="sample counts L (each integrator runs at its optimal step for each L)",
            validate=distinct_positive_ints),
    replace(FRICTION, default=3.0, help="SGHMC friction D (module docstring: why 3)"),
    replace(N_DATA, default=1, help="Gaussian mean: data points N (full gradients)"),
    Parameter("largest_step", 1.5, "upper end of the search for the optimal step", positive),
    replace(N_REPLICATES, default=6000),
    replace(RATE_MARGIN, default=0.05, help="rates: slope at most this shallower than the "
            "bound's (the exponents −2/3 and −4/5 differ by 0.133)"),
    BOOTSTRAP_RESAMPLES,
    CONFIDENCE,
    FALSE_FAILURE_RATE,
)


class IntegratorOrder(Experiment):
    parameters = PARAMETERS
    quick = {"iterations": [64, 256, 1024, 4096], "n_replicates": 3000}
    sweep_dims = ("integrator", "iterations")

    def points(self, config):
        return [{"integrator": i, "iterations": n} for i in INTEGRATORS
                for n in config["iterations"]]

    def work(self, config, point):
        return point["iterations"] * config["n_replicates"]

    def run_point(self, config, point, seed):
        return at_point(run_integrator(self.name, config, point, seed), point, self.sweep_dims)

    def combine(self, config, datasets):
        return combine_grid(datasets, {"integrator": len(INTEGRATORS),
                                       "iterations": len(config["iterations"])})

    def checks(self, dataset):
        from workbench.experiments.integrator_order.checks import integrator_order_checks

        return integrator_order_checks(dataset)

    def figures(self, dataset, out_dir):
        from workbench.experiments.integrator_order.figures import figure_order

        return [figure_order(dataset, out_dir / f"{self.name}.png")]
