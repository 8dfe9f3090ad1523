"""Experiment ``fsgld-gaussian``: seed 002 §5.1, Figures 2, 3 and 4.

The Gaussian mean (Eq. 9) on S = 10 non-IID shards of 200 points around centres uniform on
[-6, 6]²; C chains, each its own federated system (seed 002 Algorithm 1: a uniformly chosen
client per round, T local updates), run with DSGLD and with FSGLD on the same schedule. For
every T the run is judged against the exact oracle given the schedule (window averages of θ and
of (θ - μ)²), the stationary second moment is judged against the exact round-averaged value
(math.md §7; Φ(a, T) for DSGLD), FSGLD's against its invariance in T, and DSGLD's growth with T
against Φ. The constants γ_s² and ε_s² of seed 002's Theorems 1 and 2 are evaluated on a grid
over [-7, 7]² (Figure 4) and put into the theorems, whose envelopes (constants fitted at the
seed design's step) are judged at other steps (:mod:`.bound_grid`).

Scaling: the paper's h = 10⁻⁴ (Welling-Teh, so Chen h = 5·10⁻⁵), minibatch 10, burn-in 20,000
and thinning 100 are the defaults and run here in about a minute; ``--quick`` shortens the run
(burn-in 2,000, 10,000 iterations) and keeps everything else.
"""

from __future__ import annotations

import xarray as xr

from simulators import validation
from workbench.config import Parameter
from workbench.experiments.base import Experiment
from workbench.experiments.distributed import WELLING_TEH_HELP
from workbench.experiments.distributed.data import CHECK_PARAMETERS, data_parameters
from workbench.experiments.fsgld_gaussian import bound_grid
from workbench.experiments.fsgld_gaussian.checks import fsgld_gaussian_checks
from workbench.experiments.fsgld_gaussian.figures import (
    figure_constants,
    figure_error,
    figure_samples,
)
from workbench.experiments.fsgld_gaussian.point import SURROGATES, run_point
from workbench.experiments.validators import (
    at_least_one,
    at_least_two,
    distinct_positive_ints,
    finite,
    non_negative_int,
    positive,
)
from workbench.results import config_of


def _step_factors(name, value):
    factors = [validation.positive(f"{name}[{i}]", v) for i, v in enumerate(value)]
    if len(set(factors)) != len(factors) or 1.0 in factors:
        raise validation.InvalidParameter(
            name, value, "must be distinct and exclude 1 (the seed design's own step)")
    return sorted(factors)


PARAMETERS = (
    *data_parameters([200] * 10, "blobs"),
    Parameter("welling_teh_step_size", 1e-4, WELLING_TEH_HELP + " (seed 002: h = 10⁻⁴)",
              positive),
    Parameter("batch_size", 10, "minibatch size m", at_least_one),
    Parameter("replacement", True, "draw minibatches with replacement"),
    Parameter("local_updates", [1, 10, 100], "local updates T per round (seed 002 Fig. 2)",
              distinct_positive_ints),
    Parameter("n_chains", 20, "independent federated chains (each its own client draws)",
              at_least_two),
    Parameter("n_replicates", 5, "replicates per chain (same schedule, fresh noise)",
              at_least_two),
    Parameter("replicate_block", 50, "replicates per seeding block", at_least_one),
    Parameter("burn_in", 20_000, "updates discarded before the window (seed 002: 20,000)",
              non_negative_int),
    Parameter("n_iterations", 100_000, "updates in the window after the burn-in",
              at_least_one),
    Parameter("thin", 100, "keep every thin-th update as a sample (seed 002: 100)",
              at_least_one),
    Parameter("n_checkpoints", 20, "log-spaced window lengths for the error curve",
              at_least_one),
    Parameter("initial_position", 0.0, "starting value θ₀ of every coordinate", finite),
    Parameter("surrogate", "analytic",
              "q_s: analytic N(x̄_s, σ_x²/N_s), laplace, or Gaussian fitted to local SGLD "
              "samples with full or diagonal covariance", choices=SURROGATES),
    Parameter("alpha", 1.0, "scale α of the conducive gradient (seed 002 Eq. 7)", positive),
    Parameter("surrogate_welling_teh_step_size", 2e-4,
              "local SGLD step (Welling-Teh ε) for the sgld-* surrogates; SGLD widens the "
              "fitted covariance by its own minibatch noise (about 6% here, 2× at 10⁻³ with "
              "minibatch 10)", positive),
    Parameter("surrogate_batch_size", 50, "local SGLD minibatch for the sgld-* surrogates",
              at_least_one),
    Parameter("surrogate_samples", 3000, "local SGLD samples per shard (seed 002: 3,000)",
              at_least_two),
    Parameter("surrogate_burn_in", 500, "local SGLD updates discarded first",
              non_negative_int),
    Parameter("surrogate_thin", 10, "local SGLD thinning", at_least_one),
    Parameter("grid_half_width", 7.0, "γ_s², ε_s² are maximised over [-w, w]^d (seed 002: 7)",
              positive),
    Parameter("grid_points", 101, "grid points per axis for γ_s², ε_s²", at_least_two),
    Parameter("bound_step_factors", [0.5, 2.0],
              "bound grid: steps h·factor run beside the seed design (factor 1) to judge "
              "Theorems 1-2's envelope fitted at h", _step_factors),
    *CHECK_PARAMETERS,
)


def _check_rounds(config: dict) -> dict:
    """The window must cover whole rounds for every T, starting at a round boundary."""
    for name in ("burn_in", "n_iterations"):
        for local in config["local_updates"]:
            if config[name] % local:
                raise validation.InvalidParameter(
                    name, config[name], f"must be a multiple of every local_updates ({local})")
    if config["dim"] < 2:
        raise validation.InvalidParameter("dim", config["dim"], "must be >= 2 (2-d figures)")
    return config


class FsgldGaussian(Experiment):
    name = "fsgld-gaussian"
    summary = ("DSGLD vs FSGLD (conducive gradients) on non-IID Gaussian shards, T local "
               "updates: exact oracle, stationary variance vs T, γ²/ε² (seed 002 §5.1)")
    source = "seed 002 (el Mekkaoui et al. 2021) §5.1, Figures 2-4; math.md §5, §7"
    parameters = PARAMETERS
    quick = {"burn_in": 2000, "n_iterations": 10_000, "n_replicates": 3, "grid_points": 41}
    sweep_dims = ("local_updates",)

    def configure(self, overrides=None, quick=False):
        return _check_rounds(super().configure(overrides, quick))

    def points(self, config):
        return [{"local_updates": t} for t in config["local_updates"]] + bound_grid.points(config)

    def run_point(self, config, point, seed):
        if bound_grid.is_design_point(point):
            return bound_grid.run(self.name, config, point, seed)
        return run_point(self.name, config, point, seed)

    def combine(self, config, datasets):
        design = [d for d in datasets if "step_factor" in d.dims]
        seed_design = super().combine(config, [d for d in datasets if "step_factor" not in d.dims])
        return xr.merge([seed_design, bound_grid.combine(seed_design, design)],
                        combine_attrs="override")

    def checks(self, dataset):
        return [*fsgld_gaussian_checks(dataset),
                *bound_grid.theorem_checks(dataset, config_of(dataset))]

    def figures(self, dataset, out_dir):
        return [figure_samples(dataset, out_dir / f"{self.name}.png"),
                figure_error(dataset, out_dir / f"{self.name}-error.png"),
                figure_constants(dataset, out_dir / f"{self.name}-constants.png"),
                bound_grid.figure_theorems(dataset, config_of(dataset),
                                           out_dir / f"{self.name}-theorems.png")]
