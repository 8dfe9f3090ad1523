"""How much memory one replay may hold: the budget's default and the one in force.

A replay sizes its replicate groups to fit the budget and refuses a run that cannot fit
(:mod:`workbench.engine.replay`, *Memory*); the plan refuses a point whose results alone exceed
it before anything runs (:mod:`workbench.run.plan`). The budget lives here, below both, so that
sizing a plan (``workbench show``, argument errors) imports nothing of the engine.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from simulators import validation
from workbench.core.scoped import scoped

MEMORY_BUDGET = 1 << 30  # bytes: what one replay may hold at once, by default

_BUDGET = contextvars.ContextVar("memory_budget", default=MEMORY_BUDGET)


@contextmanager
def replay_memory_budget(budget: int | None) -> Iterator[None]:
    """Replays inside the block hold at most ``budget`` bytes unless they are given their own
    ``memory_budget`` (None: the default, :data:`MEMORY_BUDGET`). The runner wraps every task
    in it, wherever the task runs (this process, a pool worker, a Dask worker)."""
    budget = MEMORY_BUDGET if budget is None else validation.integer("memory_budget", budget,
                                                                     minimum=1)
    with scoped(_BUDGET, budget):
        yield


def memory_budget_in_force() -> int:
    """The budget of the enclosing :func:`replay_memory_budget`, else :data:`MEMORY_BUDGET`."""
    return _BUDGET.get()
