"""The sweep runner: identical results on every executor, resume after a crash, corrupt files.

The sweep is a small stale-gaussian grid whose larger points split into replicate blocks when
two workers run it, so the executor tests also cover splitting and merging.
"""

import hashlib
import json
import os
import sys
import time

import numpy as np
import pytest
import xarray as xr
from distributed import Client

from tests import process_group
from workbench import experiments
from workbench.cli.main import main
from workbench.run import progress
from workbench.run.executors import SerialExecutor, open_workers
from workbench.run.runner import run_sweep
from workbench.run.sweep_tasks import Task, plan_tasks
from workbench.store.netcdf import read_netcdf
from workbench.store.result_store import ResultStore, encode_point, point_identity, store_key
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import built_in

SMALL = {"staleness": [1, 5, 10], "base_iterations": 100, "n_replicates": 40,
         "replicate_block": 10, "n_checkpoints": 5, "designs": False}
SEED = 11


@pytest.fixture(scope="module")
def experiment():
    return experiments.get("stale-gaussian")


@pytest.fixture(scope="module")
def config(experiment):
    return experiment.configure(SMALL)


@pytest.fixture(scope="module")
def serial(experiment, config):
    return run_sweep(experiment, config, SEED)


def _report_progress(sink, replicates, updates):
    with progress.reporting_to(sink):
        progress.reporter(replicates)(updates)
    return replicates * updates


def _wait_for(condition, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_serial_pool_and_dask_cluster_give_identical_datasets(experiment, config, serial):
    assert not serial.split and serial.tasks == 3
    with open_workers(processes=2) as workers:
        pooled = run_sweep(experiment, config, SEED, workers=workers)
    with open_workers(dask_local=2) as workers:
        clustered = run_sweep(experiment, config, SEED, workers=workers)
        received = []
        with workers.progress_sink(received.append) as sink:
            sent = workers.executor.submit(_report_progress, sink, 4, 25).result()
            _wait_for(lambda: sum(received) == sent)
        assert sum(received) == sent == 100  # progress reaches the parent from a Dask worker
        address = workers.client.scheduler.address
        with open_workers(scheduler=address) as connected:  # --scheduler tcp://host:port
            assert connected.kind == "dask" and connected.n_workers == 2
            remote = run_sweep(experiment, config, SEED, workers=connected)
    xr.testing.assert_identical(remote.dataset, serial.dataset)
    for result in (pooled, clustered):
        assert result.split  # the larger points ran as several block tasks, then merged
        assert result.tasks > 3
        xr.testing.assert_identical(result.dataset, serial.dataset)


def test_progress_from_pool_workers_reaches_the_parent():
    received = []
    with open_workers(processes=2) as workers, workers.progress_sink(received.append) as sink:
        sent = [workers.executor.submit(_report_progress, sink, r, 10) for r in (1, 2, 3)]
        total = sum(f.result() for f in sent)
    assert sum(received) == total == 60


def test_update_bar_counts_every_replicate_update_from_pool_workers(
        experiment, config, monkeypatch, capsys):
    monkeypatch.setattr(progress, "wanted", lambda requested, stream=None: requested)
    monkeypatch.setattr(progress, "LONG_POINT_WORK", 1)  # every point counts as long
    with open_workers(processes=2) as workers:
        run_sweep(experiment, config, SEED, workers=workers, show_progress=True)
    err = capsys.readouterr().err
    total = sum(experiment.work(config, p) for p in experiment.points(config))
    assert total == 100 * (1 + 5 + 10) * 40
    assert "3/3" in err  # the points bar
    final = err.split("replicate-updates")[-1]
    assert f"{total / 1000:.1f}k/{total / 1000:.1f}k" in final, final


def test_progress_bars_only_on_a_terminal(capsys):
    class Terminal:
        def isatty(self):
            return True

    assert progress.wanted(True, Terminal())
    assert not progress.wanted(False, Terminal())
    assert not progress.wanted(True, open(__file__))  # noqa: SIM115 - a file is no terminal
    assert progress.reporter(5) is None  # outside a runner task nothing is reported


def test_split_point_equals_whole_point(experiment, config):
    point = {"staleness": 5}
    whole = experiment.run_point(config, point, SEED)
    n_blocks = experiment.replicate_blocks(config, point)
    assert n_blocks == 4
    raws = [experiment.run_blocks(config, point, SEED, blocks) for blocks in ([0], [1, 2], [3])]
    merged = experiment.merge_blocks(config, point, raws)
    np.testing.assert_array_equal(merged["replicate"], np.arange(40))
    xr.testing.assert_identical(experiment.finish_point(config, point, SEED, merged), whole)


def test_plan_splits_points_only_as_much_as_balance_needs():
    assert plan_tasks([1.0, 5.0, 10.0], [4, 4, 4], 1) == [
        Task(2, None, 10.0), Task(1, None, 5.0), Task(0, None, 1.0)]
    # whole points balance two workers well enough (27 vs 26): nothing is split
    balanced = plan_tasks([1.0, 2.0, 5.0, 10.0, 15.0, 20.0], [4] * 6, 2)
    assert all(task.blocks is None for task in balanced) and len(balanced) == 6
    # 10 | 5 + 1 is 25 % off a perfect share of 8: the larger points split into blocks
    tasks = plan_tasks([1.0, 5.0, 10.0], [4, 4, 4], 2)
    assert [t.cost for t in tasks] == sorted((t.cost for t in tasks), reverse=True)
    by_point = {i: sorted(t.blocks for t in tasks if t.point == i) for i in range(1, 3)}
    assert [t.blocks for t in tasks if t.point == 0] == [None]
    assert by_point == {1: [(0, 1, 2), (3,)], 2: [(0, 1), (2, 3)]}
    assert plan_tasks([10.0], [1], 2) == [Task(0, None, 10.0)]  # a point that cannot split
    assert sorted(t.blocks for t in plan_tasks([10.0], [4], 2)) == [(0, 1), (2, 3)]


class StaleGaussian(StudyExperiment):
    """The built-in stale-gaussian, as a class the tests below can change."""

    def __init__(self):
        super().__init__(built_in("stale-gaussian"))


class FailsAt(StaleGaussian):
    """stale-gaussian that dies at one staleness (a crash in the middle of a sweep)."""

    def __init__(self, staleness):
        super().__init__()
        self.fail_at = staleness

    def run_point(self, config, point, seed):
        if point["staleness"] == self.fail_at:
            raise RuntimeError("killed in the middle of the sweep")
        return super().run_point(config, point, seed)


class Counting(StaleGaussian):
    def __init__(self):
        super().__init__()
        self.computed = []

    def run_point(self, config, point, seed):
        self.computed.append(point["staleness"])
        return super().run_point(config, point, seed)


def test_killed_sweep_resumes_computing_only_the_missing_points(tmp_path, config, serial):
    store = ResultStore(tmp_path, "stale-gaussian")
    with pytest.raises(RuntimeError, match="killed"):
        run_sweep(FailsAt(5), config, SEED, store=store)
    # largest first: τ = 10 was done and stored before τ = 5 died; τ = 1 never started
    stored = [entry["point"] for entry in store.manifest().values()]
    assert stored == [{"staleness": 10}]
    counting = Counting()
    resumed = run_sweep(counting, config, SEED, store=store)
    assert sorted(counting.computed) == [1, 5]
    assert resumed.loaded == [{"staleness": 10}]
    xr.testing.assert_identical(resumed.dataset, serial.dataset)
    again = Counting()
    run_sweep(again, config, SEED, store=store)
    assert again.computed == []


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_a_byte(path):
    content = bytearray(path.read_bytes())
    content[len(content) // 2] ^= 0xFF
    path.write_bytes(bytes(content))


def _unlist(store, key):
    store._record({"key": key, "removed": True})


@pytest.mark.parametrize("damage, reason", [
    (lambda store, key: _truncate(store.path(key)), "truncated"),
    (lambda store, key: _flip_a_byte(store.path(key)), "differs from the manifest"),
    (_unlist, "not in the manifest"),
])
def test_damaged_stored_point_is_detected_reported_and_recomputed(
        tmp_path, experiment, config, serial, damage, reason, capsys):
    store = ResultStore(tmp_path, "stale-gaussian")
    run_sweep(experiment, config, SEED, store=store)
    key = store_key(point_identity(experiment, config, {"staleness": 5}, SEED))
    damage(store, key)
    counting = Counting()
    rerun = run_sweep(counting, config, SEED, store=store)
    assert counting.computed == [5]
    assert [point for point, _ in rerun.recomputed] == [{"staleness": 5}]
    assert reason in rerun.recomputed[0][1]
    assert "corrupt" in capsys.readouterr().err
    xr.testing.assert_identical(rerun.dataset, serial.dataset)
    assert store.load(key) is not None  # the recomputed point is valid again
    assert len(store.manifest()) == 3
    if reason != "not in the manifest":
        assert store.path(key).with_name(f"{key}.nc.corrupt").exists()


def test_store_keys_follow_what_a_point_depends_on(tmp_path, experiment, config):
    def key(cfg, point, seed=SEED):
        return store_key(point_identity(experiment, cfg, point, seed))

    point = {"staleness": 5}
    assert key(config, point) == key({**config, "staleness": [5, 20, 40]}, point)
    assert key(config, point) != key(config, point, seed=SEED + 1)
    assert key(config, point) != key(config, {"staleness": 10})
    assert key(config, point) != key({**config, "step_size_constant": 0.004}, point)
    # extending the grid reuses the stored points and computes only the new one
    store = ResultStore(tmp_path, "stale-gaussian")
    run_sweep(experiment, config, SEED, store=store)
    counting = Counting()
    run_sweep(counting, {**config, "staleness": [1, 5, 10, 15]}, SEED, store=store)
    assert counting.computed == [15]
    files = sorted(p.name for p in store.directory.rglob("*")
                   if p.is_file() and p.suffix != ".lock")
    assert files == sorted(["manifest.jsonl"] + [f"{k}.nc" for k in store.manifest()])


def test_serial_executor_delivers_errors_through_the_future():
    future = SerialExecutor().submit(int, "not a number")
    with pytest.raises(ValueError):
        future.result()


def test_manifest_line_cut_short_by_a_crash_is_ignored(tmp_path, experiment, config):
    store = ResultStore(tmp_path, "stale-gaussian")
    run_sweep(experiment, config, SEED, store=store)
    keys = sorted(store.manifest())
    with open(store.manifest_path, "a") as manifest:
        manifest.write('{"key": "cut-short", "sha')  # the crash
    assert sorted(store.manifest()) == keys
    store._record({"key": keys[0], "removed": True})  # the next line starts afresh
    assert sorted(store.manifest()) == keys[1:]


def test_a_point_encoded_in_its_worker_is_stored_as_save_stores_it(tmp_path, experiment, config):
    """The runner has workers encode their points (encode_point) and the parent only write
    them; the file, its manifest line and the Dataset handed back are those of save."""
    point = {"staleness": 5}
    dataset = experiment.run_point(config, point, SEED)
    identity = point_identity(experiment, config, point, SEED)
    key = store_key(identity)
    saved_store = ResultStore(tmp_path / "saved", experiment.name)
    written_store = ResultStore(tmp_path / "written", experiment.name)
    saved = saved_store.save(key, identity, dataset, 1.0)
    with open_workers(processes=2) as workers:
        encoded = workers.executor.submit(encode_point, key, identity, dataset).result()
    written = written_store.write(key, identity, encoded, 1.0)
    # the files hold the same Dataset; their bytes may differ only in the times HDF5 stamps
    # on its object headers (to the second), which change nothing read back
    xr.testing.assert_identical(saved_store.load(key), written_store.load(key))
    xr.testing.assert_identical(saved, written)
    xr.testing.assert_identical(written, written_store.load(key))
    entries = saved_store.manifest()[key], written_store.manifest()[key]
    for entry, store in zip(entries, (saved_store, written_store), strict=True):
        content = store.path(key).read_bytes()  # each line describes its own file
        assert entry["sha256"] == hashlib.sha256(content).hexdigest()
        assert entry["bytes"] == len(content)
    assert entries[0]["bytes"] == entries[1]["bytes"]
    assert {k: v for k, v in entries[0].items() if k not in ("sha256", "written")} == {
        k: v for k, v in entries[1].items() if k not in ("sha256", "written")}


def _imported(module: str) -> bool:
    return module in sys.modules


@pytest.mark.parametrize("preload", [True, False])
def test_pool_workers_start_holding_the_preloaded_modules(preload):
    module = "wave"  # in the standard library, imported by nothing here
    sys.modules.pop(module, None)
    with open_workers(processes=2, preload=(module,) if preload else ()) as workers:
        held = workers.executor.submit(_imported, module).result()
    assert held is preload  # False: the negative control, a worker imports only on demand


def test_bars_made_hidden_count_and_start_from_their_counts_when_shown(capsys):
    class Terminal:
        def isatty(self):
            return True

        def write(self, text):
            sys.stderr.write(text)

        def flush(self):
            pass

    bars = progress.SweepBars("later", 5, 100, 100, enabled=True, stream=Terminal(),
                              shown=False)
    bars.points_done(2)
    bars.point_done("x=3")
    bars.add_updates(40)
    assert bars.points is None and capsys.readouterr().err == ""  # nothing drawn yet
    bars.show()
    assert bars.points.n == 3 and bars.updates.n == 40
    bars.point_done()
    bars.close()
    assert "4/5" in capsys.readouterr().err


def test_a_cluster_of_separate_scheduler_and_worker_processes_gives_the_same_dataset(tmp_path):
    """The multi-machine recipe of docs/cli.md (*A cluster of several machines*) on one
    machine: ``dask scheduler`` and ``dask worker`` (two worker processes under a nanny) each
    started as its own command, and ``workbench run --scheduler tcp://…`` sending the points
    there. The dataset is bit for bit the one ``--processes 1`` writes. Negative control: a
    different seed gives a different dataset, so the comparison can fail."""
    command = os.path.join(os.path.dirname(sys.executable), "dask")
    address_file = tmp_path / "scheduler.json"
    started = []
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(name, *arguments):
        started.append(process_group.start([command, *arguments], logs / f"{name}.log",
                                           cwd=tmp_path))

    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
              "--scheduler-file", str(address_file))
        deadline = time.monotonic() + 60
        address = None
        while address is None and time.monotonic() < deadline:
            assert started[0].poll() is None, (logs / "scheduler.log").read_text()
            try:  # the scheduler writes the file in place: it may be seen half written
                address = json.loads(address_file.read_text())["address"]
            except (FileNotFoundError, ValueError, KeyError):
                time.sleep(0.1)
        assert address, f"no scheduler address after 60 s:\n{(logs / 'scheduler.log').read_text()}"
        start("workers", "worker", address, "--nworkers", "2", "--nthreads", "1",
              "--no-dashboard", "--host", "127.0.0.1", "--local-directory", str(tmp_path))
        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=90)

        small = ["stale-gaussian", "--quick", "--quiet", "--set", "staleness=[1,4]",
                 "--set", "designs=false", "--set", "base_iterations=50",
                 "--set", "n_replicates=20", "--set", "replicate_block=5"]
        assert main(["run", *small, "--seed", "3", "--scheduler", address,
                     "--out", str(tmp_path / "cluster")]) == 0
        assert main(["run", *small, "--seed", "3", "--processes", "1",
                     "--out", str(tmp_path / "serial")]) == 0
        assert main(["run", *small, "--seed", "4", "--processes", "1",
                     "--out", str(tmp_path / "other-seed")]) == 0
    finally:
        for process in started:
            process_group.stop(process)
    cluster, serial, other = (read_netcdf(tmp_path / out / "stale-gaussian.nc")
                              for out in ("cluster", "serial", "other-seed"))
    xr.testing.assert_identical(cluster, serial)
    with pytest.raises(AssertionError):
        xr.testing.assert_identical(other, serial)
