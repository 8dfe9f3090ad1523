"""The Sampler playground: a small live replay of a sampler against the exact oracle.

A model, a sampler and a schedule are chosen on the page; :func:`run` replays a few
replicates with :func:`workbench.engine.replay.replay` (the same engine as the experiments), keeps
thinned draws for trace plots and φ̂_L at log-spaced checkpoints, and computes the exact
E φ̂_L for the same realised schedule and the posterior value φ̄. A diverged replicate is
reported (count, first update), never raised.

Models:

- ``gaussian-mean``: the Gaussian mean with its conjugate posterior (seed 001 §5.1), with
  minibatch or full-data gradients (V_ζ = 0), any sampler, and constant staleness τ, i.i.d.
  uniform staleness on {0..τ} (:mod:`simulators.static`) or P workers of the asynchronous
  system with exponential latencies (:mod:`simulators.async_server`); exact moments from the
  stacked-state oracle (:mod:`workbench.oracles.linear_gaussian`, docs/math.md §8), stability from
  its Lyapunov equation (c < 2 sin(π/(2(2τ + 1))) for constant τ);
- ``sharded-gaussian-mean``: the same model on ``n_shards`` equal non-IID shards (blobs around
  centres uniform on [-w, w]^d, as in ``fsgld-gaussian``), sampled by SGLD with the DSGLD or
  FSGLD estimator (analytic surrogates) on federated rounds of ``local_updates`` updates at a
  uniformly drawn client (seed 002 Algorithm 1, :class:`simulators.federated.FederatedRounds`);
  exact moments from the sharded oracle given the schedule
  (:mod:`workbench.oracles.sharded_gaussian`), stability from the round map
  (:mod:`workbench.oracles.federated`).

Step sizes are given relative to the posterior variance, c = h/s² (Chen convention), as in
``stale-gaussian``'s envelope grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from simulators import validation
from simulators.async_server import AsyncServerSystem
from simulators.federated import FederatedRounds
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import Schedule
from simulators.seeding import derive, generator
from simulators.static import constant_staleness, iid_staleness
from workbench.core.phi import THETA, THETA_SQUARED
from workbench.data.sharding import equal_sizes
from workbench.engine.replay import log_checkpoints, replay
from workbench.explore import charts
from workbench.gradients.sharded import Conducive, ShardScaled
from workbench.gradients.surrogates import analytic
from workbench.models.full_data import FullDataGradient
from workbench.models.gaussian import GaussianMeanModel
from workbench.oracles.federated import round_stationary, shard_round_maps
from workbench.oracles.linear_gaussian import (
    dynamics_for,
    estimator_moments,
    finite_moments,
    stationary_variance,
)
from workbench.oracles.sharded_gaussian import ShardedGaussianOracle
from workbench.samplers import LINEAR_SAMPLER_NAMES, SGLD, make_sampler
from workbench.stats.estimators import summarize
from workbench.systems.distributed.data import make_sharded
from workbench.systems.distributed.windows import exact_moments

SHARDED = "sharded-gaussian-mean"
MODELS = ("gaussian-mean", SHARDED)
GRADIENTS = ("minibatch", "full-data")
SCHEDULES = ("constant", "uniform", "async", "federated")
ESTIMATORS = ("dsgld", "fsgld")
MAX_REPLICATES = 200
MAX_UPDATES = 20_000
MAX_STALENESS = 32  # the i.i.d. stationary oracle solves a (τ + 2)²-sized system
TRACE_POINTS = 400  # thinned draws kept per replicate for the trace plot
N_CHECKPOINTS = 40
ORACLE_BUDGET = 4e9
"""Largest L·(τ_max + 3)³ for which the exact oracle runs (about a second here): the stacked
state has τ_max + 3 entries and every update propagates its covariance."""
TEST_FUNCTIONS = (THETA, THETA_SQUARED)


@dataclass(frozen=True)
class PlaygroundSettings:
    """The page's controls (module docstring); names as in the experiments' configs."""

    model: str = "gaussian-mean"
    n_data: int = 100
    dim: int = 1
    gradient: str = "minibatch"
    batch_size: int = 10
    sampler: str = "sgld"
    relative_step: float = 0.05
    friction: float = 10.0
    schedule: str = "constant"
    staleness: int = 4
    n_workers: int = 4
    n_shards: int = 4
    centre_half_width: float = 3.0
    estimator: str = "dsgld"
    local_updates: int = 10
    n_updates: int = 2000
    n_replicates: int = 20
    initial_position: float = 1.0
    seed: int = 2016

    def validated(self) -> PlaygroundSettings:
        validation.one_of("model", self.model, MODELS)
        validation.one_of("gradient", self.gradient, GRADIENTS)
        validation.one_of("sampler", self.sampler, LINEAR_SAMPLER_NAMES)
        validation.one_of("schedule", self.schedule, SCHEDULES)
        validation.integer("n_data", self.n_data, minimum=1)
        validation.integer("dim", self.dim, minimum=1)
        validation.integer("batch_size", self.batch_size, minimum=1)
        validation.positive("relative_step", self.relative_step)
        validation.positive("friction", self.friction)
        if validation.integer("staleness", self.staleness, minimum=0) > MAX_STALENESS:
            raise validation.InvalidParameter("staleness", self.staleness,
                                              f"must be <= {MAX_STALENESS} in the playground")
        validation.integer("n_workers", self.n_workers, minimum=1)
        validation.one_of("estimator", self.estimator, ESTIMATORS)
        validation.integer("local_updates", self.local_updates, minimum=1)
        validation.non_negative("centre_half_width", self.centre_half_width)
        equal_sizes(self.n_data, self.n_shards)  # 1 <= n_shards <= n_data
        if (self.model == SHARDED) != (self.schedule == "federated"):
            raise validation.InvalidParameter(
                "schedule", self.schedule, "federated rounds go with the sharded model, and "
                                           "only with it")
        if self.model == SHARDED and self.sampler != "sgld":
            raise validation.InvalidParameter(
                "sampler", self.sampler, "the sharded model runs SGLD (DSGLD and FSGLD are "
                                         "its gradient estimators)")
        if self.model == SHARDED and self.gradient != "minibatch":
            raise validation.InvalidParameter(
                "gradient", self.gradient, "clients draw minibatches from their own shard")
        validation.finite("initial_position", self.initial_position)
        validation.integer("seed", self.seed, minimum=0)
        for field, maximum in (("n_updates", MAX_UPDATES), ("n_replicates", MAX_REPLICATES)):
            value = validation.integer(field, getattr(self, field), minimum=1)
            if value > maximum:
                raise validation.InvalidParameter(
                    field, value, f"must be <= {maximum} in the playground (run an experiment "
                                  "for more)")
        if self.n_replicates < 2:
            raise validation.InvalidParameter("n_replicates", self.n_replicates,
                                              "needs at least 2 replicates for an interval")
        return self


@dataclass(frozen=True)
class PlaygroundRun:
    """What the page shows.

    traces: ``(replicate, draw, component)`` thinned positions at ``trace_iterations``;
    estimates: φ̂_L summary (``mean``, intervals, ``n_valid``) over dims (test_function,
    checkpoint, component); exact_mean: exact E φ̂_L on the same dims, or None when the
    oracle would take too long (``oracle_note`` says why); posterior_value: φ̄.
    """

    settings: PlaygroundSettings
    step_size: float
    posterior_mean: np.ndarray
    posterior_variance: float
    gradient_noise_variance: np.ndarray
    schedule: Schedule
    mean_staleness: float
    stable: bool
    stability_note: str
    trace_iterations: np.ndarray
    traces: np.ndarray
    iterations: np.ndarray
    estimates: xr.Dataset
    exact_mean: xr.DataArray | None
    oracle_note: str
    posterior_value: xr.DataArray
    diverged_at: np.ndarray

    @property
    def n_diverged(self) -> int:
        return int(np.count_nonzero(self.diverged_at >= 0))

    def divergence_message(self) -> str:
        """Empty when no replicate diverged, else what happened and what to try."""
        if not self.n_diverged:
            return ""
        first = int(self.diverged_at[self.diverged_at >= 0].min())
        return (f"{self.n_diverged} of {self.diverged_at.size} replicates diverged (first at "
                f"update {first}; h = {self.step_size:.3g}). {self.stability_note} Diverged "
                "replicates are left out of the estimate; lower the relative step c.")

    def final_table(self) -> list[dict]:
        """Per test function and coordinate: estimate at the last checkpoint, its interval,
        the exact E φ̂_L and φ̄."""
        rows = []
        last = self.estimates.isel(checkpoint=-1)
        for function in self.estimates["test_function"].values.tolist():
            for j in self.estimates["component"].values.tolist():
                at = last.sel(test_function=function, component=j)
                low, high = interval(at)
                rows.append({
                    "test function": function, "component": j,
                    "estimate": float(at["mean"]),
                    "interval low": float(low), "interval high": float(high),
                    "exact E φ̂_L": (float(self.exact_mean.isel(checkpoint=-1).sel(
                        test_function=function, component=j)) if self.exact_mean is not None
                        else float("nan")),
                    "posterior φ̄": float(self.posterior_value.sel(test_function=function,
                                                                   component=j)),
                    "valid replicates": int(at["n_valid"]),
                })
        return rows


def interval(summary: xr.Dataset) -> tuple[xr.DataArray, xr.DataArray]:
    """The 95% interval of φ̂_L from a summary's bias interval (the estimate shifted by it)."""
    mean = summary["mean"]
    return (mean - (summary["bias"] - summary["bias_lower"]),
            mean + (summary["bias_upper"] - summary["bias"]))


def trace_chart(run: PlaygroundRun, component: int, shown: int = 5) -> alt.LayerChart:
    """Traces of θ[component] for the first ``shown`` replicates over the updates, with the
    posterior mean (dotted) and the band mean ± 2 s."""
    shown = min(shown, run.traces.shape[0])
    mean, sd = float(run.posterior_mean[component]), float(np.sqrt(run.posterior_variance))
    updates = run.trace_iterations
    frame = pd.concat([
        *(charts.rows(updates, run.traces[r, :, component], f"replicate {r}",
                      [f"replicate {r}, update {u}" for u in updates], style="line")
          for r in range(shown)),
        charts.rows(None, mean, "posterior mean", "exact", style="hrule"),
        charts.rows(None, None, "± 2 s", "exact", style="hband", lower=mean - 2 * sd,
                    upper=mean + 2 * sd)], ignore_index=True)
    return charts.line_chart(frame, x_title="update", y_title=f"θ[{component}]",
                             legend="bottom")


def estimate_chart(run: PlaygroundRun, function: str, component: int) -> alt.LayerChart:
    """The running estimate φ̂_L (mean over replicates) with its 95% interval against the
    samples averaged L, the oracle's exact E φ̂_L for this schedule dashed beside it, and
    the posterior value φ̄ (dotted); log L axis."""
    at = run.estimates.sel(test_function=function, component=component)
    lower, upper = interval(at)
    exact = (None if run.exact_mean is None
             else run.exact_mean.sel(test_function=function, component=component).values)
    points = [f"L = {n}" for n in run.iterations]
    value = float(run.posterior_value.sel(test_function=function, component=component))
    frame = pd.concat([
        charts.rows(run.iterations, at["mean"].values, "mean over replicates (95% interval)",
                    points, lower=lower.values, upper=upper.values, reference=exact),
        charts.rows(None, value, "posterior φ̄", "exact", style="hrule")], ignore_index=True)
    return charts.line_chart(frame, x_title="samples averaged L", y_title=f"φ̂_L({function})",
                             log_x=True, reference_title="exact E φ̂_L (oracle)",
                             legend="bottom")


@dataclass(frozen=True)
class _Setup:
    """What a model and its schedule give the replay, and the exact values for it.

    exact: E φ̂_L per test function as ``(checkpoint, component)`` arrays, or None with
    ``oracle_note`` saying why.
    """

    model: GaussianMeanModel
    sampler: object
    gradient: object
    batch_size: int
    schedule: Schedule
    gradient_noise_variance: np.ndarray
    stable: bool
    stability_note: str
    exact: dict[str, np.ndarray] | None
    oracle_note: str = ""


def make_schedule(settings: PlaygroundSettings) -> tuple[Schedule, np.ndarray | None]:
    """The schedule and, for i.i.d. staleness, its distribution (for the stationary oracle)."""
    length, seed = settings.n_updates, derive(settings.seed, "playground", "schedule")
    if settings.schedule == "constant":
        return constant_staleness(length, settings.staleness), None
    if settings.schedule == "uniform":
        probabilities = np.full(settings.staleness + 1, 1.0 / (settings.staleness + 1))
        return iid_staleness(length, probabilities, seed), probabilities
    if settings.schedule == "federated":
        clients = np.full(settings.n_shards, 1.0 / settings.n_shards)
        return FederatedRounds(tuple(clients), settings.local_updates).simulate(length,
                                                                              seed), None
    system = AsyncServerSystem(settings.n_workers, WorkerTiming(LatencyModel("exponential")))
    return system.simulate(length, seed), None


def _stability(settings: PlaygroundSettings, dynamics, precision: float, vz: np.ndarray,
               realised: np.ndarray, probabilities) -> tuple[bool, str]:
    """Whether the stale recursion is mean-square stable (Lyapunov, docs/math.md §7.4, §8.5)."""
    if settings.schedule == "async":
        tau = int(realised.max())
        what = f"the largest realised staleness τ = {tau}"
        variance = stationary_variance(dynamics, precision, vz, staleness=tau)
    else:
        tau = settings.staleness
        what = f"staleness τ = {tau}" + (" (uniform on 0..τ)" if probabilities is not None
                                         else "")
        variance = stationary_variance(dynamics, precision, vz, staleness=tau,
                                       probabilities=probabilities)
    if np.all(np.isfinite(variance)):
        return True, f"The recursion is stable at c = {settings.relative_step:g} with {what}."
    limit = 2 * np.sin(np.pi / (2 * (2 * tau + 1)))
    return False, (f"The stale recursion is unstable at c = {settings.relative_step:g} with "
                   f"{what}; for SGLD with constant staleness the limit is "
                   f"c < 2 sin(π/(2(2τ+1))) = {limit:.3g}.")


def _stale_setup(settings: PlaygroundSettings, checkpoints: np.ndarray) -> _Setup:
    """The Gaussian mean with stale gradients (module docstring)."""
    model = GaussianMeanModel.generate(generator(settings.seed, "playground", "data"),
                                       settings.n_data, settings.dim)
    sampler = make_sampler(settings.sampler, settings.relative_step * model.posterior_variance,
                           settings.friction)
    if settings.gradient == "minibatch":
        gradient = model.minibatch_gradient()
        vz = model.gradient_noise_variance(settings.batch_size)
        batch_size = settings.batch_size
    else:
        gradient = FullDataGradient(model)
        vz = np.zeros(model.dim)
        batch_size = 1  # indices are drawn and ignored
    schedule, probabilities = make_schedule(settings)
    length = settings.n_updates
    dynamics = dynamics_for(sampler.describe())
    realised = schedule.update_staleness(length)[:, 0]
    stable, note = _stability(settings, dynamics, model.precision, vz, realised, probabilities)
    if length * (int(realised.max()) + 3) ** 3 > ORACLE_BUDGET:
        return _Setup(model, sampler, gradient, batch_size, schedule, vz, stable, note, None, (
            f"The exact oracle is skipped: with staleness up to {int(realised.max())} over "
            f"{length} updates its stacked state is too large for an interactive page; run "
            "fewer updates or workers."))
    mu = model.posterior_mean
    moments = finite_moments(dynamics, model.precision, realised, checkpoints,
                             fourth_moments=False)
    exact = estimator_moments(moments, mu, settings.initial_position - mu, vz)
    return _Setup(model, sampler, gradient, batch_size, schedule, vz, stable, note,
                  {f.name: exact[f.name]["mean"] for f in TEST_FUNCTIONS})


def _federated_setup(settings: PlaygroundSettings, checkpoints: np.ndarray) -> _Setup:
    """DSGLD or FSGLD on non-IID shards with federated rounds (module docstring)."""
    sharded = make_sharded("playground", {
        "shard_sizes": equal_sizes(settings.n_data, settings.n_shards), "dim": settings.dim,
        "data": "blobs", "centre_half_width": settings.centre_half_width, "noise_scale": 1.0,
        "prior_scale": 1.0, "prior_mean": 0.0}, settings.seed)
    model = sharded.model
    h = settings.relative_step * model.posterior_variance
    schedule, _ = make_schedule(settings)
    batch = settings.batch_size
    surrogates = analytic(sharded) if settings.estimator == "fsgld" else None
    gradient = ShardScaled(sharded.shard_gradient())
    if surrogates is not None:
        gradient = Conducive(gradient, surrogates)
    oracle = ShardedGaussianOracle.for_model(sharded, batch, surrogates=surrogates)
    with np.errstate(over="ignore", invalid="ignore"):  # an unstable chain's moments blow up
        moments = exact_moments(oracle, schedule, settings.n_updates, h,
                                np.full(model.dim, settings.initial_position), checkpoints)
    exact = {"theta": moments.sum_mean[:, 0] / checkpoints[:, None],
             "theta_squared": np.diagonal(moments.sum_second[:, 0], axis1=-2, axis2=-1)
             / checkpoints[:, None]}
    clients = np.full(settings.n_shards, 1.0 / settings.n_shards)
    a, c, q = shard_round_maps(oracle, clients, h, model.posterior_mean)
    stable = bool(np.all(np.isfinite(round_stationary(a, c, q, clients,
                                                      settings.local_updates)[1])))
    what = (f"{settings.estimator.upper()} with {settings.local_updates} local updates per "
            f"round on {settings.n_shards} clients")
    note = (f"The round map is mean-square stable at c = {settings.relative_step:g} for {what}."
            if stable else
            f"{what} is unstable at c = {settings.relative_step:g}: over a round the clients' "
            "updates expand the second moment (with equal shards chosen uniformly, SGLD needs "
            "c < 2).")
    within = (model.n_data**2 * sharded.shard_variances.mean(axis=0)
              / (batch * model.noise_scale**4))
    return _Setup(model, SGLD(h), gradient, batch, schedule, within, stable, note, exact)


def run(settings: PlaygroundSettings) -> PlaygroundRun:
    """Replay the playground's settings (module docstring)."""
    settings = settings.validated()
    length = settings.n_updates
    checkpoints = log_checkpoints(length, N_CHECKPOINTS)
    setup = (_federated_setup if settings.model == SHARDED else _stale_setup)(settings,
                                                                               checkpoints)
    model = setup.model
    result = replay(setup.schedule, setup.sampler, setup.gradient, n_updates=length,
                    n_replicates=settings.n_replicates,
                    initial_position=np.full(model.dim, settings.initial_position),
                    seed=derive(settings.seed, "playground", "engine"),
                    batch_size=setup.batch_size, test_functions=TEST_FUNCTIONS,
                    checkpoints=checkpoints, thin=max(1, length // TRACE_POINTS))

    names = [f.name for f in TEST_FUNCTIONS]
    mu, s2 = model.posterior_mean, model.posterior_variance
    coords = {"test_function": names, "checkpoint": checkpoints,
              "replicate": np.arange(settings.n_replicates), "component": np.arange(model.dim)}
    estimate = xr.DataArray(np.stack([result.averages[n][:, :, 0, :] for n in names]),
                            dims=("test_function", "checkpoint", "replicate", "component"),
                            coords=coords)
    posterior_value = xr.DataArray(np.stack([mu, mu**2 + s2]),
                                   dims=("test_function", "component"),
                                   coords={"test_function": names,
                                           "component": coords["component"]})
    exact_mean = None if setup.exact is None else xr.DataArray(
        np.stack([setup.exact[n] for n in names]),
        dims=("test_function", "checkpoint", "component"),
        coords={k: coords[k] for k in ("test_function", "checkpoint", "component")})
    realised = setup.schedule.update_staleness(length)[:, 0]
    return PlaygroundRun(
        settings=settings, step_size=setup.sampler.step_size, posterior_mean=mu,
        posterior_variance=s2, gradient_noise_variance=setup.gradient_noise_variance,
        schedule=setup.schedule, mean_staleness=float(realised.mean()), stable=setup.stable,
        stability_note=setup.stability_note, trace_iterations=result.draw_iterations,
        traces=result.draws[:, 0], iterations=checkpoints,
        estimates=summarize(estimate, posterior_value), exact_mean=exact_mean,
        oracle_note=setup.oracle_note, posterior_value=posterior_value,
        diverged_at=result.diverged_at[:, 0])
