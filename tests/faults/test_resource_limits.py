"""Resource faults: a write that cannot be done is one line with exit status 3, no partial file
and no segmentation fault, and the run resumes afterwards; an --out where no file can be
created fails the same way (exit status 3) before any work."""

import resource
import shutil
import subprocess

import pytest
import xarray as xr

from workbench.cli.main import main
from workbench.run import runner
from workbench.store.netcdf import read_netcdf
from workbench.store.result_store import ResultStore

from .conftest import QUICK, run, temporaries

RUN = ["run", "stale-gaussian", *QUICK, "--processes", "1"]


def _limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))  # a point is about 58 kB


def _one_line_failure(child, reason):
    assert child.process.exitcode == 3, child.output  # not -11 (SIGSEGV), not 1
    [line] = [line for line in child.output.splitlines() if "error" in line]
    assert line.startswith("workbench: error: cannot write ") and reason in line
    assert "Traceback" not in child.output


def test_file_size_limit_fails_cleanly_and_the_run_resumes(tmp_path, reference):
    out = tmp_path / "out"
    limited = run([*RUN, "--out", str(out)], tmp_path, before=_limit_file_size)
    _one_line_failure(limited, "File too large (EFBIG)")
    assert temporaries(out) == []
    assert list(out.rglob("*.nc")) == []  # no partial file under any name
    resumed = run([*RUN, "--out", str(out)], tmp_path)
    assert resumed.process.exitcode == 0, resumed.output
    xr.testing.assert_identical(read_netcdf(out / "stale-gaussian.nc"), reference)


@pytest.fixture
def small_filesystem(tmp_path):
    """A 150 kB tmpfs (room for two points of three), if this process may mount one."""
    mount = tmp_path / "small"
    mount.mkdir()
    if shutil.which("mount") is None or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=150k", "tmpfs", str(mount)],
            capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs is not permitted here")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_full_disk_fails_cleanly_and_the_points_written_stay_valid(tmp_path, small_filesystem):
    out = small_filesystem / "out"
    child = run([*RUN, "--out", str(out)], tmp_path)
    _one_line_failure(child, "No space left on device (ENOSPC)")
    assert temporaries(out) == []
    store = ResultStore(out / "store", "stale-gaussian")
    stored = store.manifest()
    assert stored  # the points written before the disk filled up
    for key in stored:
        assert store.load(key) is not None


@pytest.fixture
def no_work(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a sweep started")

    monkeypatch.setattr(runner, "run_sweep", refuse)
    monkeypatch.setattr("workbench.run.main_job.run_sweep", refuse)


def test_out_under_a_file_is_refused_before_any_work(tmp_path, no_work, capsys):
    (tmp_path / "a-file").write_text("")
    for command in (RUN, ["check", *RUN[1:]]):
        assert main([*command, "--out", str(tmp_path / "a-file" / "results")]) == 2
        err = capsys.readouterr().err
        assert "--out" in err and "a-file" in err and "Not a directory" in err


def _assert_unwritable_out(err: str, out) -> None:
    """A failed write (exit status 3, docs/cli.md), one line naming --out and the reason."""
    [line] = err.splitlines()
    assert line.startswith(f"workbench: error: --out = {out}: no file can be created there")
    assert "Operation not permitted (EPERM)" in line and "Traceback" not in err


def test_immutable_out_fails_before_any_work_even_for_root(tmp_path, no_work, capsys):
    out = tmp_path / "locked"
    out.mkdir()
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(out)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not permitted here")
    try:
        assert main([*RUN, "--out", str(out)]) == 3
    finally:
        subprocess.run(["chattr", "-i", str(out)], check=True)
    _assert_unwritable_out(capsys.readouterr().err, out)


def test_out_where_no_file_can_be_created_fails_with_status_3(tmp_path, no_work, capsys,
                                                              monkeypatch):
    """An immutable --out, simulated (root ignores chmod; chattr may be unavailable): the
    probe's EPERM is a failed write, exit status 3, before any work, for run and check."""
    import errno
    import tempfile

    def immutable(*args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    out = tmp_path / "locked"
    out.mkdir()
    monkeypatch.setattr(tempfile, "TemporaryFile", immutable)
    for command in (RUN, ["check", *RUN[1:]]):
        assert main([*command, "--out", str(out)]) == 3
        _assert_unwritable_out(capsys.readouterr().err, out)
    assert list(out.iterdir()) == []  # no error log either: this failure is a known one
