"""Federated rounds of FSGLD / DSGLD (seed 002 Algorithm 1).

The server holds the chain. Each round it draws a client s with probability f_s
(``client_probabilities``), passes the chain to it (``hop_time``), and the client makes
``local_updates`` (T) consecutive updates on its own data, one after the other, each taking the
client's response delay; then the chain goes back to the server and the next round begins.
Client s holds shard s. Every gradient row records f_s of its client, the selection frequency
both the DSGLD estimator N_s/(f_s m) and the conducive gradient g_s divide by.

``n_chains`` chains are independent runs of the whole system: each has its own client draws
and its own client latency streams (seed keys ``("clients", chain)`` and
``("latency", chain, client)``), so chains never wait for each other, and chain c's schedule is
the same whatever the number of chains. Rounds are drawn and timed with whole-array
operations, so schedules of millions of updates take a fraction of a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulators import validation
from simulators.latency import LatencyStreams, WorkerTiming
from simulators.schedule import GRADIENT, HOP, Schedule
from simulators.seeding import SeedLike, generator


@dataclass(frozen=True)
class FederatedRounds:
    """Seed 002 Algorithm 1 with a timing model (module docstring)."""

    client_probabilities: tuple[float, ...]
    local_updates: int = 1
    n_chains: int = 1
    timing: WorkerTiming = WorkerTiming()
    hop_time: float = 0.0

    def __post_init__(self) -> None:
        probabilities = validation.frequencies("client_probabilities", self.client_probabilities)
        object.__setattr__(self, "client_probabilities", tuple(probabilities))
        validation.integer("local_updates", self.local_updates, minimum=1)
        validation.integer("n_chains", self.n_chains, minimum=1)
        validation.non_negative("hop_time", self.hop_time)
        factors = self.timing.speed_factors
        if factors is not None and len(factors) != self.n_clients:
            raise validation.InvalidParameter(
                "speed_factors", list(factors),
                f"needs exactly one factor per client (n_clients = {self.n_clients})")

    @property
    def n_clients(self) -> int:
        return len(self.client_probabilities)

    def describe(self) -> dict:
        timing = self.timing
        return {
            "system": "federated_rounds",
            "client_probabilities": ",".join(f"{p:.17g}" for p in self.client_probabilities),
            "local_updates": self.local_updates,
            "n_chains": self.n_chains,
            "hop_time": self.hop_time,
            **timing.describe(),
        }

    def client_sequence(self, chain: int, n_rounds: int, seed: SeedLike) -> np.ndarray:
        """The clients chain ``chain`` visits in its first ``n_rounds`` rounds."""
        rng = generator(seed, "clients", chain)
        return rng.choice(self.n_clients, size=n_rounds, p=np.asarray(self.client_probabilities))

    def simulate(self, n_updates: int, seed: SeedLike) -> Schedule:
        """Whole rounds until every chain has made at least ``n_updates`` updates."""
        n_updates = validation.integer("n_updates", n_updates, minimum=1)
        local = self.local_updates
        n_rounds = -(-n_updates // local)
        pieces = [self._chain(c, n_rounds, seed) for c in range(self.n_chains)]
        columns = {name: np.concatenate([p[name] for p in pieces]) for name in pieces[0]}
        order = np.lexsort((columns["server"], columns["time"]))
        columns = {name: values[order] for name, values in columns.items()}
        return Schedule(**columns, attrs=self.describe())

    def _chain(self, chain: int, n_rounds: int, seed: SeedLike) -> dict[str, np.ndarray]:
        local, n_clients = self.local_updates, self.n_clients
        clients = self.client_sequence(chain, n_rounds, seed)
        streams = LatencyStreams(self.timing, [(chain, s) for s in range(n_clients)], seed)
        update_client = np.repeat(clients, local)
        latency = np.empty(update_client.size)
        for s in range(n_clients):  # each client's draws in the order it computes them
            where = np.flatnonzero(update_client == s)
            latency[where] = streams.take(s, where.size)
        # Each round: the hop, then T updates back to back. One running sum over all events
        # makes each event start exactly where the previous one ended.
        rounds_at = np.arange(n_rounds) * local
        increments = np.insert(latency, rounds_at, self.hop_time)
        times = np.cumsum(np.concatenate(([0.0], increments)))
        is_hop = np.zeros(increments.size, dtype=bool)
        is_hop[rounds_at + np.arange(n_rounds)] = True
        begin, end = times[:-1], times[1:]
        start, finish = begin[~is_hop], end[~is_hop]
        departure, arrival = begin[is_hop], end[is_hop]
        n = update_client.size
        probabilities = np.asarray(self.client_probabilities)
        gradient_rows = {
            "kind": np.full(n, GRADIENT), "worker": update_client, "version_read": np.arange(n),
            "applied": np.ones(n, dtype=bool), "start_time": start, "finish_time": finish,
            "time": finish,
        }
        hop_rows = {
            "kind": np.full(n_rounds, HOP), "worker": clients,
            "version_read": np.arange(n_rounds) * local, "applied": np.zeros(n_rounds, bool),
            "start_time": departure, "finish_time": departure, "time": arrival,
        }
        # hop r comes just before the first update of round r
        columns = {name: np.insert(gradient_rows[name], rounds_at, hop_rows[name])
                   for name in gradient_rows}
        total = n + n_rounds
        columns.update({
            "server": np.full(total, chain),
            "shard": columns["worker"],
            "staleness": np.zeros(total, dtype=np.int64),
            "shard_frequency": probabilities[columns["worker"]],
        })
        return columns
