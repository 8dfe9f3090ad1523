"""One point of ``integrator-order``: an integrator at its optimal step for one L, replayed
over the replicates, with the exact moments of φ̂_L(θ²) and φ̂_L(p²) (module docstring of the
package; :mod:`workbench.oracles.phase_space`).

Every point replays the same fresh-gradient schedule with the engine streams keyed by the
experiment only (common random numbers across the grid, so the rate's bootstrap is paired).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simulators.seeding import derive, generator
from simulators.static import constant_staleness
from workbench.core.phi import THETA_SQUARED
from workbench.samplers import make_sampler
from workbench.samplers.phase_space import PhaseSpace

# xarray, the engine, the estimators (scipy.stats), the model and the oracles (numba) are
# imported by the point's run: the experiment reads INTEGRATORS for its parameters, which
# `workbench show` prints without them (issue 15)
if TYPE_CHECKING:
    import xarray as xr

INTEGRATORS = ("euler", "splitting")
FUNCTIONS = ("theta_squared", "momentum_squared")


def run_integrator(experiment: str, config: dict, point: dict, seed) -> xr.Dataset:
    import xarray as xr

    from workbench.engine.replay import replay
    from workbench.models.gaussian import GaussianMeanModel
    from workbench.oracles.linear_gaussian import dynamics_for
    from workbench.oracles.phase_space import asymptotic_parts, optimal_step, square_moments
    from workbench.stats.estimators import summarize

    integrator, n_updates = point["integrator"], point["iterations"]
    n_replicates, friction = config["n_replicates"], config["friction"]
    model = GaussianMeanModel.generate(generator(seed, experiment, "gaussian-data"),
                                       config["n_data"], 1, 0.0, 1.0, 1.0, 0.0)
    name, k = f"sghmc-{integrator}", model.precision
    mu = float(model.posterior_mean[0])

    def dynamics(step):
        return dynamics_for({"sampler": name, "step_size": step, "friction": friction})

    step = optimal_step(dynamics, k, "momentum", n_updates, config["largest_step"])
    run = replay(constant_staleness(n_updates, 0),
                 PhaseSpace(make_sampler(name, step, friction)), model.minibatch_gradient(),
                 n_updates=n_updates, n_replicates=n_replicates, initial_position=mu,
                 seed=derive(seed, experiment, "engine"), batch_size=model.n_data,
                 replacement=False, test_functions=(THETA_SQUARED,),
                 checkpoints=[n_updates], replicate_block=n_replicates)
    estimate = xr.DataArray(run.averages[THETA_SQUARED.name][0, :, 0, :].T,
                            dims=("test_function", "replicate"),
                            coords={"test_function": list(FUNCTIONS),
                                    "replicate": np.arange(n_replicates)})
    truth = xr.DataArray([mu**2 + 1.0 / k, 1.0], dims="test_function",
                         coords={"test_function": list(FUNCTIONS)})
    summary = summarize(estimate, truth, confidence=config["confidence"])
    exact = [square_moments(dynamics(step), k, coordinate, [n_updates], centre)
             for coordinate, centre in (("theta", mu), ("momentum", 0.0))]
    exact_mean = np.array([m[0] for m, _ in exact])
    exact_variance = np.array([v[0] for _, v in exact])
    stationary = np.array([asymptotic_parts(dynamics(step), k, c)[0] + (mu**2 if c == "theta"
                                                                         else 0.0)
                           for c in ("theta", "momentum")])
    data = {name: summary[name] for name in ("bias", "bias_se", "mse", "mse_se", "variance",
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
        "diverged": ("replicate", (run.diverged_at >= 0).any(axis=1)),
    })
    return xr.Dataset(data)
