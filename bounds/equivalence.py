"""Three-way decisions with a stated margin: what ``holds``, ``violated`` and ``inconclusive``
mean for every comparison check (docs/verdicts.md).

A check compares a measured quantity with a theoretical one through a *difference* d on a
stated scale (absolute, log-ratio, slope units...) with Monte Carlo standard error σ, and a
*margin* δ ≥ 0 on the same scale: the smallest difference the check is meant to detect. The
decision is an equivalence test in the two-one-sided-tests form (Schuirmann 1987), with two
different error rates because the two ways of being wrong are different:

- ``holds`` when |d| + z_holds·σ ≤ δ: the whole one-sided 1 − α interval lies inside ±δ, so a
  true difference beyond the margin is declared equivalent with probability at most α
  (``false_holds_rate``, per check; default α = 0.05, z_holds = 1.645);
- ``violated`` when |d| − z·σ > δ: the difference exceeds the margin at the check family's
  ``false_failure_rate`` (z from its Bonferroni correction), so a correct sampler within the
  margin is failed with at most that probability;
- ``inconclusive`` otherwise, with the *detectable difference* δ + z·σ (the smallest true
  difference this run flags as violated about half the time) and the replicate count that
  would decide it, assuming σ ∝ 1/√R: R·(z_holds·σ/(δ − |d|))² when |d| < δ, else
  R·(z·σ/(|d| − δ))²; where part of σ does not shrink with R (a reference's own error, a
  fixed number of chains' schedules), :class:`ErrorParts` counts only the part that does, or
  says why no R decides it.

One-sided claims (a rate at least as steep as a bound's exponent, a measurement below an
envelope) use the signed difference d (positive = against the claim) instead of |d|. Margins
are parameters with the defaults of :data:`DEFAULT_MARGINS`, documented there per check kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from scipy import stats

from bounds.sequential import rate_share
from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED, Verdict, one_sided_rate, two_sided_rate

#: per-check probability of declaring ``holds`` when the true difference is at the margin
FALSE_HOLDS_RATE = 0.05
Z_HOLDS = float(stats.norm.isf(FALSE_HOLDS_RATE))
#: an inconclusive difference whose replicate factor exceeds this "sits on the margin"
ON_THE_MARGIN = 100.0


@dataclass(frozen=True)
class Margin:
    """A check kind's default margin: ``size`` on ``scale``, and what it means."""

    size: float
    scale: str
    meaning: str


#: Default margins per check kind. ``standardised``: in units of the per-replicate standard
#: deviation of the measured quantity (the estimator's own spread, σ·√R), so "holds" says any
#: error of the sampler is below half the spread of one run's estimate; ``log-ratio``: |log
#: (measured/expected)| ≤ log(1 + size); ``slope``: absolute, in units of a log-log slope.
#: what each verdict means, in one sentence each: the one source of the report's opening and
#: of docs/verdicts.md's summary (tests/docs keep the doc equal to it)
MEANINGS = {
    HOLDS: "shown to hold within a stated margin: the whole one-sided 95 % interval of the "
           "difference between measurement and theory lies inside ±margin (not merely \"no "
           "difference detected\").",
    VIOLATED: "a difference beyond the margin is shown, at the check family's false-failure "
              "rate (a finding about the claim, not a failure of the run; a run that diverges "
              "where theory says it is stable is violated too).",
    INCONCLUSIVE: "the data cannot tell which; the verdict says what would decide it (the "
                  "replicates needed, or why more replicates cannot).",
}

DEFAULT_MARGINS = {
    "oracle": Margin(0.5, "standardised",
                     "half the per-replicate standard deviation of the estimate"),
    "oracle-relative": Margin(0.5, "log-ratio",
                              "a factor 1.5 either way (variances, MSEs, second moments)"),
    "invariance": Margin(0.25, "log-ratio",
                         "largest pairwise ratio within a factor 1.25 across the grid"),
    "slope": Margin(0.1, "slope", "0.1 in log-log slope (≈ 35 % over a 20-fold range)"),
    "rate": Margin(0.1, "slope", "measured decay at most 0.1 shallower than the bound's"),
    "envelope": Margin(0.1, "log-ratio", "no held-out point more than 10 % above the envelope"),
    "speed-up": Margin(0.1, "log-ratio", "iteration speed-up within 10 % of the worker count"),
    "ordering": Margin(0.0, "log-ratio", "the predicted order, however small the gap"),
}


def resolve_z_holds(z_holds: float | None) -> float:
    """``z_holds``, or for None the one-sided z of the false-holds rate times the current
    look's share of it (:mod:`bounds.sequential`; :data:`Z_HOLDS` outside a look)."""
    if z_holds is not None:
        return z_holds
    share = rate_share()
    return Z_HOLDS if share == 1.0 else float(stats.norm.isf(FALSE_HOLDS_RATE * share))


@dataclass(frozen=True)
class Decision:
    """One three-way decision (module docstring). ``difference``, ``error``, ``margin``,
    ``lower``/``upper`` (the difference ± its critical multiples) and ``detectable`` are on
    the check's scale; ``replicate_factor`` multiplies the run's replicates to decide it
    (1 when decided, inf on the margin or with no error estimate)."""

    verdict: str
    difference: float
    error: float
    margin: float
    lower: float
    upper: float
    detectable: float
    replicate_factor: float
    one_sided: bool
    #: why no number of replicates decides it (an infinite factor), where that is known
    cannot: str = ""
    #: then, the evidence key naming what else would grow (:attr:`ErrorParts.grows`) and the
    #: factor on it and the replicates together (:meth:`ErrorParts.joint`)
    grows: str = ""
    joint_factor: float = math.inf


#: the evidence keys of the factors on what else would grow where more replicates alone cannot
#: decide a check (:attr:`ErrorParts.grows`): the reference's draws, or the chains (each on its
#: own schedule) a chain-level check averages
REFERENCE_FACTOR = "reference_factor"
CHAIN_FACTOR = "chain_factor"
#: beside a chain factor, the configuration key whose growth adds chains to the check (none
#: where the chains are fixed by the system)
CHAINS_FROM = "chains_from"


@dataclass(frozen=True)
class ErrorParts:
    """How a check's standard error σ would change with m times the replicates where not all
    of it shrinks as 1/√m: σ(m)² = ``fixed``² + ``shrinking``²/m, the margin unchanged. The
    part that stays is a reference posterior's own error (its draws do not grow with the run's
    replicates), or the spread of a fixed number of chains' schedules (each chain averaged over
    its replicates: its replicates average out the sampler's noise, not the schedule's).
    ``cannot``: why no m decides it, a template that may name ``{joint}`` (the factor on both
    parts together, the chains or the reference's draws grown with the replicates) and
    ``{fixed}`` (the error that stays); ``grows``: the evidence key under which that joint
    factor is recorded (``reference_factor``, ``chain_factor``), which a sequential check reads
    to grow the reference's draws or the chains (:mod:`workbench.run.until_decided`)."""

    shrinking: float
    fixed: float
    cannot: str = ""
    grows: str = ""

    def factor(self, decision: Decision, z: float, z_holds: float | None = None) -> float:
        """The m that would decide an inconclusive ``decision``: ``shrinking``²/(s² −
        ``fixed``²), s = |δ − d| / z_crit the error at which it is decided (z_holds when the
        difference is inside the margin, else z); infinite when ``fixed`` ≥ s. Other
        decisions keep their factor."""
        if decision.verdict != INCONCLUSIVE or not math.isfinite(decision.replicate_factor):
            return decision.replicate_factor
        room = self.deciding_error(decision, z, z_holds)**2 - self.fixed**2
        return self.shrinking**2 / room if room > 0 else math.inf

    def joint(self, decision: Decision, z: float, z_holds: float | None = None) -> float:
        """The factor on both parts together: (``shrinking``² + ``fixed``²)/s²."""
        if decision.verdict != INCONCLUSIVE or not math.isfinite(decision.replicate_factor):
            return decision.replicate_factor
        return (self.shrinking**2 + self.fixed**2) / self.deciding_error(decision, z,
                                                                         z_holds)**2

    @staticmethod
    def deciding_error(decision: Decision, z: float, z_holds: float | None) -> float:
        size = decision.difference if decision.one_sided else abs(decision.difference)
        gap = decision.margin - size
        return abs(gap) / (resolve_z_holds(z_holds) if gap > 0 else z)

    def applied(self, decision: Decision, z: float, z_holds: float | None = None) -> Decision:
        """``decision`` with the factor of these parts, and the reason where none decides."""
        factor = self.factor(decision, z, z_holds)
        if not math.isfinite(decision.replicate_factor) or math.isfinite(factor):
            return replace(decision, replicate_factor=factor)
        joint = self.joint(decision, z, z_holds)
        return replace(decision, replicate_factor=factor, grows=self.grows, joint_factor=joint,
                       cannot=self.cannot.format(joint=f"{joint:.3g}", fixed=f"{self.fixed:.3g}"))


def decide(difference: float, error: float, margin: float, z: float, *,
           z_holds: float | None = None, one_sided: bool = False) -> Decision:
    """Decide a difference with standard error ``error`` against ``margin`` (module docstring).

    Non-finite inputs give ``inconclusive`` with infinite replicate factor; the caller says why.
    ``z_holds`` None: the false-holds rate's z at the current look (:func:`resolve_z_holds`;
    :data:`Z_HOLDS` outside a sequential procedure).
    """
    z_holds = resolve_z_holds(z_holds)
    difference, error, margin = float(difference), float(error), float(margin)
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    if not (math.isfinite(difference) and math.isfinite(error) and error >= 0):
        return Decision(INCONCLUSIVE, difference, error, margin, math.nan, math.nan, math.nan,
                        math.inf, one_sided)
    size = difference if one_sided else abs(difference)
    lower, upper = difference - z * error, difference + z * error
    if size + z_holds * error <= margin:
        verdict, factor = HOLDS, 1.0
    elif size - z * error > margin:
        verdict, factor = VIOLATED, 1.0
    else:
        verdict = INCONCLUSIVE
        gap = margin - size
        if gap > 0:
            factor = (z_holds * error / gap) ** 2
        elif gap < 0:
            factor = (z * error / -gap) ** 2
        else:
            factor = math.inf
    return Decision(verdict, difference, error, margin, lower, upper, margin + z * error,
                    factor, one_sided)


def replicates_needed(decision: Decision, n_replicates: int | None) -> float:
    """Replicates that would decide an inconclusive decision (``nan`` when R is unknown)."""
    if n_replicates is None or decision.verdict != INCONCLUSIVE:
        return math.nan
    if not math.isfinite(decision.replicate_factor):
        return math.inf
    return float(math.ceil(n_replicates * max(decision.replicate_factor, 1.0)))


def describe(decision: Decision, scale: str, n_replicates: int | None = None) -> str:
    """One sentence for a verdict's detail: the decision against its margin."""
    interval = (f"difference {decision.difference:+.3g} on the {scale} scale "
                f"(± z·σ: [{decision.lower:+.3g}, {decision.upper:+.3g}])")
    bound = f"≤ {decision.margin:.3g}" if decision.one_sided else f"within ±{decision.margin:.3g}"
    if decision.verdict == HOLDS:
        return f"Shown {bound}: {interval}."
    if decision.verdict == VIOLATED:
        return f"Beyond the margin {decision.margin:.3g}: {interval}."
    needed = replicates_needed(decision, n_replicates)
    if decision.cannot and not math.isfinite(decision.replicate_factor):
        more = f"; more replicates cannot decide it: {decision.cannot}"
    elif n_replicates is None:
        more = f"; {decision.replicate_factor:.2g} times the replicates would decide it"
    elif decision.replicate_factor > ON_THE_MARGIN:
        more = (f"; the difference sits on the margin, more than {ON_THE_MARGIN:.0f} times the "
                f"{n_replicates} "
                "replicates would be needed to decide it")
    else:
        more = f"; about {needed:.0f} replicates (now {n_replicates}) would decide it"
    if not math.isfinite(decision.detectable):
        if math.isfinite(decision.replicate_factor) and n_replicates is not None:
            return (f"Cannot be decided yet (no finite difference or Monte Carlo error); "
                    f"about {needed:.0f} replicates (now {n_replicates}) would tell more.")
        return "Cannot be decided: no finite difference or Monte Carlo error."
    return (f"Cannot tell whether {bound}: {interval}; the smallest difference this run can "
            f"show as a violation is {decision.detectable:.3g}{more}.")


def sentences(detail: str, sentence: str) -> str:
    """``detail`` and the decision's ``sentence`` as a paragraph: a detail that does not end
    a sentence (its last note, say) gets the full stop it lacks."""
    detail = detail.strip()
    if detail and detail[-1] not in ".!?":
        detail += "."
    return f"{detail} {sentence}".strip()


def verdict_from(check: str, kind: str, decision: Decision, observed: float, expected: float,
                 z: float, scale: str, *, n_replicates: int | None = None, detail: str = "",
                 evidence: dict | None = None) -> Verdict:
    """The :class:`~bounds.verdict.Verdict` of a decision, its sentence appended to ``detail``."""
    rate = one_sided_rate(z) if decision.one_sided else two_sided_rate(z)
    sentence = describe(decision, scale, n_replicates)
    evidence = dict(evidence or {})
    if decision.cannot and decision.verdict == INCONCLUSIVE:
        evidence.setdefault("cannot_decide", decision.cannot)
        if decision.grows:
            evidence.setdefault(decision.grows, decision.joint_factor)
    return Verdict(check, kind, decision.verdict, float(observed), float(expected),
                   decision.error, decision.margin, z, rate,
                   sentences(detail, sentence), evidence, scale=scale,
                   difference=decision.difference, lower=decision.lower,
                   upper=decision.upper, detectable=decision.detectable,
                   replicates_needed=replicates_needed(decision, n_replicates),
                   replicate_factor=decision.replicate_factor)


def decide_all(differences, errors, margin: float, z: float, *, z_holds: float | None = None,
               one_sided: bool = False) -> tuple[Decision, int]:
    """A claim made of several comparisons (every pair of a grid, every held-out point):
    ``violated`` when some comparison is (``z`` already corrected for their number),
    ``holds`` when every one is (an intersection–union test: no correction needed), else
    ``inconclusive``. Returns the deciding comparison's decision and its index: the most
    violated one, the one closest to its margin, or the one needing the most replicates."""
    z_holds = resolve_z_holds(z_holds)
    decisions = [decide(d, e, margin, z, z_holds=z_holds, one_sided=one_sided)
                 for d, e in zip(differences, errors, strict=True)]
    if not decisions:
        raise ValueError("decide_all needs at least one comparison")

    def size(d: Decision) -> float:
        return d.difference if one_sided else abs(d.difference)

    violated = [i for i, d in enumerate(decisions) if d.verdict == VIOLATED]
    if violated:
        worst = max(violated, key=lambda i: (size(decisions[i]) - margin)
                    / max(decisions[i].error, 1e-300))
    elif all(d.verdict == HOLDS for d in decisions):
        worst = max(range(len(decisions)),
                    key=lambda i: size(decisions[i]) + z_holds * decisions[i].error)
    else:
        worst = max((i for i, d in enumerate(decisions) if d.verdict == INCONCLUSIVE),
                    key=lambda i: decisions[i].replicate_factor)
    return decisions[worst], worst
