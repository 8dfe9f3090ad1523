"""The judgements of a sharded-Gaussian study (:mod:`.sharded_point`), one function per check
kind of :mod:`.gaussian_judgements`; every point is a selection of the dataset and a label in the
check names (``T=200``: the sweep dims written with the study's ``[study] symbols``); the
chains of a coupled group are identical, so one chain per group stands for it.

- ``oracle``: window averages of θ and of (θ - μ)(θ - μ)ᵀ against the exact oracle given each
  chain's schedule (:func:`~workbench.systems.distributed.windows.window_oracle_checks`,
  one Bonferroni family over every point and estimator).
- ``posterior``: window averages of θ and of (θ - μ)(θ - μ)ᵀ against the posterior's mean μ and
  covariance s² I, with the exact oracle's values as evidence (one family over every point;
  ``unit = "run"`` counts every (replicate, chain) as a unit, for designs with few chains).
- ``gradient-noise`` (coupled chains, seed 004 §3.2.3): the error of a group's gradient
  estimate at μ against docs/math.md §11.2, and its minibatch part's slope -1 against R.
- ``distance`` (seed 004 §3.2.1): long trajectories sample the mixture of local posteriors,
  short ones approach the standard SGLD posterior. At the largest value of ``over`` the check
  measures Δ = W₂(samples, ``shortest``'s reference) - W₂(samples, ``longest``'s), at the
  smallest the opposite difference, so Δ > 0 is the claim. Verdict kind ``ordering``: it holds
  when Δ exceeds its critical value times its jackknife error, is violated when it is as far
  below zero, inconclusive in between. The jackknife leaves out one (replicate, chain) unit at
  a time: given the schedule the units are independent (not identically distributed, which
  makes the estimate conservative). ``expected`` is the exact oracle's Δ.
- ``stationary``: the chains' window average of ‖θ - μ‖² against the exact stationary value
  averaged over client draws (docs/math.md §13), which for DSGLD carries the Φ(a, T) term; Student
  critical values over the chains (a family of every point and estimator).
- ``invariance`` (of an ``estimator``): its stationary value is the same at every value of
  ``over`` (seed 002 §5.1: FSGLD is insensitive to the number of local updates).
- ``growth`` (of an ``estimator``): its increase from the smallest to the largest value of
  ``over`` against the increase the exact oracle predicts (Φ, docs/math.md §7).

``posterior``, ``stationary``, ``invariance`` and ``growth`` judge chains averaged over their
replicates, with the exact oracle given each chain's schedule as their control variate unless
the check says ``control_variate = false``
(:func:`~workbench.systems.distributed.windows.chain_estimate`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from bounds.checks import invariance_check, oracle_check, ordering_check, slope_check
from bounds.equivalence import CHAIN_FACTOR, CHAINS_FROM, DEFAULT_MARGINS, ErrorParts
from bounds.verdict import Verdict, student_z_for_family, z_for_family
from workbench.store.netcdf import config_of
from workbench.studies.schema import FEDERATED
from workbench.systems.distributed.references import wasserstein
from workbench.systems.distributed.windows import (
    MORE_CHAINS,
    ChainEstimate,
    about,
    chain_estimate,
    chain_level_check,
    pooled,
    window_oracle_checks,
    with_student_rate,
)
from workbench.systems.distributed.windows import posterior_checks as point_posterior_checks


def label(point: Mapping, symbols: Mapping[str, str]) -> str:
    """``{"local_updates": 10}`` with symbols ``{"local_updates": "T"}`` → ``T=10``; an empty
    symbol names the point by the value alone (``{"correction": ""}``: ``corrected``)."""
    return "/".join(f"{symbols.get(k, k)}={_value(v)}" if symbols.get(k, k) else _value(v)
                    for k, v in point.items())


def _value(value) -> str:
    """A sweep value as a check name writes it (a float as ``5``, not ``5.0``)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def points(dataset: xr.Dataset, dims: Sequence[str]) -> list[dict]:
    return [dict(zip(dims, values, strict=True)) for values in
            itertools.product(*(dataset[d].values.tolist() for d in dims))]


def _estimators(dataset: xr.Dataset) -> list:
    return dataset["estimator"].values.tolist() if "estimator" in dataset.dims else [None]


def selections(dataset: xr.Dataset, dims: Sequence[str],
               symbols: Mapping[str, str]) -> list[tuple[str, dict]]:
    """(label, selection) of every point and estimator: ``dsgld/T=10``. The chains of a
    coupled group are identical, so a point of coupled chains selects one chain per group
    (its first member)."""
    out = []
    for point in points(dataset, dims):
        for method in _estimators(dataset):
            at = dict(point) if method is None else {**point, "estimator": method}
            if "first_member" in dataset:
                first = dataset["first_member"].sel(point).values
                at["chain"] = np.flatnonzero(first).tolist()
            out.append((label(point, symbols) if method is None
                        else f"{method}/{label(point, symbols)}", at))
    return out


def slices(dataset: xr.Dataset, dims: Sequence[str], over: str, symbols: Mapping[str, str]):
    """(label suffix, selection of every sweep dim but ``over``)."""
    for point in points(dataset, [d for d in dims if d != over]):
        yield (f"/{label(point, symbols)}" if point else ""), point


def comparisons(dataset: xr.Dataset, dims: Sequence[str], over: str,
                symbols: Mapping[str, str]):
    """(label suffix, selection of the other dims, the values of ``over``) of every slice
    along ``over``; none where ``over`` has fewer than two values (nothing to compare)."""
    values = dataset[over].values.tolist()
    if len(values) >= 2:
        for suffix, rest in slices(dataset, dims, over, symbols):
            yield suffix, rest, values


def oracle_checks(dataset: xr.Dataset, dims, symbols, rate: float) -> list[Verdict]:
    return window_oracle_checks(dataset, selections(dataset, dims, symbols), rate)


#: the check kinds that judge one claim, that the chains target the posterior (at the run's
#: step, and in the ε → 0 limit): a study's checks of these kinds form one Bonferroni family
TARGET_KINDS = ("posterior", "limit")


def target_family(dataset: xr.Dataset, n_points: int, kinds: Sequence[str]) -> int:
    """The comparisons of the family of :data:`TARGET_KINDS` checks: a mean per coordinate
    and a covariance entry per j <= k, per point, per such check of the study."""
    dim = dataset.sizes["component"]
    return n_points * (dim + dim * (dim + 1) // 2) * max(
        1, sum(kind in TARGET_KINDS for kind in kinds))


#: the federated rounds' independent chains, which a sequential check grows where only more
#: chains decide a check (the evidence of the chain-level checks of federated rounds names it)
FEDERATED_CHAINS = {CHAINS_FROM: "n_chains"}


def posterior_checks(dataset: xr.Dataset, dims, symbols, options: dict, rate: float,
                     kinds: Sequence[str] = ()) -> list[Verdict]:
    """Every point's window mean against μ and window second moment about μ against s² I, the
    exact oracle's values as evidence (:func:`point_posterior_checks`), in the family of
    :func:`target_family` (``kinds``: the study's check kinds); ``unit = "run"`` makes each
    (replicate, chain) a unit."""
    chosen = selections(dataset, dims, symbols)
    family = target_family(dataset, len(chosen), kinds)
    federated = config_of(dataset)["system"] == FEDERATED
    return [verdict for name, selection in chosen
            for verdict in point_posterior_checks(dataset, name, selection, rate,
                                                  note=". " + point_notes(dataset, selection),
                                                  per_run=options["unit"] == "run",
                                                  n_comparisons=family,
                                                  control_variate=options["control_variate"],
                                                  evidence=FEDERATED_CHAINS if federated
                                                  else {})]


#: relaxation times below which a window still carries the start
SHORT_BURN_IN = 3.0
NEGATIVE_CONTROL = ("negative control: without the N_s/(N q_s) correction the chain targets "
                    "the wrong distribution, so these comparisons with the posterior are "
                    "expected to be violated")


def point_notes(dataset: xr.Dataset, selection: dict) -> str:
    """What a comparison of a point with the posterior should be read with: how many
    relaxation times its burn-in and window span; where the dataset has them, the exact
    excess over d·s² at the run's ε split by source; and that an uncorrected arm is a
    negative control."""
    notes = [relaxation_note(dataset)]
    if "exact_window_mean_without_minibatch_noise" in dataset:
        notes.insert(0, excess_split(dataset, selection))
    if selection.get("correction") == "uncorrected":
        notes.append(NEGATIVE_CONTROL)
    return ". ".join(notes)


def excess_split(dataset: xr.Dataset, selection: dict) -> str:
    """The exact excess of tr E(θ - μ)(θ - μ)ᵀ over d s² at the run's ε, with and without
    minibatch noise."""
    at = dataset.sel(selection)
    mu = dataset["posterior_mean"].values
    s2 = float(dataset["posterior_variance"])
    dim = dataset.sizes["component"]

    def trace(mean, second) -> float:
        return float(np.trace(about(mu, mean, second).mean(axis=0))) / (dim * s2)

    total = trace(at["exact_window_mean"].values, at["exact_window_second"].values)
    quiet = trace(at["exact_window_mean_without_minibatch_noise"].values,
                  at["exact_window_second_without_minibatch_noise"].values)
    return (f"At the run's ε the exact oracle, averaged over coordinates, gives {total:.3g} s²: "
            f"{total - quiet:.3g} s² from minibatch noise and {quiet - 1:.3g} s² from the "
            "trajectories' drift towards the local posteriors, both O(ε) and, relative to "
            "s², proportional to ε N/σ_x² for a data scale σ_x that seed 004 does not give")


def relaxation_note(dataset: xr.Dataset) -> str:
    """How many relaxation times of the full-data chain, 1/(h/s²) updates at the run's step,
    the burn-in and the window span: a window compared with the stationary posterior must
    start well after the transient from θ₀ (with ε/k the windows are k times longer, so the
    counts are the same at every step of a limit check's ladder)."""
    config = config_of(dataset)
    updates = float(dataset["posterior_variance"]) / float(dataset["step_size"])
    if not all(isinstance(config[k], int | float) for k in ("burn_in", "n_iterations")):
        return f"A relaxation time 1/(h/s²) is {updates:.3g} updates"
    burn_in, window = config["burn_in"] / updates, config["n_iterations"] / updates
    note = (f"Burn-in and window span {burn_in:.3g} and {window:.3g} relaxation times "
            f"(1/(h/s²) = {updates:.3g} updates)")
    if burn_in < SHORT_BURN_IN:
        note += ("; the burn-in is too short for the window to be stationary, so this "
                 "comparison with the posterior also measures the transient from θ₀: "
                 "lengthen burn_in")
    return note


# ------------------------------------------------------------------------- gradient noise

def _mean_and_error(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(values.size))


def gradient_checks(dataset: xr.Dataset, dims, symbols, rate: float) -> list[Verdict]:
    """``gradient/<point>`` and ``gradient/minibatch/<point>``: the measured E‖ĝ_R - ∇U(μ)‖²
    of a group's gradient estimate and its within-shard (minibatch) part against docs/math.md
    §11.2's identity for R distinct uniformly random shards; and, where ``group_size`` is swept
    over at least three values, ``slope/gradient-minibatch-vs-R``: the minibatch part falls
    as 1/R (seed 004 §3.2.3: averaging R chains' gradients, Cov/n → Cov/(Rn))."""
    chosen = points(dataset, dims)
    z = z_for_family(rate, 2 * len(chosen))
    verdicts = []
    for point in chosen:
        at = dataset.sel(point)
        for part, name in (("", "gradient_error"), ("/minibatch", "gradient_minibatch_error")):
            mean, error = _mean_and_error(at[name].values)
            verdicts.append(oracle_check(
                f"gradient{part}/{label(point, symbols)}", mean, error,
                float(at[f"exact_{name}"]), z,
                detail=("E‖ĝ_R - ∇U(μ)‖²" if not part else
                        "minibatch part E‖ĝ_R - E[ĝ_R | shards]‖²")
                + f" over {at[name].size} groups on random distinct shards, "
                "against docs/math.md §11.2",
                evidence=dict(point), n_replicates=int(at[name].size), relative=True))
    over = "group_size"
    if over in dims and dataset.sizes[over] >= 3:
        rest = list(slices(dataset, dims, over, symbols))
        for suffix, selection in rest:
            minibatch = dataset["gradient_minibatch_error"].sel(selection)
            sizes = dataset[over].values.tolist()
            values, errors = np.array([_mean_and_error(minibatch.sel({over: r}).values)
                                       for r in sizes]).T
            verdicts.append(slope_check(
                f"slope/gradient-minibatch-vs-{symbols.get(over, over)}{suffix}", sizes,
                values, errors, -1.0, z_for_family(rate, len(rest)),
                detail="seed 004 §3.2.3: averaging R chains' gradients divides the minibatch "
                       "variance by R (slope -1 in log-log)",
                evidence={"group_sizes": sizes},
                n_replicates=int(minibatch.sel({over: sizes[0]}).size)))
    return verdicts


# ------------------------------------------------------------------------------- distance

def distances(dataset: xr.Dataset, selection: dict, prefix: str = "",
              keep=None) -> dict[str, float]:
    """W₂ from the pooled sample distribution to each reference."""
    mean, covariance = pooled(dataset, selection, prefix, keep)
    return {ref: wasserstein(mean, covariance, dataset["reference_mean"].sel(reference=ref).values,
                             dataset["reference_covariance"].sel(reference=ref).values)
            for ref in dataset["reference"].values.tolist()}


def distance_check(dataset: xr.Dataset, name: str, selection: dict, nearer: str, farther: str,
                   false_failure_rate: float, n_family: int) -> Verdict:
    def gap(values: dict[str, float]) -> float:
        return values[farther] - values[nearer]

    measured = distances(dataset, selection)
    exact = distances(dataset, selection, "exact_")
    n_units = dataset.sizes["replicate"] * dataset.sizes["chain"]
    leave_one_out = np.array([gap(distances(dataset, selection, keep=np.arange(n_units) != u))
                              for u in range(n_units)])
    error = math.sqrt((n_units - 1) * np.mean((leave_one_out - leave_one_out.mean()) ** 2))
    z = student_z_for_family(false_failure_rate, n_family, n_units)
    observed = gap(measured)
    sd = math.sqrt(float(dataset["posterior_variance"]))
    at = ", ".join(f"{k} = {v}" for k, v in selection.items())
    detail = (f"{at}: W₂ to the {farther.replace('_', ' ')} minus W₂ to the "
              f"{nearer.replace('_', ' ')}, in posterior sd: measured {observed / sd:.3g}, exact "
              f"{gap(exact) / sd:.3g}. Distances (posterior sd): "
              + ", ".join(f"{k.replace('_', ' ')} {v / sd:.3g}" for k, v in measured.items()))
    return with_student_rate(ordering_check(
        name, observed, error, gap(exact), z, detail=detail,
        evidence={"measured_distances": measured, "exact_distances": exact,
                  "nearer": nearer, "farther": farther}, n_replicates=n_units), n_units)


def distance_checks(dataset: xr.Dataset, dims, symbols, options: dict,
                    rate: float) -> list[Verdict]:
    over, longest, shortest = options["over"], options["longest"], options["shortest"]
    verdicts = []
    for suffix, rest, values in comparisons(dataset, dims, over, symbols):
        claims = [(max(values), longest, shortest), (min(values), shortest, longest)]
        verdicts += [distance_check(dataset, f"distance/{label({over: v}, symbols)}{suffix}",
                                    {**rest, over: v}, nearer, farther, rate, len(claims))
                     for v, nearer, farther in claims]
    return verdicts


# ----------------------------------------------------------------------------- stationary

def about_posterior(dataset: xr.Dataset, prefix: str = "") -> xr.DataArray:
    """Diagonal of the window average of (θ - μ)(θ - μ)ᵀ (measured, or exact with prefix)."""
    mu = dataset["posterior_mean"].values
    mean, second = dataset[f"{prefix}window_mean"], dataset[f"{prefix}window_second"]
    values = about(mu, mean.values, second.values)
    return xr.DataArray(np.diagonal(values, 0, -2, -1), dims=mean.dims, coords=mean.coords)


def chain_values(dataset: xr.Dataset, selection: dict, prefix: str = "") -> np.ndarray:
    """‖θ - μ‖² window averages, ``(replicate, chain)`` (exact with ``prefix="exact_"``:
    ``(chain,)``, given each chain's schedule)."""
    return about_posterior(dataset, prefix).sel(selection).sum("component").values


def stationary_check(dataset: xr.Dataset, name: str, selection: dict, rate: float,
                     n_family: int, expected: float | None = None,
                     control_variate: bool = True) -> Verdict:
    """One point's ‖θ - μ‖² against the exact stationary value, or against ``expected``
    (how the tests judge DSGLD against the FSGLD oracle, a negative control)."""
    at = dataset.sel(selection)
    # NaN stays NaN (no stationary result with full-covariance surrogates): inconclusive
    exact = float(at["stationary_second_moment"].sum(skipna=False))
    closed = float(at["closed_form_second_moment"].sum(skipna=False))
    posterior = float(dataset["posterior_variance"]) * dataset.sizes["component"]
    where = ", ".join(f"{k} = {v}" for k, v in selection.items())
    detail = (f"stationary E‖θ - μ‖² over a round at {where}: exact {exact:.4g} "
              f"(docs/math.md §7 closed form {closed:.4g}; the posterior's own d·s² = "
              f"{posterior:.4g})")
    if not math.isfinite(exact):
        detail = ("no exact stationary value: full-covariance surrogates couple the "
                  "coordinates, and the round-averaged result needs diagonal dynamics; the "
                  "oracle checks given the schedule still apply")
    if expected is not None:
        detail += f"; judged against the supplied value {expected:.4g}"
    evidence = {"exact_round_average": exact, "closed_form": closed,
                "posterior_trace": posterior, **FEDERATED_CHAINS}
    return chain_level_check(name, chain_values(dataset, selection),
                             exact if expected is None else expected, rate, n_family,
                             detail=detail, evidence=evidence,
                             exact=chain_values(dataset, selection, "exact_"),
                             control_variate=control_variate)


def stationary_checks(dataset: xr.Dataset, dims, symbols, options: dict,
                      rate: float) -> list[Verdict]:
    """One check per estimator and point, listed estimator by estimator."""
    order = _estimators(dataset)
    chosen = sorted(selections(dataset, dims, symbols),
                    key=lambda item: order.index(item[1].get("estimator")))
    return [stationary_check(dataset, f"stationary/{name}", selection, rate, len(chosen),
                             control_variate=options["control_variate"])
            for name, selection in chosen]


def _estimate(dataset: xr.Dataset, selection: dict, options: dict, z: float) -> ChainEstimate:
    """One point's chain-level estimate of ‖θ - μ‖² (:func:`chain_estimate`)."""
    return chain_estimate(chain_values(dataset, selection),
                          chain_values(dataset, selection, "exact_"),
                          control_variate=options["control_variate"], z=z)


def _used(estimates: Sequence[ChainEstimate]) -> dict:
    """What the evidence says of the control variate of estimates compared together."""
    return {"control_variate": [e.evidence.get("control_variate", "none")
                                for e in estimates]}


def invariance_checks(dataset: xr.Dataset, dims, symbols, options: dict,
                      rate: float) -> list[Verdict]:
    method, over = options["estimator"], options["over"]
    symbol = symbols.get(over, over)
    n_chains = dataset.sizes["chain"]
    z = student_z_for_family(rate, 1, n_chains)
    verdicts = []
    for suffix, rest, values in comparisons(dataset, dims, over, symbols):
        estimates = [_estimate(dataset, {**rest, over: value, "estimator": method}, options, z)
                     for value in values]
        exact = dataset["stationary_second_moment"].sel(rest).sel(estimator=method).sum(
            "component", skipna=False)
        verdicts.append(with_student_rate(invariance_check(
            f"invariance/{method}/stationary-vs-{symbol}{suffix}",
            [e.mean for e in estimates], [e.error for e in estimates],
            [label({over: v}, symbols) for v in values], z,
            detail=f"seed 002 §5.1: {method.upper()}'s stationary E‖θ - μ‖² is the same for "
                   f"every {over} (docs/math.md §7, with exact surrogates); the exact values are "
                   + ", ".join(f"{v:.4g}" for v in exact.values.tolist()),
            evidence={"exact": exact.values.tolist(), **_used(estimates), **FEDERATED_CHAINS},
            n_replicates=estimates[0].n_replicates,
            fixed_errors=[e.parts.fixed for e in estimates], cannot=MORE_CHAINS,
            grows=CHAIN_FACTOR), n_chains))
    return verdicts


def growth_checks(dataset: xr.Dataset, dims, symbols, options: dict,
                  rate: float) -> list[Verdict]:
    method, over = options["estimator"], options["over"]
    n_chains = dataset.sizes["chain"]
    z = student_z_for_family(rate, 1, n_chains)
    verdicts = []
    for suffix, rest, values in comparisons(dataset, dims, over, symbols):
        low, high = min(values), max(values)
        ends = [_estimate(dataset, {**rest, over: v, "estimator": method}, options, z)
                for v in (low, high)]
        growth = ends[1].mean - ends[0].mean
        error = math.hypot(*(e.error for e in ends))
        parts = ErrorParts(math.hypot(*(e.parts.shrinking for e in ends)),
                           math.hypot(*(e.parts.fixed for e in ends)), MORE_CHAINS,
                           CHAIN_FACTOR)
        exact = dataset["stationary_second_moment"].sel(rest).sel(estimator=method).sum(
            "component")
        predicted = float(exact.sel({over: high}) - exact.sel({over: low}))
        verdicts.append(with_student_rate(oracle_check(
            f"growth/{method}/stationary/{label({over: low}, symbols)}->"
            f"{label({over: high}, symbols)}{suffix}", growth, error, predicted, z,
            detail=f"{method.upper()} drifts towards the local posteriors as {over} grows: "
                   f"E‖θ - μ‖² rises by {predicted:.4g} from {low} to {high} (Φ(a, T), "
                   "docs/math.md §7)",
            evidence={"growth_in_standard_errors": growth / error if error > 0 else math.inf,
                      **_used(ends), **FEDERATED_CHAINS},
            n_replicates=ends[0].n_replicates, parts=parts,
            margin=DEFAULT_MARGINS["oracle"].size * math.hypot(*(e.spread for e in ends))),
            n_chains))
    return verdicts

