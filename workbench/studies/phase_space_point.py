"""One sweep point of a phase-space study: SGHMC's state (θ, p) on the Gaussian mean with full
gradients, replayed over the replicates, and the exact moments of φ̂_L(θ²) and φ̂_L(p²).

The convergence results for higher-order integrators (Chen, Ding & Carin 2015; docs/math.md §3)
are stated for test functions of the diffusion's state: the engine records (θ, p) through
:class:`workbench.samplers.phase_space.PhaseSpace`, and θ² applied to it gives θ² and p², the
dim ``test_function`` (:data:`~workbench.studies.schema.PHASE_SPACE_FUNCTIONS`). Every chain
starts at rest at the posterior mean, as the oracle assumes (:mod:`workbench.oracles.phase_space`,
docs/math.md §15); φ̂_L is kept at the last sample count L = ``n_iterations`` alone.
``step_size = "optimal"`` runs the point at h*(L), the minimiser over (0, ``largest_step``] of
the exact asymptotic MSE of φ̂_L(p²).

Seeds: the data set is keyed by the experiment (``"gaussian-data"``), and so are the engine's
streams (``"engine"``), not by the point: every point replays the same random numbers (common
random numbers across the grid, so a rate's bootstrap over L can be paired). The replicates
run in seeding blocks of ``replicate_block``, each from its own streams: a point splits into
them (:func:`run_blocks` for some, :func:`finish_point` over all), bit for bit the unsplit
point, and a block's numbers do not depend on the point's replicate count (kept across the
looks of a sequential check). The shipped integrator-order study runs one block.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from simulators.seeding import derive, generator
from simulators.static import constant_staleness
from workbench.core.phi import THETA_SQUARED
from workbench.engine.replay import replay
from workbench.engine.replay_setup import block_rows
from workbench.models.gaussian import GaussianMeanModel
from workbench.oracles.linear_gaussian import dynamics_for
from workbench.oracles.phase_space import asymptotic_parts, optimal_step, square_moments
from workbench.samplers import make_sampler
from workbench.samplers.phase_space import PhaseSpace
from workbench.stats.estimators import summarize
from workbench.studies.schema import OPTIMAL_STEP, PHASE_SPACE_FUNCTIONS, sampler_name


def step_of(config: dict, dynamics, precision: float) -> float:
    """The point's step: its ``step_size``, or h*(L) where that is ``"optimal"``."""
    if config["step_size"] != OPTIMAL_STEP:
        return config["step_size"]
    return optimal_step(dynamics, precision, PHASE_SPACE_FUNCTIONS["momentum_squared"],
                        config["n_iterations"], config["largest_step"])


def _setup(experiment: str, config: dict, seed):
    """(model, sampler name, dynamics of a step, the point's step): what every block and the
    finish of a point build the same from the seed."""
    model = GaussianMeanModel.generate(
        generator(seed, experiment, "gaussian-data"), config["n_data"], config["dim"],
        config["true_mean"], config["noise_scale"], config["prior_scale"], config["prior_mean"])
    name = sampler_name(config)

    def dynamics(step):
        return dynamics_for({"sampler": name, "step_size": step,
                             "friction": config["friction"]})

    return model, name, dynamics, step_of(config, dynamics, model.precision)


def run_blocks(experiment: str, config: dict, point: dict, seed,
               blocks: Sequence[int]) -> xr.Dataset:
    """Raw results of some of the point's replicate seeding blocks (``replicate_block``):
    ``estimate`` ``(test_function, replicate)`` (φ̂_L of θ² and p²) and ``diverged``
    ``(replicate)``, the ``replicate`` coordinate holding global indices. A block's numbers
    are the engine's streams of that block alone, the same bits whichever blocks share the
    call and whatever the point's replicate count."""
    model, name, _, step = _setup(experiment, config, seed)
    n_updates = config["n_iterations"]
    replicates = block_rows(config["n_replicates"], config["replicate_block"], blocks)
    run = replay(constant_staleness(n_updates, config["staleness"]),
                 PhaseSpace(make_sampler(name, step, config["friction"])),
                 model.minibatch_gradient(), n_updates=n_updates,
                 n_replicates=config["n_replicates"],
                 initial_position=float(model.posterior_mean[0]),
                 seed=derive(seed, experiment, "engine"),
                 batch_size=config["batch_size"], replacement=config["replacement"],
                 test_functions=(THETA_SQUARED,), checkpoints=[n_updates],
                 replicate_block=config["replicate_block"], blocks=blocks,
                 divergence_threshold=config["divergence_threshold"])
    return xr.Dataset(
        {"estimate": (("test_function", "replicate"),
                      run.averages[THETA_SQUARED.name][0, :, 0, :].T),
         "diverged": ("replicate", (run.diverged_at >= 0).any(axis=1))},
        coords={"test_function": list(PHASE_SPACE_FUNCTIONS), "replicate": replicates})


def finish_point(experiment: str, config: dict, point: dict, seed, raw: xr.Dataset,
                 dims: Sequence[str]) -> xr.Dataset:
    """The point's Dataset from the raw results of all its blocks (:func:`run_blocks`):
    the summaries over replicates and the exact moments, with the point's ``dims`` as leading
    size-1 dims."""
    model, _, dynamics, step = _setup(experiment, config, seed)
    k, n_updates = model.precision, config["n_iterations"]
    mu = float(model.posterior_mean[0])
    functions = list(PHASE_SPACE_FUNCTIONS)
    # replicate-major, as one replay leaves it, however the blocks were joined: the summaries'
    # sums over replicates then take the same order, so a split point is the same bits
    estimate = raw["estimate"].copy(data=np.asfortranarray(raw["estimate"].values))
    truth = xr.DataArray([mu**2 + 1.0 / k, 1.0], dims="test_function",
                         coords={"test_function": functions})
    summary = summarize(estimate, truth, confidence=config["confidence"])
    centres = {"theta": mu, "momentum": 0.0}
    exact = [square_moments(dynamics(step), k, coordinate, [n_updates], centres[coordinate])
             for coordinate in PHASE_SPACE_FUNCTIONS.values()]
    exact_mean = np.array([m[0] for m, _ in exact])
    exact_variance = np.array([v[0] for _, v in exact])
    stationary = np.array([asymptotic_parts(dynamics(step), k, c)[0] + centres[c] ** 2
                           for c in PHASE_SPACE_FUNCTIONS.values()])
    data = {key: summary[key] for key in ("bias", "bias_se", "mse", "mse_se", "variance",
                                          "variance_se", "n_valid")}
    exact_bias = exact_mean - truth.values
    data.update({
        "estimate": estimate,
        "squared_error": (estimate - truth) ** 2,
        "posterior_value": truth,
        "exact_bias": ("test_function", exact_bias),
        "exact_variance": ("test_function", exact_variance),
        "exact_mse": ("test_function", exact_bias**2 + exact_variance),
        "stationary_bias": ("test_function", stationary - truth.values),
        "step_size": ((), step),
        "diverged": raw["diverged"],
    })
    return xr.Dataset(data).expand_dims({dim: [point[dim]] for dim in dims})
