"""The real multi-process parameter server: replay bit for bit, drops, faults, cleanup.

No timing is asserted: on a loaded machine the schedules differ from run to run, which is the
point (whatever happened is recorded and replays exactly). Timeouts are generous.
"""

import os
import signal
import time
from multiprocessing import shared_memory

import numpy as np
import psutil
import pytest

from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import Schedule
from simulators.validation import InvalidParameter
from workbench.realtime.processes import SEGMENT_PREFIX, run_processes
from workbench.realtime.server import RealRunSettings, replay_run
from workbench.run.pool import context
from workbench.samplers import SGHMC, SGLD
from workbench.store.atomic import netcdf_bytes, netcdf_loaded

TIMING = WorkerTiming(LatencyModel("exponential", 0.002))


def leftover_segments() -> list[str]:
    return sorted(name for name in os.listdir("/dev/shm") if name.startswith(SEGMENT_PREFIX))


def test_leftover_check_sees_a_segment():
    """Negative control for the cleanup checks below: a named segment is found."""
    segment = shared_memory.SharedMemory(name=f"{SEGMENT_PREFIX}control-{os.getpid()}",
                                         create=True, size=8)
    try:
        assert segment.name.lstrip("/") in leftover_segments()
    finally:
        segment.close()
        segment.unlink()
    assert f"{SEGMENT_PREFIX}control-{os.getpid()}" not in leftover_segments()


def test_three_workers_replay_bit_for_bit(gaussian_model):
    sampler = SGLD(1e-4)
    settings = RealRunSettings(n_workers=3, n_updates=300, batch_size=10, timing=TIMING)
    run = run_processes(gaussian_model, sampler, settings, seed=11)
    assert run.complete and run.lost_workers == {}, run.summary()
    schedule = run.schedule
    assert schedule.n_updates() == 300
    assert set(np.unique(schedule.worker)) == {0, 1, 2}
    assert np.all(np.diff(run.apply_times) >= 0)
    replayed = replay_run(run, sampler, gaussian_model.minibatch_gradient())
    assert np.array_equal(replayed, run.trajectory)
    # the schedule as stored (netCDF) names its seed; rebuilt from the file, it replays alike
    stored = Schedule.from_dataset(netcdf_loaded(netcdf_bytes(schedule.to_dataset())))
    keys = str(stored.attrs["seed_spawn_key"])
    seed = np.random.SeedSequence(int(stored.attrs["seed_entropy"]),
                                  spawn_key=tuple(int(k) for k in keys.split(",") if k))
    again = run.__class__(**{**run.__dict__, "schedule": stored, "seed": seed})
    assert np.array_equal(replay_run(again, sampler, gaussian_model.minibatch_gradient()),
                          run.trajectory)
    # negative controls: the same run replayed with fresh gradients, or another seed, differs
    fresh = run.__class__(**{**run.__dict__, "schedule": schedule.without_staleness()})
    assert not np.array_equal(replay_run(fresh, sampler, gaussian_model.minibatch_gradient()),
                              run.trajectory)
    other = run.__class__(**{**run.__dict__, "seed": 12})
    assert not np.array_equal(replay_run(other, sampler, gaussian_model.minibatch_gradient()),
                              run.trajectory)


def test_sghmc_with_staleness_bound_replays(gaussian_model):
    """Symmetric-splitting SGHMC (gradient point ≠ position) with drops beyond τ = 2."""
    sampler = SGHMC(1e-4, friction=2.0, integrator="splitting")
    settings = RealRunSettings(n_workers=3, n_updates=200, batch_size=10, timing=TIMING,
                               staleness_bound=2, initial_position=(1.0, -1.0))
    run = run_processes(gaussian_model, sampler, settings, seed=5)
    assert run.complete, run.summary()
    schedule = run.schedule
    assert schedule.staleness[schedule.applied].max() <= 2
    assert np.all(schedule.staleness[~schedule.applied] > 2)
    replayed = replay_run(run, sampler, gaussian_model.minibatch_gradient())
    assert np.array_equal(replayed, run.trajectory)


def test_killed_worker_is_survived_and_reported(gaussian_model):
    """Worker 1 SIGKILLs itself holding a slot; the slot is put back and taken by another
    worker, the run completes, says so, and still replays bit for bit."""
    sampler = SGLD(1e-4)
    settings = RealRunSettings(n_workers=3, n_updates=200, batch_size=10, timing=TIMING,
                               kill_after={1: 5})
    run = run_processes(gaussian_model, sampler, settings, seed=3)
    assert run.complete, run.summary()
    assert run.lost_workers == {1: "killed by SIGKILL"}
    assert "lost worker 1 (killed by SIGKILL)" in run.summary()
    applied_by_1 = np.count_nonzero(run.schedule.applied & (run.schedule.worker == 1))
    assert applied_by_1 == 4  # its 5th slot never arrived and was redone by another worker
    replayed = replay_run(run, sampler, gaussian_model.minibatch_gradient())
    assert np.array_equal(replayed, run.trajectory)
    assert leftover_segments() == []


def test_losing_every_worker_ends_the_run_with_the_reason(gaussian_model):
    settings = RealRunSettings(n_workers=2, n_updates=500, batch_size=10, timing=TIMING,
                               kill_after={0: 5, 1: 7})
    run = run_processes(gaussian_model, SGLD(1e-4), settings, seed=3)
    assert not run.complete
    assert run.stopped_because == "every worker was lost"
    assert set(run.lost_workers) == {0, 1}
    assert run.n_applied < 12
    assert "incomplete: every worker was lost" in run.summary()
    assert leftover_segments() == []


def _serve(model, settings):  # the server, in a process of its own
    run_processes(model, SGLD(1e-4), settings, seed=1)


def test_killed_server_leaves_no_worker_and_no_segment(gaussian_model):
    settings = RealRunSettings(n_workers=2, n_updates=10**7, batch_size=10,
                               timing=WorkerTiming(LatencyModel("constant", 0.01)))
    server = context().Process(target=_serve, args=(gaussian_model, settings))
    server.start()
    try:
        deadline = time.monotonic() + 60
        workers = []
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = [child for child in psutil.Process(server.pid).children()
                       if "resource_tracker" not in " ".join(child.cmdline())]
            time.sleep(0.05)
        assert len(workers) == 2
        time.sleep(0.3)  # the run is under way
        os.kill(server.pid, signal.SIGKILL)
        server.join(30)
        _, alive = psutil.wait_procs(workers, timeout=30)
        assert alive == []
    finally:
        if server.is_alive():
            server.kill()
    assert leftover_segments() == []


def test_settings_name_the_bad_field():
    with pytest.raises(InvalidParameter, match="kill_after"):
        RealRunSettings(n_workers=2, n_updates=10, batch_size=5, kill_after={2: 1})
    with pytest.raises(InvalidParameter, match="speed_factors"):
        RealRunSettings(n_workers=2, n_updates=10, batch_size=5,
                        timing=WorkerTiming(speed_factors=(1.0, 2.0, 3.0)))
    with pytest.raises(InvalidParameter, match="staleness_bound"):
        RealRunSettings(n_workers=2, n_updates=10, batch_size=5, staleness_bound=-1)
