import pytest

from workbench.explore.results_browser import run_quick

# A small stale-gaussian configuration with every design present (seconds to run).
SMALL = {"staleness": [1, 5], "base_iterations": 100, "n_replicates": 30, "n_checkpoints": 5,
         "rate_staleness": [2], "rate_iterations": [500, 1000, 2000],
         "envelope_staleness": [1, 4], "envelope_relative_step": [0.05, 0.1],
         "envelope_iterations": [250, 500, 1000], "bootstrap_resamples": 200}
SEED = 11


@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    """``run_quick`` of the small configuration, with the progress calls it made."""
    directory = tmp_path_factory.mktemp("results")
    calls = []
    quick = run_quick("stale-gaussian", directory, SEED, lambda *a: calls.append(a), SMALL)
    return quick, calls
