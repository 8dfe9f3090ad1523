"""The server side of a real run: settings, the apply loop, the recorded schedule, the result.

Whatever carries the messages (processes and shared memory, or a Dask cluster), the server does
the same: it applies gradients in slot order (:mod:`workbench.realtime.sequencer`) with the
chosen sampler of :mod:`workbench.samplers` and the injected noise the engine's replay draws
(:mod:`workbench.realtime.streams`), publishes the new gradient point as the next parameter
version, and records one event per gradient: worker, version read, applied or dropped, and
the wall-clock times (seconds since the run started) at which the worker read the parameter,
finished computing, and at which the server processed the event (applied it, or for a dropped
gradient the later of its arrival and the previous update). The record becomes a
:class:`simulators.schedule.Schedule`, and :func:`replay_run` replays it in the engine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from simulators import validation
from simulators.latency import WorkerTiming
from simulators.schedule import Schedule
from simulators.seeding import SeedLike, seed_sequence
from workbench.engine import replay as engine
from workbench.realtime.streams import REAL_BLOCK, noise_draws
from workbench.samplers.base import Sampler


@dataclass(frozen=True)
class RealRunSettings:
    """What a real run does, for any transport.

    timing: injected compute delays in seconds, the simulator's latency model
        (:class:`simulators.latency.WorkerTiming`: distribution, per-worker speed factors,
        stragglers), drawn by worker p from the stream the simulator gives worker p of
        server 0. ``None`` injects nothing (workers run as fast as they can).
    staleness_bound: drop gradients staler than this (None: never).
    server_delay: seconds the server spends on each applied update beyond the step itself
        (an injected expensive update; with it the server saturates and the time speed-up
        bends at P* = c/u, :mod:`workbench.systems.asynchronous.system`).
    timeout: seconds the whole run may take; stall_timeout: seconds without any message.
    kill_after: fault injection, ``{worker: k}``: the worker kills itself with SIGKILL right
        after it is given its k-th slot, before sending the gradient (processes only).
    """

    n_workers: int
    n_updates: int
    batch_size: int
    initial_position: float | tuple[float, ...] = 0.0
    replacement: bool = True
    timing: WorkerTiming | None = None
    staleness_bound: int | None = None
    server_delay: float = 0.0
    timeout: float = 120.0
    stall_timeout: float = 30.0
    kill_after: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        validation.integer("n_workers", self.n_workers, minimum=1)
        validation.integer("n_updates", self.n_updates, minimum=1)
        validation.integer("batch_size", self.batch_size, minimum=1)
        if self.staleness_bound is not None:
            validation.integer("staleness_bound", self.staleness_bound, minimum=0)
        validation.non_negative("server_delay", self.server_delay)
        validation.positive("timeout", self.timeout)
        validation.positive("stall_timeout", self.stall_timeout)
        if self.timing is not None and self.timing.speed_factors is not None \
                and len(self.timing.speed_factors) != self.n_workers:
            raise validation.InvalidParameter(
                "speed_factors", list(self.timing.speed_factors),
                f"needs exactly one factor per worker (n_workers = {self.n_workers})")
        for worker, count in self.kill_after.items():
            validation.integer("kill_after", worker, minimum=0, maximum=self.n_workers - 1)
            validation.integer(f"kill_after[{worker}]", count, minimum=1)

    def describe(self) -> dict:
        """Schedule attributes (strings and numbers only)."""
        timing = self.timing.describe() if self.timing is not None else {"latency": "none"}
        return {
            "system": "real_async_server",
            "n_workers": self.n_workers,
            "n_servers": 1,
            **timing,
            "staleness_bound": -1 if self.staleness_bound is None else self.staleness_bound,
            "server_delay": self.server_delay,
            "batch_size": self.batch_size,
            "replacement": int(self.replacement),
        }


@dataclass(frozen=True)
class RealRun:
    """What a real run returns.

    trajectory: ``(n_applied, d)`` positions after each applied update.
    apply_times: wall-clock seconds at which each update was applied (published);
    update_starts: when the server began applying it (``apply_times - update_starts`` is the
        server's time per update).
    lost_workers: ``{worker: reason}`` for workers that died during the run.
    complete: every requested update was applied; otherwise ``stopped_because`` says why.
    streams: the seed-tree keys of the random streams the run drew (the replay draws them);
        the schedule's attributes carry them too, with the seed (``seed_entropy``,
        ``seed_spawn_key``), so that a stored schedule says how to replay it.
    """

    schedule: Schedule
    trajectory: np.ndarray
    apply_times: np.ndarray
    update_starts: np.ndarray
    lost_workers: dict[int, str]
    complete: bool
    stopped_because: str
    wall_time: float
    seed: SeedLike
    streams: tuple[str, ...]
    initial_position: np.ndarray

    @property
    def n_applied(self) -> int:
        return int(self.trajectory.shape[0])

    def summary(self) -> str:
        lost = ", ".join(f"worker {w} ({why})" for w, why in sorted(self.lost_workers.items()))
        state = "complete" if self.complete else f"incomplete: {self.stopped_because}"
        return (f"{self.n_applied} updates applied in {self.wall_time:.2f} s, {state}"
                + (f"; lost {lost}" if lost else ""))


@dataclass
class _Event:
    worker: int
    slot: int
    version_read: int
    applied: bool
    start_time: float
    finish_time: float
    arrival_time: float


class ServerCore:
    """Applies gradients in slot order and records every event (module docstring).

    ``publish(version, gradient_point)`` makes a new parameter version visible to workers;
    gradient points are ``(d,)`` arrays.
    """

    def __init__(self, settings: RealRunSettings, sampler: Sampler, dim: int, seed: SeedLike,
                 publish, clock):
        self.settings = settings
        self.sampler = sampler
        self._publish = publish
        self._clock = clock
        try:
            start = np.broadcast_to(np.asarray(settings.initial_position, dtype=float),
                                    (1, 1, dim)).copy()
        except ValueError as error:
            raise validation.InvalidParameter("initial_position", settings.initial_position,
                                              f"must broadcast to d = {dim}") from error
        self._start = start
        self.state = sampler.init(start)
        self._noise = noise_draws(seed, dim)
        self.trajectory = np.empty((settings.n_updates, dim))
        self.apply_times = np.empty(settings.n_updates)
        self.update_starts = np.empty(settings.n_updates)
        self.applied = 0
        self._pending: dict[int, np.ndarray] = {}
        self._events: list[_Event] = []
        self._received: set[int] = set()

    def start(self) -> None:
        """Publish version 0."""
        self._publish(0, self.sampler.gradient_point(self.state)[0, 0])

    def received(self, slot: int) -> bool:
        return slot in self._received

    def receive(self, worker: int, slot: int, version_read: int, applied: bool,
                start_time: float, finish_time: float, arrival_time: float,
                gradient: np.ndarray | None) -> None:
        """One message from a worker; applies every update that is now next in order."""
        event = _Event(worker, slot, version_read, applied, start_time, finish_time,
                       arrival_time)
        self._events.append(event)
        if not applied:
            return
        self._received.add(slot)
        self._pending[slot] = np.asarray(gradient, dtype=float).reshape(1, 1, -1)
        step, position = self.sampler.step, self.sampler.position
        while self.applied in self._pending:
            update = self.applied
            self.update_starts[update] = self._clock()
            gradient = self._pending.pop(update)
            self.state = step(self.state, gradient, self._noise(update))
            if self.settings.server_delay:
                time.sleep(self.settings.server_delay)
            self.trajectory[update] = position(self.state)[0, 0]
            self.applied = update + 1
            self._publish(self.applied, self.sampler.gradient_point(self.state)[0, 0])
            self.apply_times[update] = self._clock()

    def result(self, lost_workers: dict[int, str], stopped_because: str, wall_time: float,
               seed: SeedLike) -> RealRun:
        settings = self.settings
        n_applied = self.applied
        applied_times = self.apply_times[:n_applied]
        rows = []
        for event in self._events:
            if event.applied and event.slot >= n_applied:
                continue  # arrived but never applied: the run stopped before its turn
            if not event.applied and event.slot > n_applied:
                continue
            if event.applied:
                time, order = applied_times[event.slot], 1
            else:
                previous = applied_times[event.slot - 1] if event.slot > 0 else 0.0
                time, order = max(event.arrival_time, previous), 0
            rows.append(((event.slot, order, event.arrival_time),
                         (0, event.worker, 0, 0, event.version_read,
                          event.slot - event.version_read, event.applied, event.start_time,
                          event.finish_time, time)))
        rows.sort(key=lambda row: row[0])
        streams = (f"noise/{REAL_BLOCK}", f"minibatch/{REAL_BLOCK}",
                   *(f"latency/0/{w}" for w in range(settings.n_workers)))
        sequence = seed_sequence(seed)
        attrs = {**settings.describe(), "seed_entropy": str(sequence.entropy),
                 "seed_spawn_key": ",".join(map(str, sequence.spawn_key)),
                 "streams": ",".join(streams)}
        schedule = Schedule.from_rows([row for _, row in rows], attrs)
        return RealRun(
            schedule=schedule,
            trajectory=self.trajectory[:n_applied].copy(),
            apply_times=applied_times.copy(),
            update_starts=self.update_starts[:n_applied].copy(),
            lost_workers=dict(lost_workers),
            complete=n_applied == settings.n_updates,
            stopped_because=stopped_because,
            wall_time=wall_time,
            seed=seed,
            streams=streams,
            initial_position=self._start[0, 0].copy(),
        )


COMPLETE = "every update applied"


def stop_reason(settings: RealRunSettings, now: float, last_news: float,
                workers_left: int) -> str | None:
    """Why a server must stop waiting now (None: carry on): the run's timeout, no message
    for ``stall_timeout``, or no worker left."""
    if now >= settings.timeout:
        return f"timeout: {settings.timeout} s elapsed"
    if now - last_news >= settings.stall_timeout:
        return f"stalled: no message for {settings.stall_timeout} s"
    if workers_left == 0:
        return "every worker was lost"
    return None


def replay_run(run: RealRun, sampler: Sampler, gradient) -> np.ndarray:
    """Replay a real run's schedule in the engine with the same seed: ``(n_applied, d)``
    positions, to be compared with ``run.trajectory`` (bit for bit).

    The replay draws the streams the run drew (:mod:`workbench.realtime.streams`); this is the
    engine's ordinary :func:`~workbench.engine.replay.replay` of one replicate, keeping every draw.
    """
    settings = run.schedule.attrs
    replayed = engine.replay(
        run.schedule, sampler, gradient, n_updates=run.n_applied, n_replicates=1,
        initial_position=run.initial_position, seed=run.seed,
        batch_size=int(settings["batch_size"]), replacement=bool(settings["replacement"]),
        test_functions=(), thin=1)
    return replayed.draws[0, 0]
