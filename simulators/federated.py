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
        """Whole rounds until every chain has made at least ``n_updates`` updates.

        Chain c's events are laid out as a grid ``(round, slot)``: slot 0 is the round's hop,
        slot k the round's update k - 1. One running sum along each chain's events makes each
        event start exactly where the previous one ended; the chains' events are then merged by
        time, ties in chain order (a stable sort of the chain-major concatenation).
        """
        n_updates = validation.integer("n_updates", n_updates, minimum=1)
        local, n_chains = self.local_updates, self.n_chains
        n_rounds = -(-n_updates // local)
        slots = local + 1
        per_chain = n_rounds * slots
        clients = np.empty((n_chains, n_rounds), dtype=np.int64)
        times = np.empty((n_chains, n_rounds, slots))  # event increments, then end times
        times[:, :, 0] = self.hop_time
        for chain in range(n_chains):
            clients[chain] = self.client_sequence(chain, n_rounds, seed)
            times[chain, :, 1:] = self._latencies(chain, clients[chain], seed).reshape(
                n_rounds, local)
        running = np.zeros((n_chains, per_chain + 1))
        running[:, 1:] = times.reshape(n_chains, per_chain)
        np.cumsum(running, axis=1, out=running)
        begin, end = running[:, :-1].ravel(), running[:, 1:].ravel()
        order = np.argsort(end, kind="stable")
        slot = order % slots
        is_hop = slot == 0
        chain_round = order // slots  # chain * n_rounds + round
        worker = clients.ravel()[chain_round].astype(np.int32)
        start = begin[order]
        finish = end[order]
        probabilities = np.asarray(self.client_probabilities)
        return Schedule(
            server=(order // per_chain).astype(np.int32),
            worker=worker,
            shard=worker,
            kind=np.where(is_hop, HOP, GRADIENT).astype(np.int8),
            # a round's hop reads the version its first update reads
            version_read=(chain_round % n_rounds) * local + np.maximum(slot - 1, 0),
            staleness=np.zeros(order.size, dtype=np.int64),
            applied=~is_hop,
            start_time=start,
            finish_time=np.where(is_hop, start, finish),  # a hop finishes as it departs
            time=finish,  # a hop arrives when it ends, an update is applied when it finishes
            shard_frequency=probabilities[worker],
            attrs=self.describe())

    def _latencies(self, chain: int, clients: np.ndarray, seed: SeedLike) -> np.ndarray:
        """The response delays of chain ``chain``'s updates when it visits ``clients`` round by
        round, ``local_updates`` per round: each client's draws in the order it computes them."""
        streams = LatencyStreams(self.timing, [(chain, s) for s in range(self.n_clients)], seed)
        update_client = np.repeat(clients, self.local_updates)
        latency = np.empty(update_client.size)
        for s in range(self.n_clients):
            where = np.flatnonzero(update_client == s)
            latency[where] = streams.take(s, where.size)
        return latency
