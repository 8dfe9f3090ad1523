"""Every check kind holds on a correct input and is `violated` on its negative control."""

import math

import numpy as np
import pytest

from bounds.checks import invariance_check, loglog_slope, oracle_check, slope_check
from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED, Verdict, two_sided_rate, z_for_family


def test_oracle_check_holds_within_z_errors_and_is_violated_beyond():
    assert oracle_check("ok", 1.02, 0.01, 1.0, 3.0).verdict == HOLDS
    wrong = oracle_check("wrong exact value", 1.05, 0.01, 1.0, 3.0)
    assert wrong.verdict == VIOLATED
    assert wrong.margin == pytest.approx(3 * 0.01 - 0.05)
    assert wrong.evidence["z_score"] == pytest.approx(5.0)


def test_non_finite_inputs_are_inconclusive_not_a_pass():
    for observed, error, expected in ((math.nan, 0.1, 1.0), (1.0, math.inf, 1.0),
                                      (1.0, 0.1, math.inf)):
        assert oracle_check("x", observed, error, expected, 3.0).verdict == INCONCLUSIVE


def test_invariance_check_negative_control():
    errors = np.full(4, 0.05)
    assert invariance_check("flat", [1.0, 1.02, 0.97, 1.01], errors, list("abcd"),
                            3.29).verdict == HOLDS
    trend = invariance_check("trend", [1.0, 1.2, 1.4, 1.6], errors, list("abcd"), 3.29)
    assert trend.verdict == VIOLATED
    assert trend.evidence["worst"] in ("a", "d")
    assert invariance_check("one value", [1.0], [0.1], ["a"], 3.0).verdict == INCONCLUSIVE


def test_slope_check_catches_a_swapped_exponent():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    y = 3.0 * x ** (-2 / 3)
    errors = 0.01 * y
    assert slope_check("right", x, y, errors, -2 / 3, 3.29).verdict == HOLDS
    assert slope_check("swapped", x, y, errors, -3 / 2, 3.29).verdict == VIOLATED
    slope, error, intercept = loglog_slope(x, y, errors)
    assert slope == pytest.approx(-2 / 3) and intercept == pytest.approx(math.log(3.0))
    assert error > 0


def test_bonferroni_z_and_its_rate():
    assert z_for_family(0.05, 1) == pytest.approx(1.959964, rel=1e-6)
    assert two_sided_rate(z_for_family(1e-3, 18)) == pytest.approx(1e-3 / 18)


def test_verdict_refuses_unknown_verdicts_and_serialises_non_finite_values():
    with pytest.raises(ValueError):
        Verdict("x", "oracle", "maybe", 0, 0, 0, 0, 3, 0.003)
    record = Verdict("x", "oracle", HOLDS, math.nan, math.inf, 0.1, 0.2, 3, 0.003).to_dict()
    assert record["observed"] is None and record["expected"] == "inf"
