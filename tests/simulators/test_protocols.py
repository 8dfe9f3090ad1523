"""Downpour and elastic schedules: their event kinds, timing and validation (seed 003)."""

import numpy as np
import pytest

from simulators.async_server import AsyncServerSystem
from simulators.downpour import DownpourSystem
from simulators.elastic import ElasticSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import COUPLING, GRADIENT, PULL, PUSH
from simulators.validation import InvalidParameter
from tests.simulators.round_trip import assert_round_trips

TIMING = WorkerTiming(LatencyModel("exponential", 1.0), speed_factors=(1.0, 2.0, 0.5, 1.0))


def test_downpour_period_one_pushes_are_the_async_server_gradients():
    plain = AsyncServerSystem(4, TIMING, network_delay=0.1, server_update_time=0.05)
    downpour = DownpourSystem(4, TIMING, network_delay=0.1, server_update_time=0.05, period=1)
    a, d = plain.simulate(200, seed=3), downpour.simulate(200, seed=3)
    pushes = d.kind == PUSH
    assert np.all(a.kind == GRADIENT)
    for name in ("worker", "version_read", "staleness", "applied", "start_time",
                 "finish_time", "time"):
        np.testing.assert_array_equal(getattr(d, name)[pushes], getattr(a, name), err_msg=name)
    assert d.attrs["protocol"] == "downpour" and d.attrs["period"] == 1


def test_downpour_every_push_is_followed_by_its_pull_and_takes_period_draws():
    period = 5
    d = DownpourSystem(4, TIMING, period=period).simulate(100, seed=3)
    kinds = d.kind.tolist()
    assert kinds == [PUSH, PULL] * 100
    pulls = d.kind == PULL
    np.testing.assert_array_equal(d.worker[pulls], d.worker[~pulls])
    np.testing.assert_array_equal(d.version_read[pulls], np.arange(1, 101))
    # a worker's next push reads the version it pulled, and starts when the pull was sent
    for worker in range(4):
        rows = np.flatnonzero((d.worker == worker) & (d.kind == PUSH))
        np.testing.assert_array_equal(d.version_read[rows[1:]], d.version_read[rows[:-1] + 1])
        np.testing.assert_array_equal(d.start_time[rows[1:]], d.time[rows[:-1] + 1])
    # a computation is π latency draws: on average π times the mean (exponential draws, sd √π
    # per push; |z| < 4 fails a correct simulator with probability 6e-5)
    def z_score(simulated_period):
        system = DownpourSystem(1, WorkerTiming(LatencyModel("exponential", 1.0)),
                                period=simulated_period)
        durations = np.diff(system.simulate(2000, seed=4).time[::2])
        return (durations.mean() - period) / (np.sqrt(period) / np.sqrt(durations.size))

    assert abs(z_score(period)) < 4.0
    assert abs(z_score(1)) > 4.0  # negative control: one draw per push is far off


def test_downpour_staleness_grows_with_workers_not_period():
    """Seed 003 bounds the staleness in local steps by π(P - 1); counted in pushes it is about
    P - 1 whatever π (every worker pushes once per round)."""
    timing = WorkerTiming(LatencyModel("constant", 1.0))
    for period in (1, 4):
        d = DownpourSystem(4, timing, period=period).simulate(50, seed=0)
        assert d.update_staleness()[8:].max() == 3


def test_elastic_rounds_and_couplings():
    e = ElasticSystem(3, period=4, coupling_strength=0.5, timing=WorkerTiming(
        LatencyModel("exponential", 1.0)), network_delay=0.2).simulate(10, seed=5)
    couplings = e.kind == COUPLING
    # couplings after steps 4 and 8 of every chain, none after the last step (10)
    assert sorted(e.version_read[couplings].tolist()) == [4] * 3 + [8] * 3
    assert np.all(np.diff(e.version_read[couplings]) >= 0)
    assert e.update_staleness().shape == (10, 3) and e.update_staleness().max() == 0
    for chain in range(3):
        rows = (e.server == chain) & (e.kind == GRADIENT)
        assert rows.sum() == 10
    # barrier: no step of round 2 starts before every coupling of round 1 is answered
    first_round = couplings & (e.version_read == 4)
    second = (e.kind == GRADIENT) & (e.version_read == 4)
    assert e.start_time[second].min() >= e.time[first_round].max() + 0.2
    assert e.attrs["coupling_strength"] == 0.5 and e.attrs["protocol"] == "elastic"


def test_protocol_schedules_round_trip(tmp_path):
    assert_round_trips(DownpourSystem(3, WorkerTiming(), period=2).simulate(20, 1),
                       tmp_path / "d.nc")
    assert_round_trips(ElasticSystem(2, period=3).simulate(20, 1), tmp_path / "e.nc")


@pytest.mark.parametrize("build, field", [
    (lambda: DownpourSystem(2, period=0), "period"),
    (lambda: DownpourSystem(0, period=2), "n_workers"),
    (lambda: DownpourSystem(2, period=2, n_servers=2), "n_servers"),
    (lambda: ElasticSystem(2, period=0), "period"),
    (lambda: ElasticSystem(0), "n_workers"),
    (lambda: ElasticSystem(2, coupling_strength=-0.1), "coupling_strength"),
    (lambda: ElasticSystem(2, coupling_strength=1.5), "coupling_strength"),
    (lambda: ElasticSystem(2, coupling_strength=float("nan")), "coupling_strength"),
])
def test_bad_protocol_parameters_are_refused_by_name(build, field):
    with pytest.raises(InvalidParameter) as error:
        build()
    assert error.value.field == field
