"""Traveling parallel chains of distributed SGLD (seed 004 §3.2, Algorithm 1).

S workers each hold one shard (worker s holds shard s). C <= S chains travel between them. The
master works in rounds: in round r it assigns chains to distinct workers, by cyclic rotation
(chain c to worker (c + r) mod S) or by a random injective assignment drawn so that no chain
stays on the worker it just left (no collision, no jump in place). In its round a chain makes
one trajectory of τ_s consecutive updates on its worker s, then hops to its next worker, which
costs ``hop_time``. A chain can only start on a worker once the worker's previous chain has
left it: a chain that arrives early waits (the block-by-the-slowest delay of seed 004 §3.2,
Figure 1), and that wait is the gap between its hop's arrival and its first update's start.

Trajectory lengths come from a plan (:mod:`simulators.load_balancing`): fixed per worker, or
adaptive (τ_s = q_s τ̄ S with q_s ∝ 1/d_s from the delays measured on finished trajectories,
re-planned when they change). A trajectory's length is fixed by the plan in force when it
starts, using only trajectories that had finished by then. Every gradient row records its
shard's selection frequency under that plan, q_s = τ_s / Σ_z τ_z, which is what the D-SGLD
estimator N_s/(N q_s) needs.

Chain coupling (seed 004 §3.2.3): chains can be tied in groups (sizes R_g; groups of one are
independent chains, unequal sizes make hybrid groups). A group's members travel together:
they start a trajectory when all have arrived and all their workers are free; at every update
each member computes its gradient on its own worker, and the coupled update is applied when the
slowest member has finished plus ``coupling_time`` for exchanging states. The grouping is
recorded in the schedule's attributes (``coupling_groups``); the numerics of coupling live in
the sampler (:mod:`workbench.samplers.coupled`).

Response delays: a worker's time per update comes from its latency stream
(:mod:`simulators.latency`, speed factors per worker). ``delay_changes`` entries
``(time, worker, factor)`` multiply that worker's delays by ``factor`` for every computation
starting at or after ``time`` (temporal imbalance, to which the adaptive plan responds).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from simulators import validation
from simulators.latency import LatencyStreams, WorkerTiming
from simulators.load_balancing import DelayMonitor, plan_frequencies, trajectory_lengths
from simulators.schedule import GRADIENT, HOP, Schedule
from simulators.seeding import SeedLike, generator

ASSIGNMENTS = ("cyclic", "permutation")
BALANCING = ("fixed", "adaptive")


@dataclass(frozen=True)
class TravelingChains:
    """The traveling-chain system (module docstring).

    trajectory_lengths: the fixed plan, one τ_s per worker or one value for all (``fixed``).
    mean_trajectory_length, replan_threshold: τ̄ and the relative delay change that triggers a
        new plan (``adaptive``).
    coupling_groups: group sizes adding up to ``n_chains`` (None: every chain on its own).
    """

    n_workers: int
    n_chains: int | None = None
    trajectory_lengths: tuple[int, ...] | int = 1
    balancing: str = "fixed"
    mean_trajectory_length: float = 10.0
    replan_threshold: float = 0.1
    assignment: str = "cyclic"
    timing: WorkerTiming = WorkerTiming()
    hop_time: float = 0.0
    coupling_groups: tuple[int, ...] | None = None
    coupling_time: float = 0.0
    delay_changes: tuple[tuple[float, int, float], ...] = ()

    def __post_init__(self) -> None:
        n_workers = validation.integer("n_workers", self.n_workers, minimum=1)
        n_chains = n_workers if self.n_chains is None else self.n_chains
        n_chains = validation.integer("n_chains", n_chains, minimum=1)
        if n_chains > n_workers:
            raise validation.InvalidParameter(
                "n_chains", n_chains, f"must be <= n_workers = {n_workers} (one chain a worker)")
        object.__setattr__(self, "n_chains", n_chains)
        validation.one_of("balancing", self.balancing, BALANCING)
        validation.one_of("assignment", self.assignment, ASSIGNMENTS)
        if self.assignment == "permutation" and n_workers < 2:
            raise validation.InvalidParameter(
                "assignment", self.assignment, "needs n_workers >= 2 to avoid jumping in place")
        lengths = trajectory_lengths(self.trajectory_lengths)
        if lengths.size == 1:
            lengths = np.repeat(lengths, n_workers)
        if lengths.size != n_workers:
            raise validation.InvalidParameter(
                "trajectory_lengths", lengths.tolist(),
                f"needs one length per worker (n_workers = {n_workers}) or a single length")
        object.__setattr__(self, "trajectory_lengths", tuple(lengths.tolist()))
        validation.positive("mean_trajectory_length", self.mean_trajectory_length)
        validation.positive("replan_threshold", self.replan_threshold)
        validation.non_negative("hop_time", self.hop_time)
        validation.non_negative("coupling_time", self.coupling_time)
        groups = (1,) * n_chains if self.coupling_groups is None else self.coupling_groups
        groups = tuple(validation.sizes("coupling_groups", groups, total=n_chains))
        object.__setattr__(self, "coupling_groups", groups)
        if max(groups) > 1:
            if self.balancing == "adaptive":
                raise validation.InvalidParameter(
                    "balancing", self.balancing,
                    "coupled chains hop together, so their trajectories cannot be balanced")
            if len(set(self.trajectory_lengths)) > 1:
                raise validation.InvalidParameter(
                    "trajectory_lengths", list(self.trajectory_lengths),
                    "must be equal when chains are coupled (a group hops together)")
        factors = self.timing.speed_factors
        if factors is not None and len(factors) != n_workers:
            raise validation.InvalidParameter(
                "speed_factors", list(factors),
                f"needs exactly one factor per worker (n_workers = {n_workers})")
        changes = []
        for i, change in enumerate(self.delay_changes):
            if len(change) != 3:
                raise validation.InvalidParameter(f"delay_changes[{i}]", change,
                                                  "must be (time, worker, factor)")
            time, worker, factor = change
            time = validation.non_negative(f"delay_changes[{i}].time", time)
            worker = validation.integer(f"delay_changes[{i}].worker", worker, minimum=0)
            if worker >= n_workers:
                raise validation.InvalidParameter(f"delay_changes[{i}].worker", worker,
                                                  f"must be < n_workers = {n_workers}")
            factor = validation.positive(f"delay_changes[{i}].factor", factor)
            changes.append((time, worker, factor))
        object.__setattr__(self, "delay_changes", tuple(sorted(changes)))

    # ------------------------------------------------------------------ description
    def describe(self) -> dict:
        timing = self.timing
        return {
            "system": "traveling_chains",
            "n_workers": self.n_workers,
            "n_chains": self.n_chains,
            "assignment": self.assignment,
            "balancing": self.balancing,
            "trajectory_lengths": ",".join(map(str, self.trajectory_lengths)),
            "mean_trajectory_length": self.mean_trajectory_length,
            "replan_threshold": self.replan_threshold,
            "hop_time": self.hop_time,
            "coupling_groups": ",".join(map(str, self.coupling_groups)),
            "coupling_time": self.coupling_time,
            **timing.describe(),
            "delay_changes": ";".join(f"{t:g},{w},{f:g}" for t, w, f in self.delay_changes),
        }

    def groups(self) -> list[list[int]]:
        """The chains of each coupling group, consecutive chain indices."""
        bounds = np.cumsum((0,) + tuple(self.coupling_groups))
        return [list(range(a, b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    # ------------------------------------------------------------------ simulation
    def simulate(self, n_updates: int, seed: SeedLike) -> Schedule:
        """Run rounds until every chain has made at least ``n_updates`` updates."""
        n_updates = validation.integer("n_updates", n_updates, minimum=1)
        return _Run(self, seed).until(n_updates)


class _Run:
    """The state of one simulation (module docstring of :mod:`simulators.traveling_chains`)."""

    def __init__(self, system: TravelingChains, seed: SeedLike):
        self.system = system
        n_workers, n_chains = system.n_workers, system.n_chains
        self.streams = LatencyStreams(system.timing, [(w,) for w in range(n_workers)], seed)
        self.assignment_rng = generator(seed, "assignment")
        self.groups = system.groups()
        self.version = [0] * n_chains
        self.departure = [0.0] * n_chains
        self.worker_free = [0.0] * n_workers
        self.monitor = (DelayMonitor(n_workers, system.mean_trajectory_length,
                                     system.replan_threshold)
                        if system.balancing == "adaptive" else None)
        self.fixed_plan = np.asarray(system.trajectory_lengths, dtype=np.int64)
        self.pending: list[tuple[float, int, float]] = []  # measurements not yet available
        self.changes = [[(t, f) for t, w, f in system.delay_changes if w == worker]
                        for worker in range(n_workers)]
        self.pieces = _Pieces()
        self._planned: np.ndarray | None = None
        self._frequencies = np.zeros(0)

    def until(self, n_updates: int) -> Schedule:
        system = self.system
        assignment = None
        round_index = 0
        while min(self.version) < n_updates:
            assignment = self._assign(assignment)
            hop = system.hop_time if round_index else 0.0
            starts = []
            for members in self.groups:
                arrival = max(self.departure[c] + hop for c in members)
                free = max(self.worker_free[assignment[c]] for c in members)
                starts.append(max(arrival, free))
            for g in sorted(range(len(self.groups)), key=lambda g: (starts[g], g)):
                self._trajectory(self.groups[g], assignment, starts[g], hop, round_index > 0)
            round_index += 1
        columns = self.pieces.columns()
        order = np.lexsort((columns["server"], columns["time"]))  # stable: keeps chain order
        columns = {name: values[order] for name, values in columns.items()}
        attrs = system.describe()
        attrs["n_rounds"] = round_index
        if self.monitor is not None:
            attrs["n_replans"] = self.monitor.n_replans
            attrs["final_plan"] = ",".join(map(str, self.monitor.plan.tolist()))
        return Schedule(**columns, attrs=attrs)

    # ------------------------------------------------------------------ pieces
    def _assign(self, previous: np.ndarray | None) -> np.ndarray:
        system = self.system
        n_workers, n_chains = system.n_workers, system.n_chains
        if system.assignment == "cyclic":
            shift = 0 if previous is None else previous[0] + 1
            return (np.arange(n_chains) + shift) % n_workers
        while True:  # uniform over injective assignments with no chain staying in place
            candidate = self.assignment_rng.permutation(n_workers)[:n_chains]
            if previous is None or np.all(candidate != previous):
                return candidate

    def _plan(self, start: float) -> np.ndarray:
        if self.monitor is None:
            return self.fixed_plan
        while self.pending and self.pending[0][0] <= start:
            _, worker, delay = heapq.heappop(self.pending)
            self.monitor.observe(worker, delay)
        self.monitor.update()
        return self.monitor.plan

    def _trajectory(self, members: list[int], assignment: np.ndarray, start: float, hop: float,
                    travelled: bool) -> None:
        plan = self._plan(start)
        if plan is not self._planned:
            self._planned, self._frequencies = plan, plan_frequencies(plan)
        frequencies = self._frequencies
        workers = [int(assignment[c]) for c in members]
        length = int(plan[workers[0]]) if len(members) == 1 else int(self.fixed_plan[0])
        coupling = self.system.coupling_time if len(members) > 1 else 0.0
        base = np.stack([self.streams.take(w, length) for w in workers])
        begins, finishes, applied = self._timing(workers, base, start, coupling)
        for r, (chain, worker) in enumerate(zip(members, workers, strict=True)):
            version = self.version[chain]
            if travelled:
                leave = self.departure[chain]
                self.pieces.add(chain, worker, HOP, frequencies[worker], version,
                                np.array([leave]), np.array([leave]), np.array([leave + hop]))
            self.pieces.add(chain, worker, GRADIENT, frequencies[worker], version, begins,
                            finishes[r], applied)
            self.version[chain] = version + length
            self.departure[chain] = float(applied[-1])
            self.worker_free[worker] = float(applied[-1])
            if self.monitor is not None:
                delay = float(np.mean(finishes[r] - begins))
                heapq.heappush(self.pending, (float(applied[-1]), worker, delay))

    def _timing(self, workers: list[int], base: np.ndarray, start: float,
                coupling: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start of each update, each member's finish, and when each update is applied.

        Update u starts when update u - 1 was applied; member r finishes after its latency
        times its worker's delay factor at that start; the update is applied once the slowest
        member has finished, plus the coupling exchange for a group.
        """
        factors = np.array([self._factor(w, start) for w in workers])
        durations = base * factors[:, None]
        # a running sum that starts at ``start``: each update begins exactly where the last
        # one was applied, rounding included
        times = np.cumsum(np.concatenate(([start], durations.max(axis=0) + coupling)))
        if any(start < t <= times[-1] for w in workers for t, _ in self.changes[w]):
            # a delay changes during this trajectory: walk it update by update
            for u in range(base.shape[1]):
                durations[:, u] = [base[r, u] * self._factor(w, times[u])
                                   for r, w in enumerate(workers)]
                times[u + 1] = times[u] + (durations[:, u].max() + coupling)
        begins = times[:-1]
        return begins, begins + durations, times[1:]

    def _factor(self, worker: int, time: float) -> float:
        factor = 1.0
        for change_time, change in self.changes[worker]:
            if change_time <= time:
                factor *= change
        return factor


class _Pieces:
    """The events of a run, gathered a trajectory (or hop) at a time: per piece its chain,
    worker, kind, shard frequency and first version, and its per-event times; expanded into
    the schedule's columns once, at the end."""

    def __init__(self) -> None:
        self.scalars: list[tuple[int, int, int, float, int]] = []
        self.times: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, chain: int, worker: int, kind: int, frequency: float, version: int,
            start: np.ndarray, finish: np.ndarray, time: np.ndarray) -> None:
        self.scalars.append((chain, worker, kind, frequency, version))
        self.times.append((start, finish, time))

    def columns(self) -> dict[str, np.ndarray]:
        chain, worker, kind, frequency, version = (np.array(c) for c in zip(*self.scalars,
                                                                            strict=True))
        start, finish, time = (np.concatenate(c) for c in zip(*self.times, strict=True))
        lengths = np.array([t.size for t, _, _ in self.times])
        first = np.repeat(np.cumsum(lengths) - lengths, lengths)
        kinds = np.repeat(kind, lengths)
        workers = np.repeat(worker, lengths)
        return {
            "server": np.repeat(chain, lengths),
            "worker": workers,
            "shard": workers.copy(),
            "kind": kinds,
            "version_read": np.repeat(version, lengths) + np.arange(lengths.sum()) - first,
            "staleness": np.zeros(lengths.sum(), dtype=np.int64),
            "applied": kinds == GRADIENT,
            "start_time": start,
            "finish_time": finish,
            "time": time,
            "shard_frequency": np.repeat(frequency, lengths),
        }


def waiting_time(schedule: Schedule) -> np.ndarray:
    """Total time each chain spent waiting for busy workers (or for its group), per server.

    A chain is ready when its hop arrives (time 0 for its first trajectory) and waits until
    its next gradient starts.
    """
    waits = np.zeros(schedule.n_servers)
    for server in range(schedule.n_servers):
        rows = schedule.server == server
        kinds, starts, times = schedule.kind[rows], schedule.start_time[rows], schedule.time[rows]
        first = (kinds == GRADIENT) & np.concatenate(([True], kinds[:-1] == HOP))
        ready = np.concatenate(([0.0], times[:-1]))
        waits[server] = float(np.sum(starts[first] - ready[first]))
    return waits
