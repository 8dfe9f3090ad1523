"""The replay's running sums and the federated simulator against their former numpy versions.

Three parts, each timed in one run against the module as it was at ``--before`` (default
9aaf845, loaded from git), interleaved repeat by repeat, with the ratio and whether the results
are bit-identical:

- ``Accumulator.add`` (:mod:`workbench.engine.running_sums`) over a whole replay in fsgld-gaussian's
  quick shape: 12,000 updates of 3 replicates x 20 chains, d = 2, chunks of 2,688 updates,
  20 log-spaced checkpoints, with the D-SGLD test functions θ and θθᵀ and with θ and θ²;
- ``THETA_OUTER`` alone on one such chunk;
- ``FederatedRounds.simulate`` in fsgld-gaussian's shapes: 4 clients, 20 chains, 12,000
  updates, T = 1, 10 and 100 local updates.

Run: ``python benchmarks/accumulator_passes.py [--repeats 7] [--before REV]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from simulator_throughput import identical, module_at

from simulators.federated import FederatedRounds
from workbench.core.phi import THETA, THETA_SQUARED, TestFunction
from workbench.engine.replay import log_checkpoints
from workbench.engine.replay_setup import Accumulator
from workbench.systems.distributed.windows import THETA_OUTER

BEFORE = "9aaf845"  # the last commit with the cumsum accumulator and the per-chain simulator
N_UPDATES, SHAPE, CHUNK = 12_000, (3, 20, 2), 2_688


def _interleaved(after, before, repeats: int):
    """Median seconds of ``after()`` and ``before()``, alternated; and their last results."""
    seconds = {"after": [], "before": []}
    results = {}
    for _ in range(repeats):
        for name, run in (("after", after), ("before", before)):
            start = time.perf_counter()
            results[name] = run()
            seconds[name].append(time.perf_counter() - start)
    return (statistics.median(seconds["after"]), statistics.median(seconds["before"]),
            results["after"], results["before"])


def _replay_sums(accumulator_class, functions, positions, checkpoints):
    accumulator = accumulator_class(functions, checkpoints, SHAPE[:2], 0, 1e6)
    for first in range(0, N_UPDATES, CHUNK):
        accumulator.add(positions[first:first + CHUNK], first)
    return accumulator.result(positions[-1])


def _same_replay(a, b) -> bool:
    return (a.diverged_at.tobytes() == b.diverged_at.tobytes()
            and all(a.averages[k].tobytes() == b.averages[k].tobytes() for k in a.averages))


def _row(name, after, before, same):
    print(f"  {name:40s} {after * 1e3:9.1f} {before * 1e3:10.1f} {before / after:8.1f}x "
          f"{'yes' if same else 'NO':>9s}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--before", default=BEFORE)
    args = parser.parse_args()
    old_engine = module_at(args.before, "workbench/engine/replay.py")
    old_windows = module_at(args.before, "workbench/systems/distributed/windows.py")
    old_federated = module_at(args.before, "simulators/federated.py")
    if not (old_engine and old_windows and old_federated):
        raise SystemExit(f"cannot load the modules at {args.before} from git")
    old_outer = TestFunction("theta_outer", old_windows._outer)
    positions = np.random.default_rng(0).standard_normal((N_UPDATES,) + SHAPE)
    positions[7_000:, 1, 3] = np.nan  # one chain diverges
    checkpoints = log_checkpoints(N_UPDATES, 20)
    print(f"median of {args.repeats} interleaved repeats; before = {args.before}")
    print(f"  {'part':40s} {'after ms':>9s} {'before ms':>10s} {'speed-up':>9s} "
          f"{'identical':>9s}")
    for label, new, old in (("accumulator, theta + theta_outer", (THETA, THETA_OUTER),
                             (THETA, old_outer)),
                            ("accumulator, theta + theta_squared", (THETA, THETA_SQUARED),
                             (THETA, THETA_SQUARED))):
        _replay_sums(Accumulator, new, positions, checkpoints)  # compiled and warm
        after, before, a, b = _interleaved(
            lambda new=new: _replay_sums(Accumulator, new, positions, checkpoints),
            lambda old=old: _replay_sums(old_engine.Accumulator, old, positions, checkpoints),
            args.repeats)
        _row(label, after, before, _same_replay(a, b))
    chunk = positions[:CHUNK]
    after, before, a, b = _interleaved(lambda: THETA_OUTER(chunk), lambda: old_outer(chunk),
                                       args.repeats)
    _row(f"theta_outer, one chunk {chunk.shape}", after, before, a.tobytes() == b.tobytes())
    for local in (1, 10, 100):
        fields = dict(client_probabilities=(0.25,) * 4, local_updates=local, n_chains=20)
        system, old_system = FederatedRounds(**fields), old_federated.FederatedRounds(**fields)
        after, before, a, b = _interleaved(lambda s=system: s.simulate(N_UPDATES, 5),
                                           lambda s=old_system: s.simulate(N_UPDATES, 5),
                                           args.repeats)
        _row(f"federated simulate, T = {local}", after, before, identical(a, b))


if __name__ == "__main__":
    main()
