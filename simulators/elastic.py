"""Elastic coupling of persistent worker chains through a centre variable (seed 003 App. B).

P workers each run their own chain (θ^(p)) with fresh local gradients. Every ``period`` (π)
local steps every worker sends its state to the centre, which processes the messages in
arrival order: for each, with strength α (``coupling_strength``),

    δ = α (θ^(p) - θ̃),   θ^(p) ← θ^(p) - δ,   θ̃ ← θ̃ + δ

(the asynchronous elastic-averaging update of Zhang, Choromanska & LeCun 2015; the numerics are
in :mod:`workbench.engine.protocols`). α = 0 leaves P independent chains; α = 1 is the case of
seed 003 Appendix B. The estimate is the average over chains of each chain's sample average
(Appendix B with equal step sizes, S_L^(p) all equal).

Timing: each local step is one latency draw from the worker's stream; a message takes
``network_delay`` each way and the centre ``server_update_time`` per coupling. The rounds are
synchronous: a worker starts its next π steps when every coupling of the round has been
answered, so the couplings of round k all come before any of round k + 1 (the engine replays
the chains step by step in lock-step and needs that order). Schedule rows: one ``gradient`` per
local step (server = chain = worker, staleness 0) and one ``coupling`` per message, after every
π-th step except the last one of the run (a coupling there would change no sample).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulators import validation
from simulators.latency import LatencyStreams, WorkerTiming
from simulators.schedule import COUPLING, GRADIENT, Schedule
from simulators.seeding import SeedLike


@dataclass(frozen=True)
class ElasticSystem:
    """P worker chains coupled to a centre every ``period`` steps (module docstring)."""

    n_workers: int
    period: int = 1
    coupling_strength: float = 1.0
    timing: WorkerTiming = WorkerTiming()
    server_update_time: float = 0.0
    network_delay: float = 0.0

    def __post_init__(self) -> None:
        validation.integer("n_workers", self.n_workers, minimum=1)
        validation.integer("period", self.period, minimum=1)
        validation.probability("coupling_strength", self.coupling_strength)
        validation.non_negative("server_update_time", self.server_update_time)
        validation.non_negative("network_delay", self.network_delay)
        factors = self.timing.speed_factors
        if factors is not None and len(factors) != self.n_workers:
            raise validation.InvalidParameter(
                "speed_factors", list(factors),
                f"needs exactly one factor per worker (n_workers = {self.n_workers})")

    def describe(self) -> dict:
        return {
            "system": "elastic",
            "protocol": "elastic",
            "n_workers": self.n_workers,
            "period": self.period,
            "coupling_strength": self.coupling_strength,
            **self.timing.describe(),
            "server_update_time": self.server_update_time,
            "network_delay": self.network_delay,
        }

    def simulate(self, n_updates: int, seed: SeedLike) -> Schedule:
        """Run until every chain has taken ``n_updates`` local steps."""
        n_updates = validation.integer("n_updates", n_updates, minimum=1)
        workers = range(self.n_workers)
        streams = LatencyStreams(self.timing, [(0, p) for p in workers], seed)
        period, network = self.period, self.network_delay
        columns: dict[str, list] = {name: [] for name in
                                    ("server", "kind", "version_read", "start_time",
                                     "finish_time", "time")}

        def add(chain, kind, version, start, finish, time):
            for name, value in zip(columns, (chain, kind, version, start, finish, time),
                                   strict=True):
                columns[name].append(value)

        begin, steps = 0.0, 0
        while steps < n_updates:
            length = min(period, n_updates - steps)
            ends = []
            for p in workers:
                finishes = begin + np.cumsum(streams.take(p, length))
                starts = np.concatenate(([begin], finishes[:-1]))
                for i in range(length):
                    add(p, GRADIENT, steps + i, starts[i], finishes[i], finishes[i])
                ends.append(float(finishes[-1]))
            steps += length
            if steps == n_updates:
                break
            centre_free = 0.0
            replies = []
            for p in sorted(workers, key=lambda q: (ends[q] + network, q)):  # arrival order
                processed = max(ends[p] + network, centre_free) + self.server_update_time
                centre_free = processed
                add(p, COUPLING, steps, ends[p], ends[p], processed)
                replies.append(processed + network)
            begin = max(replies)
        time = np.asarray(columns["time"])
        order = np.argsort(time, kind="stable")
        kind = np.asarray(columns["kind"])[order]
        n = order.size
        server = np.asarray(columns["server"])[order]
        return Schedule(
            server=server, worker=server, shard=np.zeros(n), kind=kind,
            version_read=np.asarray(columns["version_read"])[order],
            staleness=np.zeros(n), applied=kind == GRADIENT,
            start_time=np.asarray(columns["start_time"])[order],
            finish_time=np.asarray(columns["finish_time"])[order], time=time[order],
            attrs=self.describe())
