"""Progress of a sweep: a bar over points and, for long points, a bar over replicate-updates.

Code inside a sweep point does not know where it runs (this process, a pool worker, a Dask
worker). It asks :func:`reporter` for a callback to hand to ``replay(..., progress=)``; the
runner installs, around each task, a *sink* that carries the counts back to its bars
(:mod:`workbench.run.executors` provides one per kind of executor). Without a sink (progress off,
or a point run directly) :func:`reporter` returns ``None`` and nothing is reported.

Bars are drawn only when asked for and when the stream is a terminal, so ``--quiet``, pipes
and log files stay clean.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from tqdm import tqdm

Sink = Callable[[int], None]

_SINK: ContextVar[Sink | None] = ContextVar("workbench_progress_sink", default=None)

LONG_POINT_WORK = 20_000_000
"""Replicate-updates from which a point counts as long (about two seconds of engine time)."""


@contextmanager
def reporting_to(sink: Sink | None) -> Iterator[None]:
    """Send the counts of :func:`reporter` callbacks made inside the block to ``sink``."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def reporter(replicates: int = 1) -> Callable[[int], None] | None:
    """A ``replay`` progress callback: ``updates`` done by ``replicates`` replicates each."""
    sink = _SINK.get()
    if sink is None:
        return None
    return lambda updates: sink(int(updates) * replicates)


def wanted(requested: bool, stream=None) -> bool:
    """Whether to draw bars: asked for, and the stream (default stderr) is a terminal."""
    stream = sys.stderr if stream is None else stream
    return requested and bool(getattr(stream, "isatty", lambda: False)())


class SweepBars:
    """The runner's bars: sweep points, and replicate-updates when some point is long.

    Bars made with ``shown=False`` count without drawing until :meth:`show`: the runner starts
    the next experiment's sweep while the last tasks of the one before still run
    (:func:`workbench.run.runner.run_sweeps`), and draws its bars once that one's are closed, so
    two sweeps never draw over each other. Counts may arrive from another thread (a sink's).
    """

    def __init__(self, name: str, n_points: int, total_work: int, longest_work: int,
                 enabled: bool, stream=None, shown: bool = True):
        self.enabled = enabled
        self.tracks_updates = enabled and total_work > 0 and longest_work >= LONG_POINT_WORK
        self._bars = dict(name=name, n_points=n_points, total_work=total_work, stream=stream)
        self._lock = threading.Lock()
        self._counted = {"points": 0, "updates": 0, "note": ""}
        self.points: tqdm | None = None
        self.updates: tqdm | None = None
        if shown:
            self.show()

    def show(self) -> None:
        """Draw the bars from here on, starting from what was counted before."""
        with self._lock:
            if self.points is not None:
                return
            bars, counted = self._bars, self._counted
            self.points = tqdm(total=bars["n_points"], desc=bars["name"], unit="point",
                               disable=not self.enabled, file=bars["stream"], position=0,
                               leave=True, dynamic_ncols=True, initial=counted["points"])
            if counted["note"]:
                self.points.set_postfix_str(counted["note"])
            self.updates = tqdm(total=bars["total_work"], desc="  replicate-updates", unit="",
                                unit_scale=True, disable=not self.tracks_updates,
                                file=bars["stream"], position=1, leave=False,
                                dynamic_ncols=True, initial=counted["updates"])

    def points_done(self, count: int, note: str = "") -> None:
        with self._lock:
            if self.points is None:
                self._counted["points"] += count
                self._counted["note"] = note or self._counted["note"]
                return
            if note:
                self.points.set_postfix_str(note, refresh=False)
            self.points.update(count)

    def point_done(self, note: str = "") -> None:
        self.points_done(1, note)

    def add_updates(self, count: int) -> None:
        with self._lock:
            if self.updates is None:
                self._counted["updates"] += count
            else:
                self.updates.update(count)

    def write(self, message: str) -> None:
        """A message that does not break the bars (plain stderr when they are off)."""
        tqdm.write(message, file=sys.stderr)

    def close(self) -> None:
        self.show()
        self.updates.refresh()  # the final count, before the bar is cleared
        self.updates.close()
        self.points.close()
