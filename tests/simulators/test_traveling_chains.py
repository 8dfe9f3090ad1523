"""Traveling chains (seed 004 §3.2) against traces computed by hand, and load balancing.

All delays, hop and coupling times are binary fractions or small integers, so every simulated
time is exact and the traces are compared with ``==``.
"""

import numpy as np
import pytest

from simulators.latency import LatencyModel, WorkerTiming
from simulators.load_balancing import balanced_frequencies, balanced_plan, plan_frequencies
from simulators.schedule import GRADIENT, HOP, Schedule
from simulators.traveling_chains import TravelingChains, waiting_time
from simulators.validation import InvalidParameter
from tests.simulators.round_trip import assert_round_trips

# constant latency 1 with speed factors 1, 1/2, 1/4: worker delays 1, 2, 4 per update
DELAYS_1_2_4 = WorkerTiming(LatencyModel("constant", 1.0), speed_factors=(1.0, 0.5, 0.25))


def _trace(schedule: Schedule, chain: int) -> list[tuple]:
    rows = schedule.server == chain
    return list(zip(schedule.kind[rows].tolist(), schedule.worker[rows].tolist(),
                    schedule.version_read[rows].tolist(), schedule.start_time[rows].tolist(),
                    schedule.finish_time[rows].tolist(), schedule.time[rows].tolist(),
                    schedule.shard_frequency[rows].tolist(), strict=True))


G, H = GRADIENT, HOP


def test_three_workers_fixed_trajectories_match_the_hand_trace_including_waiting():
    # Trajectory lengths (2, 1, 1), so q = (1/2, 1/4, 1/4); cyclic rotation: in round r
    # chain c is on worker (c + r) mod 3; a hop takes 1/8.
    # Round 0: chain 0 on w0: updates [0,1], [1,2]; chain 1 on w1: [0,2]; chain 2 on w2: [0,4].
    # Round 1: chain 0 -> w1, arrives 2.125, w1 free since 2: starts at once, [2.125, 4.125].
    #   chain 1 -> w2, arrives 2.125, but w2 is busy with chain 2 until 4: waits 1.875, [4, 8].
    #   chain 2 -> w0, arrives 4.125 (w0 free since 2): [4.125, 5.125], [5.125, 6.125].
    # Round 2: chain 0 -> w2, arrives 4.25, w2 busy with chain 1 until 8: waits 3.75, [8, 12].
    #   chain 1 -> w0, arrives 8.125 (w0 free since 6.125): [8.125, 9.125], [9.125, 10.125].
    #   chain 2 -> w1, arrives 6.25 (w1 free since 4.125): [6.25, 8.25].
    system = TravelingChains(3, trajectory_lengths=(2, 1, 1), timing=DELAYS_1_2_4,
                             hop_time=0.125)
    schedule = system.simulate(4, seed=0)
    # (kind, worker, version read, start, finish, time, shard frequency)
    assert _trace(schedule, 0) == [
        (G, 0, 0, 0.0, 1.0, 1.0, 0.5), (G, 0, 1, 1.0, 2.0, 2.0, 0.5),
        (H, 1, 2, 2.0, 2.0, 2.125, 0.25), (G, 1, 2, 2.125, 4.125, 4.125, 0.25),
        (H, 2, 3, 4.125, 4.125, 4.25, 0.25), (G, 2, 3, 8.0, 12.0, 12.0, 0.25)]
    assert _trace(schedule, 1) == [
        (G, 1, 0, 0.0, 2.0, 2.0, 0.25),
        (H, 2, 1, 2.0, 2.0, 2.125, 0.25), (G, 2, 1, 4.0, 8.0, 8.0, 0.25),
        (H, 0, 2, 8.0, 8.0, 8.125, 0.5), (G, 0, 2, 8.125, 9.125, 9.125, 0.5),
        (G, 0, 3, 9.125, 10.125, 10.125, 0.5)]
    assert _trace(schedule, 2) == [
        (G, 2, 0, 0.0, 4.0, 4.0, 0.25),
        (H, 0, 1, 4.0, 4.0, 4.125, 0.5), (G, 0, 1, 4.125, 5.125, 5.125, 0.5),
        (G, 0, 2, 5.125, 6.125, 6.125, 0.5),
        (H, 1, 3, 6.125, 6.125, 6.25, 0.25), (G, 1, 3, 6.25, 8.25, 8.25, 0.25)]
    assert waiting_time(schedule).tolist() == [3.75, 1.875, 0.0]
    assert np.all(schedule.shard == schedule.worker)
    assert schedule.update_shards(4).T.tolist() == [[0, 0, 1, 2], [1, 2, 0, 0], [2, 0, 0, 1]]
    assert np.all(np.diff(schedule.time) >= 0)  # rows in processing order


def test_a_coupled_group_waits_for_its_slowest_member_and_the_exchange():
    # Chains 0 and 1 coupled (R = 2), trajectories of 2 on every worker (q = 1/3), exchange
    # 1/4, hop 1/8. Round 0: workers 0 and 1 (delays 1, 2): update 0 applied at 2 + 1/4,
    # update 1 at 4.25 + 1/4 = 4.5. Round 1: workers 1 and 2 (delays 2, 4), both arrive at
    # 4.625: update 2 at 8.625 + 1/4 = 8.875, update 3 at 12.875 + 1/4 = 13.125.
    system = TravelingChains(3, n_chains=2, trajectory_lengths=2, timing=DELAYS_1_2_4,
                             hop_time=0.125, coupling_groups=(2,), coupling_time=0.25)
    schedule = system.simulate(4, seed=0)
    third = 1 / 3
    assert _trace(schedule, 0) == [
        (G, 0, 0, 0.0, 1.0, 2.25, third), (G, 0, 1, 2.25, 3.25, 4.5, third),
        (H, 1, 2, 4.5, 4.5, 4.625, third),
        (G, 1, 2, 4.625, 6.625, 8.875, third), (G, 1, 3, 8.875, 10.875, 13.125, third)]
    assert _trace(schedule, 1) == [
        (G, 1, 0, 0.0, 2.0, 2.25, third), (G, 1, 1, 2.25, 4.25, 4.5, third),
        (H, 2, 2, 4.5, 4.5, 4.625, third),
        (G, 2, 2, 4.625, 8.625, 8.875, third), (G, 2, 3, 8.875, 12.875, 13.125, third)]
    assert schedule.attrs["coupling_groups"] == "2"
    assert waiting_time(schedule).tolist() == [0.0, 0.0]


def test_the_plans_of_seed_004_figure_1():
    delays = (3, 1, 2, 4)
    np.testing.assert_allclose(balanced_frequencies(delays), np.array([4, 12, 6, 3]) / 25)
    assert balanced_plan(delays, 25 / 4).tolist() == [4, 12, 6, 3]  # Figure 1(b)
    np.testing.assert_allclose(balanced_frequencies(delays) * 75 / 16 * 4, [3, 9, 4.5, 2.25])
    assert balanced_plan(delays, 75 / 16).tolist() == [3, 9, 5, 2]  # 1(c), closest integers
    assert np.all(balanced_plan((1.0, 1000.0), 1) >= 1)  # never below one update
    np.testing.assert_allclose(plan_frequencies([4, 12, 6, 3]), np.array([4, 12, 6, 3]) / 25)


def test_adaptive_balancing_plans_from_delays_measured_by_then():
    # Delays 3, 1, 2, 4 (latency 12, speed factors 4, 12, 6, 3), τ̄ = 25/4, no hop time.
    # Round 0 uses the uniform plan round(6.25) = 6: chains 0..3 on workers 0..3 leave at
    # 18, 6, 12, 24. Round 1 (cyclic) starts chain 1 on w2 at 12, chain 0 on w1 at 18,
    # chains 2 and 3 on w3 and w0 at 24. Each start plans with the delays measured on
    # trajectories finished by then, unmeasured workers taken as the mean measured delay:
    #   at 12: w1 = 1, w2 = 2 known -> delays (1.5, 1, 2, 1.5) -> plan (6, 9, 4, 6);
    #   at 18: w0 = 3 too -> (3, 1, 2, 2) -> 25·(1/7, 3/7, 3/14, 3/14) -> (4, 11, 5, 5);
    #   at 24: w3 = 4 too -> (3, 1, 2, 4) -> Figure 1(b)'s plan (4, 12, 6, 3), kept for
    #   chain 3 (chain 1's new measurement of w2 at 20 changes nothing).
    timing = WorkerTiming(LatencyModel("constant", 12.0), speed_factors=(4.0, 12.0, 6.0, 3.0))
    system = TravelingChains(4, balancing="adaptive", mean_trajectory_length=25 / 4,
                             timing=timing)
    schedule = system.simulate(7, seed=0)
    assert schedule.attrs["n_rounds"] == 2 and schedule.attrs["n_replans"] == 3
    assert schedule.attrs["final_plan"] == "4,12,6,3"
    expected = {  # chain: (worker, start, length, frequency) of its round-1 trajectory
        1: (2, 12.0, 4, 4 / 25), 0: (1, 18.0, 11, 11 / 25), 2: (3, 24.0, 3, 3 / 25),
        3: (0, 24.0, 4, 4 / 25)}
    for chain, (worker, start, length, frequency) in expected.items():
        rows = ((schedule.server == chain) & (schedule.version_read >= 6)
                & (schedule.kind == GRADIENT))
        assert schedule.worker[rows].tolist() == [worker] * length
        assert schedule.start_time[rows][0] == start
        np.testing.assert_allclose(schedule.shard_frequency[rows], frequency, rtol=1e-15)
    assert np.all(schedule.shard_frequency[schedule.version_read < 6] == 0.25)


def test_adaptive_plan_follows_a_worker_that_slows_down():
    timing = WorkerTiming(LatencyModel("constant", 1.0))
    system = TravelingChains(4, balancing="adaptive", mean_trajectory_length=8,
                             timing=timing, delay_changes=((100.0, 0, 4.0),))
    schedule = system.simulate(400, seed=0)
    late = schedule.start_time >= 200
    visits = schedule.kind == GRADIENT
    # after the change worker 0 takes 4 per update and gets a quarter of the others' length
    slow = visits & late & (schedule.worker == 0)
    fast = visits & late & (schedule.worker == 1)
    np.testing.assert_array_equal((schedule.finish_time - schedule.start_time)[slow], 4.0)
    frequencies = np.unique(schedule.shard_frequency[slow | fast])
    # q ∝ 1/d = (1/4, 1, 1, 1): τ = 32 q = (2.46, 9.85, 9.85, 9.85) -> (2, 10, 10, 10)
    np.testing.assert_allclose(frequencies, np.array([2, 10]) / 32)
    assert schedule.attrs["final_plan"] == "2,10,10,10"


def test_random_assignment_never_collides_nor_jumps_in_place():
    timing = WorkerTiming(LatencyModel("exponential", 1.0))
    system = TravelingChains(6, n_chains=4, trajectory_lengths=(3, 5, 2, 4, 1, 6),
                             assignment="permutation", timing=timing, hop_time=0.1)
    schedule = system.simulate(2000, seed=5)
    gradients = schedule.kind == GRADIENT
    for worker in range(6):  # a worker computes for one chain at a time
        rows = gradients & (schedule.worker == worker)
        order = np.argsort(schedule.start_time[rows], kind="stable")
        start, finish = schedule.start_time[rows][order], schedule.finish_time[rows][order]
        assert np.all(start[1:] >= finish[:-1])
    for chain in range(4):
        hops = (schedule.kind == HOP) & (schedule.server == chain)
        visited = schedule.worker[hops]
        first = schedule.worker[np.flatnonzero(schedule.server == chain)[0]]
        assert np.all(np.diff(np.concatenate(([first], visited))) != 0)
    # every worker is visited; a chain's next worker is uniform among the 5 others, so each
    # worker gets 1/6 of the visits: counts within z = 5 binomial errors (rate 6e-7 each)
    visits = np.bincount(schedule.worker[schedule.kind == HOP], minlength=6)
    p = 1 / 6
    assert np.all(np.abs(visits - visits.sum() * p) <= 5 * np.sqrt(visits.sum() * p * (1 - p)))


def test_schedules_depend_only_on_the_system_and_the_seed():
    timing = WorkerTiming(LatencyModel("gamma", 1.0, 2.0))
    system = TravelingChains(5, trajectory_lengths=(2, 3, 4, 5, 6), assignment="permutation",
                             timing=timing, hop_time=0.5)
    first, again = system.simulate(300, seed=3), system.simulate(300, seed=3)
    np.testing.assert_array_equal(first.to_dataset().to_array(), again.to_dataset().to_array())
    other = system.simulate(300, seed=4)
    assert not np.array_equal(first.worker, other.worker)


@pytest.mark.parametrize("kwargs, field", [
    ({"trajectory_lengths": (2, 0, 1)}, "trajectory_lengths[1]"),
    ({"trajectory_lengths": (2, 1)}, "trajectory_lengths"),
    ({"n_chains": 4}, "n_chains"),
    ({"coupling_groups": (2, 2)}, "coupling_groups"),
    ({"coupling_groups": (2, 0, 1)}, "coupling_groups[1]"),
    ({"coupling_groups": (2, 1), "trajectory_lengths": (1, 2, 1)}, "trajectory_lengths"),
    ({"coupling_groups": (3,), "balancing": "adaptive"}, "balancing"),
    ({"mean_trajectory_length": 0.0}, "mean_trajectory_length"),
    ({"assignment": "random"}, "assignment"),
    ({"hop_time": -1.0}, "hop_time"),
    ({"delay_changes": ((1.0, 3, 2.0),)}, "delay_changes[0].worker"),
])
def test_bad_systems_are_refused_naming_the_field(kwargs, field):
    with pytest.raises(InvalidParameter) as error:
        TravelingChains(3, **kwargs)
    assert error.value.field == field


def test_distributed_schedules_round_trip_through_netcdf_and_replay_identically(tmp_path):

    from simulators.federated import FederatedRounds
    from simulators.seeding import generator
    from workbench.engine.replay import replay
    from workbench.gradients.sharded import ShardScaled
    from workbench.models.gaussian import GaussianMeanModel
    from workbench.models.sharded_gaussian import ShardedGaussianMean
    from workbench.samplers import SGLD

    timing = WorkerTiming(LatencyModel("exponential", 1.0))
    sharded = ShardedGaussianMean(GaussianMeanModel.generate(generator(1), 60, 2),
                                  (10, 20, 30))
    for schedule in (
            TravelingChains(3, trajectory_lengths=(3, 1, 2), assignment="permutation",
                            timing=timing, hop_time=0.25).simulate(200, seed=2),
            FederatedRounds((0.5, 0.3, 0.2), local_updates=4, n_chains=2,
                            timing=timing).simulate(200, seed=2)):
        restored = assert_round_trips(schedule, tmp_path / "schedule.nc")
        assert np.any(restored.kind == HOP)
        runs = [replay(s, SGLD(1e-3), ShardScaled(sharded.shard_gradient()), n_updates=200,
                       n_replicates=3, initial_position=0.0, seed=4, batch_size=5)
                for s in (schedule, restored)]
        np.testing.assert_array_equal(runs[0].final_position, runs[1].final_position)
