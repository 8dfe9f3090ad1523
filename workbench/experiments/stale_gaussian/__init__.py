"""Experiment ``stale-gaussian``: seed 001 §5.1, Figure 1.

Gaussian-mean model, stale SGLD with staleness τ on a grid, L = L0·τ iterations and step size
h = C τ^(-2/3) L^(-1/3). Section 4 of seed 001 predicts that this keeps the optimal MSE
O((τ/L)^(2/3)) = O(L0^(-2/3)) the same for every τ. Each τ is replayed over R replicates and
judged against the exact oracle of math.md §7; the claimed invariance and the variance's
dependence on τ are checked, with the oracle's decomposition of the error as evidence.
"""

from __future__ import annotations

from simulators import validation
from workbench.config import Parameter
from workbench.engine import replicate_blocks
from workbench.experiments.base import Experiment
from workbench.experiments.stale_gaussian.checks import stale_gaussian_checks
from workbench.experiments.stale_gaussian.figures import figure_mse
from workbench.experiments.stale_gaussian.point import finish_point, run_blocks, step_size
from workbench.samplers import SAMPLER_NAMES
from workbench.test_functions import BUILTIN


def _positive(name, value):
    return validation.positive(name, value)


def _at_least_one(name, value):
    return validation.integer(name, value, minimum=1)


def _at_least_two(name, value):
    return validation.integer(name, value, minimum=2)


def _non_negative_int(name, value):
    return validation.integer(name, value, minimum=0)


def _finite(name, value):
    return validation.finite(name, value)


def _staleness_grid(name, value):
    grid = [validation.integer(f"{name}[{i}]", v, minimum=0) for i, v in enumerate(value)]
    if len(set(grid)) != len(grid):
        raise validation.InvalidParameter(name, value, "must not repeat a value")
    if min(grid) < 1:
        raise validation.InvalidParameter(name, value, "needs values >= 1 (L = L0·τ)")
    return sorted(grid)


def _rate(name, value):
    value = validation.probability(name, value)
    if not 0 < value < 1:
        raise validation.InvalidParameter(name, value, "must lie strictly between 0 and 1")
    return value


PARAMETERS = (
    Parameter("n_data", 1000, "number of data points N", _at_least_one),
    Parameter("dim", 1, "dimension d of θ", _at_least_one),
    Parameter("true_mean", 0.0, "data are drawn from N(true_mean, noise_scale²)", _finite),
    Parameter("noise_scale", 1.0, "likelihood standard deviation σ_x", _positive),
    Parameter("prior_scale", 1.0, "prior standard deviation σ₀", _positive),
    Parameter("prior_mean", 0.0, "prior mean m₀", _finite),
    Parameter("initial_position", 1.0, "starting value θ₀ of every coordinate", _finite),
    Parameter("batch_size", 10, "minibatch size n", _at_least_one),
    Parameter("replacement", True, "draw minibatches with replacement"),
    Parameter("staleness", [1, 2, 5, 10, 15, 20], "staleness grid τ", _staleness_grid),
    Parameter("schedule", "constant",
              "constant: every update has staleness τ; uniform: i.i.d. uniform on {0..τ}",
              choices=("constant", "uniform")),
    Parameter("base_iterations", 1000, "L0: each τ runs L = L0·τ iterations", _at_least_one),
    Parameter("step_size_constant", 0.005, "C in h = C·τ^(-2/3)·L^(-1/3) (Chen convention)",
              _positive),
    Parameter("sampler", "sgld", "integrator", choices=SAMPLER_NAMES),
    Parameter("friction", 1.0, "SGHMC friction D (unused by SGLD)", _positive),
    Parameter("n_replicates", 200, "independent runs R per staleness", _at_least_two),
    Parameter("replicate_block", 50, "replicates per seeding block", _at_least_one),
    Parameter("n_checkpoints", 30, "log-spaced sample counts at which φ̂_L is kept",
              _at_least_one),
    Parameter("test_function", "theta_squared", "φ whose MSE is judged for invariance",
              choices=tuple(BUILTIN)),
    Parameter("confidence", 0.95, "level of the stored confidence intervals", _rate),
    Parameter("false_failure_rate", 0.001,
              "family-wise probability that a correct sampler fails a family of checks", _rate),
    Parameter("divergence_threshold", 1e6,
              "a replicate whose |θ| exceeds this is marked diverged and left out", _positive),
    Parameter("n_draws", 0, "equally spaced draws kept per replicate (0: none)",
              _non_negative_int),
)


class StaleGaussian(Experiment):
    name = "stale-gaussian"
    summary = ("Stale SGLD on a Gaussian mean, L = L0·τ, h ∝ τ^(-2/3) L^(-1/3): oracle "
               "agreement, MSE invariance across τ (seed 001 §5.1, Fig. 1)")
    source = "seed 001 (Chen et al. 2016) §5.1 Figure 1; math.md §2, §7"
    parameters = PARAMETERS
    quick = {"base_iterations": 300, "n_replicates": 100}
    sweep_dims = ("staleness",)

    def points(self, config):
        return [{"staleness": tau} for tau in config["staleness"]]

    def work(self, config, point):
        return step_size(config, point["staleness"])[0] * config["n_replicates"]

    def replicate_blocks(self, config, point):
        return len(replicate_blocks(config["n_replicates"], config["replicate_block"]))

    def run_blocks(self, config, point, seed, blocks):
        return run_blocks(self.name, config, point, seed, blocks)

    def finish_point(self, config, point, seed, raw):
        return finish_point(self.name, config, point, seed, raw)

    def checks(self, dataset):
        return stale_gaussian_checks(dataset)

    def figures(self, dataset, out_dir):
        return [figure_mse(dataset, out_dir / f"{self.name}.png")]
