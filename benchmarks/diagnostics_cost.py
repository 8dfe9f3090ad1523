"""Cost of the run diagnostics (issue 14 item 5): :func:`workbench.stats.diagnostics.diagnose_draws`
(ESS bulk and tail, split R-hat, MCSE by arviz-stats; the IMQ KSD per replicate) on draws of the
shapes the experiments' default configurations keep, beside the time of the replay that made
them. Prints one row per shape: the seconds of the diagnostics (best of ``REPEATS``) and of the
replay, and their ratio.

Then, measured in the same run (issue 15), the compiled paths against the numpy formulations
they replace, which the tests keep and compare with bit for bit: the IMQ Stein kernel against
the straightforward ``(n, n, d)`` formula at the experiments' sizes, and the CNN's full-data
gradient at the KSD draws of a ``stale-nn-workers`` replicate (25 positions, the 1438 digits)
computed with the numpy formulations of every layer (``tests/workbench/models/
numpy_convolution.py``: im2col, bias, pooling, ReLU, masks, routing, bias sums and col2im,
which the compiled loops replace) against the model as it is. Rows: old and new milliseconds
(best of ``REPEATS``, old and new interleaved) and old/new. BLAS runs on one thread, as in the
pool workers.

Last, the KSD of every replicate at once
(:func:`workbench.stats.diagnostics.kernel_stein_discrepancies`, the Gram matrix's upper triangle in
one compiled pass per block of replicates) against the per-replicate computation it replaced
(``imq_stein_kernel`` and numpy's ``mean``, one replicate at a time, as ``diagnose`` did); the tests
compare both with the plain numpy formula bit for bit.

    python benchmarks/diagnostics_cost.py
"""

import dataclasses
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from simulators.static import constant_staleness  # noqa: E402
from tests.workbench.models.numpy_convolution import NumpyNetwork  # noqa: E402
from tests.workbench.test_diagnostics import straightforward_stein_kernel  # noqa: E402
from workbench.core.phi import THETA, THETA_SQUARED  # noqa: E402
from workbench.engine.replay import replay  # noqa: E402
from workbench.models.gaussian import GaussianMeanModel  # noqa: E402
from workbench.samplers import SGLD  # noqa: E402
from workbench.stats.diagnostics import DIAGNOSTIC_DRAWS, diagnose_draws  # noqa: E402

REPEATS = 3
SHAPES = [  # label, replicates, servers (chains per replicate), dimension, updates
    ("stale-gaussian (tau = 1)", 200, 1, 1, 1000),
    ("downpour-period", 400, 1, 1, 2000),
    ("elastic-vs-downpour (elastic)", 400, 4, 1, 2000),
    ("dsgld (8 chains, d = 2)", 10, 8, 2, 5000),
]


KERNEL_SHAPES = [  # label, draws n, dimension d
    ("downpour-period, stale-gaussian", 200, 1),
    ("dsgld (d = 2)", 200, 2),
    ("d = 10", 200, 10),
    ("stale-nn-workers cnn (quick)", 25, 1722),
    ("stale-nn-workers mlp (quick)", 25, 3760),
]

BATCHED_SHAPES = [  # label, replicates R, draws n, dimension d
    ("R = 200, n = 100, d = 1", 200, 100, 1),
    ("R = 200, n = 100, d = 10", 200, 100, 10),
    ("downpour-period (per point)", 400, 200, 1),
    ("stale-blr-speedup (per point)", 24, 150, 123),
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


def old_and_new(old, new) -> tuple[float, float]:
    """Best seconds of ``old`` and ``new`` over ``REPEATS`` interleaved rounds."""
    times = {old: [], new: []}
    for _ in range(REPEATS):
        for function in (old, new):
            started = time.perf_counter()
            function()
            times[function].append(time.perf_counter() - started)
    return min(times[old]), min(times[new])


def compiled_against_numpy() -> None:
    from workbench.experiments import EXPERIMENTS
    from workbench.stats.diagnostics import imq_stein_kernel
    from workbench.systems.asynchronous.models import network_model

    rng = np.random.default_rng(1)
    print(f"\n{'compiled vs numpy':<32} {'shape':<22} {'old ms':>9} {'new ms':>9} "
          f"{'old/new':>8}")
    for label, n, dim in KERNEL_SHAPES:
        x, s = rng.standard_normal((n, dim)), rng.standard_normal((n, dim))
        imq_stein_kernel(x, x, s, s)  # compiled (or loaded from the cache) before timing
        old, new = old_and_new(partial(straightforward_stein_kernel, x, x, s, s),
                               partial(imq_stein_kernel, x, x, s, s))
        print(f"{'IMQ kernel: ' + label:<32} {f'n={n}, d={dim}':<22} {old * 1e3:9.2f} "
              f"{new * 1e3:9.2f} {old / new:8.2f}")
    experiment = EXPERIMENTS["stale-nn-workers"]
    config = experiment.configure(quick=True)
    model = network_model(experiment.name, config, 0, "cnn")
    reference = NumpyNetwork(**{field.name: getattr(model, field.name)
                                for field in dataclasses.fields(model)})
    theta = model.initial_position(rng, (25,))
    model.potential_gradient(theta[:1])
    old, new = partial(reference.potential_gradient, theta), partial(model.potential_gradient,
                                                                     theta)
    old_seconds, new_seconds = old_and_new(old, new)
    print(f"{'CNN full-data gradient':<32} {'25 x d=' + str(model.dim):<22} "
          f"{old_seconds * 1e3:9.1f} {new_seconds * 1e3:9.1f} {old_seconds / new_seconds:8.2f}")


def batched_against_per_replicate() -> None:
    from workbench.stats.diagnostics import imq_stein_kernel, kernel_stein_discrepancies

    rng = np.random.default_rng(2)
    print(f"\n{'KSD of every replicate':<32} {'shape (R, n, d)':<22} {'per-rep ms':>10} "
          f"{'batched ms':>10} {'ratio':>6}")
    for label, replicates, n, dim in BATCHED_SHAPES:
        x = rng.standard_normal((replicates, n, dim))
        s = -x + 0.1 * rng.standard_normal(x.shape)
        kernel_stein_discrepancies(x[:1], s[:1])  # compiled (or loaded) before timing

        def per_replicate(x=x, s=s):  # as diagnose did before: the compiled kernel, mean
            return [np.sqrt(max(imq_stein_kernel(c, c, t, t).mean(), 0.0))
                    for c, t in zip(x, s, strict=True)]

        old, new = old_and_new(per_replicate, partial(kernel_stein_discrepancies, x, s))
        assert np.array_equal(per_replicate(), kernel_stein_discrepancies(x, s))
        print(f"{label:<32} {str(x.shape):<22} {old * 1e3:10.1f} {new * 1e3:10.1f} "
              f"{old / new:6.2f}")


if __name__ == "__main__":
    from workbench.run.pool import one_blas_thread

    with one_blas_thread():
        main()
        compiled_against_numpy()
        batched_against_per_replicate()
