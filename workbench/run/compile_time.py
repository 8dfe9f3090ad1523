"""The seconds numba spends compiling while a task runs, so that a task's compute seconds leave
them out.

A process compiles each kernel once, and with ``cache=True`` a machine compiles it once at all
(later processes load it from ``__pycache__``). A task that happened to be the first to call a
kernel took its compiling too: on a fresh checkout, D-SGLD's coupling at quick size took 30.7 s
for its first sweep against 8.1 s with the cache filled. Recorded as the points' compute seconds,
that would make a later, larger run of the same points (the sequential checks' next look, which
scales them by its replicates) look several times dearer than it is. numba announces every
compilation as a ``numba:compile`` event (:mod:`numba.core.event`); :func:`compiling` listens to
them for the length of a task.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from numba.core import event


class CompileTimer(event.Listener):
    """The seconds of the ``numba:compile`` events while installed, a compilation that
    compiles others (a kernel calling kernels) counted once."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._depth = 0
        self._started = 0.0

    def on_start(self, event: event.Event) -> None:
        if self._depth == 0:
            self._started = time.perf_counter()
        self._depth += 1

    def on_end(self, event: event.Event) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._started


@contextmanager
def compiling() -> Iterator[CompileTimer]:
    """A :class:`CompileTimer` listening for the length of the block (in this process; a
    compilation in another thread of it counts too)."""
    timer = CompileTimer()
    with event.install_listener("numba:compile", timer):
        yield timer
