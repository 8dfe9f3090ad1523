"""Group-sequential error spending: judging a check again after more replicates without
raising its error rates (docs/verdicts.md, *Sequential checks*).

A check that is ``inconclusive`` at R replicates may be judged again at 2R, 4R, ... (the
*looks* k = 1, 2, ...; look k has R·2^(k−1) replicates). Judged at every look with the fixed-R
critical values, a correct sampler would be failed at some look far more often than the stated
``false_failure_rate``, and a claim off by its margin shown to hold far more often than the 5 %
false-holds rate. The error rates are therefore *spent* across the looks (Lan & DeMets 1983):
look k may use the share

    s_k = 2^(−k)   (1/2, 1/4, 1/8, ...; Σ_k s_k = 1)

of each rate, so that a check's family is judged at look k with false-failure rate α·s_k
(:func:`bounds.verdict.z_for_family`) and its ``holds`` with false-holds rate 0.05·s_k. In
information terms the rate spent up to R replicates is α(1 − R₁/(2R)): a spending function of
the replicates with no fixed horizon, so a budget may stop the procedure at any look.

Why the rates hold for the whole procedure: a check ends in ``violated`` falsely only if it is
falsely violated at some look, and by the union bound that probability is at most
Σ_k α·s_k ≤ α, whatever the dependence between the looks (nested replicates or not) and
whichever look the procedure stops at — stopping a check once it is decided, or when the budget
ends, only removes looks. The same holds for false ``holds``. The looks' schedule (doubling)
is fixed in advance; what the data decide is only whether a check continues. This is
conservative next to exact group-sequential boundaries (Armitage, McPherson and Rowe 1969),
which account for the correlation of nested looks; the price is small because the last looks
carry little of the rate (at look 2 the two-sided z of a 0.05 family of one comparison is 2.24
instead of 1.96).

The only look: where it is known before look 1 is judged that no later look can run whatever
its verdicts (the budget was spent by the first pass, or a limit of one look), look 1 spends
the whole rate (``Look(1, only=True)``: s_1 = 1, the fixed-R critical values). The rates still
hold: that knowledge comes from the clock, not from the data, so the procedure is, with that
probability, the fixed-R test (error at most α) and otherwise the one above (at most α).
A later look may not do so: whether it is reached depends on the verdicts before it.

The current look is a context (:func:`at_look`) that :func:`bounds.verdict.z_for_family`,
:func:`bounds.verdict.one_sided_z_for_family` and :func:`bounds.equivalence.resolve_z_holds`
read, so every check kind
spends its rates without knowing about looks; outside :func:`at_look` nothing changes.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

GROWTH = 2
"""Replicates are multiplied by this from one look to the next."""


@dataclass(frozen=True)
class Look:
    """Look ``number`` (1-based) of a sequential procedure: 2^(number−1) times the first
    look's replicates."""

    number: int
    #: look 1, known before it is judged to be the only one (module docstring, *The only look*)
    only: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.number, int) or self.number < 1:
            raise ValueError(f"a look is numbered from 1, got {self.number!r}")
        if self.only and self.number != 1:
            raise ValueError(f"only look 1 may be the only look, not look {self.number}: "
                             "whether a later look is reached depends on the verdicts")

    @property
    def share(self) -> float:
        """s_k = 2^(−k): the share of every error rate this look may spend (1 for the only
        look)."""
        return 1.0 if self.only else 2.0 ** -self.number

    @property
    def spent(self) -> float:
        """Σ_{j ≤ k} s_j = 1 − 2^(−k): the share spent up to and including this look (1 for
        the only look)."""
        return 1.0 if self.only else 1.0 - 2.0 ** -self.number

    @property
    def replicate_multiple(self) -> int:
        """R_k / R_1 = 2^(k−1)."""
        return GROWTH ** (self.number - 1)

    def describe(self) -> dict:
        """What a verdict's evidence records about the look it was decided at."""
        return {"look": self.number, "replicate_multiple": self.replicate_multiple,
                "rate_share": self.share, "rate_spent": self.spent,
                "spending": "the whole rate: the only look, no later one could run "
                            "whatever its verdicts" if self.only else
                            "2^-k per look (Lan-DeMets, union bound over looks)"}


_CURRENT: contextvars.ContextVar[Look | None] = contextvars.ContextVar("look", default=None)


def current() -> Look | None:
    """The look being judged, or None for an ordinary (fixed-R) judgement."""
    return _CURRENT.get()


def rate_share() -> float:
    """The share of every error rate the current judgement may spend (1 outside a look)."""
    look = current()
    return 1.0 if look is None else look.share


@contextmanager
def at_look(look: Look | None) -> Iterator[Look | None]:
    """Judge checks at ``look`` inside the block (None: the fixed-R rates)."""
    token = _CURRENT.set(look)
    try:
        yield look
    finally:
        _CURRENT.reset(token)
