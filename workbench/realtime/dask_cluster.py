"""A real asynchronous server on a Dask cluster: workers are long-running tasks, the server the
client. This is the path a user takes when one machine is not enough.

The protocol is that of :mod:`workbench.realtime.processes`, carried by ``distributed.Queue``
messages instead of shared memory: a worker asks the server for the parameter (``read``), waits
its injected delay, announces its gradient (``announce``; the server's sequencer gives it a slot
or drops it, :mod:`workbench.realtime.sequencer`), evaluates the slot's minibatch gradient
(:mod:`workbench.realtime.streams`) and sends it (``gradient``). The server answers each worker
on the worker's own queue, answers its next read once its update is applied, and applies slots
in order (:class:`ServerCore`), so the recorded schedule replays bit for bit like a one-machine
run.

Clocks: a cluster's machines do not share a clock, so every time is the server's: a
gradient's ``start_time`` is when the server answered its read, ``finish_time`` when its
announcement arrived (the compute time seen from the server, network included).

Every wait has a timeout (queue gets, the run's ``timeout`` and ``stall_timeout``). A worker
task that ends early (its Dask worker died, or it raised) is reported in ``lost_workers`` with
its reason; a slot it held is put back for the others.
"""

from __future__ import annotations

import secrets
import time

import numpy as np

from simulators.latency import LatencyStreams
from simulators.seeding import SeedLike
from workbench.realtime.sequencer import Sequencer, state_size
from workbench.realtime.server import (
    COMPLETE,
    RealRun,
    RealRunSettings,
    ServerCore,
    stop_reason,
)
from workbench.realtime.streams import minibatch_draws
from workbench.samplers.base import Sampler

PAUSE = 0.0005  # seconds the server rests when no message is waiting
POLL = 0.5  # seconds a finished task's exception is waited for
STOP = ("stop",)


def _work(worker: int, settings: RealRunSettings, gradient, seed: SeedLike, requests_name: str,
          replies_name: str) -> str:
    """Worker ``worker``'s loop, as a long-running task on a Dask worker."""
    from distributed import Queue

    requests, replies = Queue(requests_name), Queue(replies_name)
    latency = (LatencyStreams(settings.timing, [(0, worker)], seed, speed_index=[worker])
               if settings.timing is not None else None)
    minibatches = minibatch_draws(seed, gradient, settings.batch_size, settings.replacement)
    wait = settings.stall_timeout
    while True:
        requests.put(("read", worker), timeout=wait)
        answer = replies.get(timeout=wait)
        if answer == STOP:
            return "stopped"
        _, version, point = answer
        if latency is not None:
            time.sleep(latency.next(0))
        requests.put(("announce", worker), timeout=wait)
        answer = replies.get(timeout=wait)
        if answer == STOP:
            return "stopped"
        if answer[0] != "slot":
            continue  # every slot is taken; the run is finishing
        _, slot, applied = answer
        if applied:
            value = gradient(np.asarray(point, dtype=float)[None, None], minibatches(slot))
            requests.put(("gradient", worker, slot, value[0, 0].tolist()), timeout=wait)


def run_dask(model, sampler: Sampler, settings: RealRunSettings, seed: SeedLike,
             client) -> RealRun:
    """Run a real asynchronous server with ``settings.n_workers`` worker tasks on ``client``'s
    cluster, at most one per Dask worker (round robin over the cluster's workers)."""
    from distributed import Queue

    if settings.kill_after:
        from simulators.validation import InvalidParameter
        raise InvalidParameter("kill_after", settings.kill_after,
                               "is a fault injection of the one-machine server only")
    gradient = model.minibatch_gradient()
    dim = int(gradient.dim)
    token = secrets.token_hex(6)
    requests = Queue(f"realtime-{token}-requests", client=client)
    replies = [Queue(f"realtime-{token}-replies-{w}", client=client)
               for w in range(settings.n_workers)]
    sequencer = Sequencer(np.empty(state_size(settings.n_workers), np.int64),
                          settings.n_workers, settings.n_updates, settings.staleness_bound)
    sequencer.reset()
    start = time.monotonic()

    def clock() -> float:
        return time.monotonic() - start

    conversation = _Conversation(sequencer, replies, clock, settings.stall_timeout)
    core = ServerCore(settings, sampler, dim, seed, conversation.publish, clock)
    conversation.core = core
    core.start()
    addresses = sorted(client.scheduler_info()["workers"])
    tasks = {worker: client.submit(_work, worker, settings, gradient, seed, requests.name,
                                   replies[worker].name, pure=False,
                                   workers=[addresses[worker % len(addresses)]],
                                   key=f"realtime-worker-{worker}-{token}")
             for worker in range(settings.n_workers)}
    lost: dict[int, str] = {}
    stopped_because = COMPLETE
    last_news = clock()
    try:
        while core.applied < settings.n_updates:
            _check_tasks(tasks, lost, sequencer, core)
            reason = stop_reason(settings, clock(), last_news, settings.n_workers - len(lost))
            if reason is not None:
                stopped_because = reason
                break
            messages = _waiting(requests)
            if messages:
                last_news = clock()
            for message in messages:
                conversation.serve(message)
            conversation.answer_parked()
    finally:
        sequencer.stop()
        conversation.answer_parked()
        _release(requests, replies, tasks, settings.stall_timeout)
    return core.result(lost, stopped_because, clock(), seed)


def _waiting(requests) -> list:
    """Every message waiting, without blocking (a blocking get that times out is logged as an
    error by the scheduler); pauses briefly when there is none."""
    messages = requests.get(batch=True)
    if not messages:
        time.sleep(PAUSE)
    return messages


class _Conversation:
    """The server's side of the messages (module docstring).

    A worker's read is answered once its previous update is applied
    (:meth:`Sequencer.answered`); until then it is parked.
    """

    def __init__(self, sequencer: Sequencer, replies, clock, timeout: float):
        self.sequencer = sequencer
        self.timeout = timeout
        self.replies = replies
        self.clock = clock
        self.core: ServerCore | None = None
        self.point: list[float] = []
        self.read_at: dict[int, tuple[int, float]] = {}
        self.announced_at: dict[int, float] = {}
        self.last_slot: dict[int, int] = {}
        self.parked: set[int] = set()

    def publish(self, version: int, point: np.ndarray) -> None:
        self.sequencer.publish(version)
        self.point = point.tolist()

    def _answer_read(self, worker: int) -> None:
        if self.sequencer.stopped:
            self.replies[worker].put(STOP, timeout=self.timeout)
            return
        version = self.sequencer.version
        self.read_at[worker] = (version, self.clock())
        self.replies[worker].put(("parameter", version, self.point), timeout=self.timeout)

    def answer_parked(self) -> None:
        for worker in [w for w in self.parked if self.sequencer.answered(self.last_slot[w])]:
            self.parked.discard(worker)
            self._answer_read(worker)

    def serve(self, message) -> None:
        kind, worker = message[0], message[1]
        sequencer, core = self.sequencer, self.core
        if kind == "read":
            slot = self.last_slot.get(worker)
            if slot is None or sequencer.answered(slot):
                self._answer_read(worker)
            else:
                self.parked.add(worker)
        elif kind == "announce":
            version, read_time = self.read_at[worker]
            claim = sequencer.announce(worker, version)
            arrival = self.clock()
            if claim is None:
                self.last_slot.pop(worker, None)
                self.replies[worker].put(("none",), timeout=self.timeout)
                return
            slot, applied = claim
            self.replies[worker].put(("slot", slot, applied), timeout=self.timeout)
            if applied:
                self.announced_at[worker] = arrival
                self.last_slot[worker] = slot
            else:
                self.last_slot.pop(worker, None)
                core.receive(worker, slot, version, False, read_time, arrival, arrival, None)
        else:
            slot, value = message[2], message[3]
            version, read_time = self.read_at[worker]
            arrival = self.announced_at[worker]
            core.receive(worker, slot, version, True, read_time, arrival, arrival,
                         np.asarray(value, dtype=float))


def _check_tasks(tasks, lost: dict[int, str], sequencer: Sequencer, core: ServerCore) -> None:
    """Record worker tasks that ended while the run goes on, and put back their slots."""
    for worker, task in tasks.items():
        if worker in lost or not task.done():
            continue
        error = task.exception(timeout=POLL) if task.status == "error" else None
        lost[worker] = f"task {task.status}" + (f": {error!r}" if error is not None else "")
        slot = sequencer.claim_of(worker)
        if slot >= 0 and not core.received(slot):
            sequencer.orphan(slot)


def _release(requests, replies, tasks, timeout: float) -> None:
    """Answer every further request with ``stop`` until the tasks end (at most ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not all(task.done() for task in tasks.values()) and time.monotonic() < deadline:
        for message in _waiting(requests):
            if message[0] != "gradient":
                replies[message[1]].put(STOP, timeout=timeout)
    for task in tasks.values():
        if not task.done():
            task.cancel()
