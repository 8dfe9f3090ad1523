"""Envelope checks: a bound's form, with constants fitted on part of a grid, stays above the
measurements on the rest.

An O(·) bound Σ_j C_j t_j(h, L, τ, ...) hides one constant per term; the envelope check fits
them, non-negative, on a *calibration* part of a grid and asks whether the fitted envelope
still lies above the measurements on the *held-out* part — which is what "the bound holds
with some constants" can mean for a finite experiment.

Fitting (:func:`fit_envelope`): non-negative least squares on relative residuals,
min_{c ≥ 0} Σ_i (Σ_j c_j t_j(x_i)/y_i − 1)², i.e. a least-squares fit in log space to first
order (every point weighs the same whatever its magnitude); the coefficients are then scaled
up by the largest calibration ratio y_i / fit_i, so the envelope lies on or above every
calibration point. Checking (:func:`envelope_check`): each held-out point is judged on
d = log(measurement/envelope) with error SE/measurement, one-sided against a margin (default
0.1: 10 % above the envelope) by :func:`bounds.equivalence.decide_all` — ``violated`` when
some point is shown above the envelope by more than the margin (Bonferroni over the held-out
points inside ``z``), ``holds`` when every point is shown below it; the verdict reports the
deciding point and, as tightness, the median ratio of measurement to envelope. The fit and
the check are separate so constants fitted on one model or system can be judged on another.

Grid values are xarray DataArrays (or scalars) keyed by the bound's symbol names; they
broadcast by dim name through the bound's cached lambdified terms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.optimize import nnls

from bounds.equivalence import DEFAULT_MARGINS, decide, decide_all, verdict_from
from bounds.record import Bound
from bounds.verdict import Verdict

TERM_DIM = "term"


@dataclass(frozen=True)
class Envelope:
    """A bound's terms with fitted non-negative coefficients (module docstring)."""

    bound: Bound
    coefficients: np.ndarray  # one per term, >= 0
    n_calibration: int
    scale: float  # factor applied to the least-squares coefficients to make an envelope
    fixed: Mapping  # values of the symbols held fixed (not on the grid), e.g. K = 1
    label: str = ""  # what the constants were fitted on

    @property
    def terms(self) -> list[str]:
        """The terms as text, with the fixed symbols put in (h² rather than h^(2K))."""
        fixed = {s: v for s in self.bound.all_symbols() for k, v in self.fixed.items()
                 if s.name == k}
        return [self.bound.text(t.xreplace(fixed)) for t in self.bound.terms()]

    def text(self) -> str:
        """The fitted envelope as one line: ``2e+05·h² + 0·h²τ² + 0.00061·1/(L·h)``."""
        return " + ".join(f"{c:.3g}·({t})" for c, t in zip(self.coefficients, self.terms,
                                                           strict=True))

    def term_values(self, values: Mapping) -> xr.DataArray:
        return self.bound.term_values(TERM_DIM, **{**dict(self.fixed), **dict(values)})

    def __call__(self, values: Mapping) -> xr.DataArray:
        coefficients = xr.DataArray(self.coefficients, dims=TERM_DIM)
        return (self.term_values(values).drop_vars(TERM_DIM) * coefficients).sum(TERM_DIM)

    def to_dict(self) -> dict:
        return {"bound": self.bound.name, "provenance": self.bound.provenance,
                "terms": self.terms, "coefficients": self.coefficients.tolist(),
                "n_calibration": self.n_calibration, "scale": self.scale,
                "fixed": {k: float(v) for k, v in self.fixed.items()},
                "fitted_on": self.label}


def _flatten(arrays: list[xr.DataArray], mask) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Broadcast the arrays to one grid and keep the points where all are finite, the first
    is positive and ``mask`` is True: ((points, len(arrays)), keep mask, dims)."""
    arrays = xr.broadcast(*(a.reset_coords(drop=True) for a in arrays))
    dims = list(arrays[0].dims)
    stacked = np.stack([a.transpose(*dims).values for a in arrays], axis=-1)
    keep = np.all(np.isfinite(stacked), axis=-1) & (stacked[..., 0] > 0)
    if mask is not None:
        selection = xr.DataArray(mask).reset_coords(drop=True).broadcast_like(arrays[0])
        keep &= selection.transpose(*dims).values.astype(bool)
    return stacked[keep], keep, dims


def _term_list(term_values: xr.DataArray) -> list[xr.DataArray]:
    return [term_values.isel({TERM_DIM: j}, drop=True) for j in range(term_values.sizes[TERM_DIM])]


def fit_envelope(bound: Bound, values: Mapping, observed: xr.DataArray, calibration=None, *,
                 fixed: Mapping | None = None, label: str = "") -> Envelope:
    """Fit the bound's non-negative term coefficients on the calibration points.

    values: grid coordinates by symbol name (DataArrays); fixed: symbols held at one value
    (e.g. ``{"integrator_order": 1}``); calibration: boolean DataArray (True = use), default
    every finite point.
    """
    if bound.relation != "upper bound":
        raise ValueError(f"{bound.name} is not an upper bound ({bound.relation})")
    fixed = dict(fixed or {})
    terms = _term_list(bound.term_values(TERM_DIM, **{**fixed, **dict(values)}))
    points, _, _ = _flatten([observed, *terms], calibration)
    target, design = points[:, 0], points[:, 1:]
    n_terms = len(terms)
    if target.size < n_terms:
        return Envelope(bound, np.full(n_terms, np.nan), int(target.size), math.nan, fixed,
                        label)
    relative, _ = nnls(design / target[:, None], np.ones(target.size))
    fit = design @ relative
    if not np.any(fit > 0):
        return Envelope(bound, np.full(n_terms, np.nan), int(target.size), math.nan, fixed,
                        label)
    scale = float(np.max(target / fit))
    return Envelope(bound, relative * scale, int(target.size), scale, fixed, label)


def _width(margin: float | None) -> float:
    """The envelope's margin on the log scale (the default margin where ``margin`` is None)."""
    return math.log1p(DEFAULT_MARGINS["envelope"].size if margin is None else margin)


def unjudged_envelope(check: str, reason: str, z: float, *, margin: float | None = None,
                      detail: str = "", evidence: dict | None = None) -> Verdict:
    """An envelope check the run cannot judge, ``inconclusive`` with ``reason`` in its detail
    (no difference or error: more replicates cannot decide it)."""
    decision = decide(math.nan, math.nan, _width(margin), z, one_sided=True)
    return verdict_from(check, "envelope", decision, math.nan, 1.0, z, "log-ratio",
                        detail=f"{detail} ({reason})".strip(), evidence=evidence)


def envelope_check(check: str, envelope: Envelope, values: Mapping, observed: xr.DataArray,
                   errors: xr.DataArray, z: float, held_out=None, *, margin: float | None = None,
                   z_holds: float | None = None, n_replicates: int | None = None, detail: str = "",
                   evidence: dict | None = None) -> Verdict:
    """No held-out measurement above the envelope by more than ``margin`` (module docstring)."""
    evidence = dict(evidence or {})
    evidence["envelope"] = envelope.to_dict()
    width = _width(margin)

    def undecided(reason: str) -> Verdict:
        return unjudged_envelope(check, reason, z, margin=margin, detail=detail,
                                 evidence=evidence)

    if not np.all(np.isfinite(envelope.coefficients)):
        return undecided(f"too few usable calibration points to fit "
                         f"{len(envelope.coefficients)} constants")
    points, keep, dims = _flatten([observed, errors, envelope(values)], held_out)
    coordinates = {d: observed[d].values if d in observed.coords else None for d in dims}
    y, error, upper = points[:, 0], points[:, 1], points[:, 2]
    if y.size == 0 or not np.all(np.isfinite(error)) or not np.all(upper > 0):
        return undecided("no finite held-out points")
    ratios = y / upper
    decision, worst = decide_all(np.log(ratios), error / y, width, z, z_holds=z_holds,
                                 one_sided=True)
    where = np.argwhere(keep)[worst]
    evidence.update({
        "n_held_out": int(y.size),
        "worst_point": {d: (coordinates[d][i].item() if coordinates[d] is not None else int(i))
                        for d, i in zip(dims, where, strict=True)},
        "ratio_max": float(ratios.max()),
        "ratio_median": float(np.median(ratios)),
        "ratio_min": float(ratios.min()),
    })
    return verdict_from(check, "envelope", decision, float(ratios[worst]), 1.0, z, "log-ratio",
                        n_replicates=n_replicates, detail=detail, evidence=evidence)
