"""The size of a run, known from its configuration before any point runs.

``workbench run``, ``check`` and ``report`` size the plan of every experiment they are asked
for before the first point starts: the number of sweep points, the replicate-updates of all of
them (:meth:`~workbench.run.experiment.Experiment.work`) and the memory the largest point's
results need (:meth:`~workbench.run.experiment.Experiment.memory`). A plan is refused, with
exit status 2 and one line saying what it would need and which flag raises the limit, when it
has

- more sweep points than ``--max-points`` (:data:`MAX_POINTS` by default; a study checks the
  count before it resolves its points one by one, so a sweep of 100,000 values is refused at
  once rather than after a minute of validation);
- more replicate-updates in all than ``--max-work`` (:data:`MAX_WORK`);
- a point whose results alone need more than the memory budget (``--memory-budget``, the
  engine's :data:`~workbench.core.memory_budget.MEMORY_BUDGET` by default): such a point
  could only fail once it had run, or exhaust the machine first.

The limits are those of the enclosing :func:`plan_limits` (the command line sets it around a
whole command, as ``--memory-budget`` sets the engine's budget), else the defaults. A plan that
is accepted but large says its size before it starts (:meth:`Plan.describe`).
"""

from __future__ import annotations

import contextvars
import math
from dataclasses import dataclass

from simulators.validation import InvalidParameter
from workbench.core.memory_budget import memory_budget_in_force
from workbench.core.scoped import scoped

MAX_POINTS = 10_000
MAX_WORK = 10**12  # replicate-updates: days of compute at the engine's speed on one core
LARGE_WORK = 10**9  # an accepted plan at least this large says its size before it starts
_MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    max_points: int = MAX_POINTS
    max_work: int = MAX_WORK
    memory_budget: int | None = None  # bytes; None: the engine's budget in force


_LIMITS: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("plan_limits",
                                                                   default=None)


def plan_limits(limits: Limits):
    """The limits every plan sized inside the block is held to (module docstring)."""
    return scoped(_LIMITS, limits)


def limits_in_force() -> Limits:
    """The limits of the enclosing :func:`plan_limits`, else the defaults."""
    return _LIMITS.get() or Limits()


def check_point_count(count: int, where: str = "the sweep") -> None:
    """Refuse ``count`` sweep points above the limit in force, before they are listed."""
    limit = limits_in_force().max_points
    if count > limit:
        raise InvalidParameter(where, f"{count:,} points",
                               f"is more than --max-points {limit:,}; raise --max-points to "
                               "run a plan this large, or sweep fewer values")


@dataclass(frozen=True)
class Plan:
    """What a run of one experiment will do: its sweep points, the replicate-updates of all
    of them (0 when the experiment cannot say) and the bytes the largest point's results need
    (0: unknown)."""

    experiment: str
    points: int
    work: int
    largest_point_bytes: int

    def describe(self) -> str:
        work = f"{self.work:,} replicate-updates" if self.work else "work unknown"
        memory = (f", up to {self.largest_point_bytes / _MIB:,.1f} MiB of results a point"
                  if self.largest_point_bytes else "")
        return f"{self.experiment}: plan of {self.points:,} points, {work}{memory}"

    @property
    def large(self) -> bool:
        return self.work >= LARGE_WORK or self.points >= MAX_POINTS // 10


def check_work(experiment: str, work: int) -> None:
    """Refuse ``work`` replicate-updates above the limit in force."""
    limit = limits_in_force().max_work
    if work > limit:
        raise InvalidParameter(f"{experiment} plan", f"{work:.3g} replicate-updates",
                               f"is more than --max-work {limit:.3g}; raise --max-work to run "
                               "it, or run fewer replicates or iterations")


def check_memory(experiment: str, needed: int) -> None:
    """Refuse a point whose results need ``needed`` bytes, above the memory budget in force."""
    budget = limits_in_force().memory_budget
    if budget is None:
        budget = memory_budget_in_force()
    if needed > budget:
        raise InvalidParameter(f"{experiment} plan",
                               f"{math.ceil(needed / _MIB):,} MiB of results in one point",
                               f"is more than the memory budget of {budget / _MIB:,.0f} MiB; "
                               "raise --memory-budget, or run fewer replicates, checkpoints, "
                               "thinned draws or a smaller dimension")


def size_plan(experiment, config: dict) -> Plan:
    """The plan of ``experiment`` under ``config``, refused if it exceeds the limits in force
    (module docstring); only the configuration is read, nothing runs."""
    points = experiment.points(config)
    check_point_count(len(points), f"{experiment.name} sweep")
    work = sum(experiment.work(config, point) for point in points)
    check_work(experiment.name, work)
    largest = max((experiment.memory(config, point) for point in points), default=0)
    check_memory(experiment.name, largest)
    return Plan(experiment.name, len(points), work, largest)
