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


class _FailsOnce:
    """A Gaussian-mean estimator that raises at its 8th evaluation on Dask worker "1" (each
    task has its own copy: task arguments are pickled)."""

    def __init__(self, inner):
        self.inner, self.n_data, self.dim = inner, inner.n_data, inner.dim
        self.calls = 0

    def prepare(self, indices):
        return self.inner.prepare(indices)

    def __call__(self, position, minibatch):
        from distributed import get_worker

        self.calls += 1
        if self.calls == 8 and str(get_worker().name) == "1":
            raise RuntimeError("injected failure")
        return self.inner(position, minibatch)


class _FaultyModel:
    def __init__(self, model):
        self.estimator = _FailsOnce(model.minibatch_gradient())

    def minibatch_gradient(self):
        return self.estimator


def test_a_failed_dask_worker_is_survived_and_reported(client, gaussian_model):
    """The worker task that fails holds a slot; the slot is put back, the other worker takes
    it, the run completes, names the loss, and replays bit for bit with the plain model."""
    sampler = SGLD(1e-4)
    settings = RealRunSettings(n_workers=2, n_updates=80, batch_size=10, timeout=60.0,
                               timing=WorkerTiming(LatencyModel("exponential", 0.002)))
    run = run_dask(_FaultyModel(gaussian_model), sampler, settings, seed=2, client=client)
    assert run.complete, run.summary()
    assert len(run.lost_workers) == 1
    (reason,) = run.lost_workers.values()
    assert "injected failure" in reason
    replayed = replay_run(run, sampler, gaussian_model.minibatch_gradient())
    assert np.array_equal(replayed, run.trajectory)
