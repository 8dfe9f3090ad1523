"""The sizes of a judgement's Bonferroni families, kept for a judgement of fewer points
(docs/verdicts.md, *Sequential checks*).

A family of comparisons is judged at the critical value of its size (:func:`bounds.verdict.
z_for_family` and its one-sided and Student forms): a check comparing every pair of worker
counts, or every component at every point, counts them on the grid it is given. A sequential
look that runs only the points the checks it aims at read (:mod:`workbench.run.narrowing`)
must judge them at least as strictly as a look of every point would, or it would spend more
than their share of the rate. So the judgement of a look of every point records, for every
check (:func:`family_of`: a study names each of its checks) and every rate and sidedness its
families ask for, the largest size asked (:func:`family_sizes` without ``recorded``), and the
judgement of fewer points replays them: a family takes the larger of its own size and the
recorded one. A check with families of one rate but different sizes is thus judged at the
largest of them, stricter than at every point; whether the narrower judgement reads the same
data is not assumed either: the narrower sweep is used only where it gives every aimed check
the same difference and Monte Carlo error at a critical value at least as large.
"""

from __future__ import annotations

import contextvars
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

#: the largest size of the families of each (check, one-sided, false-failure rate)
Sizes = dict[tuple[Hashable, bool, float], int]


class FamilySizes:
    """The families of one judgement: recorded, or replayed from ``recorded``."""

    def __init__(self, recorded: Sizes | None = None):
        self.recorded: Sizes = {} if recorded is None else dict(recorded)
        self.replaying = recorded is not None

    def size(self, one_sided: bool, rate: float, n_comparisons: int) -> int:
        """The size a family of ``n_comparisons`` at ``rate`` is judged at (module
        docstring)."""
        key = (_CHECK.get(), one_sided, rate)
        if self.replaying:
            return max(self.recorded.get(key, n_comparisons), n_comparisons)
        self.recorded[key] = max(self.recorded.get(key, n_comparisons), n_comparisons)
        return n_comparisons


_CURRENT: contextvars.ContextVar[FamilySizes | None] = contextvars.ContextVar(
    "family_sizes", default=None)
_CHECK: contextvars.ContextVar[Hashable] = contextvars.ContextVar("family_check", default=None)


@contextmanager
def family_sizes(recorded: Sizes | None = None) -> Iterator[FamilySizes]:
    """Record the families judged inside the block (``recorded`` None) or replay
    ``recorded``'s sizes (module docstring)."""
    sizes = FamilySizes(recorded)
    token = _CURRENT.set(sizes)
    try:
        yield sizes
    finally:
        _CURRENT.reset(token)


@contextmanager
def family_of(check: Hashable) -> Iterator[None]:
    """The families asked for inside the block are ``check``'s."""
    token = _CHECK.set(check)
    try:
        yield
    finally:
        _CHECK.reset(token)


def family_size(one_sided: bool, rate: float, n_comparisons: int) -> int:
    """The size to judge a family at: its own outside :func:`family_sizes`."""
    sizes = _CURRENT.get()
    return n_comparisons if sizes is None else sizes.size(one_sided, rate, n_comparisons)
