"""Traveling-chain configurations covering every option, and a digest of their schedules.

Used by ``test_traveling_chains_digests.py`` to pin the simulator's output bit for bit: the
digests in ``fixtures/traveling_chains_digests.json`` were written by
``fixtures/make_traveling_chains_digests.py`` from the per-trajectory simulator, and any faster
formulation must reproduce them exactly (every column's bytes, every attribute and its type).
"""

from __future__ import annotations

import hashlib

from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import ROW_FIELDS, Schedule
from simulators.seeding import derive
from simulators.traveling_chains import TravelingChains

CONSTANT = WorkerTiming(LatencyModel("constant", 1.0))
EXPONENTIAL = WorkerTiming(LatencyModel("exponential", 1.0))
LOGNORMAL_SLOW = WorkerTiming(LatencyModel("lognormal", 2.0, 0.5),
                              speed_factors=(1.0, 0.5, 0.25, 1.0, 2.0))
GAMMA_STRAGGLERS = WorkerTiming(LatencyModel("gamma", 1.0, 2.0), straggler_probability=0.1,
                                straggler_slowdown=5.0)
TWENTY_SLOW = WorkerTiming(LatencyModel("constant", 1.0),
                           speed_factors=(1.0,) * 10 + (0.1,) * 10)
BINARY_DELAYS = WorkerTiming(LatencyModel("constant", 1.0), speed_factors=(1.0, 0.5, 0.25))


def cases() -> dict[str, tuple[TravelingChains, int, object]]:
    """name -> (system, n_updates, seed)."""
    return {
        # the main job's shapes: seed 004 Figure 2 (70/10 lengths), permutation and cyclic
        "imbalance-permutation": (TravelingChains(
            20, trajectory_lengths=(70,) * 10 + (10,) * 10, assignment="permutation",
            timing=CONSTANT), 700, 0),
        "imbalance-cyclic": (TravelingChains(
            20, trajectory_lengths=(70,) * 10 + (10,) * 10, timing=CONSTANT), 700, 1),
        "equal-lengths-seed-sequence": (TravelingChains(
            20, trajectory_lengths=10, assignment="permutation", timing=CONSTANT), 300,
            derive(7, "experiment", "schedule")),
        "load-balancing-fixed": (TravelingChains(
            20, trajectory_lengths=10, assignment="permutation", timing=TWENTY_SLOW), 400, 2),
        "load-balancing-adaptive": (TravelingChains(
            20, trajectory_lengths=10, balancing="adaptive", mean_trajectory_length=18.0,
            assignment="permutation", timing=TWENTY_SLOW), 400, 2),
        # random latencies, speed factors, stragglers, hops
        "exponential-hops": (TravelingChains(
            6, n_chains=4, trajectory_lengths=(3, 5, 2, 4, 1, 6), assignment="permutation",
            timing=EXPONENTIAL, hop_time=0.1), 500, 5),
        "lognormal-speeds-cyclic": (TravelingChains(
            5, trajectory_lengths=(2, 3, 4, 5, 6), timing=LOGNORMAL_SLOW, hop_time=0.5),
            300, 3),
        "gamma-stragglers-permutation": (TravelingChains(
            5, trajectory_lengths=(2, 3, 4, 5, 6), assignment="permutation",
            timing=GAMMA_STRAGGLERS, hop_time=0.5), 300, 4),
        "fewer-chains-cyclic": (TravelingChains(
            7, n_chains=3, trajectory_lengths=(1, 2, 3, 4, 5, 6, 7), timing=EXPONENTIAL),
            250, 6),
        "fewer-chains-permutation": (TravelingChains(
            7, n_chains=5, trajectory_lengths=4, assignment="permutation",
            timing=GAMMA_STRAGGLERS, hop_time=0.25), 250, 7),
        # long trajectories (beyond a latency block of 256) and length one
        "long-trajectories": (TravelingChains(
            4, trajectory_lengths=(300, 700, 257, 1), assignment="permutation",
            timing=EXPONENTIAL, hop_time=1.0), 2500, 8),
        "length-one": (TravelingChains(
            3, trajectory_lengths=1, timing=EXPONENTIAL), 400, 9),
        "one-worker": (TravelingChains(1, trajectory_lengths=3, timing=EXPONENTIAL), 50, 10),
        # delay changes: inside trajectories, exactly at a trajectory boundary, fixed plan
        "delay-changes-fixed": (TravelingChains(
            3, trajectory_lengths=(2, 1, 1), timing=BINARY_DELAYS, hop_time=0.125,
            delay_changes=((5.0, 1, 3.0), (8.125, 0, 0.5), (20.0, 2, 2.0), (20.0, 2, 0.75))),
            60, 11),
        "delay-changes-exponential": (TravelingChains(
            5, trajectory_lengths=(4, 6, 8, 3, 5), assignment="permutation",
            timing=EXPONENTIAL, delay_changes=((10.0, 0, 4.0), (30.0, 3, 0.25))), 300, 12),
        # adaptive balancing, with and without delay changes
        "adaptive-delay-change": (TravelingChains(
            4, balancing="adaptive", mean_trajectory_length=8, timing=CONSTANT,
            delay_changes=((100.0, 0, 4.0),)), 400, 0),
        "adaptive-exponential": (TravelingChains(
            5, n_chains=4, balancing="adaptive", mean_trajectory_length=6.5,
            replan_threshold=0.05, assignment="permutation", timing=LOGNORMAL_SLOW,
            hop_time=0.3, delay_changes=((40.0, 2, 0.2),)), 300, 13),
        # coupled groups: one group, equal groups, hybrid, with delay changes
        "coupled-one-group": (TravelingChains(
            3, n_chains=2, trajectory_lengths=2, timing=BINARY_DELAYS, hop_time=0.125,
            coupling_groups=(2,), coupling_time=0.25), 40, 0),
        "coupled-pairs-permutation": (TravelingChains(
            8, trajectory_lengths=5, assignment="permutation", timing=EXPONENTIAL,
            coupling_groups=(2, 2, 2, 2), coupling_time=0.5), 300, 14),
        "coupled-hybrid": (TravelingChains(
            7, n_chains=6, trajectory_lengths=4, timing=GAMMA_STRAGGLERS, hop_time=0.2,
            coupling_groups=(1, 2, 3), coupling_time=0.1), 200, 15),
        "coupled-hybrid-delay-changes": (TravelingChains(
            5, trajectory_lengths=3, assignment="permutation", timing=LOGNORMAL_SLOW,
            coupling_groups=(2, 1, 2), coupling_time=0.3,
            delay_changes=((15.3, 1, 2.0), (25.7, 4, 0.5), (31.1, 0, 3.0))), 150, 16),
        "coupling-main-job": (TravelingChains(
            20, trajectory_lengths=10, assignment="permutation", timing=CONSTANT,
            coupling_groups=(5, 5, 5, 5), coupling_time=0.5), 200, 17),
    }


def digest(schedule: Schedule) -> dict:
    """sha256 of every column's bytes (with its dtype) and the attributes with their types."""
    columns = {}
    for name in ROW_FIELDS:
        column = getattr(schedule, name)
        columns[name] = hashlib.sha256(column.dtype.str.encode() + column.tobytes()).hexdigest()
    attrs = {key: f"{type(value).__name__}:{value!r}"
             for key, value in sorted(schedule.attrs.items())}
    return {"n_events": int(schedule.server.size), "columns": columns, "attrs": attrs}
