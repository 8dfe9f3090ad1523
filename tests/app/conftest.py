from pathlib import Path

import pytest

import app
from workbench.cli.main import DEFAULT_SEED, main

ENTRY = Path(app.__file__).parent / "dashboard.py"


@pytest.fixture(scope="session")
def default_results(tmp_path_factory):
    """A directory holding ``stale-gaussian`` at its default size, written by the CLI."""
    directory = tmp_path_factory.mktemp("results")
    assert main(["run", "stale-gaussian", "--out", str(directory), "--seed",
                 str(DEFAULT_SEED), "--quiet"]) == 0
    return directory
