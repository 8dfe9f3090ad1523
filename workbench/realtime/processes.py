"""A real parameter server on one machine: this process serves, P forked processes compute.

The parameter, its version and the sequencer (:mod:`workbench.realtime.sequencer`) live in one
``multiprocessing.shared_memory`` segment guarded by a process lock. Worker p loops: read the
parameter and its version under the lock; wait its injected compute delay (seconds drawn from
the simulator's latency model on worker p's stream, :class:`simulators.latency.LatencyStreams`);
announce itself to the sequencer, which gives it a slot or drops the gradient; evaluate the
minibatch gradient for that slot at the parameter it read; send it on its own pipe; wait until
the server has applied it (seed 001 Algorithm 2: the reply carries the new version). The
server (:class:`workbench.realtime.server.ServerCore`) applies the slots in order.

Faults and waits:

- every wait has a timeout: the server waits on the pipes and the workers' process sentinels
  together (``multiprocessing.connection.wait``) for at most ``stall_timeout`` without news and
  ``timeout`` in all; lock acquisitions time out too;
- a worker that dies is seen through its sentinel: its pipe is drained, the slot it held is put
  back for the others (:meth:`Sequencer.orphan`), a lock it died holding is released, and the
  run carries on with the rest; the result names the lost worker and its exit reason. Each
  worker has its own pipe, so a worker killed halfway through a message cannot corrupt the
  others' messages;
- workers ask the kernel to kill them when the server dies (``PR_SET_PDEATHSIG``,
  :func:`workbench.run.pool.die_with_parent`);
- the shared-memory segment is unlinked the moment it is created: the forked workers inherit
  the mapping, so its name exists for microseconds and nothing is left in ``/dev/shm`` however
  the run ends (killed server included).

A lock held by a worker killed between acquiring it and recording itself as the holder (a few
instructions) cannot be told apart and is not released; the run then ends at its timeout.
"""

from __future__ import annotations

import os
import pickle
import secrets
import signal
import time
from contextlib import contextmanager
from multiprocessing import connection, shared_memory

import numpy as np

from simulators.latency import LatencyStreams
from simulators.seeding import SeedLike
from workbench.realtime.sequencer import HOLDER, NO_WORKER, Sequencer, state_size
from workbench.realtime.server import (
    COMPLETE,
    RealRun,
    RealRunSettings,
    ServerCore,
    stop_reason,
)
from workbench.realtime.streams import minibatch_draws
from workbench.run.pool import context, die_with_parent, exit_reason
from workbench.samplers.base import Sampler

SEGMENT_PREFIX = "wb-realtime-"  # shared-memory names, so that tests can look for leftovers
JOIN_TIMEOUT = 5.0  # seconds a finished worker is given to exit before it is killed
IDLE_PAUSE = 0.001  # seconds a worker rests when every slot is taken
REPLY_PAUSE = 0.0002  # seconds between a worker's looks at the version it waits for


class _Shared:
    """Views on the segment: the sequencer's int64 state, then the parameter ``(d,)``."""

    def __init__(self, segment: shared_memory.SharedMemory, settings: RealRunSettings,
                 dim: int):
        n_ints = state_size(settings.n_workers)
        self.sequencer = Sequencer(np.ndarray((n_ints,), np.int64, segment.buf),
                                   settings.n_workers, settings.n_updates,
                                   settings.staleness_bound)
        self.parameter = np.ndarray((dim,), np.float64, segment.buf, offset=8 * n_ints)

    def release(self) -> None:
        """Drop the views (a segment with live views cannot close)."""
        self.sequencer = self.parameter = None


@contextmanager
def _holding(lock, shared: _Shared, holder: int, timeout: float):
    if not lock.acquire(timeout=timeout):
        raise TimeoutError(f"the parameter lock was not free within {timeout} s")
    shared.sequencer.state[HOLDER] = holder
    try:
        yield
    finally:
        shared.sequencer.state[HOLDER] = NO_WORKER
        lock.release()


def _work(worker: int, settings: RealRunSettings, gradient, seed: SeedLike, start: float,
          segment: shared_memory.SharedMemory, dim: int, lock, pipe, parent: int) -> None:
    """Worker ``worker``'s loop (module docstring), in a forked process."""
    die_with_parent(parent)
    shared = _Shared(segment, settings, dim)
    sequencer = shared.sequencer
    latency = (LatencyStreams(settings.timing, [(0, worker)], seed, speed_index=[worker])
               if settings.timing is not None else None)
    minibatches = minibatch_draws(seed, gradient, settings.batch_size, settings.replacement)
    wait = settings.stall_timeout
    given = 0
    try:
        while True:
            with _holding(lock, shared, worker, wait):
                if sequencer.stopped:
                    return
                version = sequencer.version
                point = shared.parameter.copy()
            read_time = time.monotonic() - start
            if latency is not None:
                time.sleep(latency.next(0))
            finish_time = time.monotonic() - start
            with _holding(lock, shared, worker, wait):
                if sequencer.stopped:
                    return
                claim = sequencer.announce(worker, version)
                arrival_time = time.monotonic() - start
            if claim is None:
                time.sleep(IDLE_PAUSE)
                continue
            slot, applied = claim
            value = None
            if applied:
                given += 1
                if settings.kill_after.get(worker) == given:
                    os.kill(os.getpid(), signal.SIGKILL)
                value = gradient(point[None, None], minibatches(slot))[0, 0]
            pipe.send((worker, slot, version, applied, read_time, finish_time, arrival_time,
                       value))
            if applied:
                _await_answer(sequencer, slot, wait)
    except (BrokenPipeError, TimeoutError):
        os._exit(3)


def _await_answer(sequencer: Sequencer, slot: int, timeout: float) -> None:
    """Wait until the server has applied ``slot`` (:meth:`Sequencer.answered`)."""
    deadline = time.monotonic() + timeout
    while not sequencer.answered(slot):
        if time.monotonic() > deadline:
            raise TimeoutError(f"slot {slot} was not applied within {timeout} s")
        time.sleep(REPLY_PAUSE)


def run_processes(model, sampler: Sampler, settings: RealRunSettings, seed: SeedLike) -> RealRun:
    """Run a real asynchronous server with ``settings.n_workers`` worker processes.

    model: anything of the model protocol (:mod:`workbench.models.protocol`); its
    ``minibatch_gradient()`` is what workers evaluate and what :func:`replay_run` replays.
    """
    gradient = model.minibatch_gradient()
    dim = int(gradient.dim)
    ctx = context()
    n_ints = state_size(settings.n_workers)
    segment = shared_memory.SharedMemory(
        name=f"{SEGMENT_PREFIX}{os.getpid()}-{secrets.token_hex(4)}", create=True,
        size=8 * (n_ints + dim))
    segment.unlink()  # workers inherit the mapping; the name must not outlive anything
    shared = _Shared(segment, settings, dim)
    sequencer = shared.sequencer
    sequencer.reset()
    lock = ctx.Lock()
    start = time.monotonic()

    def clock() -> float:
        return time.monotonic() - start

    def publish(version: int, point: np.ndarray) -> None:
        with _holding(lock, shared, NO_WORKER, settings.stall_timeout):
            shared.parameter[:] = point
            sequencer.publish(version)

    core = ServerCore(settings, sampler, dim, seed, publish, clock)
    core.start()
    workers, pipes, lost = {}, {}, {}
    stopped_because = COMPLETE
    try:
        for worker in range(settings.n_workers):
            reader, writer = ctx.Pipe(duplex=False)
            process = ctx.Process(
                target=_work, name=f"realtime-worker-{worker}", daemon=True,
                args=(worker, settings, gradient, seed, start, segment, dim, lock, writer,
                      os.getpid()))
            process.start()
            writer.close()
            workers[worker], pipes[worker] = process, reader
        sentinels = {process.sentinel: worker for worker, process in workers.items()}
        readers = {pipe: worker for worker, pipe in pipes.items()}
        last_news = clock()
        while core.applied < settings.n_updates:
            now = clock()
            reason = stop_reason(settings, now, last_news, len(sentinels))
            if reason is not None:
                stopped_because = reason
                break
            ready = connection.wait([*readers, *sentinels],
                                    timeout=min(settings.timeout - now,
                                                settings.stall_timeout - (now - last_news)))
            for handle in ready:
                if handle in readers:
                    if _drain(handle, core):
                        last_news = clock()
                    else:  # the worker closed its end: it is exiting; its sentinel follows
                        del readers[handle]
            for handle in ready:
                if handle in sentinels:
                    worker = sentinels.pop(handle)
                    pipe = pipes[worker]
                    if pipe in readers:
                        _drain(pipe, core)
                        del readers[pipe]
                    workers[worker].join(JOIN_TIMEOUT)  # reap it, so that its exit code is known
                    lost[worker] = exit_reason(workers[worker].exitcode)
                    _recover(worker, sequencer, core, lock)
                    last_news = clock()
    finally:
        sequencer.stop()
        deadline = time.monotonic() + JOIN_TIMEOUT
        for process in workers.values():
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join(JOIN_TIMEOUT)
        for pipe in pipes.values():
            pipe.close()
        wall_time = clock()
        shared.release()
        sequencer = None  # the last view on the segment goes, so that its mapping can close
        segment.close()
    return core.result(lost, stopped_because, wall_time, seed)


def _drain(pipe, core: ServerCore) -> bool:
    """Hand every complete message waiting on ``pipe`` to the server; False at end of file
    (or a message cut short by a killed worker)."""
    try:
        while pipe.poll(0):
            core.receive(*pipe.recv())
    except (EOFError, OSError, pickle.UnpicklingError):
        return False
    return True


def _recover(worker: int, sequencer: Sequencer, core: ServerCore, lock) -> None:
    """After ``worker`` died: release a lock it held, and put back a slot it never delivered."""
    if sequencer.state[HOLDER] == worker:
        sequencer.state[HOLDER] = NO_WORKER
        lock.release()
    slot = sequencer.claim_of(worker)
    if slot >= 0 and not core.received(slot):
        if not lock.acquire(timeout=JOIN_TIMEOUT):
            return
        try:
            sequencer.orphan(slot)
        finally:
            lock.release()
