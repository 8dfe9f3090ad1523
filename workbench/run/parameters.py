"""The run and sampling parameters that several systems, experiments and the study schema share.

Each name is declared once, here (``tests/test_declared_once.py``); a user that needs its own
default, help or validator takes ``dataclasses.replace`` of the declaration, so the name, the
type and the meaning stay the same everywhere. Parameters of one system live with it
(:mod:`workbench.systems.asynchronous.system`, :mod:`workbench.systems.distributed.traveling`,
:mod:`workbench.systems.distributed.data`), and an experiment's own parameters with the
experiment.
"""

from __future__ import annotations

from workbench.core.parameters import Parameter
from workbench.core.validators import (
    at_least_one,
    at_least_two,
    finite,
    non_negative,
    non_negative_int,
    positive,
    rate,
)
from workbench.samplers import SAMPLER_NAMES

# the model: the Gaussian mean (plain or sharded), the logistic regression and the networks
N_DATA = Parameter("n_data", 1000, "Gaussian mean: data points N", at_least_one)
DIM = Parameter("dim", 1, "dimension d of θ", at_least_one)
TRUE_MEAN = Parameter("true_mean", 0.0, "data are drawn from N(true_mean, σ_x² I) (sharded "
                      "data: the iid regime)", finite)
NOISE_SCALE = Parameter("noise_scale", 1.0, "likelihood standard deviation σ_x", positive)
PRIOR_SCALE = Parameter("prior_scale", 1.0, "prior standard deviation σ₀ of every coordinate "
                        "of θ", positive)
PRIOR_MEAN = Parameter("prior_mean", 0.0, "prior mean m₀", finite)

# the sampler
SAMPLER = Parameter("sampler", "sgld", "integrator", choices=SAMPLER_NAMES)
STEP_SIZE = Parameter("step_size", 1e-5, "step size h (Chen convention, docs/math.md §1)",
                      positive)
FRICTION = Parameter("friction", 1.0, "SGHMC friction D, SGNHT diffusion A (unused by SGLD)",
                     positive)
BATCH_SIZE = Parameter("batch_size", 10, "minibatch size n", at_least_one)
REPLACEMENT = Parameter("replacement", True, "draw minibatches with replacement")
INITIAL_POSITION = Parameter("initial_position", 0.0, "starting value θ₀ of every coordinate",
                             finite)

# the run's length and replicates
N_ITERATIONS = Parameter("n_iterations", 1000, "iterations L of every replicate (sharded: "
                         "updates per chain after the burn-in)", at_least_one)
BURN_IN = Parameter("burn_in", 1000, "updates per chain before the window", non_negative_int)
THIN = Parameter("thin", 10, "keep every thin-th update as a sample for the figures",
                 at_least_one)
N_REPLICATES = Parameter("n_replicates", 200, "independent runs R", at_least_two)
REPLICATE_BLOCK = Parameter("replicate_block", 50, "replicates per seeding block", at_least_one)
N_CHECKPOINTS = Parameter("n_checkpoints", 20, "log-spaced sample counts at which φ̂_L is kept",
                          at_least_one)
DIVERGENCE_THRESHOLD = Parameter("divergence_threshold", 1e6, "a replicate whose |θ| exceeds "
                                 "this is marked diverged and left out", positive)
#: the engines that replay a schedule (workbench.engine.replay; workbench.engine.jax_replay)
BACKENDS = ("numpy", "jax")
BACKEND = Parameter("backend", BACKENDS[0], "the engine that replays the schedules: numpy (with "
                    "its compiled path) or jax (XLA on JAX's device, a GPU where one is "
                    "installed; the optional extra [jax]; other random numbers)",
                    choices=BACKENDS)

# the checks: intervals, error rate and margins
CONFIDENCE = Parameter("confidence", 0.95, "level of the stored confidence intervals", rate)
FALSE_FAILURE_RATE = Parameter("false_failure_rate", 0.001, "family-wise probability that a "
                               "correct sampler fails a family of checks", rate)
BOOTSTRAP_RESAMPLES = Parameter("bootstrap_resamples", 2000, "replicate resamples for a fitted "
                                "rate's confidence interval", at_least_two)
RATE_MARGIN = Parameter("rate_margin", 0.1, "rate check: the fitted slope at most this beyond "
                        "the bound's", positive)
SLOPE_MARGIN = Parameter("slope_margin", 0.1, "slope check: the fitted log-log slope within "
                         "this of the predicted one", positive)
SPEEDUP_MARGIN = Parameter("speedup_margin", 0.1, "speed-up check: the measured speed-up "
                           "within this fraction of the predicted one", positive)
INVARIANCE_MARGIN = Parameter("invariance_margin", 0.25, "invariance check: the compared "
                              "values within this ratio of each other", positive)
ORDERING_MARGIN = Parameter("ordering_margin", 0.0, "ordering check: the change between "
                            "consecutive grid values shown beyond −this (absolute, φ's units)",
                            non_negative)
