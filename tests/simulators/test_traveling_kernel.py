"""The compiled round loop (:mod:`simulators.traveling_kernel`) against the straightforward
per-round formulation of seed 004 §3.2 (Algorithm 1), written out below update by update in
plain Python: every schedule column bit for bit, the row order and the attributes, on fixed,
cyclic and permutation, adaptive (with re-plans and trajectories beyond numpy's 128-term
summation block), coupled and delay-change systems; and the kernel's pairwise sum against
``np.sum``. The reference uses the real :class:`DelayMonitor` and ``np.mean``, so the
kernel's replay of them is checked too."""

import heapq

import numpy as np
import pytest

from simulators.latency import LatencyModel, LatencyTable, WorkerTiming
from simulators.load_balancing import DelayMonitor, plan_frequencies
from simulators.schedule import GRADIENT, HOP, ROW_FIELDS, Schedule
from simulators.seeding import generator
from simulators.traveling_chains import TravelingChains, waiting_time
from simulators.traveling_kernel import pairwise_sum
from simulators.validation import InvalidParameter
from tests.simulators.traveling_cases import cases


def reference_columns(system: TravelingChains, n_updates: int, seed) -> tuple[dict, dict]:
    """Rounds, groups and updates one at a time; events sorted by (time, chain, the chain's
    own order) at the end. Returns (columns, the attributes the run adds)."""
    n_workers, n_chains = system.n_workers, system.n_chains
    latencies = LatencyTable(system.timing, [(w,) for w in range(n_workers)], seed)
    assignment_rng = generator(seed, "assignment")
    monitor = (DelayMonitor(n_workers, system.mean_trajectory_length, system.replan_threshold)
               if system.balancing == "adaptive" else None)
    plan = np.asarray(system.trajectory_lengths) if monitor is None else monitor.plan
    version, departure = [0] * n_chains, [0.0] * n_chains
    free = [0.0] * n_workers
    events, own_rows, pending = [], [0] * n_chains, []

    def factor(worker, time):
        product = 1.0
        for change_time, change_worker, change in system.delay_changes:
            if change_worker == worker and change_time <= time:
                product *= change
        return product

    def event(chain, kind, worker, frequency, version_read, start, finish, time):
        events.append((time, chain, own_rows[chain], kind, worker, frequency, version_read,
                       start, finish))
        own_rows[chain] += 1

    def trajectory(group, workers, start, length, hop, round_index, frequencies):
        base = {c: latencies.take(workers[c], length) for c in group}
        if round_index:
            for c in group:
                event(c, HOP, workers[c], frequencies[workers[c]], version[c], departure[c],
                      departure[c], departure[c] + hop)
        t, spent = start, []
        for u in range(length):
            durations = {c: base[c][u] * factor(workers[c], t) for c in group}
            step = max(durations.values())
            if len(group) > 1:
                step = step + system.coupling_time
            for c in group:
                event(c, GRADIENT, workers[c], frequencies[workers[c]], version[c] + u, t,
                      t + durations[c], t + step)
            spent.append(t + durations[group[0]] - t)
            t = t + step
        for c in group:
            version[c] += length
            departure[c] = t
            free[workers[c]] = t
        return t, spent

    round_index, workers = 0, None
    while min(version) < n_updates:
        if system.assignment == "cyclic":
            workers = [(c + round_index) % n_workers for c in range(n_chains)]
        else:
            while True:
                candidate = assignment_rng.permutation(n_workers)[:n_chains].tolist()
                if workers is None or all(a != b for a, b in zip(candidate, workers, strict=True)):
                    workers = candidate
                    break
        hop = system.hop_time if round_index else 0.0
        starts = [max(departure[c] + hop, free[workers[c]]) for c in range(n_chains)]
        if monitor is None:
            for group in system.groups():
                trajectory(group, workers, max(starts[c] for c in group),
                           int(plan[workers[group[0]]]), hop, round_index,
                           plan_frequencies(plan))
        else:
            for c in sorted(range(n_chains), key=lambda c: (starts[c], c)):
                observed = False
                while pending and pending[0][0] <= starts[c]:
                    _, worker, delay = heapq.heappop(pending)
                    monitor.observe(worker, delay)
                    observed = True
                if observed:
                    monitor.update()
                plan = monitor.plan
                end, spent = trajectory([c], workers, starts[c], int(plan[workers[c]]), hop,
                                        round_index, plan_frequencies(plan))
                heapq.heappush(pending, (end, workers[c], float(np.mean(spent))))
        round_index += 1
    time, chain, _, kind, worker, frequency, version_read, start, finish = (
        np.array(column) for column in zip(*sorted(events), strict=True))
    columns = {"server": chain, "worker": worker, "shard": worker, "kind": kind,
               "version_read": version_read, "staleness": np.zeros(time.size),
               "applied": kind == GRADIENT, "start_time": start, "finish_time": finish,
               "time": time, "shard_frequency": frequency}
    attrs = {"n_rounds": round_index}
    if monitor is not None:
        attrs.update(n_replans=monitor.n_replans,
                     final_plan=",".join(map(str, monitor.plan.tolist())))
    return columns, attrs


def differences(schedule, columns: dict, attrs: dict) -> list[str]:
    """The columns whose values (in the schedule's dtype) or attributes differ."""
    found = [name for name in ROW_FIELDS
             if not np.array_equal(getattr(schedule, name),
                                   np.asarray(columns[name]).astype(getattr(schedule, name)
                                                                    .dtype))]
    return found + [key for key, value in attrs.items() if schedule.attrs[key] != value]


SLOW = WorkerTiming(LatencyModel("exponential", 1.0), speed_factors=(1.0, 0.25, 1.0, 0.1))
EXTRA = {
    # adaptive plans up to ~170 updates a visit: measured delays summed beyond numpy's block
    "adaptive-long-trajectories": (TravelingChains(
        4, balancing="adaptive", mean_trajectory_length=100.0, assignment="permutation",
        timing=SLOW, hop_time=0.5, delay_changes=((400.0, 0, 3.0),)), 3000, 21),
    # the main job's adaptive load balancing, shortened
    "load-balancing-adaptive-main-job": (TravelingChains(
        20, trajectory_lengths=55, balancing="adaptive", mean_trajectory_length=55.0,
        assignment="permutation", timing=WorkerTiming(
            LatencyModel("constant", 1.0), speed_factors=(1.0,) * 10 + (0.1,) * 10)), 1500, 22),
    # coupled groups whose delays change, cyclic rounds, hops
    "coupled-cyclic-delay-changes": (TravelingChains(
        6, trajectory_lengths=7, timing=WorkerTiming(LatencyModel("gamma", 1.0, 3.0)),
        hop_time=0.4, coupling_groups=(3, 1, 2), coupling_time=0.2,
        delay_changes=((12.0, 2, 2.5), (12.0, 2, 0.5), (30.0, 5, 4.0))), 200, 23),
}
CASES = {**cases(), **EXTRA}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_rounds_equal_the_per_update_reference(name):
    system, n_updates, seed = CASES[name]
    columns, attrs = reference_columns(system, n_updates, seed)
    assert differences(system.simulate(n_updates, seed), columns, attrs) == []


def test_the_extra_cases_replan_and_run_long_adaptive_trajectories():
    """The adaptive extras exercise what they are there for."""
    system, n_updates, seed = EXTRA["adaptive-long-trajectories"]
    schedule = system.simulate(n_updates, seed)
    assert schedule.attrs["n_replans"] >= 2
    assert max(map(int, schedule.attrs["final_plan"].split(","))) > 128


def test_negative_control_the_comparison_sees_one_ulp_a_swapped_tie_and_a_seed():
    system, n_updates, seed = CASES["coupled-hybrid-delay-changes"]
    schedule = system.simulate(n_updates, seed)
    columns, attrs = reference_columns(system, n_updates, seed)
    nudged = dict(columns, finish_time=columns["finish_time"].copy())
    nudged["finish_time"][7] = np.nextafter(nudged["finish_time"][7], np.inf)
    assert differences(schedule, nudged, attrs) == ["finish_time"]
    tie = np.flatnonzero(np.diff(columns["time"]) == 0)[0]  # two events at the same time
    swapped = {name: np.array(column) for name, column in columns.items()}
    for column in swapped.values():
        column[[tie, tie + 1]] = column[[tie + 1, tie]]
    assert "server" in differences(schedule, swapped, attrs)
    other_columns, _ = reference_columns(system, n_updates, seed + 1)
    assert "time" in differences(system.simulate(n_updates, seed + 1), columns, attrs)
    assert differences(system.simulate(n_updates, seed + 1), other_columns, attrs) == []


@pytest.mark.parametrize("count", [*range(0, 300), 511, 1000, 1031, 4096, 20_001])
def test_pairwise_sum_is_numpys_sum(count):
    values = np.random.default_rng(count).lognormal(0.0, 2.0, count + 5)
    assert pairwise_sum(values, count) == np.sum(values[:count])


def test_negative_control_a_running_sum_is_not_numpys_sum():
    """The summation order matters at these sizes: a plain running sum differs."""
    differs = 0
    for count in (50, 200, 1000):
        values = np.random.default_rng(count).lognormal(0.0, 2.0, count)
        running = 0.0
        for value in values:
            running += value
        differs += running != np.sum(values)
        assert pairwise_sum(values, count) == np.sum(values)
    assert differs >= 2


def waiting_reference(schedule) -> list[float]:
    """Per server: its rows by a mask, the first gradient after each hop (or the start)."""
    waits = []
    for server in range(schedule.n_servers):
        rows = schedule.server == server
        kinds, starts, times = schedule.kind[rows], schedule.start_time[rows], schedule.time[rows]
        first = (kinds == GRADIENT) & np.concatenate(([True], kinds[:-1] == HOP))
        ready = np.concatenate(([0.0], times[:-1]))
        waits.append(float(np.sum(starts[first] - ready[first])))
    return waits


@pytest.mark.parametrize("name", ["load-balancing-fixed", "load-balancing-adaptive",
                                  "exponential-hops", "coupled-hybrid", "fewer-chains-cyclic",
                                  "adaptive-long-trajectories", "one-worker"])
def test_waiting_time_equals_the_per_server_sums(name):
    system, n_updates, seed = CASES[name]
    schedule = system.simulate(n_updates, seed)
    waits = waiting_time(schedule)
    assert waits.tolist() == waiting_reference(schedule)
    assert waits.dtype == np.float64 and waits.shape == (system.n_chains,)


def test_negative_control_waiting_time_sees_a_later_start_after_a_hop():
    system, n_updates, seed = CASES["exponential-hops"]
    schedule = system.simulate(n_updates, seed)
    columns = {name: np.array(getattr(schedule, name)) for name in ROW_FIELDS}
    waits = waiting_reference(schedule)
    row = np.flatnonzero((columns["kind"] == HOP) & (columns["server"] == 2))[3]
    gradient = np.flatnonzero((columns["server"] == 2)
                              & (np.arange(columns["kind"].size) > row))[0]  # the hop's next
    columns["start_time"][gradient] += 2.0**-20  # within its duration: a valid schedule
    later = Schedule(**columns, attrs=schedule.attrs)
    nudged = waiting_time(later)
    assert nudged[2] != waits[2] and nudged.tolist()[:2] == waits[:2]
    assert nudged.tolist() == waiting_reference(later)


def test_a_delay_lost_to_rounding_is_refused_naming_the_field():
    """Latencies below the clock's resolution after the first hop measure a delay of 0, which
    the monitor refuses (InvalidParameter naming ``delay``), as the reference's DelayMonitor."""
    system = TravelingChains(3, balancing="adaptive", mean_trajectory_length=4.0,
                             timing=WorkerTiming(LatencyModel("constant", 1e-20)), hop_time=1.0)
    with pytest.raises(InvalidParameter) as reference:
        reference_columns(system, 50, 0)
    with pytest.raises(InvalidParameter) as compiled:
        system.simulate(50, 0)
    assert compiled.value.field == reference.value.field == "delay"
    assert compiled.value.value == reference.value.value == 0.0
    # negative control: a resolvable latency runs
    TravelingChains(3, balancing="adaptive", mean_trajectory_length=4.0,
                    timing=WorkerTiming(LatencyModel("constant", 1e-3)),
                    hop_time=1.0).simulate(50, 0)
