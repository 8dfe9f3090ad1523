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
from simulators.latency import LatencyTable, WorkerTiming
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
    """The state of one simulation (module docstring of :mod:`simulators.traveling_chains`).

    Each worker serves at most one chain per round and draws its latencies from its own stream,
    so with a fixed plan the trajectories of a round do not depend on one another: a round is
    computed at once, one row per coupling group (``_round``). Adaptive balancing plans each
    trajectory from the trajectories finished before it starts, so it walks them one at a time
    in order of their starts (``_trajectory``). Both give every update's times by the same
    floating-point operations: a running sum from the start, in update order.
    """

    def __init__(self, system: TravelingChains, seed: SeedLike):
        self.system = system
        n_workers, n_chains = system.n_workers, system.n_chains
        self.latencies = LatencyTable(system.timing, [(w,) for w in range(n_workers)], seed)
        self.assignment_rng = generator(seed, "assignment")
        self.groups = system.groups()
        sizes = np.asarray(system.coupling_groups)
        self.first_member = np.cumsum(sizes) - sizes  # chain index where each group begins
        self.group_of = np.repeat(np.arange(sizes.size), sizes)
        self.coupled = bool(sizes.max() > 1)
        self.coupling = np.where(sizes > 1, system.coupling_time, 0.0)
        self.version = np.zeros(n_chains, dtype=np.int64)
        self.departure = np.zeros(n_chains)
        self.worker_free = np.zeros(n_workers)
        self.monitor = (DelayMonitor(n_workers, system.mean_trajectory_length,
                                     system.replan_threshold)
                        if system.balancing == "adaptive" else None)
        self.fixed_plan = np.asarray(system.trajectory_lengths, dtype=np.int64)
        self.pending: list[tuple[float, int, float]] = []  # measurements not yet available
        self.changes = [[(t, f) for t, w, f in system.delay_changes if w == worker]
                        for worker in range(n_workers)]
        self.chains = np.arange(n_chains)
        self.equal_lengths = len(set(system.trajectory_lengths)) == 1
        self.pieces = _Pieces()
        self._planned = self.fixed_plan
        self._frequencies = plan_frequencies(self.fixed_plan)

    def until(self, n_updates: int) -> Schedule:
        system = self.system
        assignment = None
        round_index = 0
        while self.version.min() < n_updates:
            assignment = self._assign(assignment)
            hop = system.hop_time if round_index else 0.0
            arrival = self.departure + hop
            free = self.worker_free[assignment]
            if self.coupled:  # a group starts when all its members have arrived and are free
                arrival = np.maximum.reduceat(arrival, self.first_member)
                free = np.maximum.reduceat(free, self.first_member)
            starts = np.maximum(arrival, free)
            if self.monitor is None:
                self._round(assignment, starts, hop, round_index)
            else:  # adaptive balancing: chains are never coupled, a group is one chain
                starts = starts.tolist()
                for chain in sorted(range(len(starts)), key=lambda c: (starts[c], c)):
                    self._trajectory(chain, int(assignment[chain]), starts[chain], hop,
                                     round_index)
            round_index += 1
        attrs = system.describe()
        attrs["n_rounds"] = round_index
        if self.monitor is not None:
            attrs["n_replans"] = self.monitor.n_replans
            attrs["final_plan"] = ",".join(map(str, self.monitor.plan.tolist()))
        return Schedule(**self.pieces.columns(self.version, round_index), attrs=attrs)

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

    def _round(self, workers: np.ndarray, starts: np.ndarray, hop: float,
               round_index: int) -> None:
        """Every trajectory of a round under the fixed plan, all chains at once."""
        lengths = self.fixed_plan[workers]
        base = self.latencies.take_rows(workers, lengths)
        member_starts = starts[self.group_of] if self.coupled else starts
        durations = base
        if self.system.delay_changes:
            factors = [self._factor(w, t) for w, t in zip(workers.tolist(),
                                                          member_starts.tolist(), strict=True)]
            durations = base * np.array(factors)[:, None]
        steps = durations
        if self.coupled:  # a group's update is applied when its slowest member has finished
            steps = np.maximum.reduceat(durations, self.first_member) + self.coupling[:, None]
        # per group a running sum from its start: each update begins exactly where the last
        # one was applied, rounding included (np.cumsum along a row adds in order)
        times = np.cumsum(np.concatenate((starts[:, None], steps), axis=1), axis=1)
        member_times = times[self.group_of] if self.coupled else times
        finishes = member_times[:, :-1] + durations
        if self.system.delay_changes:
            self._walk_changes(workers, base, lengths, times, member_times, finishes)
        ends = member_times[self.chains, lengths]
        frequencies = self._frequencies[workers]
        if round_index:
            self.pieces.add(HOP, round_index, self.chains, workers, frequencies, self.version,
                            None, self.departure, self.departure, self.departure + hop)
        if self.equal_lengths:
            length = int(lengths[0])
            begins, finishes, applied = (member_times[:, :length], finishes[:, :length],
                                         member_times[:, 1:])
        else:
            inside = np.arange(base.shape[1]) < lengths[:, None]
            begins, finishes, applied = (member_times[:, :-1][inside], finishes[inside],
                                         member_times[:, 1:][inside])
        self.pieces.add(GRADIENT, round_index, self.chains, workers, frequencies, self.version,
                        lengths, begins.ravel(), finishes.ravel(), applied.ravel())
        self.version = self.version + lengths
        self.departure = ends
        self.worker_free[workers] = ends

    def _walk_changes(self, workers, base, lengths, times, member_times, finishes) -> None:
        """Redo, update by update, the groups whose workers' delays change mid-trajectory."""
        for g, members in enumerate(self.groups):
            length = int(lengths[members[0]])
            member_workers = workers[members].tolist()
            start, end = times[g, 0], times[g, length]
            if any(start < t <= end for w in member_workers for t, _ in self.changes[w]):
                walked, walked_finishes = self._timing(
                    member_workers, base[members, :length], float(start), self.coupling[g])
                times[g, :length + 1] = walked
                if self.coupled:
                    member_times[members, :length + 1] = walked
                finishes[members, :length] = walked_finishes

    def _plan(self, start: float) -> np.ndarray:
        observed = False
        while self.pending and self.pending[0][0] <= start:
            _, worker, delay = heapq.heappop(self.pending)
            self.monitor.observe(worker, delay)
            observed = True
        if observed:  # with nothing new the monitor's decision cannot change
            self.monitor.update()
        return self.monitor.plan

    def _trajectory(self, chain: int, worker: int, start: float, hop: float,
                    round_index: int) -> None:
        """One chain's trajectory under the adaptive plan (chains are not coupled)."""
        plan = self._plan(start)
        if plan is not self._planned:
            self._planned, self._frequencies = plan, plan_frequencies(plan)
        length = int(plan[worker])
        times, finishes = self._timing([worker], self.latencies.take(worker, length)[None, :],
                                       start, 0.0)
        frequency, version = float(self._frequencies[worker]), int(self.version[chain])
        if round_index:
            leave = float(self.departure[chain])
            self.pieces.add_hop(round_index, chain, worker, frequency, version, leave,
                                leave + hop)
        self.pieces.add_trajectory(round_index, chain, worker, frequency, version, times,
                                   finishes[0])
        end = float(times[-1])
        self.version[chain] = version + length
        self.departure[chain] = end
        self.worker_free[worker] = end
        heapq.heappush(self.pending, (end, worker, float(np.mean(finishes[0] - times[:-1]))))

    def _timing(self, workers: list[int], base: np.ndarray, start: float,
                coupling: float) -> tuple[np.ndarray, np.ndarray]:
        """One trajectory's times (its start, then when each update is applied) and each
        member's finish times.

        Update u starts when update u - 1 was applied; member r finishes after its latency
        times its worker's delay factor at that start; the update is applied once the slowest
        member has finished, plus the coupling exchange for a group.
        """
        durations = base
        if any(self.changes[w] for w in workers):
            durations = base * np.array([self._factor(w, start) for w in workers])[:, None]
        # a running sum that starts at ``start``: each update begins exactly where the last
        # one was applied, rounding included
        steps = durations[0] if len(workers) == 1 else durations.max(axis=0) + coupling
        times = np.cumsum(np.concatenate(([start], steps)))
        if any(start < t <= times[-1] for w in workers for t, _ in self.changes[w]):
            # a delay changes during this trajectory: walk it update by update
            for u in range(base.shape[1]):
                durations[:, u] = [base[r, u] * self._factor(w, times[u])
                                   for r, w in enumerate(workers)]
                times[u + 1] = times[u] + (durations[:, u].max() + coupling)
        return times, times[:-1] + durations

    def _factor(self, worker: int, time: float) -> float:
        factor = 1.0
        for change_time, change in self.changes[worker]:
            if change_time <= time:
                factor *= change
        return factor


class _Pieces:
    """The events of a run, gathered a batch at a time (a round's hops or updates, all chains
    at once) or one chain's trajectory or hop at a time: per chain its kind, round, worker,
    shard frequency, first version and number of events, and the events' times in order;
    expanded into the schedule's columns once, at the end.

    A chain's events come in its own order (a round's hop, then its updates), so the row of an
    event among its chain's rows follows from its round and version: a chain that starts round
    r at version v has made v updates and r - 1 hops before that round's hop."""

    FIELDS = ("kind", "round", "chain", "worker", "frequency", "version", "length")

    def __init__(self) -> None:
        self.batch_scalars: list[tuple[int, int, int]] = []  # kind, round, number of chains
        self.batches: list[tuple[np.ndarray, ...]] = []  # chain, worker, frequency, version,
        self.batch_times: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # length
        self.singles: list[tuple] = []  # FIELDS as scalars
        self.single_times: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.hops: list[tuple] = []  # FIELDS as scalars, then departure and arrival
        self._ones = np.ones(0, dtype=np.int64)

    def add(self, kind: int, round_index: int, chains: np.ndarray, workers: np.ndarray,
            frequencies: np.ndarray, versions: np.ndarray, lengths: np.ndarray | None,
            start: np.ndarray, finish: np.ndarray, time: np.ndarray) -> None:
        """A batch, chain after chain; ``lengths`` None means one event per chain."""
        if lengths is None:
            if self._ones.size != chains.size:
                self._ones = np.ones(chains.size, dtype=np.int64)
            lengths = self._ones
        self.batch_scalars.append((kind, round_index, chains.size))
        self.batches.append((chains, workers, frequencies, versions, lengths))
        self.batch_times.append((start, finish, time))

    def add_trajectory(self, round_index: int, chain: int, worker: int, frequency: float,
                       version: int, times: np.ndarray, finishes: np.ndarray) -> None:
        """One trajectory: ``times`` its start, then when each update is applied."""
        self.singles.append((GRADIENT, round_index, chain, worker, frequency, version,
                             finishes.size))
        self.single_times.append((times[:-1], finishes, times[1:]))

    def add_hop(self, round_index: int, chain: int, worker: int, frequency: float,
                version: int, departure: float, arrival: float) -> None:
        self.hops.append((HOP, round_index, chain, worker, frequency, version, 1, departure,
                          arrival))

    def _gathered(self):
        """FIELDS as flat arrays, one entry per chain in a piece, and the events' times."""
        parts, times = [], list(self.batch_times)
        if self.batches:
            kind, round_index, size = (np.array(c) for c in zip(*self.batch_scalars,
                                                                strict=True))
            parts.append((np.repeat(kind, size), np.repeat(round_index, size),
                          *(np.concatenate(c) for c in zip(*self.batches, strict=True))))
        if self.singles:
            parts.append(tuple(np.array(c) for c in zip(*self.singles, strict=True)))
            times.extend(self.single_times)
        if self.hops:
            *fields, departure, arrival = (np.array(c) for c in zip(*self.hops, strict=True))
            parts.append(tuple(fields))
            times.append((departure, departure, arrival))
        fields = [np.concatenate(c) for c in zip(*parts, strict=True)]
        return fields, [np.concatenate(c) for c in zip(*times, strict=True)]

    def columns(self, final_versions: np.ndarray, n_rounds: int) -> dict[str, np.ndarray]:
        """The columns in processing order: by time, then chain, then the chain's own order
        (what a stable sort by (time, chain) of the events in the order they happened
        gives)."""
        (kind, round_index, chain, worker, frequency, version, lengths), (start, finish, time) \
            = self._gathered()
        entry = np.repeat(np.arange(lengths.size, dtype=np.int32), lengths)
        first = np.cumsum(lengths) - lengths  # each entry's first event, as added
        # every chain makes one trajectory a round and hops before all but the first
        chain_rows = final_versions + (n_rounds - 1)
        chain_first = np.cumsum(chain_rows) - chain_rows
        entry_row = chain_first[chain] + version + round_index - (kind == HOP)
        added = np.arange(time.size)
        by_chain = np.empty(time.size, dtype=np.int64)
        by_chain[(entry_row - first)[entry] + added] = added
        # chain after chain, each in its own order: a stable sort by time keeps ties so
        time = time[by_chain]
        by_time = np.argsort(time, kind="stable")
        order = by_chain[by_time]
        entry = entry[order]
        kinds = kind.astype(np.int8)[entry]
        workers = worker.astype(np.int32)[entry]
        return {
            "server": chain.astype(np.int32)[entry],
            "worker": workers,
            "shard": workers.copy(),
            "kind": kinds,
            "version_read": (version - first)[entry] + order,
            "staleness": np.zeros(time.size, dtype=np.int64),
            "applied": kinds == GRADIENT,
            "start_time": start[order],
            "finish_time": finish[order],
            "time": time[by_time],
            "shard_frequency": frequency[entry],
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
