"""Federated rounds (seed 002 Algorithm 1): timing by hand, client draws, refusal of bad input."""

import numpy as np
import pytest

from simulators.federated import FederatedRounds
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import GRADIENT, HOP
from simulators.validation import InvalidParameter


def test_rounds_of_local_updates_match_the_hand_trace():
    # One client (f = 1) with delay 2, T = 3 local updates, a hop of 1/4 before each round:
    # round 0 hop [0, 0.25], updates [0.25, 2.25], [2.25, 4.25], [4.25, 6.25];
    # round 1 hop [6.25, 6.5], updates [6.5, 8.5], [8.5, 10.5], [10.5, 12.5].
    system = FederatedRounds((1.0,), local_updates=3,
                             timing=WorkerTiming(LatencyModel("constant", 2.0)), hop_time=0.25)
    schedule = system.simulate(5, seed=0)  # whole rounds: 6 updates
    trace = list(zip(schedule.kind.tolist(), schedule.version_read.tolist(),
                     schedule.start_time.tolist(), schedule.finish_time.tolist(),
                     schedule.time.tolist(), strict=True))
    assert trace == [
        (HOP, 0, 0.0, 0.0, 0.25), (GRADIENT, 0, 0.25, 2.25, 2.25),
        (GRADIENT, 1, 2.25, 4.25, 4.25), (GRADIENT, 2, 4.25, 6.25, 6.25),
        (HOP, 3, 6.25, 6.25, 6.5), (GRADIENT, 3, 6.5, 8.5, 8.5),
        (GRADIENT, 4, 8.5, 10.5, 10.5), (GRADIENT, 5, 10.5, 12.5, 12.5)]
    assert schedule.n_updates() == 6


def test_each_round_stays_on_the_drawn_client_with_its_probability_and_delay():
    probabilities = (0.5, 0.25, 0.125, 0.125)
    timing = WorkerTiming(LatencyModel("constant", 1.0), speed_factors=(1.0, 0.5, 0.25, 0.125))
    system = FederatedRounds(probabilities, local_updates=4, n_chains=3, timing=timing)
    schedule = system.simulate(4000, seed=11)
    for chain in range(3):
        clients = system.client_sequence(chain, 1000, seed=11)
        shards = schedule.update_shards(4000)[:, chain]
        np.testing.assert_array_equal(shards, np.repeat(clients, 4))
        frequencies = schedule.update_column("shard_frequency", 4000)[:, chain]
        np.testing.assert_array_equal(frequencies, np.asarray(probabilities)[shards])
        rows = (schedule.server == chain) & (schedule.kind == GRADIENT)
        durations = schedule.finish_time[rows] - schedule.start_time[rows]
        np.testing.assert_array_equal(durations, 2.0 ** schedule.worker[rows])
        # client counts within z = 5 binomial errors (false-failure rate 6e-7 each)
        counts = np.bincount(clients, minlength=4)
        p = np.asarray(probabilities)
        assert np.all(np.abs(counts - 1000 * p) <= 5 * np.sqrt(1000 * p * (1 - p)))
    # chains are independent runs: chain 1 is the same in a two-chain and a three-chain system
    alone = FederatedRounds(probabilities, local_updates=4, n_chains=2, timing=timing)
    np.testing.assert_array_equal(alone.simulate(4000, seed=11).update_shards()[:, 1],
                                  schedule.update_shards(4000)[:, 1])


@pytest.mark.parametrize("kwargs, field", [
    ({"client_probabilities": (0.5, 0.6)}, "client_probabilities"),
    ({"client_probabilities": (1.0, 0.0)}, "client_probabilities"),
    ({"client_probabilities": (1.5, -0.5)}, "client_probabilities"),
    ({"client_probabilities": ()}, "client_probabilities"),
    ({"local_updates": 0}, "local_updates"),
    ({"n_chains": 0}, "n_chains"),
    ({"hop_time": -0.5}, "hop_time"),
])
def test_bad_federated_systems_are_refused_naming_the_field(kwargs, field):
    options = {"client_probabilities": (0.5, 0.5)}
    options.update(kwargs)
    with pytest.raises(InvalidParameter) as error:
        FederatedRounds(**options)
    assert error.value.field == field
