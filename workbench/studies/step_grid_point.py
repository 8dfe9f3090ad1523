"""A federated study's step grid: both estimators at steps h·factor beside the sweep.

``[run] bound_step_factors`` runs, for every factor and every swept number of local updates T,
each estimator at step h·factor on the same client draws as the sweep's point
(:class:`~workbench.systems.distributed.federation.Federation`; seed 002, el Mekkaoui et al.
2021, Algorithm 1), with window lengths after the burn-in as the sweep's. Measured: the MSE of
the window mean φ̂_T(θ) against the posterior mean, summed over coordinates and averaged over
chains and replicates; its standard error comes from the chain averages (chains are
independent, replicates of one chain share its schedule). The sweep's own runs give factor 1,
so ``bound_mse`` spans every step the envelope check judges
(:mod:`workbench.studies.step_envelope_judgements`; seed 002 Theorems 1-2, Figure 4).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from simulators.seeding import derive
from workbench.engine.replay import replay
from workbench.run.experiment import point_key
from workbench.samplers import SGLD
from workbench.studies.schema import STEP_DESIGN
from workbench.systems.distributed import chen_step_size
from workbench.systems.distributed.arm import TEST_FUNCTIONS
from workbench.systems.distributed.federation import Federation, running_window_means


def points(config: dict) -> list[dict]:
    return [{"design": STEP_DESIGN, "local_updates": local, "step_factor": factor}
            for factor in config["bound_step_factors"] for local in config["local_updates"]]


def window_mse(running: np.ndarray, posterior_mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MSE of φ̂_T(θ) ``(..., T, replicate, chain, d)`` against μ per window length, and its
    standard error from the chain averages."""
    squared = ((running - posterior_mean) ** 2).sum(axis=-1)  # (..., T, replicate, chain)
    per_chain = squared.mean(axis=-2)
    n_chains = per_chain.shape[-1]
    return per_chain.mean(axis=-1), per_chain.std(axis=-1, ddof=1) / np.sqrt(n_chains)


def run(experiment: str, config: dict, point: dict, seed) -> xr.Dataset:
    """Every estimator at step h·factor on the point's federated schedule."""
    local, factor = int(point["local_updates"]), float(point["step_factor"])
    federation = Federation.build(experiment, config, seed, local)
    model = federation.sharded.model
    burn_in = config["burn_in"]
    h = chen_step_size(config["welling_teh_step_size"]) * factor
    methods = list(config["estimator"])
    mse, error = [], []
    for method in methods:
        result = replay(federation.schedule, SGLD(h), federation.estimators[method],
                        n_updates=burn_in + config["n_iterations"],
                        n_replicates=config["n_replicates"],
                        initial_position=np.full(model.dim, config["initial_position"]),
                        seed=derive(seed, experiment, point_key(point), "engine", method),
                        batch_size=config["batch_size"], replacement=config["replacement"],
                        test_functions=TEST_FUNCTIONS,
                        checkpoints=sorted({burn_in, *(burn_in + federation.window)} - {0}),
                        replicate_block=config["replicate_block"])
        values = window_mse(running_window_means(result, burn_in, federation.window),
                            model.posterior_mean)
        mse.append(values[0])
        error.append(values[1])
    dims = ("step_factor", "local_updates", "estimator", "checkpoint")
    return xr.Dataset(
        {"bound_mse": (dims, np.array(mse)[None, None]),
         "bound_mse_se": (dims, np.array(error)[None, None])},
        coords={"step_factor": [factor], "local_updates": [local], "estimator": methods,
                "checkpoint": np.arange(federation.window.size)})


def combine(sweep: xr.Dataset, grid: list[xr.Dataset]) -> xr.Dataset:
    """The sweep with ``bound_mse``, ``bound_mse_se``: its own runs at factor 1 (from its
    ``running_mean``) plus the grid's other factors."""
    mse, error = xr.apply_ufunc(
        window_mse, sweep["running_mean"], sweep["posterior_mean"],
        input_core_dims=[["checkpoint", "replicate", "chain", "component"], ["component"]],
        output_core_dims=[["checkpoint"], ["checkpoint"]])
    own = xr.Dataset({"bound_mse": mse, "bound_mse_se": error}).expand_dims(step_factor=[1.0])
    parts = [own, xr.combine_by_coords(grid, combine_attrs="drop", join="exact")]
    steps = xr.concat(parts, dim="step_factor", join="exact").sortby("step_factor")
    steps = steps.transpose("step_factor", "local_updates", "estimator", "checkpoint")
    return xr.merge([sweep, steps], combine_attrs="override")
