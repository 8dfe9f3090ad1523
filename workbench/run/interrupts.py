"""Ctrl-C while the parent waits for its workers, taken where it leaves no lock held.

``concurrent.futures.wait`` takes every future's lock before it waits and gives them back
after. Ctrl-C raises ``KeyboardInterrupt`` wherever the main thread is: inside that loop of
takes, the locks already taken stay held by a thread that will never give them back. The
thread that completes the futures (a process pool's manager thread, a Dask client's) then
blocks on the first of them when it sets its result or, as the pool is terminated, its
error, and the pool's ``shutdown`` waits on that thread for ever: the run prints that it was
interrupted and never exits. (Found as a rare hang of ``tests/faults/test_processes.py``,
then reproduced by interrupting a loop of waits; ``tests/workbench/test_interrupts.py``
lands the interrupt right after one lock is taken.)

:func:`wait_deferring_interrupt` is ``wait`` with Ctrl-C deferred: while it waits, in the main
thread and under Python's own Ctrl-C handler, SIGINT only records itself; the wait goes on in
steps of :data:`POLL_SECONDS`, and the interrupt is raised between two steps, where ``wait``
holds no lock. Elsewhere (another thread, as under Streamlit, or a handler someone else
installed) it is ``wait`` itself.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterable
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, wait

#: the longest Ctrl-C waits before it is raised, in seconds
POLL_SECONDS = 0.1


def wait_deferring_interrupt(futures: Iterable[Future], return_when: str = FIRST_COMPLETED):
    """``concurrent.futures.wait(futures, return_when=return_when)`` (``FIRST_COMPLETED`` or
    ``ALL_COMPLETED``), raising ``KeyboardInterrupt`` for a Ctrl-C that came during it only
    between its steps (module docstring): ``(done, not_done)``."""
    if return_when not in (FIRST_COMPLETED, ALL_COMPLETED):
        raise ValueError(f"return_when = {return_when!r}: FIRST_COMPLETED or ALL_COMPLETED")
    futures = list(futures)
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        return wait(futures, return_when=return_when)
    interrupted = []
    signal.signal(signal.SIGINT, lambda number, frame: interrupted.append(number))
    try:
        while not interrupted:
            done, not_done = wait(futures, timeout=POLL_SECONDS, return_when=return_when)
            if not not_done or (done and return_when == FIRST_COMPLETED):
                break
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if interrupted:
        raise KeyboardInterrupt
    return done, not_done

