"""The engine's replay of protocol schedules: downpour pushes and elastic couplings.

Called by :func:`workbench.engine.replay.replay` when a schedule names its protocol
(``attrs["protocol"]``, see :mod:`simulators.schedule`); the arguments, the randomness (seed-tree
streams per replicate block, drawn DRAW_STEPS gradient evaluations at a time), the memory budget
and the output are those of the plain replay, with
:class:`workbench.engine.replay_setup.ReplaySetup` and
:class:`workbench.engine.replay_setup.Accumulator` shared. Under the budget, replicate blocks are
replayed in groups as large as it allows (each group pays the Python loop over the pushes once),
with the worker states downpour keeps between pushes counted; a run that cannot fit is refused
before it starts (issue 15).

Downpour (seed 003 Algorithm 1). The recorded samples are the master's versions θ_1..θ_L, one per
applied push. Push l comes from worker w_l, which pulled master version r_l = l - τ_l; the
worker runs π local steps from it with fresh minibatch gradients at its own local points,
keeping its sampler's auxiliary state (pSGLD's second moment, a momentum) from round to round,
and the master adds the worker's accumulated move ν (lines 12, 16). The move is applied by
stepping the master's own position with each local step's gradient, noise and worker
auxiliary state, which adds exactly that step's move for every sampler here (their position
update, given the gradient and auxiliary state, is a translation), so that the master gets
θ_l + ν. With π = 1 this is, operation for operation, the stale-gradient step
θ_{l+1} = θ_l - h∇Ũ(θ_{l-τ_l}) + √(2h)ξ_l of the plain replay of the same schedule: the same
numbers bit for bit. Local step j of push l draws its noise and minibatch as gradient
evaluation lπ + j. Dropped pushes (beyond a staleness bound) are not replayed.

Elastic (seed 003 Appendix B; :mod:`simulators.elastic`). The P chains step in lock-step, each
with fresh gradients at its own point (the schedule's servers are the chains); after local
step t the couplings recorded at version t are applied in the schedule's order:
δ = α(θ^(p) - θ̃), θ^(p) ← θ^(p) - δ, θ̃ ← θ̃ + δ, with θ̃ starting at the chains' mean
starting point. The samples recorded at step t are the chains' positions before that step's
couplings. With α = 0 nothing moves: the chains are those of the plain replay of the same
steps, bit for bit. The output has one average per chain (dim ``server``); the pooled estimate
of Appendix B (equal step sizes) is their mean.
"""

from __future__ import annotations

import numpy as np

from simulators import validation
from simulators.schedule import COUPLING, Schedule
from workbench.engine.replay_setup import GroupLayout, Replay, ReplaySetup
from workbench.gradients.minibatch import check_batch
from workbench.samplers.base import Sampler

PROTOCOLS = ("downpour", "elastic")


class ProtocolReplayer:
    """The replay of a downpour or elastic schedule (module docstring), one group of replicate
    blocks at a time: :func:`workbench.engine.replay.replay` validates the run, sizes the groups
    within its memory budget and joins them. Replicates are independent under both protocols
    (a replicate's master, workers, chains and centre are its own), so groups change nothing."""

    def __init__(self, schedule: Schedule, sampler: Sampler, gradient, n_updates: int,
                 batch_size: int, replacement: bool):
        self.protocol = validation.one_of("protocol", schedule.attrs.get("protocol"),
                                          PROTOCOLS)
        if schedule.n_events and schedule.shard.max() > 0:
            raise validation.InvalidParameter("shard", int(schedule.shard.max()),
                                              "protocol schedules replay a single shard (0)")
        check_batch(gradient.n_data, batch_size, replacement)
        self.sampler, self.gradient, self.replacement = sampler, gradient, replacement
        self.n_updates = n_updates
        self.period = validation.integer("period", schedule.attrs.get("period"), minimum=1)
        n_servers = schedule.n_servers
        if self.protocol == "downpour":
            if n_servers != 1:
                raise validation.InvalidParameter(
                    "n_servers", n_servers, "must be 1 for the downpour protocol (one master)")
            self.staleness = schedule.update_staleness(n_updates)[:, 0].tolist()
            self.workers = schedule.update_column("worker", n_updates)[:, 0].tolist()
            self.layout = GroupLayout(
                1, max(self.staleness), steps_per_update=self.period,
                held_states=len(set(self.workers)) * _state_size(sampler, gradient.dim),
                cache_sized=False)
        else:
            self.strength = validation.probability("coupling_strength",
                                                   schedule.attrs.get("coupling_strength"))
            if schedule.update_staleness(n_updates).max() > 0:
                raise validation.InvalidParameter("staleness", "> 0",
                                                  "elastic chains use fresh local gradients")
            self.coupled = coupling_steps(schedule, n_updates)
            self.layout = GroupLayout(n_servers, 0, held_states=1, cache_sized=False)

    def run(self, initial_position, *, blocks, progress, **options) -> Replay:
        """The replay of ``blocks`` (the arguments of :func:`workbench.engine.replay.replay`)."""
        run = ReplaySetup.build(self.n_updates, self.layout.n_servers, self.gradient,
                                initial_position=initial_position, blocks=blocks,
                                steps_per_update=self.layout.steps_per_update, **options)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.protocol == "downpour":
                return self._downpour(run, progress)
            return self._elastic(run, progress)

    def _downpour(self, run: ReplaySetup, progress) -> Replay:
        n_updates, period, staleness, workers = (run.n_updates, self.period, self.staleness,
                                                 self.workers)
        sampler, gradient, replacement = self.sampler, self.gradient, self.replacement
        initial = sampler.init(run.start)
        master = sampler.position(initial).copy()
        ring_size = max(staleness) + 1
        ring = np.empty((ring_size,) + master.shape)
        ring[:] = master
        worker_states: dict[int, object] = {}
        accumulator = run.accumulator()
        step, point, position = sampler.step, sampler.gradient_point, sampler.position
        for first in range(0, n_updates, run.chunk_size):
            length = min(run.chunk_size, n_updates - first)
            noise, minibatches = run.draw(first * period, length * period, gradient, replacement)
            positions = np.empty((length,) + master.shape)
            for i in range(length):
                push = first + i
                worker = workers[push]
                local = worker_states.get(worker, initial)
                local = local._replace(position=ring[(push - staleness[push]) % ring_size].copy())
                for j in range(i * period, (i + 1) * period):
                    move = gradient(point(local), minibatches[j])
                    master = position(step(local._replace(position=master), move, noise[j]))
                    local = step(local, move, noise[j])
                worker_states[worker] = local
                positions[i] = master
                ring[(push + 1) % ring_size] = master
            accumulator.add(positions, first)
            if progress is not None:
                progress(length)
        return accumulator.result(master.copy())

    def _elastic(self, run: ReplaySetup, progress) -> Replay:
        n_updates, strength, coupled = run.n_updates, self.strength, self.coupled
        sampler, gradient, replacement = self.sampler, self.gradient, self.replacement
        state = sampler.init(run.start)
        centre = run.start.mean(axis=1)
        accumulator = run.accumulator()
        step, point, position = sampler.step, sampler.gradient_point, sampler.position
        shape = run.start.shape
        for first in range(0, n_updates, run.chunk_size):
            length = min(run.chunk_size, n_updates - first)
            noise, minibatches = run.draw(first, length, gradient, replacement)
            positions = np.empty((length,) + shape)
            for j in range(length):
                state = step(state, gradient(point(state), minibatches[j]), noise[j])
                positions[j] = position(state)
                for chain in coupled.get(first + j + 1, ()):
                    chains = state.position
                    pull = strength * (chains[:, chain] - centre)
                    chains[:, chain] = chains[:, chain] - pull
                    centre = centre + pull
            accumulator.add(positions, first)
            if progress is not None:
                progress(length)
        return accumulator.result(np.array(position(state)))


def _state_size(sampler: Sampler, dim: int) -> int:
    """Position-sized arrays in a sampler's state (pSGLD's second moment, a momentum, ...)."""
    state = sampler.init(np.zeros((1, 1, dim)))
    return max(1, sum(np.size(part) for part in state if isinstance(part, np.ndarray)) // dim)


def coupling_steps(schedule: Schedule, n_updates: int) -> dict[int, list[int]]:
    """The chains coupled after each local step t < ``n_updates``, in processing order.

    Refuses a schedule whose couplings are not in non-decreasing step order (the lock-step
    replay could not honour its order).
    """
    rows = schedule.kind == COUPLING
    steps = schedule.version_read[rows]
    if np.any(np.diff(steps) < 0):
        raise validation.InvalidParameter(
            "schedule", "couplings out of step order",
            "elastic couplings must be processed in rounds (non-decreasing local step)")
    coupled: dict[int, list[int]] = {}
    for chain, step in zip(schedule.server[rows].tolist(), steps.tolist(), strict=True):
        if step < n_updates:
            coupled.setdefault(step, []).append(chain)
    return coupled
