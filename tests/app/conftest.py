import os
import shutil
from pathlib import Path

import pytest
from filelock import FileLock

import app
from workbench.cli.main import DEFAULT_SEED, main

ENTRY = Path(app.__file__).parent / "dashboard.py"


def _write_default_results(directory: Path) -> None:
    """In one process: the numbers are the same in any number, and from a fresh checkout
    each pool process would compile numba's kernels again."""
    assert main(["run", "stale-gaussian", "--out", str(directory), "--seed",
                 str(DEFAULT_SEED), "--processes", "1", "--quiet"]) == 0


@pytest.fixture(scope="session")
def default_results(tmp_path_factory):
    """A directory of this test process's own holding ``stale-gaussian`` at its default size,
    written by the CLI.

    Under pytest-xdist the run is made once for the whole session: the first test process to
    ask writes it, under a file lock, into the directory the processes' temporary directories
    share, and every process copies it into a directory of its own (the dashboard's Study
    editor writes its runs into the results directory, so a shared one would change what
    other tests list). That saves a default-size run (about 18 s of one core) for each
    further process that draws the dashboard."""
    directory = tmp_path_factory.mktemp("results")
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        _write_default_results(directory)
        return directory
    shared = tmp_path_factory.getbasetemp().parent / "default-results"
    with FileLock(f"{shared}.lock"):
        if not (shared / "stale-gaussian.nc").is_file():
            _write_default_results(shared)
    shutil.copytree(shared, directory, dirs_exist_ok=True)
    return directory
