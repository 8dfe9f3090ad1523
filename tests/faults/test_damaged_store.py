"""A damaged store (any bytes in its manifest, a result file edited by hand, a corrupt combined
file, a file that cannot be moved) and a sweep of many points: never a traceback, never a
descriptor per point, never a finding (exit status 1) for a failure (issue 36)."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.cli.main import main
from workbench.explore import results_browser
from workbench.run.executors import open_workers
from workbench.run.experiment import Experiment
from workbench.run.runner import run_sweep
from workbench.run.sweep_tasks import IN_FLIGHT_PER_WORKER
from workbench.store import audit
from workbench.store.atomic import WriteFailed, netcdf_loaded
from workbench.store.netcdf import (
    CHECKSUM_ATTR,
    FORMAT_ATTR,
    LEGACY_CHECKSUM_ATTR,
    CorruptResult,
    array_checksum,
    read_netcdf,
)
from workbench.store.result_store import (
    STORE_FORMAT,
    PointLock,
    ResultStore,
    parse_manifest,
)

from .conftest import N_POINTS, QUICK

RUN = ["run", "stale-gaussian", *QUICK, "--processes", "1"]
CHECK = ["check", *RUN[1:]]


def _store(out) -> ResultStore:
    return ResultStore(Path(out) / "store", "stale-gaussian")


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("workbench: warning:")]


def _tracebacks(err: str) -> int:
    return err.count("Traceback")


def _assert_bit_identical(dataset: xr.Dataset, reference: xr.Dataset) -> None:
    """Every variable's bytes (text as text), and the whole Dataset."""
    assert sorted(dataset.variables) == sorted(reference.variables)
    for name in dataset.variables:
        ours, theirs = np.asarray(dataset[name].values), np.asarray(reference[name].values)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, name
        if ours.dtype.kind in "OUS":
            assert ours.tolist() == theirs.tolist(), name
        else:
            assert ours.tobytes() == theirs.tobytes(), name
    xr.testing.assert_identical(dataset, reference)


# -- 1. any bytes in the manifest -----------------------------------------------------------


def _damage_manifest(store: ResultStore) -> str:
    """Line 2 gets a byte that is not UTF-8, a line ``{"key": [1]}`` follows it, and a line cut
    short ends the file; returns the key whose line was damaged."""
    lines = store.manifest_path.read_bytes().splitlines(keepends=True)
    assert len(lines) == N_POINTS
    damaged = bytearray(lines[1])
    damaged[10] = 0xFF
    lines[1] = bytes(damaged)
    lines.insert(2, b'{"key": [1]}\n')
    store.manifest_path.write_bytes(b"".join(lines) + b'{"key": "abc", "sha')
    return json.loads(bytes(lines[1]).replace(b"\xff", b"6"))["key"]


def test_verify_lists_every_unusable_manifest_line_repair_sets_them_aside_and_check_agrees(
        tmp_path, reference, capsys):
    """The issue's scenario: a byte that is not UTF-8, ``{"key": [1]}`` and a torn last line
    made run, check and store verify end in a traceback (exit 1)."""
    out = tmp_path / "out"
    assert main([*RUN, "--out", str(out)]) == 0
    store = _store(out)
    unlisted = _damage_manifest(store)
    before = store.manifest_path.read_bytes()
    capsys.readouterr()
    assert main(["store", "verify", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert _tracebacks(captured.err) == 0
    lines = captured.out.splitlines()
    manifest_lines = [line for line in lines
                      if line.startswith(("malformed manifest line", "torn manifest line"))]
    assert [line.split("(line ")[1].split(":")[0] for line in manifest_lines] == ["2", "3", "5"]
    assert manifest_lines[0].startswith("malformed manifest line")
    assert "not UTF-8 (byte 0xff at column 11)" in manifest_lines[0]
    assert manifest_lines[1].startswith("malformed manifest line")
    assert "'key' is [1]" in manifest_lines[1]
    assert manifest_lines[2].startswith("torn manifest line")
    [unlisted_line] = [line for line in lines if line.startswith("corrupt")]
    assert unlisted in unlisted_line and "not in the manifest" in unlisted_line

    assert main(["store", "verify", "--out", str(out), "--repair"]) == 0
    old_lines = before.split(b"\n")
    rejected = store.manifest_path.with_name("manifest.jsonl.rejected").read_bytes()
    assert rejected == b"".join(old_lines[i] + b"\n" for i in (1, 2, 4))  # as they were
    kept = store.manifest_path.with_name("manifest.jsonl.before-repair").read_bytes()
    assert kept.startswith(before + b"\n")  # and the line removing the point set aside
    repaired = parse_manifest(store.manifest_path.read_bytes())
    assert len(repaired) == N_POINTS - 1 and all(line.record is not None for line in repaired)
    capsys.readouterr()
    assert main(["store", "verify", "--out", str(out)]) == 0

    status = main([*CHECK, "--out", str(out)])
    err = capsys.readouterr().err
    assert status in (0, 1) and _tracebacks(err) == 0 and not _warnings(err)
    assert f"{N_POINTS - 1} from the store, 1 computed" in err
    _assert_bit_identical(read_netcdf(out / "stale-gaussian.nc"), reference)


VALID = {"bytes": 1, "file": "points/x.nc", "point": {"staleness": 1}, "seed": 5,
         "sha256": "0" * 64, "compute_seconds": 0.1, "written": "now"}


@pytest.mark.parametrize("line, problem", [
    (b"\xc3\x28 not UTF-8", "not UTF-8 (byte 0xc3 at column 1)"),
    (b'{"key": [1]}', "field 'key' is [1]"),
    (b"[1, 2]", "not a JSON object"),
    (b'"just a string"', "not a JSON object"),
    (b'{"key": "../../../../etc/passwd"}', "not a store key"),
    (b'{"key": "' + b"a" * 24 + b'", "removed": "yes"}', "field 'removed'"),
    (json.dumps({**VALID, "key": "b" * 24, "sha256": 5}).encode(), "field 'sha256'"),
    (json.dumps({**VALID, "key": "b" * 24, "bytes": "5"}).encode(), "field 'bytes'"),
    (json.dumps({**VALID, "key": "b" * 24, "seed": True}).encode(), "field 'seed'"),
    (json.dumps({**VALID, "key": "b" * 24, "point": [1]}).encode(), "field 'point'"),
    (json.dumps({**VALID, "key": "b" * 24, "compute_seconds": "x"}).encode(),
     "field 'compute_seconds'"),
    (b"[" * 100_000, "not JSON"),
    (b"", "not JSON"),
], ids=["not-utf8", "key-list", "array", "string", "key-path", "removed-text", "sha-number",
        "bytes-text", "seed-bool", "point-list", "seconds-text", "deep", "empty"])
def test_an_unusable_line_is_named_by_number_and_the_others_are_read(tmp_path, line, problem):
    store = ResultStore(tmp_path / "store", "stale-gaussian")
    store.directory.mkdir(parents=True)
    good = json.dumps({**VALID, "key": "c" * 24}).encode()
    store.manifest_path.write_bytes(good + b"\n" + line + b"\n" + good.replace(b"c", b"d")
                                    + b"\n")
    parsed = parse_manifest(store.manifest_path.read_bytes())
    assert [p.record is not None for p in parsed] == [True, False, True]
    assert problem in parsed[1].problem
    store.warnings = io.StringIO()
    assert sorted(store.manifest()) == ["c" * 24, "d" * 24]
    [warning] = store.warnings.getvalue().splitlines()
    assert "line 2: " in warning and problem in warning
    store.manifest()  # named once
    assert store.warnings.getvalue().splitlines() == [warning]
    [bad] = [f for f in audit.verify(tmp_path) if f.state in (audit.MALFORMED, audit.TORN)]
    assert bad.detail.startswith("line 2: ")


def test_negative_control_a_valid_manifest_gives_no_warning_and_no_finding(tmp_path, capsys):
    out = tmp_path / "out"
    assert main([*RUN, "--out", str(out)]) == 0
    assert all(line.record is not None for line in _store(out).manifest_lines())
    assert len(_store(out).manifest()) == N_POINTS
    capsys.readouterr()
    assert main([*RUN, "--out", str(out)]) == 0
    assert not _warnings(capsys.readouterr().err)
    assert main(["store", "verify", "--out", str(out)]) == 0


@pytest.mark.parametrize("command", [RUN, CHECK], ids=["run", "check"])
def test_run_and_check_skip_unusable_lines_with_one_warning_and_recompute(
        tmp_path, reference, command, capsys):
    out = tmp_path / "out"
    assert main([*RUN, "--out", str(out)]) == 0
    unlisted = _damage_manifest(_store(out))
    capsys.readouterr()
    status = main([*command, "--out", str(out)])
    err = capsys.readouterr().err
    assert status in ((0,) if command is RUN else (0, 1)) and _tracebacks(err) == 0, err
    [warning] = _warnings(err)
    assert "line 2: not UTF-8" in warning and "line 3: field 'key' is [1]" in warning
    assert "line 5" not in warning  # an unterminated last line may be being appended
    assert f"{N_POINTS - 1} from the store, 1 computed" in err  # the unlisted point
    assert unlisted in err  # its file kept aside, named
    _assert_bit_identical(read_netcdf(out / "stale-gaussian.nc"), reference)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.lists(st.one_of(st.binary(max_size=60), st.text(max_size=60).map(str.encode),
                                  st.recursive(st.none() | st.booleans() | st.integers()
                                               | st.floats() | st.text(max_size=5),
                                               lambda inner: st.lists(inner, max_size=3)
                                               | st.dictionaries(st.sampled_from(
                                                   ["key", "removed", "sha256", "bytes",
                                                    "seed", "point", "file"]), inner,
                                                   max_size=4),
                                               max_leaves=8).map(
                                      lambda v: json.dumps(v).encode())),
                        max_size=6))
def test_any_bytes_in_a_manifest_are_read_without_raising(tmp_path_factory, garbage):
    root = tmp_path_factory.mktemp("any")
    store = ResultStore(root / "store", "stale-gaussian")
    store.directory.mkdir(parents=True)
    good = json.dumps({**VALID, "key": "e" * 24}).encode()
    store.manifest_path.write_bytes(b"\n".join([good, *garbage]))
    store.warnings = io.StringIO()
    entries = store.manifest()
    assert all(isinstance(key, str) and len(key) == 24 for key in entries)
    findings = audit.verify(root)
    assert all(f.state != audit.CORRUPT or "missing" in f.detail for f in findings)
    audit.repair(findings)
    assert all(line.record is not None for line in store.manifest_lines())


# -- 2. lock files ----------------------------------------------------------------------------


class Tiny(Experiment):
    """Points that cost nothing: the store's own costs, per point, are all there is."""

    name = "tiny"
    sweep_dims = ("x",)

    def __init__(self, n: int):
        self.n = n

    def points(self, config):
        return [{"x": i} for i in range(self.n)]

    def run_point(self, config, point, seed):
        return xr.Dataset({"y": ("x", [float(point["x"] * seed)])}, coords={"x": [point["x"]]})


def _in_a_child_with_few_descriptors(target, *args, spare: int = 24) -> int:
    """``target(*args)`` in a forked child allowed ``spare`` descriptors beyond those open."""
    def child():
        open_now = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + spare,
                                                    resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        try:
            target(*args)
        except WriteFailed as error:
            os._exit(3 if "EMFILE" in error.reason else 4)
        except OSError:
            os._exit(5)
        os._exit(0)

    process = multiprocessing.get_context("fork").Process(target=child)
    process.start()
    process.join(120)
    return process.exitcode


def _sweep(root, n, hold_every_lock=False):
    experiment, store = Tiny(n), ResultStore(Path(root), "tiny")
    if hold_every_lock:  # what the runner did before: every point's lock for the whole sweep
        held = [store.claim(f"{i:024x}") for i in range(n)]
        assert all(held)
    result = run_sweep(experiment, {}, 3, store=store)
    assert len(result.computed) == n


def test_a_sweep_of_many_points_holds_a_few_descriptors_and_leaves_no_lock_file(tmp_path):
    n = 600
    assert _in_a_child_with_few_descriptors(_sweep, tmp_path / "store", n) == 0
    store = ResultStore(tmp_path / "store", "tiny")
    assert len(store.manifest()) == n
    assert list(store.points_directory.glob("*.lock")) == []
    # negative control: one descriptor per point, as before, runs out under the same limit
    assert _in_a_child_with_few_descriptors(_sweep, tmp_path / "held", n, True) == 3


def test_a_pool_holds_the_locks_of_the_points_in_flight_only(tmp_path, monkeypatch):
    held, most = set(), [0]
    acquire, release = PointLock.acquire, PointLock.release

    def counting_acquire(self, blocking=True):
        taken = acquire(self, blocking)
        if taken:
            held.add(id(self))
            most[0] = max(most[0], len(held))
        return taken

    def counting_release(self):
        held.discard(id(self))
        release(self)

    monkeypatch.setattr(PointLock, "acquire", counting_acquire)
    monkeypatch.setattr(PointLock, "release", counting_release)
    store = ResultStore(tmp_path, "tiny")
    with open_workers(processes=2) as workers:
        result = run_sweep(Tiny(60), {}, 3, workers=workers, store=store)
    assert len(result.computed) == 60 and not held
    # the tasks in flight, and the points just finished while the workers get their next
    # tasks, before the parent writes them
    assert 1 <= most[0] <= 2 * 2 * IN_FLIGHT_PER_WORKER
    assert list(store.points_directory.glob("*.lock")) == []


class NaiveLock(PointLock):
    """The negative control: an OS lock taken without checking that the file is still there."""

    def acquire(self, blocking=True):
        import fcntl

        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        self._descriptor = descriptor
        return True


@pytest.mark.parametrize("kind, holders", [(PointLock, 1), (NaiveLock, 2)],
                         ids=["checked", "naive"])
def test_removing_a_lock_file_does_not_let_two_processes_hold_the_point(tmp_path, kind,
                                                                        holders):
    """A holds the lock; B opened the file and waits; A removes the file and releases; C
    comes: B must find its file gone and lock C's, so only one of them holds the point."""
    path = tmp_path / "point.lock"
    first = PointLock(path)
    assert first.acquire()
    waiting = kind(path)
    thread = threading.Thread(target=waiting.acquire, daemon=True)
    thread.start()
    _until(lambda: _descriptors_on(path) == 2)  # B has opened the file and waits for its lock
    first.release()
    _until(lambda: waiting.is_locked)  # B has its OS lock (and, checked, on the new file)
    late = PointLock(path)
    late_holds = late.acquire(blocking=False)
    assert (waiting.is_locked + late_holds) == holders
    thread.join(5)
    for lock in (waiting, late):
        lock.release()
    assert not path.exists()


def _descriptors_on(path: Path) -> int:
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{name}") == str(path)
        except OSError:
            continue
    return count


def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not reached"
        time.sleep(0.01)


def test_repair_removes_lock_files_no_one_holds_and_keeps_a_held_one(tmp_path, capsys):
    out = tmp_path / "out"
    assert main([*RUN, "--out", str(out)]) == 0
    store = _store(out)
    left = [store.points_directory / f"{c * 24}.lock" for c in "ab"]
    for path in left:  # as filelock left them, before this change
        path.write_bytes(b"")
    held = store.claim("c" * 24)
    try:
        assert main(["store", "verify", "--out", str(out), "--repair"]) == 0
        assert not any(path.exists() for path in left)
        assert held.path.exists()  # negative control: held, so kept
    finally:
        held.release()


# -- 3. provenance inside the checksum -------------------------------------------------------


def _edit_attribute(path, name, value, variable=None):
    """Rewrite the file with one attribute changed, every other one (the checksum too) kept."""
    dataset = netcdf_loaded(path)
    (dataset if variable is None else dataset[variable]).attrs[name] = value
    dataset.to_netcdf(path, engine="netcdf4")


@pytest.mark.parametrize("name, edit", [
    ("seed", lambda value: value + 1),
    ("config_toml", lambda value: value.replace("n_replicates = 20", "n_replicates = 21")),
    ("experiment", lambda value: value + "x"),
])
def test_an_edited_provenance_attribute_is_refused_by_every_reader(tmp_path, name, edit,
                                                                   capsys):
    out = tmp_path / "out"
    assert main([*RUN, "--out", str(out)]) == 0
    combined = out / "stale-gaussian.nc"
    original = read_netcdf(combined).attrs[name]
    _edit_attribute(combined, name, original)  # negative control: the same value
    assert read_netcdf(combined).attrs[name] == original
    _edit_attribute(combined, name, edit(original))
    with pytest.raises(CorruptResult, match="altered or torn") as refused:
        read_netcdf(combined)
    assert not refused.value.stale
    [listed] = results_browser.list_results(out)  # the dashboard's loader
    assert listed.problem
    capsys.readouterr()
    assert main(["store", "verify", "--out", str(out)]) == 1
    assert capsys.readouterr().out.startswith(f"corrupt                  {combined}")


def test_the_checksum_covers_variable_attributes_and_not_only_arrays(tmp_path):
    out = tmp_path / "out"
    assert main([*RUN, "--out", str(out)]) == 0
    combined = out / "stale-gaussian.nc"
    dataset = read_netcdf(combined)
    assert CHECKSUM_ATTR not in dataset.attrs and FORMAT_ATTR not in dataset.attrs
    _edit_attribute(combined, "units", "parsecs", variable="staleness")
    with pytest.raises(CorruptResult, match="altered or torn"):
        read_netcdf(combined)


def test_a_file_from_before_the_provenance_checksum_is_stale_and_rebuilt_not_kept(
        tmp_path, reference, capsys):
    out = tmp_path / "out"
    assert main([*RUN, "--out", str(out)]) == 0
    combined = out / "stale-gaussian.nc"
    old = reference.copy()
    old.attrs = {**reference.attrs, FORMAT_ATTR: STORE_FORMAT,
                 LEGACY_CHECKSUM_ATTR: array_checksum(reference)}  # as written before
    old.to_netcdf(combined, engine="netcdf4")
    with pytest.raises(CorruptResult, match="stale version") as refused:
        read_netcdf(combined)
    assert refused.value.stale
    capsys.readouterr()
    assert main(["store", "verify", "--out", str(out)]) == 0  # stale is not bad
    assert "stale version" in capsys.readouterr().out
    assert main([*RUN, "--out", str(out)]) == 0
    assert "stale version" in capsys.readouterr().err
    assert list(out.glob("*.corrupt")) == []  # rebuilt from the store, nothing to keep
    _assert_bit_identical(read_netcdf(combined), reference)


# -- 4. check keeps a corrupt combined file ----------------------------------------------------


def _garble(path):
    content = bytearray(path.read_bytes())
    middle = len(content) // 2
    content[middle - 2048:middle + 2048] = os.urandom(4096)
    path.write_bytes(bytes(content))
    return bytes(content)


def test_check_keeps_each_corrupt_combined_file_under_a_fresh_name(tmp_path, reference, capsys):
    out = tmp_path / "out"
    assert main([*RUN, "--out", str(out)]) == 0
    combined = out / "stale-gaussian.nc"
    capsys.readouterr()
    assert main([*CHECK, "--out", str(out)]) in (0, 1)
    assert list(out.glob("*.corrupt")) == []  # negative control: nothing corrupt, none kept
    first = _garble(combined)
    assert main([*CHECK, "--out", str(out)]) in (0, 1)
    err = capsys.readouterr().err
    kept = out / "stale-gaussian.nc.corrupt"
    assert f"kept as {kept}; rebuilt from the store ({N_POINTS} stored points)" in err
    assert kept.read_bytes() == first
    second = _garble(combined)
    assert main([*CHECK, "--out", str(out)]) in (0, 1)
    assert f"kept as {out / 'stale-gaussian.nc.1.corrupt'}" in capsys.readouterr().err
    assert kept.read_bytes() == first and (out / "stale-gaussian.nc.1.corrupt").read_bytes() \
        == second
    _assert_bit_identical(read_netcdf(combined), reference)


def test_with_the_seed_omitted_the_message_says_the_points_are_computed_and_why(tmp_path,
                                                                                  capsys):
    """The store was written with --seed 5; check without --seed runs seed 2016 (the default,
    not a random one), which the store holds no point of: it said "rebuilt from the store"."""
    out = tmp_path / "out"
    assert main([*RUN, "--out", str(out)]) == 0
    without_seed = [a for i, a in enumerate(CHECK) if a != "--seed" and CHECK[i - 1] != "--seed"]
    _garble(out / "stale-gaussian.nc")
    capsys.readouterr()
    assert main([*without_seed, "--out", str(out)]) in (0, 1)
    err = capsys.readouterr().err
    assert "0 from the store, 3 computed" in err
    assert (f"rebuilt from {N_POINTS} points computed now: the store held none for seed 2016 "
            "and this configuration (its points were written with seed 5;") in err
    assert "rebuilt from the store" not in err
    _garble(out / "stale-gaussian.nc")  # negative control: the store's seed reuses its points
    assert main([*CHECK, "--out", str(out)]) in (0, 1)
    err = capsys.readouterr().err
    assert f"{N_POINTS} from the store, 0 computed" in err
    assert f"rebuilt from the store ({N_POINTS} stored points)" in err


# -- 5. a file that cannot be moved aside ----------------------------------------------------


def _damaged_for_repair(tmp_path):
    out = tmp_path / "out"
    assert main([*RUN, "--out", str(out)]) == 0
    victim = sorted(_store(out).points_directory.glob("*.nc"))[0]
    victim.write_bytes(victim.read_bytes()[:1000])
    orphan = out / ".stale-gaussian.nc.x1y2.tmp"
    orphan.write_bytes(b"half")
    os.utime(orphan, (1, 1))
    return out, victim, orphan


def test_repair_of_a_file_that_cannot_be_moved_is_one_line_and_exit_3(tmp_path, monkeypatch,
                                                                       capsys):
    out, victim, orphan = _damaged_for_repair(tmp_path)
    replace = os.replace

    def immutable(source, target, *args, **kwargs):
        if Path(source) == victim:
            raise PermissionError(1, "Operation not permitted")
        return replace(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", immutable)
    capsys.readouterr()
    assert main(["store", "verify", "--out", str(out), "--repair"]) == 3
    captured = capsys.readouterr()
    assert _tracebacks(captured.err) == 0
    [line] = captured.err.splitlines()
    assert line == (f"workbench: error: cannot move {victim} aside: Operation not permitted "
                    "(EPERM)")
    assert orphan.with_name(orphan.name + ".orphaned").exists()  # the other repairs are done
    monkeypatch.setattr(os, "replace", replace)  # negative control: movable, repaired
    assert main(["store", "verify", "--out", str(out), "--repair"]) == 0
    assert victim.with_name(victim.name + ".corrupt").exists()


def test_repair_of_an_immutable_file_for_real(tmp_path, capsys):
    out, victim, _ = _damaged_for_repair(tmp_path)
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(victim)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not permitted here")
    try:
        capsys.readouterr()
        assert main(["store", "verify", "--out", str(out), "--repair"]) == 3
    finally:
        subprocess.run(["chattr", "-i", str(victim)], check=True)
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"workbench: error: cannot move {victim} aside: ")
    assert "Operation not permitted" in line
