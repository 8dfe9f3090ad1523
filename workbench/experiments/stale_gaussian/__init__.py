"""Experiment ``stale-gaussian``: seed 001 §5.1, Figure 1, and Theorems 3–4 as bounds.

Gaussian-mean model, stale SGLD with staleness τ on a grid, L = L0·τ iterations and step size
h = C τ^(-2/3) L^(-1/3). Section 4 of seed 001 predicts that this keeps the optimal MSE
O((τ/L)^(2/3)) = O(L0^(-2/3)) the same for every τ. Each τ is replayed over R replicates and
judged against the exact oracle of math.md §7; the claimed invariance and the variance's
dependence on τ are checked, with the oracle's decomposition of the error as evidence.

Two bound designs run beside it (:mod:`.bound_design`): a rate design (fixed τ, L on a grid,
h at Theorem 3's optimum) and an envelope grid over (τ, h, L); their checks
(:mod:`.bound_checks`) judge Theorem 3's rate and envelope and Theorem 4's independence of τ.
"""

from __future__ import annotations

import xarray as xr

from simulators import validation
from workbench.config import Parameter
from workbench.engine import replicate_blocks
from workbench.experiments.base import Experiment
from workbench.experiments.stale_gaussian import bound_design
from workbench.experiments.stale_gaussian.bound_checks import SPLITS, bound_checks
from workbench.experiments.stale_gaussian.bound_figures import figure_bounds
from workbench.experiments.stale_gaussian.checks import stale_gaussian_checks
from workbench.experiments.stale_gaussian.figures import figure_mse
from workbench.experiments.stale_gaussian.point import finish_point, run_blocks, step_size
from workbench.experiments.validators import at_least_one as _at_least_one
from workbench.experiments.validators import at_least_two as _at_least_two
from workbench.experiments.validators import finite as _finite
from workbench.experiments.validators import non_negative_int as _non_negative_int
from workbench.experiments.validators import positive as _positive
from workbench.experiments.validators import rate as _rate
from workbench.results import config_of
from workbench.samplers import LINEAR_SAMPLER_NAMES
from workbench.test_functions import BUILTIN


def _staleness_grid(name, value):
    grid = [validation.integer(f"{name}[{i}]", v, minimum=0) for i, v in enumerate(value)]
    if len(set(grid)) != len(grid):
        raise validation.InvalidParameter(name, value, "must not repeat a value")
    if min(grid) < 1:
        raise validation.InvalidParameter(name, value, "needs values >= 1 (L = L0·τ)")
    return sorted(grid)


def _grid(minimum_length: int, integer: bool, lowest: float):
    """A sorted list without repeats, of at least ``minimum_length`` values >= ``lowest``."""

    def validate(name, value):
        check = validation.integer if integer else validation.positive
        grid = [check(f"{name}[{i}]", v, **({"minimum": lowest} if integer else {}))
                for i, v in enumerate(value)]
        if len(set(grid)) != len(grid):
            raise validation.InvalidParameter(name, value, "must not repeat a value")
        if len(grid) < minimum_length:
            raise validation.InvalidParameter(name, value,
                                              f"needs at least {minimum_length} values")
        return sorted(grid)

    return validate


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
    Parameter("sampler", "sgld", "integrator", choices=LINEAR_SAMPLER_NAMES),
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
    Parameter("bound_designs", True,
              "also run the rate design and the envelope grid below (Theorems 3 and 4)"),
    Parameter("rate_staleness", [2, 8],
              "rate design: fixed staleness values τ, each run at Theorem 3's optimal step",
              _grid(1, True, 1)),
    Parameter("rate_iterations", [1000, 2000, 4000, 8000, 16000],
              "rate design: iteration counts L; h = C·τ^a·L^b with a, b from Theorem 3",
              _grid(3, True, 1)),
    Parameter("envelope_staleness", [1, 2, 4, 8],
              "envelope grid: staleness values τ", _grid(2, True, 0)),
    Parameter("envelope_relative_step", [0.025, 0.05, 0.1],
              "envelope grid: step sizes as c = h/s² (stable iff c < 2 sin(π/(2(2τ+1))))",
              _grid(1, False, 0)),
    Parameter("envelope_iterations", [500, 1000, 2000, 4000, 8000],
              "envelope grid: sample counts L read from each (τ, h) run", _grid(2, True, 1)),
    Parameter("envelope_split", "checkerboard",
              "envelope calibration: checkerboard (alternate (τ, h) runs) or extrapolate "
              "(shorter half of the L grid)", choices=SPLITS),
    Parameter("bootstrap_resamples", 2000,
              "replicate resamples for the rate checks' slope intervals", _at_least_two),
)


class StaleGaussian(Experiment):
    name = "stale-gaussian"
    summary = ("Stale SGLD on a Gaussian mean, L = L0·τ, h ∝ τ^(-2/3) L^(-1/3): oracle "
               "agreement, MSE invariance across τ (seed 001 §5.1, Fig. 1)")
    source = "seed 001 (Chen et al. 2016) §5.1 Figure 1; math.md §2, §7"
    parameters = PARAMETERS
    quick = {"base_iterations": 300, "n_replicates": 100,
             "rate_iterations": [1000, 2000, 4000], "envelope_staleness": [1, 2, 4],
             "envelope_iterations": [500, 1000, 2000], "bootstrap_resamples": 1000}
    sweep_dims = ("staleness",)

    def points(self, config):
        seed_design = [{"staleness": tau} for tau in config["staleness"]]
        return seed_design + (bound_design.points(config) if config["bound_designs"] else [])

    def point_identity(self, config, point):
        identity = super().point_identity(config, point)
        if point.get("design") == bound_design.ENVELOPE:
            identity["envelope_streams"] = bound_design.ENVELOPE_STREAMS
        return identity

    def work(self, config, point):
        if bound_design.is_design_point(point):
            return 0
        return step_size(config, point["staleness"])[0] * config["n_replicates"]

    def replicate_blocks(self, config, point):
        if bound_design.is_design_point(point):
            return 1  # a bound-design point runs whole (bound_design.run)
        return len(replicate_blocks(config["n_replicates"], config["replicate_block"]))

    def run_point(self, config, point, seed):
        if bound_design.is_design_point(point):
            return bound_design.run(self.name, config, point, seed)
        return super().run_point(config, point, seed)

    def run_blocks(self, config, point, seed, blocks):
        return run_blocks(self.name, config, point, seed, blocks)

    def finish_point(self, config, point, seed, raw):
        return finish_point(self.name, config, point, seed, raw)

    def combine(self, config, datasets):
        seed_design = [d for d in datasets if "staleness" in d.dims]
        others = [d for d in datasets if "staleness" not in d.dims]
        combined = super().combine(config, seed_design)
        return xr.merge([combined, bound_design.combine(others)], combine_attrs="override")

    def checks(self, dataset):
        if not config_of(dataset)["bound_designs"]:
            return stale_gaussian_checks(dataset)
        return [*stale_gaussian_checks(dataset), *bound_checks(dataset)]

    def figures(self, dataset, out_dir):
        figures = [figure_mse(dataset, out_dir / f"{self.name}.png")]
        if config_of(dataset)["bound_designs"]:
            figures.append(figure_bounds(dataset, out_dir / f"{self.name}-bounds.png"))
        return figures
