"""The declared cost model that times every topic-model sampler (seed 004 §4.2).

Seed 004 compares D-SGLD, SGRLD, AD-LDA and Async-LDA by wall-clock time on a real cluster.
The workbench simulates that time instead, from one cost model fixed before any run and shown
beside every time axis, in one unit (by default the time of one token's Gibbs update):

- ``gibbs_token``: one token's topic resampling, in collapsed Gibbs (AD-LDA, Async-LDA) and in
  SGRLD's local sweeps over a minibatch's documents;
- ``sgrld_token``: SGRLD's own work per minibatch token beyond its Gibbs sweeps (accumulating
  the expected counts into the gradient);
- ``topic_entry``: updating one topic-word entry of a K × W state (SGRLD's step touches them
  all; AD-LDA's merge adds every worker's deltas into them);
- ``message_entry``: sending one topic-word entry between machines (a chain's hop, a group's
  averaging, AD-LDA's and Async-LDA's synchronisation, each way).

A worker's time for a piece of work is its cost divided by the worker's speed factor
(:class:`simulators.latency.WorkerTiming`), so a slow worker (``(1:D)`` of seed 004 Figure 7)
takes D times longer for the same work.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulators import validation


@dataclass(frozen=True)
class CostModel:
    """Costs in one unit (module docstring)."""

    gibbs_token: float = 1.0
    sgrld_token: float = 1.0
    topic_entry: float = 0.1
    message_entry: float = 1.0

    def __post_init__(self) -> None:
        for name in ("gibbs_token", "sgrld_token", "topic_entry", "message_entry"):
            validation.non_negative(f"cost_{name}", getattr(self, name))
        if self.gibbs_token <= 0:
            raise validation.InvalidParameter("cost_gibbs_token", self.gibbs_token,
                                              "must be > 0 (the unit of simulated time)")

    def sgrld_step(self, n_tokens: int, n_sweeps: int, n_topics: int,
                   vocabulary_size: int) -> float:
        """One SGRLD step on a minibatch of ``n_tokens`` tokens with ``n_sweeps`` Gibbs sweeps
        per document, updating the K × W state."""
        return (n_tokens * (n_sweeps * self.gibbs_token + self.sgrld_token)
                + n_topics * vocabulary_size * self.topic_entry)

    def gibbs_sweep(self, n_tokens: int) -> float:
        """One collapsed Gibbs sweep over ``n_tokens`` tokens."""
        return n_tokens * self.gibbs_token

    def message(self, n_topics: int, vocabulary_size: int) -> float:
        """Sending one K × W state (or its deltas) one way."""
        return n_topics * vocabulary_size * self.message_entry

    def describe(self) -> dict:
        """The costs as dataset attributes."""
        return {f"cost_{name}": getattr(self, name)
                for name in ("gibbs_token", "sgrld_token", "topic_entry", "message_entry")}
