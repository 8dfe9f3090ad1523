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

    The rounds run in the compiled loop :func:`simulators.traveling_kernel.advance`, which
    stops to ask for what only numpy's generators give: more candidate permutations (drawn here
    by ``Generator.permutation``, one call per candidate as always; the assignment stream feeds
    nothing else, so candidates drawn ahead and never used change nothing) and a worker's
    latency refill (:class:`~simulators.latency.LatencyTable`, with the sizes its takes always
    ask for). Every update's times are the same floating-point operations as a running sum
    from its trajectory's start, in update order.
    """

    def __init__(self, system: TravelingChains, seed: SeedLike):
        self.system = system
        n_workers = system.n_workers
        self.latencies = LatencyTable(system.timing, [(w,) for w in range(n_workers)], seed)
        self.assignment_rng = generator(seed, "assignment")
        self.candidates = np.zeros((0, n_workers), dtype=np.int64)
        self.monitor = (DelayMonitor(n_workers, system.mean_trajectory_length,
                                     system.replan_threshold)
                        if system.balancing == "adaptive" else None)
        plan = np.asarray(system.trajectory_lengths if self.monitor is None
                          else self.monitor.plan, dtype=np.int64).copy()
        self.plan, self.frequencies = plan, plan_frequencies(plan)
        changes = [[(t, f) for t, w, f in system.delay_changes if w == worker]
                   for worker in range(n_workers)]
        width = max(1, max(map(len, changes)))
        self.change_times = np.zeros((n_workers, width))
        self.change_factors = np.ones((n_workers, width))
        self.change_counts = np.array(list(map(len, changes)), dtype=np.int64)
        for worker, worker_changes in enumerate(changes):
            for k, (time, factor) in enumerate(worker_changes):
                self.change_times[worker, k], self.change_factors[worker, k] = time, factor

    def _draw_candidates(self, count: int) -> None:
        """``count`` more candidate assignments: the first ``n_chains`` entries of a uniform
        permutation of the workers (an injective assignment); the kernel takes the first that
        leaves no chain on the worker it just left, so rounds are uniform over those."""
        permutation, n_workers = self.assignment_rng.permutation, self.system.n_workers
        fresh = np.array([permutation(n_workers) for _ in range(count)], dtype=np.int64)
        self.candidates = np.concatenate((self.candidates, fresh))

    def until(self, n_updates: int) -> Schedule:
        # numba loads with the first simulation, not with the system's definition (which the
        # command line's light paths import through the study schema)
        from simulators import traveling_kernel

        system = self.system
        n_workers, n_chains = system.n_workers, system.n_chains
        sizes = np.asarray(system.coupling_groups, dtype=np.int64)
        first_member = np.cumsum(sizes) - sizes  # chain index where each group begins
        coupling = np.where(sizes > 1, system.coupling_time, 0.0)
        version = np.zeros(n_chains, dtype=np.int64)
        departure, worker_free = np.zeros(n_chains), np.zeros(n_workers)
        round_workers = np.zeros(n_chains, dtype=np.int64)
        round_starts, round_order = np.zeros(n_chains), np.zeros(n_chains, dtype=np.int64)
        adaptive = self.monitor is not None
        measured = np.full(n_workers, np.nan)
        planned_with = (self.monitor.planned_with if adaptive else np.ones(n_workers)).copy()
        pending = np.zeros((3, n_chains))
        # room for about a chain's events: its updates (overshooting by a trajectory or, with
        # unequal lengths, by chance) and a hop a round; grown if a run makes more
        rows = int(1.1 * (n_updates + self.plan.max()) + 1.1 * n_updates / self.plan.mean()) + 2
        events = np.empty((n_chains, rows, 3), dtype=np.int64)  # an event's fields together
        times = np.empty((n_chains, rows, 4))
        scratch = np.zeros((5, max(n_workers, int(self.plan.max()))))
        state = np.zeros(6, dtype=np.int64)
        state[traveling_kernel.POSITION] = -1  # no round under way
        request = np.zeros(2, dtype=np.int64)
        while True:
            values, positions, ends = self.latencies.buffers()
            code = traveling_kernel.advance(
                n_updates, adaptive, system.assignment == "cyclic", float(system.hop_time),
                self.candidates, self.candidates.shape[0], first_member, sizes, coupling,
                values, positions, ends, self.change_times, self.change_factors,
                self.change_counts, version, departure, worker_free, round_workers,
                round_starts, round_order, self.plan, self.frequencies, measured, planned_with,
                float(system.mean_trajectory_length), float(system.replan_threshold), pending,
                events, times, state, request, scratch)
            if code == traveling_kernel.DONE:
                break
            if code == traveling_kernel.NEED_CANDIDATES:
                self._draw_candidates(max(64, self.candidates.shape[0]))
            elif code == traveling_kernel.NEED_LATENCIES:
                self.latencies.refill(int(request[0]), int(request[1]))
            elif code == traveling_kernel.NEED_ROOM:
                rows = max(events.shape[1] * 3 // 2, int(request[0]))
                events, times = (np.concatenate(
                    (a, np.empty((a.shape[0], rows - a.shape[1], a.shape[2]), a.dtype)), axis=1)
                    for a in (events, times))
                if request[1] > scratch.shape[1]:
                    scratch = np.zeros((5, max(n_workers, 2 * int(request[1]))))
            else:  # a measured delay the monitor rejects
                raise validation.InvalidParameter("delay", float(scratch[0, 0]),
                                                  "must be a finite number > 0")
        n_rounds = int(state[traveling_kernel.ROUND])
        attrs = system.describe()
        attrs["n_rounds"] = n_rounds
        if adaptive:
            attrs["n_replans"] = int(state[traveling_kernel.N_REPLANS])
            attrs["final_plan"] = ",".join(map(str, self.plan.tolist()))
        return Schedule(**_columns(events, times, version, n_rounds), attrs=attrs)


def _columns(events: np.ndarray, times: np.ndarray, final_versions: np.ndarray,
             n_rounds: int) -> dict[str, np.ndarray]:
    """The columns in processing order: by time, then chain, then the chain's own order (a
    stable sort by time of the events placed chain after chain; a chain's events are in time
    order, so the sort merges runs)."""
    from simulators import traveling_kernel

    # every chain makes one trajectory a round and hops before all but the first
    n_rows = final_versions + (n_rounds - 1)
    n_events = int(n_rows.sum())
    server, worker = np.empty(n_events, np.int32), np.empty(n_events, np.int32)
    kind, version = np.empty(n_events, np.int8), np.empty(n_events, np.int64)
    start, finish, time, frequency = (np.empty(n_events) for _ in range(4))
    order = np.argsort(traveling_kernel.chain_major_times(times, n_rows), kind="stable")
    traveling_kernel.columns(events, times, n_rows, order, server, worker, kind, version, start,
                             finish, time, frequency)
    return {"server": server, "worker": worker, "shard": worker.copy(), "kind": kind,
            "version_read": version, "staleness": np.zeros(n_events, dtype=np.int64),
            "applied": kind == GRADIENT, "start_time": start, "finish_time": finish,
            "time": time, "shard_frequency": frequency}


def waiting_time(schedule: Schedule) -> np.ndarray:
    """Total time each chain spent waiting for busy workers (or for its group), per server.

    A chain is ready when its hop arrives (time 0 for its first trajectory) and waits until
    its next gradient starts. The rows are grouped by server with one stable sort (each
    server's in row order); a server's waits are summed by ``np.sum`` over them in that order.
    """
    n_servers = schedule.n_servers
    order = np.argsort(schedule.server, kind="stable")
    server, kinds = schedule.server[order], schedule.kind[order]
    begins = np.concatenate(([True], server[1:] != server[:-1]))  # a server's first row
    after_hop = np.concatenate(([True], kinds[:-1] == HOP)) | begins
    ready = np.concatenate(([0.0], schedule.time[order][:-1]))
    ready[begins] = 0.0
    first = (kinds == GRADIENT) & after_hop
    gaps = schedule.start_time[order][first] - ready[first]
    bounds = np.searchsorted(server[first], np.arange(n_servers + 1))
    return np.array([float(np.sum(gaps[a:b])) for a, b in zip(bounds[:-1], bounds[1:],
                                                                strict=True)])
