"""The narrowing's trials (``workbench/run/narrowing.py``): the time to find the sweep points a
sequential look aimed at some checks needs, reading each stored point once for all its trials
(as shipped) against reading it from the store again in every trial.

An experiment (``stale-gaussian`` at full size by default; ``--experiment``, ``--quick``) is run
once into a temporary result store and its look 1 judged as a sequential run judges it; then,
for each kind of its undecided checks that more replicates or chains could decide (as the
planner aims a look: ``Track.kinds``), the narrowing is timed both ways, interleaved, over
``--repeats`` rounds. Printed: each aim's narrowed sweep (the same both ways, or the script
fails), the medians, and the median of the per-round ratios (this machine is noisy).

Run: ``python benchmarks/narrowing_trials.py [--repeats 5] [--experiment NAME] [--quick]
[--processes 2]``.
"""

from __future__ import annotations

import argparse
import io
import math
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

from bounds.sequential import Look
from workbench import experiments
from workbench.run import narrowing, runner
from workbench.run.executors import open_workers
from workbench.run.main_job import run_all
from workbench.run.until_decided import Track
from workbench.store.result_store import STORE_DIR, ResultStore

SEED = 2016


def first_look(experiment, quick: bool, out: Path, processes: int) -> Track:
    """``experiment``'s look 1, run into ``out``'s store and absorbed by a track."""
    with open_workers(processes=processes) as workers:
        (outcome,) = run_all([experiment], quick, SEED, out, workers, figures=False,
                             judge=False, keep_blocks=True, log=io.StringIO())
    track = Track(experiment, {}, experiment.configure(quick=quick), quick, seed=SEED,
                  store=ResultStore(out / STORE_DIR, experiment.name))
    track.absorb(outcome, Look(1), processes)
    return track


def narrowed(track: Track, aimed: frozenset[str]) -> tuple[dict, float]:
    """The narrowing of ``track``'s last full look for the checks ``aimed``, and its seconds."""
    full = track.full.config
    kept = {key: full[key] for key in track.grown_keys}
    start = time.perf_counter()
    sweep, _ = narrowing.narrowed_sweep(
        track.experiment, full, SEED, track.store, track.full_judged, track.full_families,
        aimed, set(track.undecided) - aimed, track.full_at,
        lambda lists: track.experiment.configure({**kept, **lists}, quick=track.quick))
    return sweep, time.perf_counter() - start


def read_every_trial(experiment, config, seed, store, loaded=None):
    """:func:`workbench.run.runner.stored_result` with no points kept between trials."""
    return runner.stored_result(experiment, config, seed, store)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--experiment", default="stale-gaussian")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    experiment = experiments.get(args.experiment)
    with tempfile.TemporaryDirectory() as out:
        track = first_look(experiment, args.quick, Path(out), args.processes)
        finite = {name: track.factor(verdict) for name, verdict in track.undecided.items()}
        aims = [frozenset(group) for group in track.kinds(
            {name: f for name, f in finite.items() if math.isfinite(f)})]
        if not aims:
            raise SystemExit(f"{args.experiment}: no undecided check more replicates or chains "
                             "could decide at look 1: nothing to narrow")
        print(f"{args.experiment}{' (quick)' if args.quick else ''}: {len(track.undecided)} "
              f"undecided checks at look 1, {len(aims)} aim(s)")
        for aimed in aims:
            once, again = [], []
            for _ in range(args.repeats):
                sweep, seconds = narrowed(track, aimed)
                once.append(seconds)
                with mock.patch.object(narrowing, "stored_result", read_every_trial):
                    sweep_again, seconds = narrowed(track, aimed)
                again.append(seconds)
                if sweep_again != sweep:
                    raise SystemExit(f"the two ways narrow differently: {sweep} against "
                                     f"{sweep_again}")
            ratio = statistics.median(o / a for o, a in zip(once, again, strict=True))
            print(f"  {len(aimed)} check(s), narrowed to {sweep or 'every point'}: points read "
                  f"once {statistics.median(once):.2f} s, in every trial "
                  f"{statistics.median(again):.2f} s (medians of {args.repeats}); ratio "
                  f"{ratio:.2f}")


if __name__ == "__main__":
    main()
