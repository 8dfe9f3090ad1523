"""The downpour protocol of seed 003 (Algorithm 1): local steps, asynchronous pushes and pulls.

P workers each hold a copy of the master parameter. A worker runs ``period`` (π) local steps
from its copy, accumulating its moves ν, and then pushes ν to the master, which adds it
(θ ← θ + ν, Algorithm 1 lines 15-19) and sends back its current state: the worker pulls it and
starts its next π local steps from there. Pushes reach the master asynchronously, in the order
the latency model makes them arrive, so a push started from master version r and applied when
the master is at version l has staleness l - r, at most about π(P - 1) local steps' worth of
other workers' moves (docs/math.md §6: E₃ = π²(P - 1)²(Σε²)²/S_L²).

The timing is that of seed 001's asynchronous parameter server
(:class:`simulators.async_server.AsyncServerSystem`, shared event loop) with one computation
lasting π latency draws; the master's versions count pushes. The schedule records every push
(kind ``push``, applied unless beyond ``staleness_bound``) followed by the master's reply (kind
``pull``), and names the protocol and π in its attrs, which is how the engine knows to replay
π local steps per push. With π = 1 the push rows are exactly the gradient rows of the
asynchronous server with the same workers, timing and seed.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulators import validation
from simulators.async_server import AsyncServerSystem
from simulators.schedule import Schedule
from simulators.seeding import SeedLike


@dataclass(frozen=True)
class DownpourSystem(AsyncServerSystem):
    """An asynchronous parameter server whose workers push every ``period`` local steps.

    One master (``n_servers`` must be 1): the local chains and the master replayed by the engine
    belong to one chain of samples.
    """

    period: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        validation.integer("period", self.period, minimum=1)
        if self.n_servers != 1:
            raise validation.InvalidParameter("n_servers", self.n_servers,
                                              "must be 1 for the downpour protocol (one master)")

    def describe(self) -> dict:
        return {**super().describe(), "system": "downpour", "protocol": "downpour",
                "period": self.period}

    def simulate(self, n_updates: int, seed: SeedLike) -> Schedule:
        """Run until the master has applied ``n_updates`` pushes."""
        return self._run(n_updates, seed, period=self.period, protocol=True)
