"""Chain-level estimates of the sharded studies (``workbench.systems.distributed.windows``):
their chains carry independent schedules and their replicates replay each schedule, so more
replicates shrink only the sampler's noise, never the schedules' spread; the margin is half
the spread of one replicate of one chain, whatever the replicates averaged; the exact oracle
given each schedule is a control variate that keeps the estimate unbiased and is refused where
the samples depart from it. Synthetic data with known spreads: each chain's exact value
C_c ~ N(0, σ_b²), each replicate's window average C_c + N(0, σ_w²)."""

import math

import numpy as np
import pytest

from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from workbench.systems.distributed.windows import chain_estimate, chain_level_check

SIGMA_B, SIGMA_W = 1.0, 2.0


def _chains(n_chains, n_replicates, seed=0, sigma_b=SIGMA_B, sigma_w=SIGMA_W):
    rng = np.random.default_rng(seed)
    exact = sigma_b * rng.standard_normal(n_chains)
    measured = exact[None] + sigma_w * rng.standard_normal((n_replicates, n_chains))
    return measured, exact


def test_replicates_shrink_only_the_sampler_s_noise():
    measured, exact = _chains(40, 8)
    estimate = chain_estimate(measured, exact)
    plain = measured.mean(axis=0)
    assert estimate.mean == pytest.approx(plain.mean())
    assert estimate.error == pytest.approx(plain.std(ddof=1) / math.sqrt(40))
    assert estimate.parts.fixed == pytest.approx(exact.std(ddof=1) / math.sqrt(40))
    assert math.hypot(estimate.parts.shrinking, estimate.parts.fixed) == pytest.approx(
        estimate.error)
    assert "control_variate" not in estimate.evidence


@pytest.mark.parametrize("n_replicates", [4, 64])
def test_the_margin_s_unit_is_one_replicate_of_one_chain_whatever_the_replicates(n_replicates):
    """The spread estimates √(σ_b² + σ_w²) = √5 at 4 and at 64 replicates (400 chains: its
    relative standard error is below 0.02, the tolerance 0.1 is beyond z = 5). The per-chain
    average's spread, the margin's unit before, is √(1 + 4/R): 1.41 at R = 4, 1.03 at R = 64
    (negative control: it moves with the replicates)."""
    measured, exact = _chains(400, n_replicates, seed=n_replicates)
    estimate = chain_estimate(measured, exact)
    assert estimate.spread / math.sqrt(SIGMA_B**2 + SIGMA_W**2) == pytest.approx(1, abs=0.1)
    per_chain = measured.mean(axis=0).std(ddof=1)
    assert per_chain == pytest.approx(math.sqrt(1 + 4 / n_replicates), rel=0.1)


def test_the_control_variate_leaves_the_schedules_spread_alone():
    measured, exact = _chains(40, 8)
    estimate = chain_estimate(measured, exact, control_variate=True, z=4.0)
    assert estimate.mean == pytest.approx(exact.mean())
    assert estimate.error == pytest.approx(exact.std(ddof=1) / math.sqrt(40))
    assert estimate.parts.shrinking == 0.0
    assert "β = 1" in estimate.evidence["control_variate"]
    without = estimate.evidence["without_control_variate"]
    assert without["estimate"] == pytest.approx(measured.mean())
    assert without["mc_error"] > estimate.error  # √(1 + 4/8) = 1.22 times, in expectation
    assert estimate.spread == chain_estimate(measured, exact).spread  # the margin unchanged


def test_a_sampler_that_departs_from_its_oracle_is_judged_without_the_control_variate():
    """Negative control: every window average shifted by 1 (the residual's standard error is
    2/√320 = 0.11, so its z is about 9 > 4): the control variate would hide the shift; the
    plain estimate carries it, and a shift of 4 (beyond the margin, half of √5) is violated."""
    measured, exact = _chains(40, 8)
    estimate = chain_estimate(measured + 1.0, exact, control_variate=True, z=4.0)
    assert estimate.evidence["control_variate"].startswith("off: the samples depart")
    assert estimate.evidence["residual_z"] > 4.0
    assert estimate.mean == pytest.approx(measured.mean() + 1.0)
    verdict = chain_level_check("c", measured + 4.0, 0.0, 1e-3, 1, exact=exact,
                                control_variate=True)
    assert verdict.verdict == VIOLATED


def test_a_check_the_schedules_keep_undecided_says_more_chains_would_decide_it():
    """The schedules' spread dominates (σ_b = 1, σ_w = 0.05, 20 chains): the expected value
    0.4 σ_b away from the chains' mean sits inside the margin, but the floor σ_b/√20 keeps it
    undecided at any replicates; with the noise dominating instead (σ_b = 0.01, σ_w = 2) the
    same check asks for a finite number of replicates."""
    measured, exact = _chains(20, 4, sigma_w=0.05)
    expected = measured.mean() + 0.4 * measured.std(ddof=1)
    stuck = chain_level_check("c", measured, expected, 1e-3, 1, exact=exact)
    assert stuck.verdict == INCONCLUSIVE and stuck.replicate_factor == math.inf
    assert "times the chains (independent schedules) would decide it" in (
        stuck.evidence["cannot_decide"])
    assert "more replicates cannot decide it" in stuck.detail
    noisy, exact = _chains(20, 4, sigma_b=0.01)
    expected = noisy.mean() + 0.7 * noisy.std(ddof=1)
    verdict = chain_level_check("c", noisy, expected, 1e-3, 1, exact=exact)
    assert verdict.verdict == INCONCLUSIVE and 1 < verdict.replicate_factor < math.inf
    assert verdict.replicates_needed == math.ceil(4 * verdict.replicate_factor)


def test_a_value_from_the_exact_oracle_alone_is_not_decided_by_replicates():
    _, exact = _chains(20, 1)
    expected = exact.mean() + 0.4 * exact.std(ddof=1)
    verdict = chain_level_check("limit", None, expected, 1e-3, 1, exact=exact)
    assert verdict.verdict == INCONCLUSIVE and verdict.replicate_factor == math.inf
    assert verdict.evidence["cannot_decide"].startswith("no replicate enters it")
    assert verdict.margin == pytest.approx(0.5 * exact.std(ddof=1))
    shown = chain_level_check("limit", None, exact.mean(), 1e-3, 1, exact=exact)
    assert shown.verdict == HOLDS
