"""Cost of the run diagnostics (issue 14 item 5): :func:`workbench.diagnostics.diagnose_draws`
(ESS bulk and tail, split R-hat, MCSE by arviz-stats; the IMQ KSD per replicate) on draws of the
shapes the experiments' default configurations keep, beside the time of the replay that made
them. Prints one row per shape: the seconds of the diagnostics (best of ``REPEATS``) and of the
replay, and their ratio.

    python benchmarks/diagnostics_cost.py
"""

import time
from functools import partial

import numpy as np

from simulators.static import constant_staleness
from workbench.diagnostics import DIAGNOSTIC_DRAWS, diagnose_draws
from workbench.engine import replay
from workbench.models.gaussian import GaussianMeanModel
from workbench.samplers import SGLD
from workbench.test_functions import THETA, THETA_SQUARED

REPEATS = 3
SHAPES = [  # label, replicates, servers (chains per replicate), dimension, updates
    ("stale-gaussian (tau = 1)", 200, 1, 1, 1000),
    ("downpour-period", 400, 1, 1, 2000),
    ("elastic-vs-downpour (elastic)", 400, 4, 1, 2000),
    ("dsgld (8 chains, d = 2)", 10, 8, 2, 5000),
]


def best(function) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'draws of':<32} {'shape (R, C, n, d)':<22} {'diagnostics s':>13} "
          f"{'replay s':>9} {'ratio':>6}")
    for label, replicates, servers, dim, updates in SHAPES:
        model = GaussianMeanModel.generate(rng, 1000, dim, 0.0, 1.0, 1.0, 0.0)
        schedule = constant_staleness(updates, 0, n_servers=servers)
        thin = updates // DIAGNOSTIC_DRAWS

        run = partial(replay, schedule, SGLD(1e-4), model.minibatch_gradient(),
                      n_updates=updates, n_replicates=replicates, initial_position=0.0,
                      seed=1, batch_size=10, test_functions=(THETA,), thin=thin,
                      replicate_block=replicates)
        replay_seconds = best(run)
        draws = run().draws
        seconds = best(partial(diagnose_draws, draws, (THETA, THETA_SQUARED),
                               model.potential_gradient))
        print(f"{label:<32} {str(draws.shape):<22} {seconds:13.3f} {replay_seconds:9.3f} "
              f"{seconds / replay_seconds:6.2f}")


if __name__ == "__main__":
    main()
