"""Error spending across looks (bounds/sequential.py): the shares, the critical values every
check kind reads at a look, and the error rates of the whole procedure, simulated."""

import math

import numpy as np
import pytest
from scipy import stats

from bounds.checks import oracle_check
from bounds.equivalence import FALSE_HOLDS_RATE, Z_HOLDS, decide, resolve_z_holds
from bounds.sequential import Look, at_look, current, rate_share
from bounds.verdict import (
    HOLDS,
    INCONCLUSIVE,
    VIOLATED,
    one_sided_z_for_family,
    student_z_for_family,
    z_for_family,
)


def test_the_shares_halve_and_sum_to_one():
    shares = [Look(k).share for k in range(1, 40)]
    assert shares[:3] == [0.5, 0.25, 0.125]
    assert math.isclose(sum(shares), 1.0, rel_tol=1e-9)
    assert Look(3).spent == 0.875 and Look(3).replicate_multiple == 4
    with pytest.raises(ValueError, match="numbered from 1"):
        Look(0)


def test_a_look_spends_its_share_of_every_rate_and_only_inside_its_block():
    assert current() is None and rate_share() == 1.0
    fixed = z_for_family(0.05, 4)
    with at_look(Look(2)):
        assert z_for_family(0.05, 4) == pytest.approx(stats.norm.isf(0.05 / 4 / 4 / 2))
        assert one_sided_z_for_family(0.05, 4) == pytest.approx(stats.norm.isf(0.05 / 4 / 4))
        assert resolve_z_holds(None) == pytest.approx(stats.norm.isf(FALSE_HOLDS_RATE / 4))
        assert resolve_z_holds(1.0) == 1.0
    assert z_for_family(0.05, 4) == fixed and current() is None
    assert resolve_z_holds(None) == Z_HOLDS


def test_student_critical_values_spend_the_look_s_share_too():
    """The D-SGLD and federated checks' Student t critical values (few chains): at look 2 the
    quarter of the rate, outside a look the whole; they did not spend before 2026-12-02."""
    fixed = student_z_for_family(0.05, 4, 10)
    assert fixed == pytest.approx(stats.t.isf(0.05 / 4 / 2, 9))
    with at_look(Look(2)):
        assert student_z_for_family(0.05, 4, 10) == pytest.approx(stats.t.isf(0.05 / 4 / 4 / 2, 9))
        assert student_z_for_family(0.05, 4, 10) > fixed
    with at_look(Look(1, only=True)):
        assert student_z_for_family(0.05, 4, 10) == fixed
    assert student_z_for_family(0.05, 4, 1) == pytest.approx(stats.t.isf(0.05 / 4 / 2, 1))
    with pytest.raises(ValueError, match="n_comparisons"):
        student_z_for_family(0.05, 0, 10)


def test_the_only_look_spends_the_whole_rate_and_only_look_1_may_be_it():
    only = Look(1, only=True)
    assert only.share == only.spent == 1.0 and only.replicate_multiple == 1
    assert "only look" in only.describe()["spending"]
    fixed = z_for_family(0.05, 4)
    with at_look(only):  # the fixed-R critical values
        assert z_for_family(0.05, 4) == fixed
        assert resolve_z_holds(None) == Z_HOLDS
        assert z_for_family(0.05, 4) == pytest.approx(stats.norm.isf(0.05 / 4 / 2))
    with at_look(Look(1)):  # negative control: a first look of a longer procedure
        assert resolve_z_holds(None) > Z_HOLDS
    with pytest.raises(ValueError, match="only look 1"):
        Look(2, only=True)


def test_a_difference_that_holds_at_fixed_r_may_need_another_look():
    # |d| + 1.645 σ = 0.9 ≤ 1 holds at fixed R; at look 1 z_holds = 1.96: 1.096 > 1
    assert decide(0.0, 0.9 / Z_HOLDS, 1.0, 3.0).verdict == HOLDS
    with at_look(Look(1)):
        decision = decide(0.0, 0.9 / Z_HOLDS, 1.0, 3.0)
        verdict = oracle_check("c", 0.0, 0.9 / Z_HOLDS, 0.0, 3.0, margin=1.0)
    assert decision.verdict == INCONCLUSIVE and verdict.verdict == INCONCLUSIVE
    assert 1 < verdict.replicate_factor < 2


def _sequential_outcomes(true_difference, margin, n_paths, n_looks, spend, rng):
    """Decide nested looks of a mean of i.i.d. N(true, 1) replicates (R₁ = 20, doubling): the
    first decision of each path, as the procedure stops at it; spend=False judges every look
    at the fixed-R rates (the procedure without spending, the negative control)."""
    first = 20
    z_family = 0.05
    sizes = [first * 2 ** k for k in range(n_looks)]
    draws = rng.standard_normal((n_paths, sizes[-1])) + true_difference
    sums = np.cumsum(draws, axis=1)
    outcome = np.full(n_paths, INCONCLUSIVE, dtype=object)
    for k, size in enumerate(sizes, start=1):
        mean = sums[:, size - 1] / size
        error = 1 / math.sqrt(size)
        with at_look(Look(k) if spend else None):
            z = z_for_family(z_family, 1)
            open_paths = np.flatnonzero(outcome == INCONCLUSIVE)
            for i in open_paths:
                outcome[i] = decide(mean[i], error, margin, z).verdict
    return outcome


def test_the_procedure_keeps_its_false_failure_rate_and_the_unspent_one_does_not():
    """True difference 0, family rate 0.05, five nested looks: the rate of ever violating is
    at most 0.05 within z = 3 binomial standard errors, judged with spending; judged at the
    fixed-R rate at every look it is well above (the negative control: 0.13 here). Margin
    0.01 in units of one replicate's sd: most paths stay undecided long enough to take every
    look."""
    n = 4000
    spent = _sequential_outcomes(0.0, 0.01, n, 5, True, np.random.default_rng(11))
    rate = np.mean(spent == VIOLATED)
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / n)
    unspent = _sequential_outcomes(0.0, 0.01, n, 5, False, np.random.default_rng(11))
    assert np.mean(unspent == VIOLATED) > 0.05 + 3 * math.sqrt(0.05 * 0.95 / n)


def test_the_procedure_keeps_its_false_holds_rate_at_the_margin():
    """True difference exactly at the margin: ``holds`` at most 5 % of paths (z = 3; 0.010
    here), and 0.13 when every look is judged at the fixed-R rate (the negative control)."""
    n = 4000
    margin = 0.3
    spent = _sequential_outcomes(margin, margin, n, 5, True, np.random.default_rng(12))
    assert np.mean(spent == HOLDS) <= FALSE_HOLDS_RATE + 3 * math.sqrt(0.05 * 0.95 / n)
    unspent = _sequential_outcomes(margin, margin, n, 5, False, np.random.default_rng(12))
    assert np.mean(unspent == HOLDS) > FALSE_HOLDS_RATE + 3 * math.sqrt(0.05 * 0.95 / n)
