"""The server's sequencer: which update slot a finished gradient becomes, or whether it is dropped.

A real parameter server applies gradients in the order they reach it (seed 001 Appendix A,
Algorithm 2). What makes a real run replayable is that a gradient's place in that order, its
*slot*, is fixed when it arrives, before its minibatch is evaluated: a worker that has finished
its computation on the parameter of version v announces itself and is given the next slot l
(its staleness is l - v), and only then evaluates the minibatch the engine's replay draws for
update l (:mod:`workbench.realtime.streams`). The server applies slots in order, so arrival
order and application order coincide.

A gradient whose staleness would exceed the bound is dropped at announcement (seed 001
Algorithm 1) and takes no slot. A slot claimed by a worker that then died is *orphaned*: the
server puts it back and the next announcing worker takes it before any new slot, so the
applied updates stay contiguous and the schedule replays. (The orphan's reader has version
v <= l: the server cannot have applied past a missing slot.) A worker reads the parameter
again only once its own update is applied (:meth:`Sequencer.answered`), as in the simulator.

The state lives in one int64 array so that the same code runs on a shared-memory view under a
process lock (:mod:`workbench.realtime.processes`) and on a plain array in a Dask client
(:mod:`workbench.realtime.dask_cluster`). Layout: ``[version, next_slot, stop, holder,
claims[P], orphans[P]]``; ``holder`` is the worker holding the process lock (-1 none), so that
a lock left held by a killed worker can be released by the server.
"""

from __future__ import annotations

import numpy as np

VERSION, NEXT_SLOT, STOP, HOLDER = range(4)
NO_WORKER = -1
EMPTY = -1


def state_size(n_workers: int) -> int:
    """int64 entries of a sequencer for ``n_workers`` workers."""
    return 4 + 2 * n_workers


class Sequencer:
    """Slot assignment over an int64 state array (module docstring)."""

    def __init__(self, state: np.ndarray, n_workers: int, n_updates: int,
                 staleness_bound: int | None):
        if state.shape != (state_size(n_workers),) or state.dtype != np.int64:
            raise ValueError("sequencer state must be an int64 array of state_size(n_workers)")
        self.state = state
        self.n_updates = n_updates
        self.staleness_bound = staleness_bound
        self._claims = state[4:4 + n_workers]
        self._orphans = state[4 + n_workers:]

    def reset(self) -> None:
        self.state[:] = 0
        self.state[HOLDER] = NO_WORKER
        self._claims[:] = EMPTY
        self._orphans[:] = EMPTY

    @property
    def version(self) -> int:
        return int(self.state[VERSION])

    @property
    def stopped(self) -> bool:
        return bool(self.state[STOP])

    def stop(self) -> None:
        self.state[STOP] = 1

    def publish(self, version: int) -> None:
        self.state[VERSION] = version

    def announce(self, worker: int, version_read: int) -> tuple[int, bool] | None:
        """The slot for a gradient of ``worker`` computed at ``version_read``, and whether it
        is applied (False: dropped, staleness beyond the bound); None when every slot is
        taken (the run is finishing; the gradient is discarded unrecorded, as the simulator
        discards late gradients)."""
        orphans = self._orphans[self._orphans >= 0]
        if orphans.size:
            slot = int(orphans.min())
        elif self.state[NEXT_SLOT] < self.n_updates:
            slot = int(self.state[NEXT_SLOT])
        else:
            return None
        bound = self.staleness_bound
        if bound is not None and slot - version_read > bound:
            return slot, False
        if orphans.size:
            self._orphans[np.flatnonzero(self._orphans == slot)[0]] = EMPTY
        else:
            self.state[NEXT_SLOT] = slot + 1
        self._claims[worker] = slot
        return slot, True

    def answered(self, slot: int) -> bool:
        """Whether a worker whose gradient took ``slot`` may read the parameter again.

        As in seed 001's Algorithm 2 (and :class:`simulators.async_server.AsyncServerSystem`),
        the server answers a gradient with the version that includes it, so a worker waits for
        its own update before reading; it does not wait once the run is stopping, nor while a
        slot is put back (every worker could otherwise be waiting behind the missing one).
        """
        return (self.state[VERSION] > slot or bool(self.state[STOP])
                or bool((self._orphans >= 0).any()))

    def claim_of(self, worker: int) -> int:
        """The last slot ``worker`` was given (EMPTY if none)."""
        return int(self._claims[worker])

    def orphan(self, slot: int) -> None:
        """Put back a slot whose gradient will never come."""
        free = np.flatnonzero(self._orphans == EMPTY)
        self._orphans[free[0]] = slot
