"""The negative control of ``protocols-networks`` (issue 32): the study run as its schedules say,
and again with every worker reading parameters ``--factor`` times as stale as they say.

The second run is the same study, seed and replicates with one change: every gradient of the
replayed schedules reads the master version factor·τ updates back instead of τ
(:meth:`simulators.schedule.Schedule.with_staleness_scaled`, patched into
:func:`workbench.systems.asynchronous.run.schedule_for`; the pool's processes are forked, so they
inherit it). One-worker points have no staleness and elastic chains read no stale parameters,
so only downpour's four-worker points change (the test
``test_twice_as_stale_changes_nothing_without_staleness_and_doubles_it_with_four`` checks that
bit for bit). Printed, for every check: the verdict of each run with its gap ± Monte Carlo
error (positive when the check's order holds), and the mean staleness of the four-worker points.

The control is met when a check that is not ``violated`` as scheduled comes out ``violated`` at
``--factor 2``: ``downpour/cnn/loss-falls/P=1->4``, the held-out log-loss of the individual
samples, is the one the study file names (its comment quotes the numbers).

    python benchmarks/twice_stale_control.py [--factor 2] [--seed 2016] [--processes 2] [--quick]
"""

from __future__ import annotations

import argparse
import time

from bounds.verdict import VIOLATED


def run(factor: int, quick: bool, seed: int, processes: int):
    """The study's dataset and verdicts with every read ``factor`` times as stale (1: as
    scheduled, the schedules untouched)."""
    import workbench.systems.asynchronous.run as held_out_run
    from workbench import experiments
    from workbench.run.runner import run_experiment

    experiment = experiments.get("protocols-networks")
    scheduled = held_out_run.schedule_for
    if factor != 1:
        held_out_run.schedule_for = (
            lambda *a, **k: scheduled(*a, **k).with_staleness_scaled(factor))
    try:
        dataset = run_experiment(experiment, experiment.configure(quick=quick), seed=seed,
                                 processes=processes)
    finally:
        held_out_run.schedule_for = scheduled
    return dataset, experiment.checks(dataset)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2016)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    arguments = parser.parse_args()
    results = {}
    for factor in (1, arguments.factor):
        started = time.perf_counter()
        dataset, verdicts = run(factor, arguments.quick, arguments.seed, arguments.processes)
        staleness = dataset["mean_staleness"].sel(workers=4).values
        print(f"factor {factor}: {time.perf_counter() - started:.1f} s; mean staleness of "
              f"downpour's four-worker points {', '.join(f'{s:.2f}' for s in staleness)}",
              flush=True)
        results[factor] = {v.check: v for v in verdicts}
    print(f"\n{'check':34s} {'as scheduled':>28s} {f'{arguments.factor} times as stale':>28s}")
    met = []
    for check, scheduled in results[1].items():
        stale = results[arguments.factor][check]
        print(f"{check:34s} " + " ".join(
            f"{v.verdict:>12s} {v.observed:+8.4f} ± {v.mc_error:.4f}" for v in (scheduled, stale)))
        if stale.verdict == VIOLATED and scheduled.verdict != VIOLATED:
            met.append(f"{check} (z* = {stale.z_threshold:.2f}, margin {stale.margin:g})")
    print("\nviolated only when read", f"{arguments.factor} times as stale:",
          ", ".join(met) if met else "none")


if __name__ == "__main__":
    main()
