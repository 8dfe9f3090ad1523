"""The check kinds of a study and how each is judged (their options are validated by
:mod:`.check_kinds` when a study is read).

- ``oracle``: every point's E φ̂ and Var φ̂ (and Var and MSE of φ̂(θ²) where finite) against the
  exact stacked-state oracle (docs/math.md §8, §9), with ``oracle/divergence/<point>`` a
  ``violated`` finding where replicates diverged or the exact recursion is unstable;
- ``invariance``: the MSE of φ̂ is the same at every value of the dim ``over`` (seed 001 §5.1:
  h = C τ^(-2/3) L^(-1/3), L = L0·τ keeps the optimal MSE flat in τ);
- ``slope``: the log-log slope of the variance of φ̂ against ``over`` equals ``expected``
  (Theorem 4 of seed 001: zero against τ where L·h is fixed);
- both judge the values' errors as independent, or, along a ``[study] paired`` dim (the points
  share the engine's noise and minibatches), with their covariance from a paired bootstrap
  over replicates (:class:`Pairing`);
- ``rate``: the MSE at the final checkpoint decays against ``over`` (a swept L) at least like
  the rate a bound predicts at its optimal step (:func:`bound_rate`), or ``expected``, within
  ``rate_margin``; one verdict per value of the other sweep dims that ``where`` keeps, named by
  the ``name`` template; ``paired``: the bootstrap resamples replicates jointly across L (the
  points share their random numbers; always along a ``[study] paired`` dim);
- ``envelope``: a bound's terms with non-negative constants, fitted on a calibration part of the
  grid (``split``: checkerboard over the sweep points, or extrapolate from the shorter half of
  the checkpoints), stay above the held-out MSE.

All checks use the replicates that did not diverge and say how many were left out. Critical z
values are Bonferroni corrections of the run's family-wise ``false_failure_rate``: the oracle
family has one comparison per point, coordinate and oracle quantity; each invariance, slope,
rate and envelope check is a family of its own (one-sided for rate and envelope, over every
held-out point for the envelope). Means are judged on an absolute scale with a margin of half a
replicate's standard deviation, variances and MSEs on a log-ratio scale (a factor 1.5).

Studies of sharded data (:mod:`.sharded_point`) have their own judgements
(:mod:`.sharded_judgements`): ``oracle`` (window averages given each chain's schedule), and
``distance`` for traveling chains, ``stationary``, ``invariance`` and ``growth`` (of an
``estimator``'s stationary second moment) for federated rounds. Each kind declares the keys it
takes for each model or system kind, and a study of another kind is refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import xarray as xr

from bounds import symbolic
from bounds.checks import (
    Envelope,
    envelope_check,
    fit_envelope,
    invariance_check,
    oracle_check,
    slope_check,
)
from bounds.rate import bootstrap_statistics, ols_slopes, rate_check
from bounds.record import Bound
from bounds.symbols import SYMBOLS, n_iterations, step_size
from bounds.verdict import VIOLATED, Verdict, one_sided_z_for_family, two_sided_rate, z_for_family
from simulators.seeding import generator
from workbench.studies.schema import integrator_order

#: (test function, oracle moment, measured value, its standard error, judged relative)
COMPARISONS = (("theta", "mean", "mean", "bias_se", False),
               ("theta", "variance", "variance", "variance_se", True),
               ("theta_squared", "mean", "mean", "bias_se", False),
               ("theta_squared", "variance", "variance", "variance_se", True),
               ("theta_squared", "mse", "mse", "mse_se", True))
_SYMBOL = {"theta": "θ", "theta_squared": "θ²"}


@dataclass(frozen=True)
class Context:
    """What a check needs besides the dataset: the run's settings, sweep dims, bounds, seed."""

    name: str
    config: dict
    dims: tuple[str, ...]
    bounds: Mapping[str, Any]
    seed: int
    symbols: Mapping[str, str] = field(default_factory=dict)  # sweep dim → name in checks
    checks: tuple = ()  # the study's [[check]] entries (a phase-space study judges them as one)
    family: int = 0  # comparisons of the study's one family (``[study] family``); 0: per check
    point_kinds: tuple[str, ...] = ()  # the study's model, system and point kinds
    streams: str = ""  # the prefix of its random streams (a later part of shared points)
    paired: tuple[str, ...] = ()  # sweep dims whose points share the engine's random numbers
    #: sweep dims along which replicate r of every point starts from the same draw
    #: (:func:`.held_out_point.common_start_dims`)
    common_starts: tuple[str, ...] = ()

    def pairs(self, over: str) -> bool:
        """Whether the points along ``over`` are judged as paired replicates: they share the
        engine's random numbers (``[study] paired``) or their replicates' starts."""
        return over in self.paired or over in self.common_starts

    def starts_only(self, over: str) -> bool:
        """Whether the points along ``over`` share their replicates' starts alone, not the
        engine's random numbers."""
        return over in self.common_starts and over not in self.paired

    def kinds(self) -> tuple[str, ...]:
        """The kinds of the study's checks."""
        return tuple(spec.kind for spec in self.checks)

    def z(self, n_comparisons: int) -> float:
        """The two-sided critical z of a check of ``n_comparisons``: Bonferroni over its own
        family, or over the study's when the study judges all its verdicts as one."""
        return z_for_family(self.config["false_failure_rate"], self.family or n_comparisons)

    def one_sided_z(self, n_comparisons: int) -> float:
        """The one-sided critical z of a check of ``n_comparisons`` (rates, envelopes,
        orderings), in the same family as :meth:`z`."""
        return one_sided_z_for_family(self.config["false_failure_rate"],
                                      self.family or n_comparisons)


# ---------------------------------------------------------------------------------- helpers

def point_label(point: Mapping[str, Any], template: str | None = None) -> str:
    """How a point is written in a verdict's name: ``dim=value/...``, or the check's
    ``label`` template filled in."""
    if template is not None:
        return template.format(**point)
    return "/".join(f"{k}={v}" for k, v in point.items())


def check_name(options: Mapping, point: Mapping[str, Any], function: str, default: str) -> str:
    """A verdict's name: the check's ``name`` template filled in, else ``default``."""
    if "name" in options:
        return options["name"].format(**point, test_function=function)
    return default


def sweep_points(dataset: xr.Dataset, dims: Sequence[str]) -> list[dict[str, Any]]:
    return [dict(zip(dims, values, strict=True)) for values in
            itertools.product(*(dataset[d].values.tolist() for d in dims))]


def final(dataset: xr.Dataset) -> xr.Dataset:
    return dataset.isel(checkpoint=-1)


def squared_errors(data: xr.Dataset, function: str) -> xr.DataArray:
    """Per-replicate (φ̂ − φ̄)² summed over coordinates, at every checkpoint kept in ``data``."""
    at = data.sel(test_function=function)
    with np.errstate(over="ignore", invalid="ignore"):
        return ((at["estimate"] - at["posterior_value"]) ** 2).sum("component", min_count=1)


def _left_out(at: xr.Dataset, total: int) -> str:
    missing = total - int(at["n_valid"])
    return f" ({missing} diverged replicates left out)" if missing else ""


def _left_out_note(data: xr.Dataset, over: str) -> str:
    fin = final(data)
    counts = {v: int((fin["diverged_at"].sel({over: v}) >= 0).sum())
              for v in fin[over].values.tolist()}
    parts = [f"{n} at {over} = {v}" for v, n in counts.items() if n]
    return f" Diverged replicates left out: {', '.join(parts)}." if parts else ""


def paired_statistics(samples: np.ndarray, statistic: str, rng_for, n_resamples: int):
    """``statistic`` (``"mean"`` or ``"variance"``, as :data:`bounds.rate.STATISTICS`) of
    ``samples`` ``(n, R, d)`` across the first axis, summed over d: (values, covariance
    matrix of their logs, replicates kept), for values whose replicates share random numbers
    (common random numbers). Replicates non-finite anywhere are dropped; the covariance comes
    from a paired bootstrap, the same replicate draw at every value (``rng_for()`` gives the
    same generator for every coordinate)."""
    kept = np.all(np.isfinite(samples), axis=(0, 2))
    if kept.sum() < 2:  # nothing to judge: the checks say so (inconclusive)
        n = samples.shape[0]
        return np.full(n, np.nan), np.full((n, n), np.nan), int(kept.sum())
    samples = samples[:, kept, :]
    values = (samples.var(axis=1, ddof=1) if statistic == "variance"
              else samples.mean(axis=1)).sum(axis=-1)
    resampled = sum(bootstrap_statistics(samples[..., k], statistic, rng_for(), n_resamples,
                                         paired=True) for k in range(samples.shape[-1]))
    return values, np.cov(np.log(resampled), rowvar=False), int(kept.sum())


class Pairing:
    """How a check across the sweep dim ``over`` treats its points' errors: independent, or,
    where the study pairs ``over`` (``[study] paired``: the points share the engine's noise
    and minibatches), with the covariance of a paired bootstrap over replicates
    (:func:`paired_statistics`, ``n_resamples`` resamples from the check's own stream)."""

    def __init__(self, ctx: Context, over: str, name: str, n_resamples: int):
        self.on = over in ctx.paired
        self.over, self.n_resamples = over, n_resamples
        self.rng_for = lambda: generator(ctx.seed, ctx.name, "check", name)

    def statistics(self, samples: xr.DataArray, statistic: str):
        """(values, log covariance, replicates kept) of ``samples`` over (``over``,
        ``replicate``, ``component``), or None where the points are not paired."""
        if not self.on:
            return None
        dims = [self.over, "replicate"] + (["component"] if "component" in samples.dims
                                           else [])
        values = samples.transpose(*dims).values
        return paired_statistics(values if values.ndim == 3 else values[..., None], statistic,
                                 self.rng_for, self.n_resamples)

    def note(self, evidence: dict, log_covariance: np.ndarray, kept: int) -> str:
        """Record the pairing in ``evidence``; the sentence the detail adds."""
        evidence["bootstrap_resamples"] = self.n_resamples
        return pairing_note(evidence, self.over, kept, "a paired bootstrap's",
                            log_covariance=log_covariance)


def pairing_note(evidence: dict, over: str, kept: int, source: str, starts_only: bool = False,
                 **covariances: np.ndarray) -> str:
    """Record in ``evidence`` that a check's values along ``over`` were judged jointly from
    ``kept`` paired replicates, with the ``covariances`` (by their evidence names); the
    sentence its detail adds (``source``: whose covariance). ``starts_only``: the points share
    their replicates' starts alone, not the engine's random numbers."""
    shared = (f"starts common across {over}" if starts_only else f"paired across {over}")
    evidence.update({"common_random_numbers": shared, "paired_replicates": kept,
                     **{name: matrix.tolist() for name, matrix in covariances.items()}})
    why = (f" Replicate r starts from the same draw at every {over} (one stream of starts for "
           "every point)" if starts_only else
           f" The points share the engine's random numbers along {over} ([study] paired)")
    return (f"{why}: their errors are {source} covariance over {kept} replicates, not "
            "independent ones.")


def dominant_term(function: str) -> str:
    """The error term that staleness moves for φ: the bias for θ², the variance for θ."""
    return "bias" if function == "theta_squared" else "variance"


def error_shares(fin: xr.Dataset, function: str) -> xr.DataArray:
    """Fractions of the exact dominant term by source, dims ``(<sweep dims>, error_source)``."""
    parts = fin[f"exact_{dominant_term(function)}_by_source"].sel(
        test_function=function).sum("component")
    return parts / parts.sum("error_source")


def _describe_shares(shares: xr.DataArray, over: str, term: str, function: str) -> str:
    values = shares[over].values.tolist()
    lo, hi = values[0], values[-1]
    pieces = []
    for source in shares["error_source"].values.tolist():
        at_lo = float(shares.sel({over: lo, "error_source": source}))
        at_hi = float(shares.sel({over: hi, "error_source": source}))
        pieces.append(f"{source.replace('_', ' ')} {at_lo:.0%} / {at_hi:.0%}")
    return (f"Exact {term} of φ̂({function}) by source at {over} = {lo} / {over} = {hi}: "
            + ", ".join(pieces) + ".")


def point_slices(dataset: xr.Dataset, dims: Sequence[str], over: str):
    """(label suffix, the dataset at one value of every sweep dim but ``over``)."""
    for suffix, _, data in rate_slices(dataset, dims, over, {}):
        yield suffix, data


def rate_slices(dataset: xr.Dataset, dims: Sequence[str], over: str, where: Mapping):
    """(label suffix, point, the dataset at that point) for every value of the sweep dims but
    ``over`` that ``where`` keeps (a check's ``{ integrator = "euler" }``)."""
    others = [d for d in dims if d != over]
    for point in sweep_points(dataset, others):
        if all(point[d] == v for d, v in where.items()):
            yield (f"/{point_label(point)}" if point else ""), point, dataset.sel(point)


# ---------------------------------------------------------------------------------- oracle

def divergence_check(fin: xr.Dataset, point: dict, z: float) -> Verdict | None:
    """``violated`` when replicates diverged at a point or its recursion is unstable there,
    with the count, the first divergence time and why it contradicts the theory."""
    at = fin.sel(point)
    diverged_at = at["diverged_at"].values
    diverged = diverged_at[diverged_at >= 0]
    stable = bool(at["stable"])
    if stable and diverged.size == 0:
        return None
    total = diverged_at.size
    h = float(at["step_size"])
    length = int(at["n_iterations"])
    label = point_label(point)
    first = f", the first at sample {int(diverged.min())} of {length}" if diverged.size else ""
    if stable:
        why = (f"{diverged.size} of {total} replicates diverged{first} although the exact "
               f"recursion is stable at h = {h:.3g}: the sampler is wrong, or the divergence "
               "threshold is too low.")
    else:
        why = (f"The exact recursion is unstable at {label}, h = {h:.3g} (stale SGLD with "
               "constant τ needs h/s² < 2 sin(π/(2(2τ + 1)))): the design leaves the stable "
               f"region, so the claim fails here; {diverged.size} of {total} replicates "
               f"diverged{first}.")
    evidence = {**point, "n_diverged": int(diverged.size), "n_replicates": total,
                "first_divergence": int(diverged.min()) if diverged.size else None,
                "stable_recursion": stable, "step_size": h}
    return Verdict(f"oracle/divergence/{label}", "oracle", VIOLATED,
                   float(diverged.size), 0.0, 0.0, 0.0, z, two_sided_rate(z), why, evidence,
                   scale="count", difference=float(diverged.size))


def oracle_checks(dataset: xr.Dataset, dims: Sequence[str], false_failure_rate: float,
                  label: str | None = None) -> list[Verdict]:
    fin = final(dataset)
    points = sweep_points(fin, dims)
    components = fin["component"].values.tolist()
    exact_mse = fin["exact_variance"].sel(test_function="theta_squared")
    comparisons = [c for c in COMPARISONS if c[0] == "theta" or c[1] == "mean"
                   or bool(np.all(np.isfinite(exact_mse)))]
    z = z_for_family(false_failure_rate, len(comparisons) * len(points) * len(components))
    total = fin.sizes["replicate"]
    verdicts = []
    for point in points:
        if finding := divergence_check(fin, point, z):
            verdicts.append(finding)
        for function, moment, measured, error, relative in comparisons:
            for j in components:
                at = fin.sel(point).sel(test_function=function, component=j)
                suffix = f"/component={j}" if len(components) > 1 else ""
                name = f"oracle/{function}/{moment}/{point_label(point, label)}{suffix}"
                evidence = {**point, "n_iterations": int(at["n_iterations"]),
                            "step_size": float(at["step_size"]), "n_valid": int(at["n_valid"])}
                verdicts.append(oracle_check(
                    name, at[measured], at[error], at[f"exact_{moment}"], z,
                    detail=f"{moment} of φ̂_L({_SYMBOL[function]}) at L = "
                           f"{int(at['n_iterations'])} vs the exact stacked-state oracle"
                           f"{_left_out(at, total)}.",
                    evidence=evidence, n_replicates=int(at["n_valid"]), relative=relative))
    return verdicts


# ---------------------------------------------------------------------- invariance and slope

def mse_invariance_check(data: xr.Dataset, function: str, over: str, name: str,
                         false_failure_rate: float, pairing: Pairing | None = None) -> Verdict:
    squared = squared_errors(final(data), function)
    n_valid = squared.count("replicate")
    mse = squared.mean("replicate")
    with np.errstate(over="ignore", invalid="ignore"):
        mse_se = squared.std("replicate", ddof=1) / np.sqrt(n_valid)
    values = data[over].values.tolist()
    fin = final(data)
    shares = error_shares(fin, function)
    variance = fin["variance"].sel(test_function=function).sum("component")
    term = dominant_term(function)
    evidence = {"test_function": function, "over": over, "mse": mse.values.tolist(),
                "bias_squared_share_of_mse": (1 - variance / mse).values.tolist(),
                f"exact_{term}_shares": {source: shares.sel(error_source=source).values.tolist()
                                         for source in shares["error_source"].values.tolist()}}
    lo, hi = 0, len(values) - 1
    detail = (
        f"MSE of φ̂({function}) is {float(mse[lo]):.3g} at {over} = {values[lo]} and "
        f"{float(mse[hi]):.3g} at {over} = {values[hi]} (ratio {float(mse[lo] / mse[hi]):.3g}). "
        + _describe_shares(shares, over, term, function)
        + " A design that holds the staleness and 1/(Lh) terms fixed (seed 001 §5.1: "
        "h = C τ^(-2/3) L^(-1/3), L = L0·τ) leaves the τ-free minibatch and discretisation "
        "terms, which shrink with h, so the MSE is flat only where they are small."
        + _left_out_note(data, over))
    paired = None if pairing is None else pairing.statistics(squared, "mean")
    if paired is None:
        return invariance_check(name, mse.values, mse_se.values,
                                [f"{over}={v}" for v in values],
                                z_for_family(false_failure_rate, 1), detail=detail,
                                evidence=evidence, n_replicates=int(n_valid.min()))
    mse_paired, log_covariance, kept = paired
    detail += pairing.note(evidence, log_covariance, kept)
    return invariance_check(name, mse_paired, mse_paired * np.sqrt(np.diag(log_covariance)),
                            [f"{over}={v}" for v in values],
                            z_for_family(false_failure_rate, 1), detail=detail,
                            evidence=evidence, log_covariance=log_covariance,
                            n_replicates=kept)


def variance_slope_check(data: xr.Dataset, function: str, over: str, expected: float,
                         name: str, false_failure_rate: float,
                         pairing: Pairing | None = None) -> Verdict:
    fin = final(data).sel(test_function=function)
    variance = fin["variance"].sum("component")
    variance_se = np.sqrt((fin["variance_se"] ** 2).sum("component"))
    x = data[over].values
    evidence = {"test_function": function, "over": over}
    detail = (f"The variance of φ̂ against {over} has log-log slope {expected:g} by the "
              "study's claim (Theorem 4 of seed 001: O(1/(Lh) + h^(2K)), free of τ, so slope 0 "
              "against τ where L·h is fixed).")
    exact = fin["exact_variance"].sum("component", min_count=1)
    if x.size >= 2 and np.all(np.isfinite(exact.values)) and np.all(exact.values > 0):
        exact_slope = float(np.polyfit(np.log(x), np.log(exact.values), 1)[0])
        shares = error_shares(final(data), function)
        evidence.update({"exact_variance": exact.values.tolist(), "exact_slope": exact_slope})
        detail += (f" The exact oracle's slope is {exact_slope:.3g}. "
                   + _describe_shares(shares, over, "variance", function))
    detail += _left_out_note(data, over)
    paired = None if pairing is None else pairing.statistics(fin["estimate"], "variance")
    if paired is None:
        return slope_check(name, x, variance.values, variance_se.values, expected,
                           z_for_family(false_failure_rate, 1), detail=detail,
                           evidence=evidence, n_replicates=int(fin["n_valid"].min()))
    variances, log_covariance, kept = paired
    detail += pairing.note(evidence, log_covariance, kept)
    return slope_check(name, x, variances, variances * np.sqrt(np.diag(log_covariance)),
                       expected, z_for_family(false_failure_rate, 1), detail=detail,
                       evidence=evidence, log_covariance=log_covariance, n_replicates=kept)


# ----------------------------------------------------------------------------------- bounds

def fixed_symbols(bound: Bound, config: Mapping) -> dict:
    """Values of the bound's symbols the study holds fixed (config scalars), by name, and the
    integrator order K of a Gaussian study's sampler (:func:`.schema.integrator_order`)."""
    names = {s.name for s in bound.expression.free_symbols if not SYMBOLS[s].hidden_constant}
    fixed = {name: config[name] for name in names
             if name in config and isinstance(config[name], int | float)
             and not isinstance(config[name], bool)}
    if "integrator_order" in names and "integrator_order" not in fixed:
        fixed["integrator_order"] = integrator_order(config)
    return fixed


def bound_rate(bound: Bound, fixed: Mapping | None = None) -> tuple[float, str]:
    """The bound's rate in L at its optimal step (its exponent, and h* as text); with no step
    size in the bound, its leading exponent in L. ``fixed``: values of symbols put in first
    (``integrator_order = 1``)."""
    fixed = fixed or {}
    exponent, argmin = _rate(bound.expression.xreplace(
        {s: fixed[s.name] for s in bound.expression.free_symbols if s.name in fixed}))
    return exponent, "" if argmin is None else bound.text(argmin)


@cache
def _rate(expression) -> tuple[float, Any]:
    if step_size in expression.free_symbols:
        optimum = symbolic.minimise(expression, step_size)
        return float(optimum.exponent(n_iterations)), optimum.argmin
    return float(symbolic.leading_exponent(expression, n_iterations)), None


def bound_hypothesis(bound: Bound) -> str:
    tag = "a hypothesis under test" if bound.is_hypothesis else bound.provenance
    return f"{bound.title} ({bound.source}; {tag})"


def rate_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    spec = ctx.bounds[options["bound"]]
    bound, function, over = spec.bound, options["test_function"], options["over"]
    expected, optimal_step = bound_rate(bound, spec.fixed)
    if "expected" in options:
        expected = options["expected"]
    verdicts = []
    slices = list(rate_slices(dataset, ctx.dims, over, options["where"]))
    z = one_sided_z_for_family(ctx.config["false_failure_rate"], len(slices))
    for suffix, point, data in slices:
        name = check_name(options, point, function, f"rate/mse/{function}/{options['bound']}"
                                                    f"{suffix}")
        fin = final(data)
        lengths = fin["n_iterations"].values
        exact = (fin["exact_mse"].sel(test_function=function).sum("component"))
        exact_slope = float(ols_slopes(np.log(lengths), np.log(exact.values)))
        detail = (f"{bound_hypothesis(bound)}: at its optimal step"
                  + (f" h* = {optimal_step}" if optimal_step else "")
                  + f" the MSE is O(L^({expected:.3g})); the measured slope against {over} "
                  f"must not be shallower. The exact oracle's MSE of φ̂({function}) has slope "
                  f"{exact_slope:.3g} on this grid.")
        evidence = {"test_function": function, "bound": options["bound"],
                    "step_size": fin["step_size"].values.tolist(), "exact_slope": exact_slope,
                    "exact_values": exact.values.tolist(), "optimal_step": optimal_step}
        samples = squared_errors(fin, function).transpose(over, "replicate")
        verdicts.append(rate_check(
            name, lengths, samples.values, expected, z,
            generator(ctx.seed, ctx.name, "check", name), statistic="mean",
            paired=options["paired"] or over in ctx.paired,
            n_resamples=options["bootstrap_resamples"],
            margin=options["rate_margin"], detail=detail, evidence=evidence))
    return verdicts


def grid_values(dataset: xr.Dataset, bound: Bound, symbols: Mapping[str, str]) -> dict:
    """The bound's symbols on the grid, by name: ``n_iterations`` is each checkpoint's sample
    count, a sweep dim its coordinate (under its own name, or the name ``symbols`` gives it:
    its ``[[bound]] symbols``), a per-point value its variable (step sizes)."""
    values = {}
    for symbol in bound.expression.free_symbols:
        name = symbols.get(symbol.name, symbol.name)
        if SYMBOLS[symbol].hidden_constant:
            continue
        if name == "n_iterations":
            values[symbol.name] = dataset["iterations"]
        elif name in dataset.variables:
            values[symbol.name] = dataset[name]
    return values


def calibration_mask(dataset: xr.Dataset, dims: Sequence[str], split: str) -> xr.DataArray:
    """True where a grid point calibrates the envelope (the rest is held out): checkerboard
    alternates the sweep points (calibration and validation are independent runs),
    extrapolate calibrates on the shorter half of the checkpoints."""
    if split == "checkerboard":
        parity = sum(xr.DataArray(np.arange(dataset.sizes[d]), dims=d) for d in dims)
        return parity % 2 == 0
    iterations = dataset["iterations"]
    return iterations <= float(np.median(iterations))


@dataclass(frozen=True)
class EnvelopeFit:
    envelope: Envelope
    values: dict          # the bound's symbols on the grid, and those held fixed
    observed: xr.DataArray
    errors: xr.DataArray
    held_out: xr.DataArray


def envelope_fit(dataset: xr.Dataset, ctx: Context, options: dict) -> EnvelopeFit:
    """The bound's envelope fitted on the calibration part of the grid (module docstring)."""
    spec, function = ctx.bounds[options["bound"]], options["test_function"]
    bound = spec.bound
    squared = squared_errors(dataset, function)
    count = squared.count("replicate")
    observed = squared.mean("replicate")
    with np.errstate(over="ignore", invalid="ignore"):
        errors = squared.std("replicate", ddof=1) / np.sqrt(count)
    values = grid_values(dataset, bound, spec.symbols)
    declared = spec.fixed
    fixed = {k: v for k, v in {**fixed_symbols(bound, ctx.config), **declared,
                               **options["fixed"]}.items() if k not in values}
    calibration = calibration_mask(dataset, ctx.dims, options["split"]).broadcast_like(observed)
    envelope = fit_envelope(bound, values, observed, calibration, fixed=fixed,
                            label=f"{ctx.name} {options['split']} calibration, φ = {function}")
    return EnvelopeFit(envelope, {**values, **fixed}, observed, errors, ~calibration)


def envelope_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    bound, function = ctx.bounds[options["bound"]].bound, options["test_function"]
    fit = envelope_fit(dataset, ctx, options)
    z = one_sided_z_for_family(ctx.config["false_failure_rate"], max(1, int(fit.held_out.sum())))
    evidence = {"test_function": function, "split": options["split"], "bound": options["bound"],
                "expression": bound.text()}
    if np.all(np.isfinite(fit.envelope.coefficients)):
        exact = dataset["exact_mse"].sel(test_function=function).sum("component")
        evidence["exact_ratio_max"] = float((exact / fit.envelope(fit.values))
                                            .where(fit.held_out).max())
    detail = (f"{bound_hypothesis(bound)}: its terms {', '.join(fit.envelope.terms)} with "
              f"non-negative constants fitted on the {options['split']} calibration part must "
              "stay above the MSE of the held-out part.")
    if np.all(np.isfinite(fit.envelope.coefficients)):
        detail += (f" Fitted on {fit.envelope.n_calibration} points: {fit.envelope.text()};"
                   f" held-out MSE / envelope at most {evidence['exact_ratio_max']:.3g} for "
                   "the exact oracle's MSE.")
    return [envelope_check(f"envelope/{options['bound']}/{function}", fit.envelope, fit.values,
                           fit.observed, fit.errors, z, fit.held_out,
                           n_replicates=ctx.config["n_replicates"], detail=detail,
                           evidence=evidence)]


def with_test_function(options: dict, ctx: Context) -> dict:
    """A check's options with its test function, the study's ``test_function`` where the check
    names none."""
    return {**options, "test_function": options.get("test_function")
            or ctx.config["test_function"]}


def judge(kind: str, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """The verdicts of one ``[[check]]`` of a Gaussian-mean study of :mod:`.gaussian_point`:
    the ``kind`` oracle, invariance, slope, rate or envelope."""
    rate = ctx.config["false_failure_rate"]
    given = options.get("test_function")
    options = with_test_function(options, ctx)
    function = options["test_function"]
    if kind == "oracle":
        return oracle_checks(dataset, ctx.dims, rate, options.get("label"))
    if kind == "invariance":
        over = options["over"]
        return [mse_invariance_check(data, function, over, name, rate,
                                     Pairing(ctx, over, name, options["bootstrap_resamples"]))
                for suffix, data in point_slices(dataset, ctx.dims, over)
                for name in [f"invariance/mse/{function}{suffix}"]]
    if kind == "slope":
        over = options["over"]
        functions = [given] if given else dataset["test_function"].values.tolist()
        slices = list(point_slices(dataset, ctx.dims, over))
        return [variance_slope_check(data, f, over, options["expected"], name, rate,
                                     Pairing(ctx, over, name, options["bootstrap_resamples"]))
                for f in functions for suffix, data in slices
                for name in [f"slope/variance-vs-{over}/{f}{suffix}"]]
    if kind == "rate":
        return rate_checks(dataset, ctx, options)
    return envelope_checks(dataset, ctx, options)
