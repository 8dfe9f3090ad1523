"""Control variates from the exact oracle (issue 33, item 2): what the sharded studies'
chain-level checks gain when the exact oracle given each chain's schedule is their control
variate, judged by the checks themselves.

The ``posterior``, ``stationary``, ``invariance`` and ``growth`` checks of a sharded study
judge a value averaged over schedules, on chains each averaged over its replicates
(``workbench.systems.distributed.windows.chain_estimate``). Each study here runs once per seed
and is judged twice on the same data: as shipped (the control variate on), and with
``control_variate = false`` in those ``[[check]]`` entries (the samples' own average). Printed
per check: the verdict and the Monte Carlo error each way and their ratio (the replicates a
check needs scale with its square), and, for an undecided check, whether the chains' schedules
alone keep it undecided (the error they leave with every replicate averaged out is a floor no
replicate count goes below); then the median ratio per check kind over the seeds. Nothing is
tuned: the gain is what the design gives.

``--calibration N`` then asks whether the stated errors are right: each study runs N times
(seeds 2016 on; each seed draws its own data, schedules and noise), and for every chain-level
check whose true difference is about zero (the exact oracle says so: FSGLD's stationary value,
the corrected D-SGLD chain's window mean) the standard deviation of its difference across the
seeds is set against the median error the verdicts state, with and without the control variate
(about 1 when the errors are right; an SD over N seeds is itself uncertain by about 1/√(2N)),
beside the share of seeds each verdict came out.

    python benchmarks/control_variates.py [--full] [--seeds 1] [--studies fsgld-gaussian ...]
                                          [--calibration 100]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

SEED = 2016
STUDIES = ("fsgld-gaussian", "dsgld-imbalance")
#: the checks of each study whose true difference is about zero (``--calibration``)
NULL_CHECKS = {
    "fsgld-gaussian": ("stationary/fsgld/T=1", "stationary/fsgld/T=10",
                       "stationary/fsgld/T=100"),
    "dsgld-imbalance": ("posterior/corrected/mean/component=0",
                        "posterior/corrected/mean/component=1"),
}
#: the check kinds that take the control variate (``control_variate`` in their ``[[check]]``)
KINDS = ("posterior", "stationary", "invariance", "growth")


def experiments(name: str):
    """The shipped study ``name`` (control variate on) and the same with it off."""
    from workbench.experiments import get
    from workbench.studies.experiment import StudyExperiment
    from workbench.studies.files import loads

    shipped = get(name).study
    text = shipped.text
    for kind in KINDS:
        text = text.replace(f'kind = "{kind}"', f'kind = "{kind}"\ncontrol_variate = false')
    return get(name), StudyExperiment(loads(text, shipped.origin))


def judged(name: str, quick: bool, seed: int) -> tuple[dict, dict, float]:
    """The chain-level verdicts of one run of ``name``, with and without the control variate,
    by check name, and the run's seconds."""
    from workbench.run.runner import run_experiment

    with_cv, without = experiments(name)
    start = time.perf_counter()
    dataset = run_experiment(with_cv, with_cv.configure({}, quick=quick), seed, processes=2)
    seconds = time.perf_counter() - start

    def chain_level(experiment):
        return {v.check: v for v in experiment.checks(dataset)
                if v.check.split("/")[0] in KINDS}

    return chain_level(with_cv), chain_level(without), seconds


def schedules_keep_it(verdict) -> str:
    """What the verdict's evidence says where the chains' schedules keep it undecided."""
    reason = verdict.evidence.get("cannot_decide", "")
    return "the schedules keep it undecided" if "chains" in reason else ""


def calibration(name: str, quick: bool, n_seeds: int) -> None:
    """The spread of each of :data:`NULL_CHECKS`' differences across ``n_seeds`` seeds against
    the median error its verdicts state, with and without the control variate."""
    ways = {"samples' average": 1, "control variate": 0}
    rows: dict[tuple[str, str], list] = {}
    for seed in range(SEED, SEED + n_seeds):
        judged_both = judged(name, quick, seed)
        for way, index in ways.items():
            for check in NULL_CHECKS[name]:
                rows.setdefault((check, way), []).append(judged_both[index][check])
    print(f"{name} ({'quick' if quick else 'full'}), {n_seeds} seeds: SD of the difference "
          "across seeds over the median stated error (1/√(2N) = "
          f"{1 / math.sqrt(2 * n_seeds):.2f} of it is chance)")
    print("check".ljust(42) + "way".ljust(18) + "SD / error   holds  violated  inconclusive")
    for (check, way), verdicts in rows.items():
        spread = statistics.stdev(v.difference for v in verdicts)
        error = statistics.median(v.mc_error for v in verdicts)
        shares = [sum(v.verdict == word for v in verdicts) / len(verdicts)
                  for word in ("holds", "violated", "inconclusive")]
        print(f"{check:<42}{way:<18}{spread / error:10.2f}  "
              + "  ".join(f"{share:8.2f}" for share in shares))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full configuration")
    parser.add_argument("--seeds", type=int, default=1, help="seeds, from 2016 on")
    parser.add_argument("--studies", nargs="+", default=list(STUDIES))
    parser.add_argument("--calibration", type=int, default=0,
                        help="seeds of the calibration of the stated errors (0: none)")
    args = parser.parse_args()
    if args.calibration:
        for name in args.studies:
            calibration(name, not args.full, args.calibration)
        return
    size = "full" if args.full else "quick"
    for name in args.studies:
        ratios: dict[str, list[float]] = {}
        print(f"{name} ({size}): Monte Carlo error of each chain-level check, the samples' "
              "average against the exact oracle's as its control variate")
        print("seed  " + "check".ljust(46) + "samples' average       control variate      "
              "ratio")
        for seed in range(SEED, SEED + args.seeds):
            on, off, seconds = judged(name, not args.full, seed)
            for check, plain in off.items():
                cv = on[check]
                ratio = cv.mc_error / plain.mc_error if plain.mc_error > 0 else float("nan")
                ratios.setdefault(check.split("/")[0], []).append(ratio)
                print(f"{seed}  {check:<46}{plain.verdict:>12} {plain.mc_error:9.3g}"
                      f"{cv.verdict:>13} {cv.mc_error:9.3g}   {ratio:6.3f}  "
                      + schedules_keep_it(cv))
            decided = sum(v.verdict != "inconclusive" for v in on.values())
            before = sum(v.verdict != "inconclusive" for v in off.values())
            print(f"      decided: {before} of {len(off)} without, {decided} of {len(on)} with "
                  f"the control variate (run {seconds:.1f} s)")
        print("median ratio per check kind (control variate / samples' average; replicates "
              "scale with its square):")
        for kind, values in ratios.items():
            print(f"  {kind:<12}{statistics.median(values):7.3f}  "
                  f"(from {min(values):.3f} to {max(values):.3f}, {len(values)} checks)")
        print()


if __name__ == "__main__":
    main()
