"""Ctrl-C while the parent waits for its pool (workbench.core.interrupts): taken where no
future's lock is held, so the interrupted pool shuts down; the negative control is
``concurrent.futures.wait`` itself, which leaves the lock held and the thread that completes
the future blocked."""

import signal
import threading
import time
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, wait

import pytest

from workbench.core.interrupts import (
    POLL_SECONDS,
    interrupt_deferred,
    wait_deferring_interrupt,
)
from workbench.run.pool import WorkerPool


def _sleep(seconds):
    time.sleep(seconds)
    return seconds


def _interrupt_after_taking_the_lock(future):
    """The race, made certain: SIGINT reaches this thread right after ``wait`` has taken
    ``future``'s lock (the handler runs at the next Python call, still inside ``wait``)."""
    take = future._condition.acquire

    def taken(*args, **kwargs):
        got = take(*args, **kwargs)
        # to this thread itself, so it is delivered before pthread_kill returns (os.kill may
        # reach another thread first, and the handler would run after the wait)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        (lambda: None)()  # a Python frame: the pending handler runs here
        return got

    future._condition.acquire = taken


def _shuts_down(pool, seconds=10.0) -> bool:
    pool.terminate()
    finished = threading.Event()
    threading.Thread(target=lambda: (pool.shutdown(wait=True, cancel_futures=True),
                                     finished.set()), daemon=True).start()
    return finished.wait(seconds)


@pytest.fixture
def pool():
    pool = WorkerPool(2)
    pool.submit(int).result()
    yield pool
    pool.terminate()


@pytest.fixture
def python_ctrl_c():
    """Python's own Ctrl-C handler, as in a fresh ``workbench`` process."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_inside_the_wait_is_raised_with_no_lock_held_and_the_pool_shuts_down(
        pool, python_ctrl_c):
    futures = [pool.submit(_sleep, 30) for _ in range(3)]
    _interrupt_after_taking_the_lock(futures[1])
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        wait_deferring_interrupt(futures)
    assert time.monotonic() - started < 1.0
    assert not any(f._condition._is_owned() for f in futures)
    assert _shuts_down(pool)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler given back


def test_negative_control_the_stdlib_wait_leaves_the_lock_held_and_its_completer_blocked(
        python_ctrl_c):
    # plain futures and a thread that completes one, as a pool's manager thread does: the
    # deadlock shown without a pool that could not be shut down afterwards
    futures = [Future() for _ in range(3)]
    _interrupt_after_taking_the_lock(futures[1])
    with pytest.raises(KeyboardInterrupt):
        wait(futures, return_when=FIRST_COMPLETED)
    assert futures[1]._condition._is_owned()
    completer = threading.Thread(target=futures[1].set_result, args=(1,), daemon=True)
    completer.start()
    completer.join(1.0)
    assert completer.is_alive()  # blocked on the lock the interrupted wait left held
    for future in futures:
        while future._condition._is_owned():
            future._condition.release()
    completer.join(10.0)
    assert not completer.is_alive() and futures[1].result() == 1


def test_without_an_interrupt_it_returns_what_wait_returns(pool, python_ctrl_c):
    quick, slow = pool.submit(_sleep, 0.2), pool.submit(_sleep, 3 * POLL_SECONDS + 1.0)
    done, not_done = wait_deferring_interrupt([quick, slow])
    assert (done, not_done) == ({quick}, {slow})
    done, not_done = wait_deferring_interrupt([quick, slow], ALL_COMPLETED)
    assert (done, not_done) == ({quick, slow}, set())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_outside_the_main_thread_it_is_the_stdlib_wait(pool):
    future = pool.submit(_sleep, 0.1)
    answer = []
    thread = threading.Thread(target=lambda: answer.append(wait_deferring_interrupt([future])))
    thread.start()
    thread.join(10)
    assert answer == [({future}, set())]


def test_other_ways_to_wait_are_refused():
    with pytest.raises(ValueError, match="FIRST_COMPLETED or ALL_COMPLETED"):
        wait_deferring_interrupt([], "FIRST_EXCEPTION")


@pytest.mark.parametrize("handler_from_python", [True, False])
def test_a_handler_not_installed_from_python_is_left_in_place(handler_from_python,
                                                              monkeypatch, python_ctrl_c):
    """Where ``signal.getsignal`` gives None (a handler an embedding application installed
    outside Python), the block runs with that handler untouched: ``signal.signal`` could not
    put it back afterwards (it raised TypeError on None). Negative control: with a Python
    handler in place the block installs its own and puts the old one back. Python's own
    handler is set first (``python_ctrl_c``): a test process may have started with SIGINT
    ignored, as one of pytest-xdist's did."""
    installed = []
    real_signal = signal.signal
    monkeypatch.setattr(signal, "signal", lambda signum, handler: installed.append(handler)
                        or real_signal(signum, handler))
    if not handler_from_python:
        monkeypatch.setattr(signal, "getsignal", lambda signum: None)
    with interrupt_deferred() as received:
        assert received == []
    if handler_from_python:
        assert len(installed) == 2 and installed[1] is signal.default_int_handler
    else:
        assert installed == []
