"""Sweep scaling: an experiment's sweep (``stale-gaussian`` by default) in one process and in a
pool of two.

The default configuration (of ``stale-gaussian``: 6 staleness values, 200 replicates,
L = 1000·τ; ``--experiment`` and ``--set`` choose another) is run through
``workbench.run.runner.run_sweep`` without a result store, so every point is computed. A sweep
of fewer points than processes speeds up only as far as its points split (into replicate
blocks, or a topic-model point's samplers), which the pooled run's description counts. Serial and
pooled runs are interleaved round by round; the speed-up is the median of the per-round ratios
(this machine is shared and noisy). The pool is opened inside the timed region, as a user's
``workbench run`` would. Target on 2 cores: >= 1.7x.

As a control, each round also times a pure-Python busy loop of about the serial sweep's length
once in one process and twice side by side in two: the ratio is the parallelism the machine
actually offered during the measurement (2.0 on two idle cores). When it is well below 2,
other work shares the cores and the sweep's speed-up is bounded by it.

Run: ``python benchmarks/sweep_scaling.py [--repeats 5] [--processes 2] [--quick]
[--experiment NAME] [--set KEY=VALUE ...]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ProcessPoolExecutor

from workbench import experiments
from workbench.core.parameters import parse_assignment
from workbench.run.executors import open_workers
from workbench.run.runner import run_sweep


def timed_sweep(experiment, config, processes: int) -> tuple[float, str]:
    start = time.perf_counter()
    with open_workers(processes=processes) as workers:
        result = run_sweep(experiment, config, 2016, workers=workers)
    return time.perf_counter() - start, result.describe()


def spin(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i
    return total


def available_parallelism(processes: int, iterations: int) -> float:
    start = time.perf_counter()
    spin(iterations)
    alone = time.perf_counter() - start
    with ProcessPoolExecutor(processes) as pool:
        pool.submit(int).result()
        start = time.perf_counter()
        list(pool.map(spin, [iterations] * processes))
        together = time.perf_counter() - start
    return processes * alone / together


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="the quick configuration")
    parser.add_argument("--experiment", default="stale-gaussian", help="a built-in experiment")
    parser.add_argument("--set", dest="assignments", action="append", default=[],
                        metavar="KEY=VALUE", help="override a parameter (TOML value)")
    args = parser.parse_args()
    experiment = experiments.get(args.experiment)
    config = experiment.configure(dict(parse_assignment(a) for a in args.assignments),
                                  quick=args.quick)
    rounds, control = [], []
    for _ in range(args.repeats):
        serial, _ = timed_sweep(experiment, config, 1)
        pooled, described = timed_sweep(experiment, config, args.processes)
        rounds.append((serial, pooled))
        control.append(available_parallelism(args.processes, int(serial * 2e7)))
    speedup = statistics.median(s / p for s, p in rounds)
    changed = "".join(f", {a}" for a in args.assignments)
    print(f"{args.experiment} sweep ({'quick' if args.quick else 'default'} configuration"
          f"{changed}; {described}); medians of {args.repeats} interleaved rounds")
    print(f"  1 process              {statistics.median(s for s, _ in rounds):8.2f} s")
    print(f"  {args.processes} processes            "
          f"{statistics.median(p for _, p in rounds):8.2f} s")
    print(f"  speed-up               {speedup:8.2f} x               (stale-gaussian's target: "
          ">= 1.7 on 2 cores)")
    print(f"  control: parallelism the machine offered {statistics.median(control):.2f} x "
          f"(busy loop in {args.processes} processes; {args.processes}.00 when idle)")
    share = statistics.median(s / p / c for (s, p), c in zip(rounds, control, strict=True))
    print(f"  speed-up / offered     {share:8.2f}                 (1.00: the sweep used all the "
          "parallelism on offer)")


if __name__ == "__main__":
    main()
