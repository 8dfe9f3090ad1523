"""Held-out test-function summaries over replicates: the mean and the variance of φ̂_L.

Seed 001 plots the test loss (Figures 3, 4: its mean over runs) and the variance of the test
loss over runs (Figure 2). With no exact posterior value for these models, the summaries are
those of :func:`workbench.stats.estimators.summarize` that do not need one: the mean with its
standard error and interval, and the variance with its distribution-free standard error and
interval, each over the valid (not diverged) replicates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# xarray and the estimators (scipy.stats) are imported where a summary is made, not by the
# experiments' parameter lists (issue 15)
if TYPE_CHECKING:
    import xarray as xr

KEPT = ("mean", "variance", "variance_se", "variance_lower", "variance_upper", "n_valid")


def held_out_summary(estimate: xr.DataArray, confidence: float) -> xr.Dataset:
    """``mean``, ``mean_se``, ``mean_lower``/``upper``, ``variance`` (with ``_se``,
    ``_lower``, ``_upper``) and ``n_valid`` of ``estimate`` over ``replicate``."""
    from workbench.stats.estimators import summarize

    summary = summarize(estimate, 0.0, confidence=confidence)
    out = summary[list(KEPT)]
    # with posterior value 0 the bias is the mean, so its error and interval are the mean's
    out["mean_se"] = summary["bias_se"]
    out["mean_lower"] = summary["bias_lower"]
    out["mean_upper"] = summary["bias_upper"]
    return out
