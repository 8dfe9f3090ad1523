"""Common random numbers for stale-gaussian's invariance and slope checks (issue 33, item 2):
what ``[study] paired = ["staleness"]`` gains, judged by the checks themselves.

stale-gaussian's checks that compare grid points judge (a) the MSE of φ̂_L(θ²) across τ
(``invariance``: every pair's log ratio) and (b) the log-log slope of the variance of φ̂_L(θ)
and φ̂_L(θ²) against τ (``slope``). As shipped its points draw independent minibatches and
injected noise. Here its grid (bound designs off) runs twice per seed at the same replicates,
as shipped and at one h and one L for every τ (:data:`GRIDS`, Theorem 4's setting):

- *independent*: the study as shipped (each point its own streams; each value's error its
  own, independent of the others');
- *paired*: the same study with ``paired = ["staleness"]`` in its ``[study]`` table, so that
  replicate r of every τ sees the same minibatches and noise, consumed in the same order for
  as many updates as both run (L = L0·τ differs); the checks then judge with the covariance
  of a paired bootstrap over replicates (the invariance pairs on it, the slope by generalised
  least squares with it).

Printed per check: its verdict and Monte Carlo error (on the check's own scale) in each run,
and their ratio, per seed and the median over seeds. Nothing is tuned: the gain is what the
design gives. A ratio below 1 means paired replicates decide that check sooner (the
replicates needed scale with its square).

``--calibration N`` then asks whether the paired errors are right: one paired run of N times
the replicates, cut into N groups judged alone, the standard deviation of each check's
statistic across the groups against the error the checks state (:func:`calibration`; one
seed, so the data are fixed and the spread is Monte Carlo error alone).

    python benchmarks/common_random_numbers.py [--full] [--seeds 3] [--calibration 20]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

NAME, SEED = "stale-gaussian", 2016
CHECKS = ("invariance/mse/theta_squared", "slope/variance-vs-staleness/theta",
          "slope/variance-vs-staleness/theta_squared")


#: the grids compared: as shipped (L = L0·τ, h ∝ τ^(-2/3) L^(-1/3)), and Theorem 4's setting
#: (one h and one L at every τ, h inside the stability limit at τ = 20)
GRIDS = {"as shipped": {}, "fixed h = 2e-5, L = 2000": {"step_size": "2e-5",
                                                         "n_iterations": "2000"}}


def paired_grid(paired: bool, quick: bool, seed: int, grid: dict, replicates: int = 0):
    """(experiment, dataset) of stale-gaussian's grid (``grid``: its overrides; designs off),
    its points paired along staleness or not; ``replicates``: their count (0: the study's)."""
    from workbench.experiments import get
    from workbench.run.runner import run_experiment
    from workbench.studies.experiment import StudyExperiment
    from workbench.studies.files import loads

    shipped = get(NAME).study
    text = shipped.text
    if paired:
        text = text.replace("[study]\n", '[study]\npaired = ["staleness"]\n', 1)
    experiment = StudyExperiment(loads(text, shipped.origin))
    overrides = {"designs": False, **grid, **({"n_replicates": replicates} if replicates
                                              else {})}
    config = experiment.configure(overrides, quick=quick)
    return experiment, run_experiment(experiment, config, seed, processes=2)


def judged(experiment, dataset) -> dict:
    """The checks of :data:`CHECKS`, by name."""
    return {v.check: v for v in experiment.checks(dataset) if v.check in CHECKS}


def verdicts(paired: bool, quick: bool, seed: int, grid: dict) -> dict:
    """The checks of :data:`CHECKS` of stale-gaussian's grid (``grid``: its overrides), by
    name."""
    return judged(*paired_grid(paired, quick, seed, grid))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full configuration")
    parser.add_argument("--seeds", type=int, default=3, help="seeds, from 2016 on")
    parser.add_argument("--calibration", type=int, default=0,
                        help="groups of replicates of the calibration of the paired errors "
                             "(0: none)")
    args = parser.parse_args()
    started = time.perf_counter()
    for label, grid in GRIDS.items():
        ratios: dict[str, list[float]] = {name: [] for name in CHECKS}
        print(f"{NAME} ({'full' if args.full else 'quick'}), {label}, designs off; Monte Carlo "
              "error of each check, independent streams against common streams judged paired")
        print("seed  " + "check".ljust(44) + "independent            paired                ratio")
        for seed in range(SEED, SEED + args.seeds):
            independent = verdicts(False, not args.full, seed, grid)
            paired = verdicts(True, not args.full, seed, grid)
            for name in CHECKS:
                a, b = independent[name], paired[name]
                ratios[name].append(b.mc_error / a.mc_error)
                print(f"{seed}  {name:<44}{a.verdict:>12} {a.mc_error:9.4f}"
                      f"{b.verdict:>13} {b.mc_error:9.4f}   {ratios[name][-1]:6.2f}")
        print("median ratio over seeds (paired / independent error; replicates scale with its "
              "square):")
        for name in CHECKS:
            print(f"  {name:<44}{statistics.median(ratios[name]):6.2f}")
        print()
    if args.calibration:
        for label, grid in GRIDS.items():
            calibration(label, grid, args.calibration, not args.full)
    print(f"{time.perf_counter() - started:.0f} s")


def calibration(label: str, grid: dict, n_groups: int, quick: bool) -> None:
    """Whether the paired errors are right: one paired run of ``n_groups`` times the study's
    replicates, its replicates cut into ``n_groups`` groups of the study's size, each judged
    alone; the standard deviation of each check's statistic across the groups against the
    median error the checks state for it (the slopes; the log ratio of the MSEs at the first
    and last τ, its error from the check's log covariance). The data are the same for every
    group (one seed), so the spread is Monte Carlo error alone. A ratio near 1 within the
    stated uncertainty of a standard deviation over that many groups is calibrated; above 1,
    the errors are too small."""
    experiment, _ = paired_grid(True, quick, SEED, grid)
    size = experiment.configure({"designs": False, **grid}, quick=quick)["n_replicates"]
    experiment, dataset = paired_grid(True, quick, SEED, grid, size * n_groups)
    statistic: dict[str, list[float]] = {name: [] for name in CHECKS}
    stated: dict[str, list[float]] = {name: [] for name in CHECKS}
    for group in range(n_groups):
        part = dataset.isel(replicate=slice(group * size, (group + 1) * size))
        for name, verdict in judged(experiment, part).items():
            if name.startswith("slope"):
                statistic[name].append(verdict.observed)
                stated[name].append(verdict.mc_error)
                continue
            labels = verdict.evidence["labels"]
            covariance = np.asarray(verdict.evidence["log_covariance"])
            statistic[name].append(verdict.evidence["pair_log_ratios"][
                f"{labels[0]}/{labels[-1]}"])
            stated[name].append(math.sqrt(covariance[0, 0] + covariance[-1, -1]
                                          - 2 * covariance[0, -1]))
    spread = 1 / math.sqrt(2 * (n_groups - 1))
    print(f"calibration, {label}, paired, {n_groups} groups of {size} replicates (seed "
          f"{SEED}): SD across groups / median stated error (an SD over {n_groups} groups is "
          f"itself uncertain by about ±{spread:.0%})")
    for name in CHECKS:
        observed = float(np.std(statistic[name], ddof=1))
        median = statistics.median(stated[name])
        print(f"  {name:<44}{observed:10.3g} / {median:<10.3g} = {observed / median:5.2f}")
    print()


if __name__ == "__main__":
    main()
