"""reference_check: the run's and the reference's Monte Carlo errors combine, σ² = σ_run² +
σ_ref², in the three-way decision (hand-built references with known values)."""

import math

import numpy as np
import pytest
import xarray as xr

from bounds.checks import oracle_check
from bounds.equivalence import decide
from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from simulators.validation import InvalidParameter
from workbench.reference import reference_check, reference_value
from workbench.reference.compare import reference_parts

Z = 4.0


def reference(mean=1.0, mean_error=0.3, variance=2.0, variance_error=0.1, rhat=1.0):
    def grid(value):
        return ("test_function", "component"), np.array([[value, np.nan]])

    return xr.Dataset({"mean": grid(mean), "mean_mc_error": grid(mean_error),
                       "variance": grid(variance), "variance_mc_error": grid(variance_error),
                       "rhat": grid(rhat)},
                      coords={"test_function": ["theta"], "component": [0, 1]})


def test_the_errors_combine_in_quadrature():
    verdict = reference_check("c", 2.8, 0.4, reference(), "theta", 0, Z, margin=0.0)
    assert verdict.mc_error == pytest.approx(0.5)
    assert verdict.evidence["run_mc_error"] == 0.4
    assert verdict.evidence["reference_mc_error"] == 0.3
    # |d| = 1.8 < 4·0.5: not shown; ignoring the reference's error (1.8 > 4·0.4) would fail it
    assert verdict.verdict == INCONCLUSIVE
    assert oracle_check("c", 2.8, 0.4, 1.0, Z, margin=0.0).verdict == VIOLATED
    assert reference_check("c", 3.1, 0.4, reference(), "theta", 0, Z,
                           margin=0.0).verdict == VIOLATED


def test_relative_comparison_adds_relative_errors():
    verdict = reference_check("c", 2.2, 0.22, reference(), "theta", 0, Z, statistic="variance",
                              relative=True, margin=0.5)
    assert verdict.scale == "log-ratio"
    assert verdict.difference == pytest.approx(math.log(1.1))
    assert verdict.mc_error == pytest.approx(math.hypot(0.1, 0.05))
    assert verdict.verdict == HOLDS  # log 1.1 + 1.645·0.112 < log 1.5


def test_default_margin_is_half_the_runs_per_replicate_spread():
    verdict = reference_check("c", 1.0, 0.01, reference(mean_error=0.001), "theta", 0, Z,
                              n_replicates=100)
    assert verdict.margin == pytest.approx(0.5 * 0.01 * 10)
    assert verdict.verdict == HOLDS
    with pytest.raises(ValueError, match="n_replicates"):
        reference_check("c", 1.0, 0.01, reference(), "theta", 0, Z)


def test_a_reference_whose_chains_disagree_decides_nothing():
    verdict = reference_check("c", 5.0, 0.01, reference(rhat=1.2), "theta", 0, Z, margin=0.0)
    assert verdict.verdict == INCONCLUSIVE
    assert "not trusted" in verdict.detail and "R-hat" in verdict.detail


def test_replicates_needed_account_for_the_fixed_reference_error():
    """|d| = 1.3, margin 0, z = 4: deciding needs a combined σ ≤ 1.3/4 = 0.325. The reference
    alone has 0.3, so the run's σ must reach √(0.325² - 0.3²) = 0.125, from 0.4: (0.4/0.125)²
    = 10.24 times the replicates. With σ_ref = 0.33 no number of replicates decides it, but
    growing the reference's draws alike does: (0.4² + 0.33²)/0.325² = 2.5457 times both."""
    verdict = reference_check("c", 2.3, 0.4, reference(), "theta", 0, Z, margin=0.0,
                              n_replicates=10)
    assert verdict.verdict == INCONCLUSIVE
    assert verdict.replicates_needed == 103  # ⌈10 · 10.24⌉
    hopeless = reference_check("c", 2.3, 0.4, reference(mean_error=0.33), "theta", 0, Z,
                               margin=0.0, n_replicates=10)
    assert hopeless.replicates_needed == math.inf
    assert "longer reference run" in hopeless.detail
    assert hopeless.replicate_factor == math.inf and verdict.replicate_factor > 10
    assert "longer reference run would decide it" in hopeless.evidence["cannot_decide"]
    assert hopeless.evidence["reference_factor"] == pytest.approx(2.5457, abs=1e-4)
    assert "about 2.55 times both" in hopeless.evidence["cannot_decide"]
    assert "cannot_decide" not in verdict.evidence
    assert reference_parts(0.01, 0.0).factor(decide(0.0, 0.01, 1.0, Z), Z) == 1.0  # decided


def test_unknown_names_are_refused():
    data = reference()
    with pytest.raises(InvalidParameter, match="test_function"):
        reference_value(data, "theta_cubed", 0)
    with pytest.raises(InvalidParameter, match="statistic"):
        reference_value(data, "theta", 0, "median")
    with pytest.raises(InvalidParameter, match="component"):
        reference_value(data, "theta", 2)
