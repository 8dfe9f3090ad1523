"""Lesson (b): non-IID shards and long local trajectories — D-SGLD drifts to the mixture of
local posteriors, FSGLD stays put.

Seed 002 Algorithm 1: each round the server draws a client s with probability f_s and the
chain makes T local updates on that client's shard alone. D-SGLD's gradient scales the shard's
likelihood gradient by N_s/(N f_s) (seed 004 Eq. 2): unbiased on average over the client draw,
but within a round it pulls the chain towards the shard's own stationary law p_ε(θ | X_s).
When the shards are not IID those laws sit far apart; once T exceeds the chain's relaxation
time (about s²/h updates) the chain settles on each before it moves on, and its samples follow
the mixture of local posteriors Σ_s f_s p_ε(θ | X_s) (seed 004 §3.2.1). FSGLD adds the
conducive gradient g_s(θ) = ∇log q(θ) - ∇log q_s(θ)/f_s (seed 002 Eq. 5) with q_s a Gaussian
surrogate of shard s's likelihood; with exact surrogates every local gradient already points at
the global posterior and T no longer matters.

The lesson shows it with the data of ``fsgld-gaussian`` (seed 002 §5.1: ten shards of 200
points around centres uniform on [-6, 6]², h = 5·10⁻⁵ in the Chen convention, analytic
surrogates; the command line's default seed), every client computing its gradient on its whole
shard (minibatch = shard, without replacement), so that there is no minibatch noise and
everything the chains do differently comes from the local updates:

- the curves are exact: the stationary E(θ - μ)² per coordinate, averaged over the T positions
  of a round and over the client draws (:func:`workbench.oracles.federated.round_stationary`,
  docs/math.md §7: Φ(a, T) for D-SGLD), in units of the posterior variance s²; the mixture's value
  comes from the per-shard stationary laws (:mod:`workbench.systems.distributed.references`);
- at the chosen T a small live run replays D-SGLD and FSGLD on one federated schedule
  (:class:`simulators.federated.FederatedRounds`, the experiment's own ``Federation``) with the
  engine, and the sharded oracle gives the exact expectation of the same window average given
  that schedule; a conditional oracle check judges each measurement against it.

:func:`cloud_chart` and :func:`spread_chart` draw both as interactive charts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from bounds.verdict import Verdict
from simulators import validation
from simulators.seeding import derive
from workbench import experiments
from workbench.explore import charts
from workbench.oracles.federated import round_stationary, shard_round_maps
from workbench.samplers import SGLD
from workbench.systems.distributed import chen_step_size
from workbench.systems.distributed.arm import run_arm
from workbench.systems.distributed.federation import METHODS, Federation
from workbench.systems.distributed.references import local_components, references
from workbench.systems.distributed.windows import about, conditional_check

NAME = "lesson-local-updates"
EXPERIMENT = "fsgld-gaussian"
LOCAL_UPDATES = (1, 3, 10, 30, 100, 300, 1000)  # the page's control
CURVE_LOCAL_UPDATES = tuple(sorted({*LOCAL_UPDATES, *(int(t) for t in np.unique(
    np.round(np.geomspace(1, LOCAL_UPDATES[-1], 31))))}))
N_CHAINS = 8  # independent federated chains, each with its own client draws
N_REPLICATES = 2  # replicates per chain (same schedule, fresh noise)
MIN_BURN_IN = 200  # updates, at least one round: 20 relaxation times at h/s² = 0.1
MIN_WINDOW = 1000  # updates after the burn-in, and at least ROUNDS rounds
ROUNDS = 5
DRAWS = 100  # thinned draws per chain for the sample cloud
FALSE_FAILURE_RATE = 0.001  # family-wise, over the two estimators' oracle checks
SEED = 2016  # the command line's default seed: the data of `workbench run fsgld-gaussian`


def _configuration(local_updates: int) -> dict:
    """``fsgld-gaussian``'s defaults with the lesson's run length and whole-shard gradients."""
    experiment = experiments.get(EXPERIMENT)
    defaults = experiment.configure()
    burn_in = local_updates * -(-MIN_BURN_IN // local_updates)
    window = local_updates * max(ROUNDS, -(-MIN_WINDOW // local_updates))
    return experiment.configure({
        "local_updates": [local_updates], "burn_in": burn_in, "n_iterations": window,
        "n_chains": N_CHAINS, "n_replicates": N_REPLICATES, "thin": max(1, window // DRAWS),
        "batch_size": min(defaults["shard_sizes"]), "replacement": False})


@dataclass(frozen=True)
class Setting:
    """What every T shares: data, surrogates, oracles and the exact stationary curves."""

    federation: Federation  # built at T = 1; data, surrogates and oracles do not depend on T
    step_size: float
    posterior_mean: np.ndarray
    posterior_variance: float
    local_means: np.ndarray  # (S, d): each shard's stationary law under D-SGLD alone
    mixture: float  # E(θ - μ)² per coordinate / s² of the mixture of local posteriors
    curves: xr.DataArray  # (estimator, local_updates): exact stationary E(θ - μ)² per coord / s²

    @property
    def relative_step(self) -> float:
        """c = h/s²: the chain relaxes in about 1/c updates."""
        return self.step_size / self.posterior_variance


def _per_coordinate(reference, mean: np.ndarray, second: np.ndarray, variance: float):
    """E(θ - r)ᵀ(θ - r)/(d s²) from the window averages of θ and θθᵀ (any leading axes)."""
    moment = about(reference, mean, second)
    return np.trace(moment, axis1=-2, axis2=-1) / (mean.shape[-1] * variance)


def _stationary(oracle, probabilities, step_size: float, mu, local: int) -> float:
    """Exact stationary E(θ - μ)² per coordinate, averaged over a round of T = ``local``
    updates and over the client draws (docs/math.md §13)."""
    a, c, q = shard_round_maps(oracle, probabilities, step_size, mu)
    return float(round_stationary(a, c, q, probabilities, local)[1].mean())


@cache
def setting() -> Setting:
    """The data, oracles and exact curves (computed once; well under a second)."""
    config = _configuration(1)
    federation = Federation.build(EXPERIMENT, config, SEED, 1)
    model = federation.sharded.model
    mu, s2 = model.posterior_mean, model.posterior_variance
    h = chen_step_size(config["welling_teh_step_size"])
    probabilities = federation.probabilities
    curves = np.array([[_stationary(federation.oracles[method], probabilities, h, mu, local)
                        for local in CURVE_LOCAL_UPDATES] for method in METHODS]) / s2
    refs = references(federation.sharded, federation.oracles["dsgld"], probabilities, h,
                      config["batch_size"])
    mixture_mean, mixture_covariance = refs["local_mixture"]
    mixture = float((np.sum((mixture_mean - mu) ** 2) + np.trace(mixture_covariance))
                    / (mu.size * s2))
    local_means, _ = local_components(federation.oracles["dsgld"], probabilities, h)
    return Setting(federation, h, mu, s2, local_means, mixture,
                   xr.DataArray(curves, dims=("estimator", "local_updates"),
                                coords={"estimator": list(METHODS),
                                        "local_updates": list(CURVE_LOCAL_UPDATES)}))


@dataclass(frozen=True)
class LocalUpdatesLesson:
    """One T: exact stationary values, the live run's measurements and their exact expectation.

    Every value is E(θ - μ)² per coordinate in posterior variances s²: ``stationary`` over dim
    ``estimator`` (exact, averaged over a round and over client draws); ``measured_runs`` over
    (estimator, replicate, chain) (each run's window average) and ``exact_runs`` over
    (estimator, chain) (the sharded oracle's expectation of that window average given the
    chain's schedule); ``samples``: thinned draws of replicate 0 over (estimator, chain, draw,
    component); ``verdicts``: the conditional oracle check of each estimator.
    """

    local_updates: int
    setting: Setting
    burn_in: int
    window: int
    stationary: xr.DataArray
    measured_runs: xr.DataArray
    exact_runs: xr.DataArray
    samples: xr.DataArray
    verdicts: tuple[Verdict, ...]

    @property
    def measured(self) -> xr.DataArray:
        """Mean over replicates and chains, per estimator."""
        return self.measured_runs.mean(("replicate", "chain"))

    @property
    def exact_given_schedule(self) -> xr.DataArray:
        """The exact expectation of :attr:`measured` given the run's schedules."""
        return self.exact_runs.mean("chain")

    def table(self) -> list[dict]:
        """One row per estimator, as the page shows it."""
        return [{"estimator": method.upper(),
                 "stationary (exact)": float(self.stationary.sel(estimator=method)),
                 "this run, exact given its schedule": float(
                     self.exact_given_schedule.sel(estimator=method)),
                 "this run, measured": float(self.measured.sel(estimator=method)),
                 "Monte Carlo error": verdict.mc_error,
                 "oracle check": verdict.verdict}
                for method, verdict in zip(METHODS, self.verdicts, strict=True)]


#: relative margin of the lesson's oracle check: the second moment within 2 %
RELATIVE_MARGIN = 0.02


def check(method: str, local_updates: int, measured_runs, exact_runs) -> Verdict:
    """The conditional oracle check of one estimator's runs (windows.conditional_check),
    judged on the log ratio within :data:`RELATIVE_MARGIN`."""
    return conditional_check(
        f"oracle/{method}/T={local_updates}/second_moment", np.asarray(measured_runs),
        np.asarray(exact_runs), FALSE_FAILURE_RATE, len(METHODS),
        detail="window average of (θ - μ)ᵀ(θ - μ)/(d s²) against the exact oracle given each "
               "chain's schedule", evidence={"local_updates": local_updates},
        margin=RELATIVE_MARGIN, relative=True)


@cache
def lesson(local_updates: int) -> LocalUpdatesLesson:
    """Live run and exact values at T = ``local_updates`` (cached per value; well under a
    second at T = 10, about a second at T = 1000 on the reference machine)."""
    local = validation.integer("local_updates", local_updates, minimum=1)
    if local > LOCAL_UPDATES[-1]:
        raise validation.InvalidParameter("local_updates", local,
                                          f"must be <= {LOCAL_UPDATES[-1]} in the lesson")
    shared = setting()
    config = _configuration(local)
    federation = Federation.build(EXPERIMENT, config, SEED, local)
    burn_in, window = config["burn_in"], config["n_iterations"]
    mu, s2 = shared.posterior_mean, shared.posterior_variance
    fields = {k: [] for k in ("stationary", "measured", "exact", "samples")}
    for method in METHODS:
        oracle = federation.oracles[method]
        arm = run_arm(federation.schedule, SGLD(shared.step_size), federation.estimators[method],
                      oracle, config, derive(SEED, NAME, f"local_updates={local}", method),
                      burn_in=burn_in, n_updates=burn_in + window,
                      initial=np.full(mu.size, config["initial_position"]),
                      potential_gradient=federation.sharded.model.potential_gradient)
        fields["stationary"].append(_stationary(oracle, federation.probabilities,
                                                shared.step_size, mu, local) / s2)
        fields["measured"].append(_per_coordinate(mu, arm.window_mean, arm.window_second, s2))
        fields["exact"].append(_per_coordinate(mu, arm.exact_window_mean,
                                               arm.exact_window_second, s2))
        fields["samples"].append(arm.samples)
    estimator = {"estimator": list(METHODS)}
    measured_runs = xr.DataArray(np.stack(fields["measured"]),
                                 dims=("estimator", "replicate", "chain"), coords=estimator)
    exact_runs = xr.DataArray(np.stack(fields["exact"]), dims=("estimator", "chain"),
                              coords=estimator)
    verdicts = tuple(check(m, local, measured_runs.sel(estimator=m), exact_runs.sel(estimator=m))
                     for m in METHODS)
    return LocalUpdatesLesson(
        local, shared, burn_in, window,
        xr.DataArray(fields["stationary"], dims="estimator", coords=estimator),
        measured_runs, exact_runs,
        xr.DataArray(np.stack(fields["samples"]), dims=("estimator", "chain", "draw", "component"),
                     coords=estimator),
        verdicts)


#: the estimators' names and colours in the charts
LABELS = {"dsgld": "DSGLD", "fsgld": "FSGLD"}
CLOUD_COLOURS = {"data": "lightgrey", "local posteriors": "grey", "DSGLD samples": "#ff7f0e",
                 "FSGLD samples": "#1f77b4", "posterior (2 sd)": "#d62728"}
ZOOM_SD = 8  # the zoomed cloud spans the posterior mean ± this many posterior sd


def _cloud(points: np.ndarray, curve: str, names) -> pd.DataFrame:
    return pd.DataFrame({"theta_1": points[:, 0], "theta_2": points[:, 1], "curve": curve,
                         "point": list(names), "order": np.arange(len(points))})


def cloud_chart(lesson: LocalUpdatesLesson, zoom: bool = False) -> alt.LayerChart:
    """The first two coordinates of both estimators' samples (replicate 0 of every chain)
    over the shards' data, each shard's local posterior mean and the posterior's 2-sd circle;
    ``zoom``: only the posterior mean ± :data:`ZOOM_SD` posterior sd."""
    shared = lesson.setting
    data = shared.federation.sharded
    mu, sd = shared.posterior_mean, float(np.sqrt(shared.posterior_variance))
    shards = np.repeat(np.arange(len(data.shard_sizes)), data.shard_sizes)
    angle = np.linspace(0, 2 * np.pi, 121)
    circle = mu[:2] + 2 * sd * np.column_stack([np.cos(angle), np.sin(angle)])
    frames = [_cloud(data.model.data, "data", (f"shard {s}" for s in shards)),
              _cloud(shared.local_means, "local posteriors",
                     (f"shard {s}" for s in range(len(shared.local_means))))]
    for method in METHODS:
        samples = lesson.samples.sel(estimator=method)
        chains, draws = np.meshgrid(samples["chain"].values, samples["draw"].values,
                                    indexing="ij")
        frames.append(_cloud(samples.values.reshape(-1, samples.shape[-1]),
                             f"{LABELS[method]} samples",
                             (f"chain {c}, draw {d}" for c, d in zip(chains.ravel(),
                                                                    draws.ravel(), strict=True))))
    frames.append(_cloud(circle, "posterior (2 sd)", ("posterior mean ± 2 sd",) * len(circle)))
    frame = pd.concat(frames, ignore_index=True)
    if zoom:
        low, high = mu[:2] - ZOOM_SD * sd, mu[:2] + ZOOM_SD * sd
        frame = frame[frame["theta_1"].between(low[0], high[0])
                      & frame["theta_2"].between(low[1], high[1])]
    picked, shown = charts.legend_toggle()
    colour = alt.Color("curve:N", title=None, legend=alt.Legend(orient="bottom", columns=3),
                       scale=alt.Scale(domain=list(CLOUD_COLOURS),
                                       range=list(CLOUD_COLOURS.values())))
    base = alt.Chart(frame).encode(
        x=alt.X("theta_1:Q", title="θ₁", scale=alt.Scale(zero=False)),
        y=alt.Y("theta_2:Q", title="θ₂", scale=alt.Scale(zero=False)),
        color=colour, opacity=shown,
        tooltip=[alt.Tooltip("curve:N", title="what"), alt.Tooltip("point:N", title="which"),
                 alt.Tooltip("theta_1:Q", title="θ₁", format=charts.FORMAT),
                 alt.Tooltip("theta_2:Q", title="θ₂", format=charts.FORMAT)])
    def only(*curves: str) -> alt.Chart:
        return base.transform_filter(alt.FieldOneOfPredicate(field="curve", oneOf=curves))

    dots = only("data", "DSGLD samples", "FSGLD samples").mark_circle(size=14)
    means = only("local posteriors").mark_point(size=120, strokeWidth=1.5)
    outline = only("posterior (2 sd)").mark_line(strokeWidth=1.6).encode(order="order:Q")
    return alt.layer(dots.add_params(picked), means, outline).properties(
        height=420).interactive()


def spread_chart(lesson: LocalUpdatesLesson) -> alt.LayerChart:
    """The exact stationary E(θ − μ)² per coordinate (in s²) of both estimators against T
    (docs/math.md §7), this run's measured value and its exact value given its schedule at
    the chosen T, the mixture of local posteriors and the posterior (1) as horizontal lines,
    and the chosen T; log axes."""
    shared, local = lesson.setting, lesson.local_updates
    curves = shared.curves
    steps = curves["local_updates"].values
    here = f"T = {local}"
    frame = []
    for method in METHODS:
        name = LABELS[method]
        frame += [charts.rows(steps, curves.sel(estimator=method).values,
                              f"{name}, exact stationary", [f"T = {t}" for t in steps],
                              style="line"),
                  charts.rows(local, float(lesson.measured.sel(estimator=method)),
                              f"{name}, this run (measured)", here, style="points"),
                  charts.rows(local, float(lesson.exact_given_schedule.sel(estimator=method)),
                              f"{name}, this run, exact given its schedule", here,
                              style="points")]
    frame += [charts.rows(None, shared.mixture, "mixture of local posteriors", "exact",
                          style="hrule"),
              charts.rows(None, 1.0, "posterior", "exact", style="hrule"),
              charts.rows(local, None, "chosen T", here, style="vrule")]
    return charts.line_chart(pd.concat(frame, ignore_index=True),
                             x_title="local updates per round T",
                             y_title="E(θ − μ)²/s² per coordinate",
                             log_x=True, log_y=True, legend="bottom")
