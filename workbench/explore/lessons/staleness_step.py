"""Lesson (a): staleness against step size — why the optimal step shrinks like τ^(−2/3).

Seed 001 §4 bounds the MSE of a stale SG-MCMC average by D₁/(Lh) + (D₂τ² + D₃)h² (the
registered ``seed001-section-4-mse``): a Monte Carlo term falling with the step h and a
staleness term rising with (τh)². ∂/∂h = 0 gives h* = (D₁/(2(D₂τ² + D₃)L))^(1/3), so once
D₂τ² dominates D₃, h* ∝ τ^(−2/3) L^(−1/3) (the symbolic minimiser of :mod:`bounds.symbolic`
finds this exactly).

The lesson measures it. Stale SGLD with full-data gradients (so staleness is the only error
besides the chain's own Monte Carlo variance) runs on the Gaussian-mean posterior from the
posterior mean, for each τ in :data:`STALENESS` over a grid of relative steps c = h/s² below
the stability limit 2 sin(π/(2(2τ + 1))) (docs/math.md §7). The MSE of φ̂_L(θ²) comes from the
engine over replicates (with its interval); the exact squared bias from the stacked-state
oracle. The bound's three constants are fitted to all measured MSEs at once by non-negative
least squares on relative residuals (:func:`bounds.checks.fit_envelope` before it scales the
fit up into an envelope; scaling the constants together does not move h*), which gives h*(τ)
for every τ; the measured minimiser on the grid is shown beside it. :func:`mse_chart` and
:func:`optimum_chart` draw both as interactive charts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import altair as alt
import numpy as np
import pandas as pd
import sympy as sp
import xarray as xr

from bounds import registry
from bounds.checks import fit_envelope
from bounds.envelope import Envelope
from bounds.rate import ols_slopes
from simulators.seeding import derive, generator
from simulators.static import constant_staleness
from workbench.core.phi import THETA_SQUARED
from workbench.engine.replay import replay
from workbench.explore import bounds_view, charts
from workbench.models.full_data import FullDataGradient
from workbench.models.gaussian import GaussianMeanModel
from workbench.oracles.linear_gaussian import estimator_moments, finite_moments, sgld_dynamics
from workbench.samplers import SGLD
from workbench.stats.estimators import summarize

NAME = "lesson-staleness-step"
BOUND = "seed001-section-4-mse"
STALENESS = (1, 2, 4, 8, 16)
RELATIVE_STEPS = tuple(float(c) for c in np.geomspace(0.003, 0.5, 12))
STABILITY_FRACTION = 0.8  # steps up to this fraction of the stability limit are run
N_ITERATIONS = 1000
N_REPLICATES = 100
N_DATA = 1000
SEED = 2016


def stability_limit(staleness: int) -> float:
    """Largest stable c = h/s² of SGLD with constant staleness τ (docs/math.md §7)."""
    return float(2 * np.sin(np.pi / (2 * (2 * staleness + 1))))


@dataclass(frozen=True)
class StalenessStepLesson:
    """Measured MSE and exact squared bias over (staleness, relative_step); the fitted bound.

    measurements: Dataset over (staleness, relative_step) with ``mse``, ``mse_lower``,
    ``mse_upper``, ``exact_bias_squared`` and ``step_size`` (NaN beyond the stability
    fraction); envelope: the fitted envelope; constants: D₁, D₂, D₃ of the least-squares fit
    (the envelope's constants divided by its scale); optimal_step: h*(τ) of the fitted
    bound over dim ``staleness``; measured_best: the grid step with the smallest MSE per τ.
    """

    posterior_variance: float
    measurements: xr.Dataset
    envelope: Envelope
    constants: dict[str, float]
    optimal_step: xr.DataArray
    measured_best: xr.DataArray
    optimal_step_latex: str
    slope: float  # log-log slope of the fitted h*(τ) over τ >= 4: tends to −2/3

    def curve(self, staleness: int, steps: np.ndarray) -> xr.Dataset:
        """The fitted bound and its three terms along ``steps`` at ``staleness``."""
        values = {"staleness": staleness, "step_size": steps, "n_iterations": N_ITERATIONS,
                  **self.constants}
        bound = registry.get(BOUND)
        terms = bound.term_values(**{k: v for k, v in values.items()
                                     if not k.startswith("D_")})
        weighted = terms.values * (self.envelope.coefficients / self.envelope.scale)[:, None]
        return xr.Dataset({"bound": ("step", np.asarray(bound.evaluate(**values))),
                           "terms": (("term", "step"), weighted)},
                          coords={"step": steps, "term": self.envelope.terms})


def _constants(envelope: Envelope) -> dict[str, float]:
    """D_k of the least-squares fit from the envelope's term coefficients (the term of D_k is
    ∂bound/∂D_k)."""
    bound = envelope.bound
    unit = {c: 1 for c in bound.constants}
    terms = bound.terms()
    out = {}
    for constant in bound.constants:
        own = sp.diff(bound.expression, constant).xreplace(unit)
        factor, core = own.as_coeff_Mul()
        coefficient = envelope.coefficients[terms.index(core)] / envelope.scale
        out[constant.name] = float(coefficient / factor)
    return out


def _run(model: GaussianMeanModel, staleness: int, relative_step: float) -> tuple:
    """(φ̂_L(θ²) of every replicate, exact squared bias, h) for one (τ, c)."""
    h = relative_step * model.posterior_variance
    schedule = constant_staleness(N_ITERATIONS, staleness)
    point = derive(SEED, NAME, f"staleness={staleness}", f"relative_step={relative_step!r}")
    result = replay(schedule, SGLD(h), FullDataGradient(model), n_updates=N_ITERATIONS,
                    n_replicates=N_REPLICATES, initial_position=model.posterior_mean,
                    seed=point, batch_size=1, test_functions=(THETA_SQUARED,))
    mu, s2 = model.posterior_mean, model.posterior_variance
    realised = schedule.update_staleness(N_ITERATIONS)[:, 0]
    moments = finite_moments(sgld_dynamics(h), model.precision, realised, [N_ITERATIONS],
                             fourth_moments=False)
    exact = estimator_moments(moments, mu, 0.0, 0.0)["theta_squared"]["mean"][-1, 0]
    return result.averages["theta_squared"][-1, :, 0, 0], (exact - (mu[0] ** 2 + s2)) ** 2, h


@cache
def lesson() -> StalenessStepLesson:
    """Run the lesson's grid (about two seconds; cached for the server's lifetime)."""
    model = GaussianMeanModel.generate(generator(SEED, NAME, "data"), N_DATA)
    shape = (len(STALENESS), len(RELATIVE_STEPS))
    estimates = np.full(shape + (N_REPLICATES,), np.nan)
    fields = {k: np.full(shape, np.nan) for k in ("exact_bias_squared", "step_size")}
    for i, tau in enumerate(STALENESS):
        for j, c in enumerate(RELATIVE_STEPS):
            if c > STABILITY_FRACTION * stability_limit(tau):
                continue
            estimates[i, j], fields["exact_bias_squared"][i, j], fields["step_size"][i, j] = (
                _run(model, tau, c))
    dims = ("staleness", "relative_step")
    coords = {"staleness": list(STALENESS), "relative_step": list(RELATIVE_STEPS)}
    truth = float(model.posterior_mean[0] ** 2 + model.posterior_variance)
    summary = summarize(xr.DataArray(estimates, dims=(*dims, "replicate"), coords=coords),
                        truth)  # cells not run are all NaN: their summaries are NaN
    measurements = xr.Dataset({**{k: summary[k] for k in ("mse", "mse_lower", "mse_upper")},
                               **{k: (dims, v) for k, v in fields.items()}}, coords=coords)
    bound = registry.get(BOUND)
    grid = {"staleness": measurements["staleness"], "step_size": measurements["step_size"],
            "n_iterations": N_ITERATIONS}
    envelope = fit_envelope(bound, grid, measurements["mse"],
                            label=f"{NAME}: all measured (τ, h)")
    constants = _constants(envelope)
    optima = [bounds_view.optimum(BOUND, {"staleness": tau, "n_iterations": N_ITERATIONS,
                                          **constants}) for tau in STALENESS]
    optimal_step = xr.DataArray([o.step_size for o in optima], dims="staleness",
                                coords={"staleness": list(STALENESS)})
    best = measurements["mse"].fillna(np.inf).argmin("relative_step")
    measured_best = measurements["step_size"].isel(relative_step=best)
    large = optimal_step.sel(staleness=[t for t in STALENESS if t >= 4])
    slope = float(ols_slopes(np.log(large["staleness"].values.astype(float)),
                             np.log(large.values)))
    return StalenessStepLesson(model.posterior_variance, measurements, envelope, constants,
                               optimal_step, measured_best, optima[0].argmin_latex, slope)


def mse_chart(lesson: StalenessStepLesson, staleness: int) -> alt.LayerChart:
    """Along h at τ = ``staleness``: the measured MSE of φ̂_L(θ²) with its 95% interval, the
    exact bias² (oracle), the fitted bound D₁/(Lh) + (D₂τ² + D₃)h² (seed 001 §4) with its
    three terms, and h* of the fitted bound; log axes, the vertical one spanning the
    measurements (a third below and three times above: lines and bias² beyond are left
    out), as the paper-style plot did."""
    at = lesson.measurements.sel(staleness=staleness)
    ran = np.isfinite(at["step_size"].values)
    steps = at["step_size"].values[ran]
    points = [f"τ = {staleness}, c = h/s² = {c:.3g}"
              for c in at["relative_step"].values[ran]]
    measured = {k: at[k].values[ran] for k in ("mse", "mse_lower", "mse_upper")}
    every = lesson.measurements["step_size"].values
    grid = np.geomspace(np.nanmin(every) / 1.5, np.nanmax(every) * 1.5, 200)
    curve = lesson.curve(staleness, grid)
    low = np.nanmin(measured["mse_lower"][measured["mse_lower"] > 0]) / 3
    high = np.nanmax(measured["mse_upper"]) * 3

    def window(values: np.ndarray) -> np.ndarray:  # the lines within the measured span
        return np.where((values >= low) & (values <= high), values, np.nan)

    where = f"τ = {staleness}"
    frame = pd.concat([
        charts.rows(steps, measured["mse"], "measured MSE (95% interval)", points,
                    style="points", lower=measured["mse_lower"], upper=measured["mse_upper"]),
        charts.rows(steps, window(at["exact_bias_squared"].values[ran]), "exact bias² (oracle)",
                    points, style="points"),
        charts.rows(grid, window(curve["bound"].values), "fitted bound (least squares)", where,
                    style="line"),
        *(charts.rows(grid, window(curve["terms"].sel(term=term).values), f"term {term}",
                      where, style=style)
          for term, style in zip(curve["term"].values, ("dashed", "dotted", "dashed"),
                                 strict=True)),
        charts.rows(float(lesson.optimal_step.sel(staleness=staleness)), None,
                    "h* of the fitted bound", where, style="vrule")], ignore_index=True)
    return charts.line_chart(frame, x_title="step size h", y_title="MSE of φ̂_L(θ²)",
                             log_x=True, log_y=True, legend="bottom")


def optimum_chart(lesson: StalenessStepLesson, staleness: int) -> alt.LayerChart:
    """Against τ: h*(τ) of the fitted bound, the best step on the measured grid, the
    τ^(−2/3) line through the largest τ's h* (seed 001 §4), and the chosen τ marked."""
    taus = np.array(STALENESS, dtype=float)
    points = [f"τ = {t}" for t in STALENESS]
    optimal = lesson.optimal_step.values
    frame = pd.concat([
        charts.rows(taus, optimal, "h* of the fitted bound", points),
        charts.rows(taus, lesson.measured_best.values, "best step on the measured grid", points,
                    style="points"),
        charts.rows(taus, optimal[-1] * (taus / taus[-1]) ** (-2 / 3), "τ^(−2/3)", points,
                    style="dotted"),
        charts.rows(staleness, None, "chosen τ", f"τ = {staleness}", style="vrule")],
        ignore_index=True)
    return charts.line_chart(frame, x_title="staleness τ", y_title="optimal step size",
                             log_x=True, log_y=True, legend="bottom")
