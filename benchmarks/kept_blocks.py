"""What kept replicate blocks save a sequential check (issue 33): the looks of an experiment,
each with twice the replicates of the last, with the blocks kept (a look computes only the
replicates the last one did not have) against without (every look computes all of them, as
before blocks were kept).

Each round runs the looks ``--looks`` (numbers; look k has 2^(k−1) times the configured
replicates; default 1 2 3) of ``--experiment`` (``stale-gaussian`` at its quick size by
default) through ``workbench.run.main_job.run_all`` into a fresh output
directory, once keeping blocks and once not, in alternating order; the checks are not judged
(their time is the same either way). Printed: each look's median seconds, the total, and the
median of the per-round ratios kept/recomputed (this machine is shared and noisy), with the
load average. Both ways store the same points (the tests check that bit for bit).

Run from the repository root: ``python benchmarks/kept_blocks.py [--rounds 3] [--looks 1 2 3]
[--processes 2] [--experiment NAME] [--full]``.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import tempfile
import time
from pathlib import Path

from workbench import experiments
from workbench.run.executors import open_workers
from workbench.run.main_job import run_all
from workbench.run.until_decided import replicate_keys


def looks(experiment, quick: bool, numbers: list[int], processes: int,
          keep: bool) -> list[float]:
    """Seconds of each look, into a fresh output directory."""
    first = experiment.configure(quick=quick)
    seconds = []
    with tempfile.TemporaryDirectory() as out, open_workers(processes=processes) as workers:
        for look in numbers:
            config = experiment.configure(
                {key: first[key] * 2 ** (look - 1) for key in replicate_keys(first)},
                quick=quick)
            started = time.perf_counter()
            (outcome,) = run_all([experiment], False, 2016, Path(out), workers, figures=False,
                                 judge=False, configs=[config], log=io.StringIO(),
                                 keep_blocks=keep)
            seconds.append(time.perf_counter() - started)
            if outcome.error:
                raise SystemExit(outcome.error)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--looks", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--experiment", default="stale-gaussian")
    parser.add_argument("--full", action="store_true", help="the default size, not the quick")
    args = parser.parse_args()
    experiment = experiments.get(args.experiment)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {args.experiment} "
          f"({'full' if args.full else 'quick'}), looks {' '.join(map(str, args.looks))}, "
          f"{args.processes} processes, {args.rounds} rounds")
    looks(experiment, not args.full, [1], args.processes, True)  # compile before timing
    times: dict[bool, list[list[float]]] = {True: [], False: []}
    for round_number in range(args.rounds):
        for keep in ((True, False) if round_number % 2 == 0 else (False, True)):
            times[keep].append(looks(experiment, not args.full, args.looks, args.processes,
                                     keep))
    print(f"{'look':<6} {'recomputed s':>13} {'kept s':>8}")
    for index, look in enumerate(args.looks):
        print(f"{look:<6} {statistics.median(r[index] for r in times[False]):>13.2f} "
              f"{statistics.median(r[index] for r in times[True]):>8.2f}")
    totals = {keep: [sum(r) for r in rounds] for keep, rounds in times.items()}
    ratios = [k / r for k, r in zip(totals[True], totals[False], strict=True)]
    print(f"{'total':<6} {statistics.median(totals[False]):>13.2f} "
          f"{statistics.median(totals[True]):>8.2f}")
    print(f"kept/recomputed, median of the rounds' ratios: {statistics.median(ratios):.2f} "
          f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
