"""A context variable set for the length of a ``with`` block, then restored.

The settings a whole command holds its work to (the memory budget of every replay,
:mod:`workbench.core.memory_budget`; the limits of every plan, :mod:`workbench.run.plan`) are
context variables, so they reach every call inside the block without being passed down.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def scoped(variable: contextvars.ContextVar[T], value: T) -> Iterator[None]:
    """``variable`` is ``value`` inside the block and what it was before after it."""
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)
