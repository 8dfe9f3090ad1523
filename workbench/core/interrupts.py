"""Ctrl-C delivered where it leaves no lock held.

Ctrl-C raises ``KeyboardInterrupt`` in the main thread wherever it is. Raised while a library
holds a lock that another thread needs, the lock is never given back and the run hangs instead
of stopping. Two such places, each found as a hang:

- **netCDF calls.** xarray holds its netCDF lock around a write or read and acquires it again
  to close the file: an interrupt in between left the lock held and the close waiting on it
  for ever (a run interrupted while saving a point hung). netCDF calls take milliseconds, so
  they run whole inside :func:`interrupt_deferred` and the interrupt follows.
- **Waiting for a pool's tasks.** ``concurrent.futures.wait`` takes every future's lock before
  it waits and gives them back after; an interrupt inside that loop of takes left a lock held.
  The thread that completes the futures (a process pool's manager thread, a Dask client's)
  then blocked on it when it set the future's result or, as the pool was terminated, its
  error, and the pool's ``shutdown`` waited on that thread for ever: the run printed that it
  was interrupted and never exited (a rare hang of ``tests/faults/test_processes.py``).
  :func:`wait_deferring_interrupt` waits in steps of :data:`POLL_SECONDS` inside
  :func:`interrupt_deferred` and delivers the interrupt between two steps.

Only the main thread receives signals: elsewhere (as under Streamlit) both are the plain calls.
So are they where the SIGINT handler in place was not installed from Python (an embedding
application's; ``signal.getsignal`` gives None): it could not be put back afterwards.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, wait
from contextlib import contextmanager

#: the longest a Ctrl-C waits inside :func:`wait_deferring_interrupt` before it is delivered
POLL_SECONDS = 0.1


@contextmanager
def interrupt_deferred() -> Iterator[list[int]]:
    """Ctrl-C (SIGINT) arriving inside the block is delivered, to the handler that was in
    place, when the block ends. Yields the list the signals received so far are appended to,
    so that a block may end early once one came."""
    received: list[int] = []
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is None):  # not to be put back (module docstring)
        yield received
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            signal.raise_signal(signal.SIGINT)  # handled as it would have been


def wait_deferring_interrupt(futures: Iterable[Future], return_when: str = FIRST_COMPLETED):
    """``concurrent.futures.wait(futures, return_when=return_when)`` (``FIRST_COMPLETED`` or
    ``ALL_COMPLETED``): ``(done, not_done)``; a Ctrl-C during it is delivered between two of
    its steps, where it holds no future's lock (module docstring)."""
    if return_when not in (FIRST_COMPLETED, ALL_COMPLETED):
        raise ValueError(f"return_when = {return_when!r}: FIRST_COMPLETED or ALL_COMPLETED")
    futures = list(futures)
    while True:  # again only where the handler that took a Ctrl-C did not raise
        with interrupt_deferred() as received:
            while not received:
                done, not_done = wait(futures, timeout=POLL_SECONDS, return_when=return_when)
                if not not_done or (done and return_when == FIRST_COMPLETED):
                    return done, not_done
