"""The three-way decision: holds / violated / inconclusive on synthetic data whose true
difference is known to lie inside, outside or near the margin."""

import math

import numpy as np
import pytest

from bounds.equivalence import (
    FALSE_HOLDS_RATE,
    Z_HOLDS,
    ErrorParts,
    decide,
    decide_all,
    replicates_needed,
    verdict_from,
)
from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED, z_for_family

Z = z_for_family(1e-3, 1)  # 3.29: a correct sampler within the margin fails w.p. ≤ 1e-3


def _measured_difference(true_difference, sd, replicates, rng):
    """Mean of R draws of N(true_difference, sd²) and its standard error."""
    draws = true_difference + sd * rng.standard_normal(replicates)
    return draws.mean(), draws.std(ddof=1) / math.sqrt(replicates)


@pytest.mark.parametrize(("true_difference", "expected"), [
    (0.0, HOLDS),          # well inside the margin 0.1
    (0.3, VIOLATED),       # well outside
    (-0.3, VIOLATED),      # two-sided
])
def test_decision_on_synthetic_data_with_a_known_difference(true_difference, expected):
    # R = 400 draws of sd 0.2: σ = 0.01, so z·σ = 0.033 and z_holds·σ = 0.016, far from the
    # gaps between the true differences and the margin (0.1 or 0.2 ≥ 6σ)
    difference, error = _measured_difference(true_difference, 0.2, 400,
                                             np.random.default_rng(7))
    decision = decide(difference, error, 0.1, Z)
    assert decision.verdict == expected
    assert decision.detectable == pytest.approx(0.1 + Z * error)


def test_a_difference_near_the_margin_is_inconclusive():
    """Measured on the margin, or within z·σ of it on either side: neither can be shown (a
    random draw at the margin would say 'holds' 5 % of the time, the stated false-holds
    rate, which the next test measures)."""
    for difference in (0.1, 0.1 - 0.5 * Z_HOLDS * 0.01, 0.1 + 0.5 * Z * 0.01, -0.1):
        assert decide(difference, 0.01, 0.1, Z).verdict == INCONCLUSIVE

def test_false_holds_rate_at_the_margin_is_as_stated():
    """With the true difference on the margin, 'holds' is declared w.p. ≤ FALSE_HOLDS_RATE.
    20,000 simulated checks: the frequency's binomial sd is 0.0015; z = 4 (false failure
    ≈ 3e-5) on the upper side."""
    rng = np.random.default_rng(11)
    error = 0.01
    differences = 0.1 + error * rng.standard_normal(20_000)
    held = np.mean([decide(d, error, 0.1, Z).verdict == HOLDS for d in differences])
    sd = math.sqrt(FALSE_HOLDS_RATE * (1 - FALSE_HOLDS_RATE) / differences.size)
    assert held <= FALSE_HOLDS_RATE + 4 * sd


def test_replicates_needed_decides_an_inconclusive_case():
    decision = decide(0.05, 0.04, 0.1, Z)
    assert decision.verdict == INCONCLUSIVE
    needed = replicates_needed(decision, 100)
    assert needed == math.ceil(100 * (Z_HOLDS * 0.04 / 0.05) ** 2)
    # with that many replicates (σ ∝ 1/√R) the same difference is shown inside the margin
    assert decide(0.05, 0.04 * math.sqrt(100 / needed), 0.1, Z).verdict == HOLDS
    beyond = decide(0.15, 0.04, 0.1, Z)
    assert beyond.verdict == INCONCLUSIVE
    more = replicates_needed(beyond, 100)
    assert decide(0.15, 0.04 * math.sqrt(100 / more), 0.1, Z).verdict == VIOLATED


def test_one_sided_decisions_only_count_differences_against_the_claim():
    assert decide(-5.0, 0.1, 0.1, Z, one_sided=True).verdict == HOLDS
    assert decide(5.0, 0.1, 0.1, Z, one_sided=True).verdict == VIOLATED


def test_non_finite_input_is_inconclusive():
    assert decide(math.nan, 0.1, 0.1, Z).verdict == INCONCLUSIVE
    assert decide(0.0, math.inf, 0.1, Z).verdict == INCONCLUSIVE
    with pytest.raises(ValueError):
        decide(0.0, 0.1, -1.0, Z)


def test_a_claim_of_several_comparisons_is_violated_by_one_and_holds_only_by_all():
    decision, index = decide_all([0.0, 0.5, 0.01], [0.01] * 3, 0.1, Z)
    assert decision.verdict == VIOLATED and index == 1
    decision, index = decide_all([0.0, 0.09, 0.01], [0.01] * 3, 0.1, Z)
    assert decision.verdict == INCONCLUSIVE and index == 1
    decision, _ = decide_all([0.0, 0.02, 0.01], [0.01] * 3, 0.1, Z)
    assert decision.verdict == HOLDS


def test_error_parts_predict_the_replicates_when_part_of_the_error_stays():
    """|d| = 1.3 beyond a margin 0 at z = 4 is decided once the error reaches 1.3/4 = 0.325.
    With 0.3 of the error staying (σ² = 0.3² + 0.4²/m), m = 0.4²/(0.325² − 0.3²) = 10.24; with
    0.33 staying none does, and the reason names what would: (0.4² + 0.33²)/0.325² = 2.55
    times both parts together."""
    decision = decide(1.3, 0.5, 0.0, 4.0)
    assert decision.verdict == INCONCLUSIVE
    assert ErrorParts(0.4, 0.3).factor(decision, 4.0) == pytest.approx(10.24)
    assert ErrorParts(0.5, 0.0).factor(decision, 4.0) == pytest.approx(decision.replicate_factor)
    stuck = ErrorParts(0.4, 0.33, "floor {fixed}; {joint} times the chains").applied(decision,
                                                                                       4.0)
    assert stuck.replicate_factor == math.inf
    assert stuck.cannot == "floor 0.33; 2.55 times the chains"
    verdict = verdict_from("c", "oracle", stuck, 1.3, 0.0, 4.0, "absolute", n_replicates=10)
    assert "more replicates cannot decide it: floor 0.33" in verdict.detail
    assert verdict.evidence["cannot_decide"] == stuck.cannot
    assert verdict.replicates_needed == math.inf
    decided = decide(0.0, 0.01, 1.0, 4.0)  # negative control: a decided check keeps its factor
    assert ErrorParts(0.01, 0.3, "x").applied(decided, 4.0) == decided


def test_the_decision_sentence_follows_the_detail_as_a_new_sentence():
    """A detail without its full stop (a note that ends it) gets one before the decision's
    sentence; one with it, or none at all, is left as it is."""
    decision = decide(0.0, 0.01, 0.1, Z)
    details = [verdict_from("c", "oracle", decision, 0.0, 0.0, Z, "absolute",
                            detail=detail).detail
               for detail in ("window span 16 relaxation times (1e+03 updates)",
                              "window span 16 relaxation times.", "")]
    assert details[0].startswith("window span 16 relaxation times (1e+03 updates). Shown within")
    assert details[1].startswith("window span 16 relaxation times. Shown within")
    assert details[2].startswith("Shown within")
