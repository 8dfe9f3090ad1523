"""The logistic-regression half of ``downpour-period``: downpour SGLD (seed 003 Algorithm 1) on
Bayesian logistic regression, judged against a reference posterior.

Model: :class:`workbench.models.logistic.LogisticRegression` on a9a-shaped data or a LIBSVM
pair (:func:`workbench.systems.asynchronous.models.logistic_model`, seed 001 §5.1). The
test function is the held-out predictive log-loss φ(θ) = −(1/M) Σ_j log p(y_j | x_j, θ); its
posterior expectation has no closed form, so the truth is a reference posterior
(:mod:`workbench.reference`: HMC chains, their estimate m of E_π φ with Monte Carlo error σ_ref
and R-hat), never a point value taken as exact.

One sweep point (π, P) runs the downpour system of :mod:`..protocols.run` for
``logistic_iterations`` master versions L and replays it with SGLD of step
``logistic_step_size`` over ``logistic_replicates`` replicates (dim ``logistic_replicate``);
φ̂_L is the average of φ over the master's versions. Replicates start from independent draws
of the Laplace approximation N(θ_MAP, H⁻¹) (H the Hessian of U at the mode), near the
posterior, but not at SGLD's stationary law: the held-out log-loss still drifts over the first
~1/(h·λ_min(H)) local steps, and P = 1 with period π averages π·L of them, so the synchronous
runs differ across π by this transient (:mod:`.checks`, ``benchmarks/downpour_p1.py``). The
excess over P = 1 at the same π compares runs of the same π·L local steps from the same starts.

Seeds: the schedule is keyed by the point; the data, the starts, the reference and the engine's
streams by the experiment only, so every point uses the same starts, noise and minibatches
(common random numbers: the excess over P = 1 at the same π is measured replicate by
replicate, as in the Gaussian half).

The reference is computed once per process and configuration (a module-level cache): it is the
same for every point, and its settings (``reference_*``) are part of every point's identity.
"""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
import scipy.optimize
import xarray as xr
from scipy import sparse
from scipy.special import expit

from simulators.schedule import Schedule
from simulators.seeding import derive, generator
from workbench.engine.replay import replay
from workbench.experiments.downpour_period.parameters import DATA_KEYS
from workbench.models.logistic import LogisticRegression
from workbench.reference import array_digest, reference_posterior, reference_value
from workbench.reference.parameters import REFERENCE_KEYS, reference_settings
from workbench.run.experiment import point_key
from workbench.samplers.sgld import SGLD
from workbench.stats.estimators import summarize
from workbench.systems.asynchronous.models import logistic_model
from workbench.systems.protocols.run import make_protocol

TEST_FUNCTION = "log_loss"
PREFIX = "logistic_"


def laplace_approximation(model: LogisticRegression) -> tuple[np.ndarray, np.ndarray]:
    """(θ_MAP, H): the mode of U (L-BFGS from 0) and the Hessian of U there,
    H = Σ_i σ_i(1 − σ_i) x_i x_iᵀ + I/σ₀²."""
    found = scipy.optimize.minimize(lambda t: float(model.potential(t)), np.zeros(model.dim),
                                    jac=model.potential_gradient, method="L-BFGS-B",
                                    options={"gtol": 1e-10})
    design = sparse.csr_matrix(model.features)
    p = expit(design @ found.x)
    hessian = ((design.T @ sparse.diags(p * (1 - p)) @ design).toarray()
               + np.eye(model.dim) / model.prior_scale**2)
    return found.x, hessian


def laplace_starts(model: LogisticRegression, rng: np.random.Generator,
                   count: int) -> np.ndarray:
    """``count`` draws ``(count, d)`` of the Laplace approximation N(θ_MAP, H⁻¹)
    (:func:`laplace_approximation`)."""
    mode, hessian = laplace_approximation(model)
    factor = np.linalg.cholesky(np.linalg.inv(hessian))
    return mode + rng.standard_normal((count, model.dim)) @ factor.T


def _digest(design) -> str:
    return array_digest(design.toarray() if sparse.issparse(design) else design)


def _identity(config: dict, model: LogisticRegression) -> dict:
    """What determines U and φ (recorded with the reference, :func:`reference_posterior`)."""
    return {"model": "logistic-regression", "prior_scale": config["prior_scale"],
            "data": config["data_source"], "features": _digest(model.features),
            "labels": array_digest(model.labels), "test_features": _digest(model.test_features),
            "test_labels": array_digest(model.test_labels)}


@lru_cache(maxsize=4)
def _cached(experiment: str, seed: int, key: str):
    config = json.loads(key)
    model = logistic_model(experiment, config, seed)
    [function] = [f for f in model.test_functions() if f.name == TEST_FUNCTION]
    reference = reference_posterior(model, _identity(config, model), reference_settings(config),
                                    int(seed), (function,))
    starts = laplace_starts(model, generator(seed, experiment, "logistic-start"),
                            config["logistic_replicates"])
    return model, function, reference, starts


def logistic_setup(experiment: str, config: dict, seed):
    """(model, test function, reference Dataset, starts ``(R, d)``), the same for every
    point (module docstring)."""
    keys = DATA_KEYS + REFERENCE_KEYS + ("logistic_replicates",)
    key = json.dumps({k: config[k] for k in keys}, sort_keys=True)
    return _cached(experiment, int(seed), key)


def stored_reference(dataset: xr.Dataset) -> xr.Dataset:
    """The reference's m, σ_ref and R-hat as kept with the points (the same at every point),
    in the form :func:`workbench.reference.reference_check` reads."""
    first = {dim: 0 for dim in ("period", "workers") if dim in dataset.dims}
    at = dataset.isel(first)
    return xr.Dataset({"mean": at[f"{PREFIX}reference"],
                       "mean_mc_error": at[f"{PREFIX}reference_mc_error"],
                       "rhat": at[f"{PREFIX}reference_rhat"]}).reset_coords(drop=True).expand_dims(
        test_function=[TEST_FUNCTION], component=[0])


def replay_logistic(schedule: Schedule, model: LogisticRegression, function, starts, config: dict,
                    seed) -> np.ndarray:
    """φ̂_L per replicate ``(R,)`` of SGLD replaying ``schedule`` for ``logistic_iterations``
    updates from ``starts`` (NaN where a replicate diverged)."""
    n_updates, n_replicates = config["logistic_iterations"], starts.shape[0]
    run = replay(schedule, SGLD(config["logistic_step_size"]), model.minibatch_gradient(),
                 n_updates=n_updates, n_replicates=n_replicates,
                 initial_position=starts[:, None, :], seed=seed,
                 batch_size=config["batch_size"], test_functions=(function,),
                 checkpoints=[n_updates], replicate_block=n_replicates)
    return run.averages[function.name][-1, :, 0, 0]


def run_logistic(experiment: str, config: dict, point: dict, seed, n_workers: int,
                 period: int) -> xr.Dataset:
    """The logistic half at one point: per replicate φ̂_L and its squared error against the
    reference mean m, their summaries (``logistic_`` + the names of
    :func:`workbench.stats.estimators.summarize`), and the reference's m, σ_ref and R-hat."""
    model, function, reference, starts = logistic_setup(experiment, config, seed)
    schedule = make_protocol(config, "downpour", n_workers, period).simulate(
        config["logistic_iterations"], derive(seed, experiment, point_key(point),
                                              "logistic-schedule"))
    values = replay_logistic(schedule, model, function, starts, config,
                             derive(seed, experiment, "logistic-engine"))
    mean, error = reference_value(reference, TEST_FUNCTION, 0)
    dim = f"{PREFIX}replicate"
    estimate = xr.DataArray(values, dims=dim, coords={dim: np.arange(values.size)})
    summary = summarize(estimate, mean, dim=dim, confidence=config["confidence"])
    data = {f"{PREFIX}{name}": summary[name] for name in ("bias", "bias_se", "mse", "mse_se",
                                                          "variance", "n_valid")}
    data.update({
        f"{PREFIX}estimate": estimate,
        f"{PREFIX}squared_error": (estimate - mean) ** 2,
        f"{PREFIX}reference": ((), mean),
        f"{PREFIX}reference_mc_error": ((), error),
        f"{PREFIX}reference_rhat": ((), float(reference["rhat"].sel(
            test_function=TEST_FUNCTION, component=0))),
        f"{PREFIX}max_staleness": ((), int(schedule.update_staleness(
            config["logistic_iterations"]).max())),
    })
    return xr.Dataset(data)
