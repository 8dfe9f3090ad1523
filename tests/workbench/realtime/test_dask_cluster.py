"""The real server on a 2-worker Dask LocalCluster (threads, one process): replay bit for bit."""

import numpy as np
import pytest
from distributed import Client, LocalCluster

from simulators.latency import LatencyModel, WorkerTiming
from simulators.validation import InvalidParameter
from workbench.realtime.dask_cluster import run_dask
from workbench.realtime.server import RealRunSettings, replay_run
from workbench.samplers import SGLD


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


def test_two_dask_workers_replay_bit_for_bit(client, gaussian_model):
    sampler = SGLD(1e-4)
    settings = RealRunSettings(n_workers=2, n_updates=200, batch_size=10, staleness_bound=3,
                               timing=WorkerTiming(LatencyModel("exponential", 0.002)),
                               timeout=60.0)
    run = run_dask(gaussian_model, sampler, settings, seed=21, client=client)
    assert run.complete and run.lost_workers == {}, run.summary()
    schedule = run.schedule
    assert set(np.unique(schedule.worker)) == {0, 1}
    assert schedule.staleness[schedule.applied].max() <= 3
    replayed = replay_run(run, sampler, gaussian_model.minibatch_gradient())
    assert np.array_equal(replayed, run.trajectory)
    # negative control: the same events replayed as if every gradient had been fresh
    fresh = run.__class__(**{**run.__dict__, "schedule": schedule.without_staleness()})
    assert not np.array_equal(replay_run(fresh, sampler, gaussian_model.minibatch_gradient()),
                              run.trajectory)


def test_fault_injection_is_refused_on_dask(client, gaussian_model):
    settings = RealRunSettings(n_workers=2, n_updates=10, batch_size=5, kill_after={0: 1})
    with pytest.raises(InvalidParameter, match="kill_after"):
        run_dask(gaussian_model, SGLD(1e-4), settings, seed=1, client=client)
