"""The engine against a compiled reference kernel, a simple numpy loop and BlackJAX (issue 15).

Workload (issue 15's table): stale SGLD with constant staleness τ = 10 on the Gaussian mean,
N = 1000 points, minibatch 10 with replacement, (d, R) in {1, 10, 100} × {200, 10,000}.
Printed per (d, R), in million replicate-steps per second (medians over ``--rounds``
interleaved rounds; each ratio is the median of the per-round ratios, so a slow phase of the
shared machine hits numerator and denominator alike; the load average is printed):

- engine: ``workbench.engine.replay.replay`` as it is (compiled path, test-function sums of θ and
  θ²);
- compiled: the limit, a single-threaded numba kernel written only for this measurement: the
  same ring buffer of τ + 1 versions and minibatch gather, each replicate through all updates,
  θ and θ² summed in place, its random numbers drawn inside the kernel (the fastest
  generators numba has: see ``_reference``);
- compiled, numpy randomness: the same kernel fed Gaussian noise and indices drawn by numpy
  (``Generator.standard_normal`` / ``integers``, in blocks of 50 replicates and 64 updates);
  only the kernel is timed, so the gap to "engine" is what the engine pays for drawing its
  random numbers with numpy (which keeps its streams) and for the rest of its bookkeeping;
- numpy loop: the simple reference, vectorised over replicates, one numpy step per update;
- JAX backend (only if JAX is installed: the ``jax`` extra): the engine's ``[run] backend =
  "jax"`` (``workbench.engine.jax_replay.replay``: the same stale run as one XLA scan on JAX's
  default device, printed with the table), compilation excluded; its ratio to the engine is
  issue 35's GPU target (>= 50 at d = 100, R = 100,000, ``--large``);
- BlackJAX (only if the optional ``blackjax`` extra is installed): plain SGLD (BlackJAX has no
  stale gradients) as ``jit(vmap(lax.scan(sgld step)))`` in float64, compilation excluded.

Each cell runs about ``--work`` replicate-coordinate-steps (R·d·L; at least 64 updates).
``--large`` adds the cell d = 100, R = 100,000 (issue 35), under the default memory budget.
Targets (issue 15): engine/compiled >= 0.5 at every (d, R); engine/BlackJAX >= 3 at d <= 10.

Run from the repository root: ``python benchmarks/engine_kernel.py [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_throughput import Rounds, _step_size, blackjax_workload  # noqa: E402

from simulators.seeding import generator  # noqa: E402
from simulators.static import constant_staleness  # noqa: E402
from workbench.engine import replay as engine  # noqa: E402
from workbench.models.gaussian import GaussianMeanModel  # noqa: E402
from workbench.samplers import SGLD  # noqa: E402

N_DATA, BATCH, STALENESS = 1000, 10, 10
DIMS, REPLICATES = (1, 10, 100), (200, 10_000)
LARGE = (100, 100_000)  # (d, R) of ``--large``
BLOCK, CHUNK = 50, 64  # the numpy-fed reference draws like the engine: 50 replicates, 64 updates


@numba.njit(cache=True)
def _reference(first, length, read_slots, write_slots, batch, data, precision, offset, scale,
               h, s, position, ring, sums, noise, indices, draw_inside, rng):
    """Stale SGLD for replicates ``position`` (R, d) over updates first .. first+length-1.

    ring: (R, τ+1, d) the last τ + 1 versions of each replicate, read at ``read_slots[l]`` and
    written at ``write_slots[l]`` (precomputed, as the engine does: no integer division in
    the loop); sums: (R, 2, d) Σθ and Σθ².
    With ``draw_inside`` the random numbers are drawn here from ``rng``, numpy's PCG64
    ``Generator`` as numba compiles it (the fastest generator numba offers): normals by its
    ziggurat (about 4 ns each) and indices as ⌊u·N⌋ of a uniform u (about 2 ns; the bias is
    below N·2⁻⁵³; numba's ``integers`` and ``np.random.randint`` take 18 and 8 ns).
    Otherwise they come from ``noise`` (R, length, d) and ``indices`` (R, length, batch).
    """
    n_rows, _, dim = ring.shape
    n_data = data.shape[0]
    total = np.empty(dim)
    for r in range(n_rows):
        for j in range(length):
            read, write = read_slots[first + j], write_slots[first + j]
            for i in range(dim):
                total[i] = 0.0
            for m in range(batch):
                row = np.int64(rng.random() * n_data) if draw_inside else indices[r, j, m]
                for i in range(dim):
                    total[i] += data[row, i]
            for i in range(dim):
                gradient = precision * ring[r, read, i] - (offset + scale * (total[i] / batch))
                xi = rng.standard_normal() if draw_inside else noise[r, j, i]
                theta = (position[r, i] - h * gradient) + s * xi
                position[r, i] = theta
                ring[r, write, i] = theta
                sums[r, 0, i] += theta
                sums[r, 1, i] += theta * theta


class _Reference:
    """The compiled reference for one cell: fresh state per run (all replicates at 0)."""

    def __init__(self, model, n_updates: int, n_replicates: int):
        gradient = model.minibatch_gradient().kernel_spec()
        h = _step_size(model, STALENESS)
        self.constants = (gradient.data, gradient.precision, gradient.offset, gradient.scale,
                          h, np.sqrt(2 * h))
        self.n_updates, self.n_replicates, self.dim = n_updates, n_replicates, model.dim
        updates = np.arange(n_updates)
        self.slots = ((updates - np.minimum(updates, STALENESS)) % (STALENESS + 1),
                      (updates + 1) % (STALENESS + 1))

    def _state(self, rows: int):
        return (np.zeros((rows, self.dim)), np.zeros((rows, STALENESS + 1, self.dim)),
                np.zeros((rows, 2, self.dim)))

    def run_inside(self) -> None:
        """Random numbers drawn in the kernel: one call for the whole cell."""
        empty_noise, empty_indices = np.empty((0, 0, 0)), np.empty((0, 0, 0), np.int64)
        _reference(0, self.n_updates, *self.slots, BATCH, *self.constants,
                   *self._state(self.n_replicates), empty_noise, empty_indices, True,
                   np.random.default_rng(1))

    def run_fed(self) -> float:
        """numpy's random numbers, drawn per block of replicates and chunk of updates; returns
        the seconds spent in the kernel only."""
        elapsed = 0.0
        for start in range(0, self.n_replicates, BLOCK):
            rows = min(BLOCK, self.n_replicates - start)
            state = self._state(rows)
            noise_rng, batch_rng = generator(1, "noise", start), generator(1, "minibatch", start)
            for first in range(0, self.n_updates, CHUNK):
                length = min(CHUNK, self.n_updates - first)
                noise = noise_rng.standard_normal((rows, length, self.dim))
                indices = batch_rng.integers(0, N_DATA, (rows, length, BATCH))
                began = time.perf_counter()
                _reference(first, length, *self.slots, BATCH, *self.constants, *state, noise,
                           indices, False, noise_rng)
                elapsed += time.perf_counter() - began
        return elapsed


def engine_run(model, n_updates: int, n_replicates: int):
    schedule = constant_staleness(n_updates, STALENESS)
    sampler, gradient = SGLD(_step_size(model, STALENESS)), model.minibatch_gradient()

    def run():
        engine.replay(schedule, sampler, gradient, n_updates=n_updates,
                      n_replicates=n_replicates, initial_position=np.zeros(model.dim), seed=1,
                      batch_size=BATCH)

    return run


def jax_backend_run(model, n_updates: int, n_replicates: int):
    """The engine's JAX backend on the same run, or None where JAX is not installed."""
    try:
        import jax  # noqa: F401
    except ImportError:
        return None
    from workbench.engine import jax_replay

    schedule = constant_staleness(n_updates, STALENESS)
    sampler, gradient = SGLD(_step_size(model, STALENESS)), model.minibatch_gradient()

    def run():
        jax_replay.replay(schedule, sampler, gradient, n_updates=n_updates,
                          n_replicates=n_replicates, initial_position=np.zeros(model.dim),
                          seed=1, batch_size=BATCH)

    return run


def numpy_run(model, n_updates: int, n_replicates: int):
    """The simple numpy loop: all replicates at once, one vectorised step per update."""
    spec = model.minibatch_gradient().kernel_spec()
    h = _step_size(model, STALENESS)
    root = np.sqrt(2 * h)

    def run():
        rng = np.random.default_rng(1)
        ring = np.zeros((STALENESS + 1, n_replicates, model.dim))
        theta = np.zeros((n_replicates, model.dim))
        total, total_squared = np.zeros_like(theta), np.zeros_like(theta)
        for update in range(n_updates):
            stale = ring[(update - min(update, STALENESS)) % (STALENESS + 1)]
            batch = spec.data[rng.integers(0, N_DATA, (n_replicates, BATCH))].mean(axis=1)
            gradient = spec.precision * stale - (spec.offset + spec.scale * batch)
            theta = theta - h * gradient + root * rng.standard_normal(theta.shape)
            ring[(update + 1) % (STALENESS + 1)] = theta
            total += theta
            total_squared += theta * theta

    return run


def _updates(work: int, n_replicates: int, dim: int) -> int:
    updates = max(CHUNK, work // (n_replicates * dim))
    return updates - updates % CHUNK


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", type=int, default=4_000_000,
                        help="replicate × coordinate × update steps per cell (about)")
    parser.add_argument("--large", action="store_true",
                        help=f"also d = {LARGE[0]}, R = {LARGE[1]:,} (issue 35: the ring "
                             "buffer alone is about 0.9 GB there)")
    args = parser.parse_args()
    models = {d: GaussianMeanModel.generate(generator(0, "benchmark"), N_DATA, d) for d in DIMS}
    cells = [(d, r) for d in DIMS for r in REPLICATES] + ([LARGE] if args.large else [])
    workloads = {}
    for d, r in cells:
        n_updates = _updates(args.work, r, d)
        work = n_updates * r
        reference = _Reference(models[d], n_updates, r)
        workloads[("engine", d, r)] = (work, engine_run(models[d], n_updates, r))
        workloads[("compiled", d, r)] = (work, reference.run_inside)
        workloads[("fed", d, r)] = (work, reference.run_fed)
        workloads[("numpy", d, r)] = (work, numpy_run(models[d], n_updates, r))
        backend = jax_backend_run(models[d], n_updates, r)
        if backend is not None:
            workloads[("jax-backend", d, r)] = (work, backend)
        jax_run = blackjax_workload(models[d], n_updates, r)
        if jax_run is not None:
            workloads[("blackjax", d, r)] = jax_run
    for _, run in workloads.values():  # compile (numba, jax) outside the timing
        run()

    load = os.getloadavg()
    rounds = Rounds(workloads, args.rounds, scale=1e6)
    median, ratio = rounds.median, rounds.ratio
    has_jax = any(key[0] == "blackjax" for key in workloads)
    has_backend = any(key[0] == "jax-backend" for key in workloads)
    print(f"stale SGLD τ = {STALENESS}, Gaussian mean N = {N_DATA}, minibatch {BATCH} with "
          f"replacement; million replicate-steps/s, medians of {args.rounds} interleaved "
          f"rounds; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on "
          f"{os.cpu_count()} cores; numba {numba.__version__}, numpy {np.__version__}")
    if has_backend:
        from workbench.engine import jax_replay

        print(f"JAX backend: {jax_replay.device()}")
    header = ("| d, R | engine | compiled | compiled, numpy randomness | engine / compiled "
              "| engine / compiled (numpy randomness) | numpy loop | BlackJAX | "
              "engine / BlackJAX | JAX backend | JAX backend / engine |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for d, r in cells:
        jax = "- | -"
        if has_jax:
            jax = (f"{median(('blackjax', d, r)):.3g} | "
                   f"{ratio(('engine', d, r), ('blackjax', d, r)):.2f}")
        backend = "- | -"
        if has_backend:
            backend = (f"{median(('jax-backend', d, r)):.3g} | "
                       f"{ratio(('jax-backend', d, r), ('engine', d, r)):.2f}")
        print(f"| {d}, {r:,} | {median(('engine', d, r)):.3g} | {median(('compiled', d, r)):.3g} "
              f"| {median(('fed', d, r)):.3g} | {ratio(('engine', d, r), ('compiled', d, r)):.2f} "
              f"| {ratio(('engine', d, r), ('fed', d, r)):.2f} | {median(('numpy', d, r)):.3g} "
              f"| {jax} | {backend} |")
    print("targets: engine / compiled >= 0.5 everywhere; engine / BlackJAX >= 3 at d <= 10, "
          ">= 1 at d = 100")
    if not has_jax:
        print("BlackJAX: not installed (pip install '.[blackjax]' to compare)")
    if not has_backend:
        print("JAX backend: JAX not installed (pip install '.[jax]' to measure it)")


if __name__ == "__main__":
    main()
