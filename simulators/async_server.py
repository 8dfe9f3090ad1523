"""The asynchronous parameter-server system of seed 001 (Appendix A, Algorithm 2).

Each of ``n_servers`` independent servers keeps its own parameter version and its own
``n_workers`` workers. A worker receives the parameter of some version, computes a stochastic
gradient (a latency draw from its own stream), and sends it back; the server processes
gradients in arrival order (first in, first out), each taking ``server_update_time``, and
replies with its current version. Messages take ``network_delay`` each way. A gradient whose
staleness exceeds ``staleness_bound`` is dropped (seed 001 Algorithm 1): the server does not
update and the worker simply receives the current version.

With one server this is the single-chain system of seed 001 Section 4; with several it is the
multiple-chain system whose chains are averaged at test time (Theorems 6-7).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulators import validation
from simulators.events import EventQueue
from simulators.latency import LatencyStreams, WorkerTiming
from simulators.schedule import GRADIENT, PULL, PUSH, Schedule
from simulators.seeding import SeedLike


@dataclass(frozen=True)
class AsyncServerSystem:
    """Servers, their workers and the system's timing (see the module docstring).

    ``timing.speed_factors`` is indexed by a worker's index within its server. Worker ``p`` of
    server ``s`` has global index ``s * n_workers + p`` in the schedule and draws its latencies
    from the seed-tree stream keyed ``(s, p)``.
    """

    n_workers: int
    timing: WorkerTiming = WorkerTiming()
    n_servers: int = 1
    server_update_time: float = 0.0
    network_delay: float = 0.0
    staleness_bound: int | None = None

    def __post_init__(self) -> None:
        validation.integer("n_workers", self.n_workers, minimum=1)
        validation.integer("n_servers", self.n_servers, minimum=1)
        validation.non_negative("server_update_time", self.server_update_time)
        validation.non_negative("network_delay", self.network_delay)
        if self.staleness_bound is not None:
            validation.integer("staleness_bound", self.staleness_bound, minimum=0)
        factors = self.timing.speed_factors
        if factors is not None and len(factors) != self.n_workers:
            raise validation.InvalidParameter(
                "speed_factors",
                list(self.timing.speed_factors),
                f"needs exactly one factor per worker (n_workers = {self.n_workers})",
            )

    def describe(self) -> dict:
        timing = self.timing
        return {
            "system": "async_server",
            "n_workers": self.n_workers,
            "n_servers": self.n_servers,
            **timing.describe(),
            "server_update_time": self.server_update_time,
            "network_delay": self.network_delay,
            "staleness_bound": -1 if self.staleness_bound is None else self.staleness_bound,
        }

    def simulate(self, n_updates: int, seed: SeedLike) -> Schedule:
        """Run until every server has applied ``n_updates`` gradients."""
        return self._run(n_updates, seed, period=1, protocol=False)

    def _run(self, n_updates: int, seed: SeedLike, period: int, protocol: bool) -> Schedule:
        """The event loop shared with :class:`simulators.downpour.DownpourSystem`.

        A worker's computation is ``period`` latency draws in a row (one per local step; one
        gradient when ``period`` is 1). With ``protocol`` the message it sends is recorded as a
        ``push`` and the server's reply as a ``pull`` row; otherwise as a ``gradient``. The
        latency draws, and so every time, are the same either way.
        """
        n_updates = validation.integer("n_updates", n_updates, minimum=1)
        per_server = self.n_workers
        n_total = per_server * self.n_servers
        streams = LatencyStreams(
            self.timing,
            [(w // per_server, w % per_server) for w in range(n_total)],
            seed,
            speed_index=[w % per_server for w in range(n_total)],
        )
        network = self.network_delay
        update_time = self.server_update_time
        bound = self.staleness_bound
        version = [0] * self.n_servers
        server_free = [0.0] * self.n_servers
        remaining = self.n_servers
        rows: list[tuple] = []
        queue = EventQueue()
        kind = PUSH if protocol else GRADIENT
        if period == 1:
            next_latency = streams.next
        else:
            def next_latency(worker: int) -> float:
                return float(streams.take(worker, period).sum())
        for worker in range(n_total):
            start = network
            finish = start + next_latency(worker)
            queue.push(finish + network, (worker, 0, start, finish))
        while remaining:
            arrival, (worker, read, start, finish) = queue.pop()
            server = worker // per_server
            current = version[server]
            if current >= n_updates:
                continue  # this server is done; its workers' late gradients are not recorded
            begin = arrival if arrival > server_free[server] else server_free[server]
            staleness = current - read
            applied = bound is None or staleness <= bound
            if applied:
                processed = begin + update_time
                server_free[server] = processed
                version[server] = current + 1
                if current + 1 == n_updates:
                    remaining -= 1
            else:
                processed = begin
            rows.append((server, worker, 0, kind, read, staleness, applied, start, finish,
                         processed))
            if protocol:
                rows.append((server, worker, 0, PULL, version[server], 0, False, processed,
                             processed, processed))
            start = processed + network
            finish = start + next_latency(worker)
            queue.push(finish + network, (worker, version[server], start, finish))
        return Schedule.from_rows(rows, self.describe())
