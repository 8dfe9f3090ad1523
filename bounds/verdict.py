"""A check's outcome: never a bare boolean, always a verdict with its evidence
(docs/verdicts.md)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from scipy import stats

from bounds.family_sizes import family_size
from bounds.sequential import rate_share

HOLDS = "holds"
VIOLATED = "violated"
INCONCLUSIVE = "inconclusive"
VERDICTS = (HOLDS, VIOLATED, INCONCLUSIVE)


@dataclass(frozen=True)
class Verdict:
    """One check's verdict.

    The decision is the three-way equivalence test of :mod:`bounds.equivalence`.

    observed, expected: the measured and the theoretical value, in the quantity's units.
    scale: the scale on which the difference is judged (``absolute``, ``log-ratio``,
        ``slope``...); difference: observed against expected on that scale (positive is
        against the claim for one-sided checks); mc_error: its Monte Carlo standard error.
    margin: the smallest difference the check is meant to detect, on that scale (>= 0).
    lower, upper: difference ∓ z_threshold·mc_error; detectable: margin + z_threshold·mc_error,
        the smallest true difference this run shows as a violation;
        replicates_needed: for an inconclusive verdict, the replicates that would decide it;
        replicate_factor: the same as a multiple of the run's replicates (1 when decided, inf
        when more replicates cannot decide it, nan when the check does not say).
    z_threshold: the critical z for ``violated``, and false_failure_rate its tail probability
        (the chance that a correct theory and a correct sampler fail this check);
        ``holds`` uses the one-sided z of :data:`bounds.equivalence.FALSE_HOLDS_RATE`.
    """

    check: str
    kind: str
    verdict: str
    observed: float
    expected: float
    mc_error: float
    margin: float
    z_threshold: float
    false_failure_rate: float
    detail: str = ""
    evidence: dict = field(default_factory=dict)
    scale: str = "absolute"
    difference: float = math.nan
    lower: float = math.nan
    upper: float = math.nan
    detectable: float = math.nan
    replicates_needed: float = math.nan
    replicate_factor: float = math.nan

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def to_dict(self) -> dict:
        return _json_safe(asdict(self))


def _tail(false_failure_rate: float, n_comparisons: int, one_sided: bool) -> float:
    """The tail probability of one comparison of a Bonferroni family (at a look of a
    sequential procedure, with the look's share of the rate: :mod:`bounds.sequential`; at a
    look of fewer points, the family's size at every point: :mod:`bounds.family_sizes`)."""
    if not 0 < false_failure_rate < 1:
        raise ValueError(f"false_failure_rate must lie in (0, 1), got {false_failure_rate}")
    if n_comparisons < 1:
        raise ValueError(f"n_comparisons must be >= 1, got {n_comparisons}")
    n_comparisons = family_size(one_sided, false_failure_rate, n_comparisons)
    return false_failure_rate * rate_share() / (n_comparisons if one_sided
                                                else 2 * n_comparisons)


def z_for_family(false_failure_rate: float, n_comparisons: int) -> float:
    """Two-sided Bonferroni critical z so that ``n_comparisons`` checks of a correct system
    fail together with probability at most ``false_failure_rate`` (:func:`_tail`)."""
    return float(stats.norm.isf(_tail(false_failure_rate, n_comparisons, False)))


def one_sided_z_for_family(false_failure_rate: float, n_comparisons: int) -> float:
    """One-sided Bonferroni critical z (for checks that fail in one direction only, such as
    a bound being exceeded or a rate being too slow)."""
    return float(stats.norm.isf(_tail(false_failure_rate, n_comparisons, True)))


def student_z_for_family(false_failure_rate: float, n_comparisons: int, n_units: int) -> float:
    """Two-sided Bonferroni critical value of Student's t with ``n_units - 1`` degrees of
    freedom (at least 1), for a family whose comparisons each rest on ``n_units`` independent
    units (few chains, few coupled groups); at a look as :func:`z_for_family`
    (:func:`_tail`)."""
    return float(stats.t.isf(_tail(false_failure_rate, n_comparisons, False),
                             max(n_units - 1, 1)))


def one_sided_rate(z: float) -> float:
    """The false-failure probability of one one-sided comparison at critical ``z``."""
    return float(stats.norm.sf(z))


def two_sided_rate(z: float) -> float:
    """The false-failure probability of one two-sided comparison at critical ``z``."""
    return float(2 * stats.norm.sf(z))


def _json_safe(value):
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value
