"""One sweep point of seed 003's downpour on Bayesian logistic regression with paired
replicates: ``[model] kind = "logistic-regression"``, ``[system] kind = "downpour"`` and
``[run] start = "laplace"``.

Li, Chen, Pu, Henao & Carin (AAAI 2019), Algorithm 1 and its MSE bound C₁(E₁ + E₂ + E₃):
the staleness term E₃ = π²(P − 1)²(Σε²)²/S_L² is what the worker count P adds to the
synchronous run (P = 1) at the same period π, so a study measures that excess replicate by
replicate. Every point therefore shares its replicates' starts, the engine's noise and its
minibatches (common random numbers): only the schedule is keyed by the point. The replicates
start from independent draws of the Laplace approximation N(θ_MAP, H⁻¹) (H the Hessian of U
at the mode), near the posterior but not at SGLD's stationary law.

The model is :func:`workbench.systems.asynchronous.models.logistic_model` (seed 001 §5.1); φ
is its held-out predictive log-loss, whose posterior expectation has no closed form: the truth
is a reference posterior (:mod:`workbench.reference`, HMC chains with their own Monte Carlo
error σ_ref and R-hat), computed once per process and model. A point runs the system for
``n_iterations`` master versions L, replays it with SGLD of step ``step_size`` over
``n_replicates`` chains (dim ``replicate``) and keeps φ̂_L, the average of φ over the master's
versions, per replicate; its squared error against the reference mean m; their summaries; and
m, σ_ref and R-hat, so that a stored result is judged again without recomputing them
(:mod:`.paired_protocol_judgements`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from simulators.seeding import derive, generator
from workbench.reference.parameters import REFERENCE_KEYS
from workbench.run.experiment import point_key

if TYPE_CHECKING:
    import xarray as xr

    from workbench.models.logistic import LogisticRegression

#: the test function judged: the model's held-out predictive log-loss
TEST_FUNCTION = "log_loss"
#: what determines the model, the reference and the starts: the same at every point
SETUP_KEYS = ("data_source", "n_train", "n_test", "prior_scale", "n_test_points",
              "n_replicates", "replicate_block", *REFERENCE_KEYS)


def laplace_approximation(model: LogisticRegression) -> tuple[np.ndarray, np.ndarray]:
    """(θ_MAP, H): the mode of U (L-BFGS from 0) and the Hessian of U there,
    H = Σ_i σ_i(1 − σ_i) x_i x_iᵀ + I/σ₀²."""
    import scipy.optimize
    from scipy import sparse
    from scipy.special import expit

    found = scipy.optimize.minimize(lambda t: float(model.potential(t)), np.zeros(model.dim),
                                    jac=model.potential_gradient, method="L-BFGS-B",
                                    options={"gtol": 1e-10})
    design = sparse.csr_matrix(model.features)
    p = expit(design @ found.x)
    hessian = ((design.T @ sparse.diags(p * (1 - p)) @ design).toarray()
               + np.eye(model.dim) / model.prior_scale**2)
    return found.x, hessian


def laplace_starts(model: LogisticRegression, rng: np.random.Generator, count: int,
                   block: int | None = None) -> np.ndarray:
    """``count`` draws ``(count, d)`` of the Laplace approximation N(θ_MAP, H⁻¹)
    (:func:`laplace_approximation`): standard normal rows drawn in order and transformed
    ``block`` rows at a time (default all), so that the draws of a block of rows are the same
    bits whatever ``count`` (a product's rounding may depend on its size)."""
    mode, hessian = laplace_approximation(model)
    factor = np.linalg.cholesky(np.linalg.inv(hessian))
    normal = rng.standard_normal((count, model.dim))
    block = count if block is None else block
    return np.concatenate([mode + normal[first:first + block] @ factor.T
                           for first in range(0, count, block)])


def model_identity(config: dict, model: LogisticRegression) -> dict:
    """What determines U and φ (the reference's identity)."""
    from scipy import sparse

    from workbench.reference import array_digest

    def digest(design):
        return array_digest(design.toarray() if sparse.issparse(design) else design)

    return {"model": "logistic-regression", "prior_scale": config["prior_scale"],
            "data": config["data_source"], "features": digest(model.features),
            "labels": array_digest(model.labels), "test_features": digest(model.test_features),
            "test_labels": array_digest(model.test_labels)}


@lru_cache(maxsize=4)
def _setup(experiment: str, seed: int, streams: str, key: str):
    from workbench.reference import reference_posterior
    from workbench.reference.parameters import reference_settings
    from workbench.systems.asynchronous.models import logistic_model

    config = json.loads(key)
    model = logistic_model(experiment, config, seed)
    [function] = [f for f in model.test_functions() if f.name == TEST_FUNCTION]
    reference = reference_posterior(model, model_identity(config, model),
                                    reference_settings(config), int(seed), (function,))
    starts = laplace_starts(model, generator(seed, experiment, f"{streams}start"),
                            config["n_replicates"], config["replicate_block"])
    return model, function, reference, starts


def setup(experiment: str, config: dict, seed, streams: str = ""):
    """(model, test function, reference Dataset, starts ``(R, d)``): the same for every point,
    built once per process and configuration (module docstring)."""
    key = json.dumps({k: config[k] for k in SETUP_KEYS}, sort_keys=True)
    return _setup(experiment, int(seed), streams, key)


def _schedule(experiment: str, config: dict, point: dict, seed, streams: str):
    """The point's downpour schedule: keyed by the point (module docstring)."""
    from workbench.systems.protocols.run import make_protocol

    return make_protocol(config, config["system"], config["n_workers"],
                         config["period"]).simulate(
        config["n_iterations"], derive(seed, experiment, point_key(point), f"{streams}schedule"))


def run_blocks(experiment: str, config: dict, point: dict, seed, blocks: Sequence[int],
               streams: str = "") -> xr.Dataset:
    """Raw results of some of the point's replicate seeding blocks (``replicate_block``):
    φ̂_L per replicate (``estimate``), the ``replicate`` coordinate holding global indices;
    each block from its own starts and the engine's streams of that block alone, the same bits
    whichever blocks share the call and whatever the point's replicate count. ``config``: the
    point's resolved configuration; ``streams``: the prefix of its random streams' names (a
    later part of a study of shared points: ``logistic-`` names the schedule's
    ``logistic-schedule``)."""
    import xarray as xr

    from workbench.engine.replay import replay
    from workbench.engine.replay_setup import block_rows
    from workbench.run import progress
    from workbench.samplers.sgld import SGLD

    model, function, _, starts = setup(experiment, config, seed, streams)
    n_updates = config["n_iterations"]
    replicates = block_rows(config["n_replicates"], config["replicate_block"], blocks)
    schedule = _schedule(experiment, config, point, seed, streams)
    run = replay(schedule, SGLD(config["step_size"]), model.minibatch_gradient(),
                 n_updates=n_updates, n_replicates=config["n_replicates"],
                 initial_position=starts[replicates][:, None, :],
                 seed=derive(seed, experiment, f"{streams}engine"),
                 batch_size=config["batch_size"], test_functions=(function,),
                 checkpoints=[n_updates], replicate_block=config["replicate_block"],
                 blocks=blocks, progress=progress.reporter(replicates.size))
    return xr.Dataset({"estimate": ("replicate", run.averages[function.name][-1, :, 0, 0])},
                      coords={"replicate": replicates})


def finish_point(experiment: str, config: dict, point: dict, seed, raw: xr.Dataset,
                 streams: str = "", dims: tuple[str, ...] = ()) -> xr.Dataset:
    """The point's Dataset (module docstring) from the raw results of all its blocks
    (:func:`run_blocks`, whose arguments these are), with the sweep ``dims`` as leading size-1
    dims."""
    import xarray as xr

    from workbench.reference import reference_value
    from workbench.stats.estimators import summarize
    from workbench.systems.asynchronous.run import at_point

    _, _, reference, _ = setup(experiment, config, seed, streams)
    n_updates = config["n_iterations"]
    schedule = _schedule(experiment, config, point, seed, streams)
    mean, error = reference_value(reference, TEST_FUNCTION, 0)
    estimate = raw["estimate"].assign_coords(replicate=np.arange(raw.sizes["replicate"]))
    summary = summarize(estimate, mean, dim="replicate", confidence=config["confidence"])
    data = {name: summary[name] for name in ("bias", "bias_se", "mse", "mse_se", "variance",
                                             "n_valid")}
    data.update({
        "estimate": estimate,
        "squared_error": (estimate - mean) ** 2,
        "reference": ((), mean),
        "reference_mc_error": ((), error),
        "reference_rhat": ((), float(reference["rhat"].sel(test_function=TEST_FUNCTION,
                                                           component=0))),
        "max_staleness": ((), int(schedule.update_staleness(n_updates).max())),
    })
    return at_point(xr.Dataset(data), point, dims)
