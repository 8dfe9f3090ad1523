"""Common random numbers (issue 33, item 2): what ``[study] paired`` gains, judged by the
checks themselves.

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
  of a paired bootstrap over replicates (the invariance each pair's log ratio with it, the
  slope its weighted fit with the error through it, a sandwich).

The same for stale-nn-workers' orderings of the test loss over the workers (seed 001 §5.2;
a model without an oracle, its ordering's pairs judged on their paired differences), with
``paired = ["workers"]``.

Printed per check: its verdict and Monte Carlo error (on the check's own scale) in each run,
and their ratio, per seed and the median over seeds. Nothing is tuned: the gain is what the
design gives. A ratio below 1 means paired replicates decide that check sooner (the
replicates needed scale with its square).

``--calibration N`` then asks whether stale-gaussian's paired errors are right: one paired run
of N times the replicates, cut into N groups judged alone, the standard deviation of each
check's statistic across the groups against the error the checks state
(:func:`calibration`; one seed, so the data are fixed and the spread is Monte Carlo error
alone). ``--speed-up N`` asks the same of the speed-ups' errors on stale-blr-speedup paired
along its workers (:func:`speedup_calibration`: log S_P of each group against the paired
crossings' bootstrap error and the independent one); with ``--independent``, of the study as
shipped (every worker count its own streams, the replicates' starts common), which its
speed-up check judges paired by those starts.

    python benchmarks/common_random_numbers.py [--full] [--seeds 3] [--calibration 20]
                                               [--speed-up 30 [--independent]]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

SEED = 2016
NAME = "stale-gaussian"
CHECKS = ("invariance/mse/theta_squared", "slope/variance-vs-staleness/theta",
          "slope/variance-vs-staleness/theta_squared")
#: the network study whose ordering over the workers is compared (:func:`network_orderings`)
NETWORKS = "stale-nn-workers"
#: the study whose speed-ups' paired errors are calibrated (:func:`speedup_calibration`)
SPEEDUP = "stale-blr-speedup"


#: the grids compared: as shipped (L = L0·τ, h ∝ τ^(-2/3) L^(-1/3)), and Theorem 4's setting
#: (one h and one L at every τ, h inside the stability limit at τ = 20)
GRIDS = {"as shipped": {}, "fixed h = 2e-5, L = 2000": {"step_size": "2e-5",
                                                         "n_iterations": "2000"}}


def run_study(name: str, dim: str, paired: bool, quick: bool, seed: int, overrides: dict,
              starts_paired: bool = True):
    """(experiment, dataset) of the shipped study ``name`` with ``overrides``, its points
    paired along ``dim`` (``[study] paired``) or not; ``starts_paired`` false judges a model
    without an oracle's points as independent where they share their starts alone
    (``[study] pair_common_starts = false``)."""
    from workbench.experiments import get
    from workbench.run.runner import run_experiment
    from workbench.studies.experiment import StudyExperiment
    from workbench.studies.files import loads

    shipped = get(name).study
    text = shipped.text
    if paired:
        text = text.replace("[study]\n", f'[study]\npaired = ["{dim}"]\n', 1)
    if not starts_paired:
        text = text.replace("[study]\n", "[study]\npair_common_starts = false\n", 1)
    experiment = StudyExperiment(loads(text, shipped.origin))
    config = experiment.configure(overrides, quick=quick)
    return experiment, run_experiment(experiment, config, seed, processes=2)


def paired_grid(paired: bool, quick: bool, seed: int, grid: dict, replicates: int = 0):
    """(experiment, dataset) of stale-gaussian's grid (``grid``: its overrides; designs off),
    its points paired along staleness or not; ``replicates``: their count (0: the study's)."""
    overrides = {"designs": False, **grid, **({"n_replicates": replicates} if replicates
                                              else {})}
    return run_study(NAME, "staleness", paired, quick, seed, overrides)


def judged(experiment, dataset) -> dict:
    """The checks of :data:`CHECKS`, by name."""
    return {v.check: v for v in experiment.checks(dataset) if v.check in CHECKS}


def verdicts(paired: bool, quick: bool, seed: int, grid: dict) -> dict:
    """The checks of :data:`CHECKS` of stale-gaussian's grid (``grid``: its overrides), by
    name."""
    return judged(*paired_grid(paired, quick, seed, grid))


def compare(label: str, seeds: range, judge) -> None:
    """Print, per seed, each check's verdict and Monte Carlo error without and with pairing
    (``judge(paired, seed)``: the verdicts by name) and the median ratio over seeds."""
    ratios: dict[str, list[float]] = {}
    print(f"{label}; Monte Carlo error of each check, independent streams against common "
          "streams judged paired")
    print("seed  " + "check".ljust(44) + "independent            paired                ratio")
    for seed in seeds:
        independent, paired = judge(False, seed), judge(True, seed)
        for name, a in independent.items():
            b = paired[name]
            ratios.setdefault(name, []).append(b.mc_error / a.mc_error)
            print(f"{seed}  {name:<44}{a.verdict:>12} {a.mc_error:9.4f}"
                  f"{b.verdict:>13} {b.mc_error:9.4f}   {ratios[name][-1]:6.2f}")
    print("median ratio over seeds (paired / independent error; replicates scale with its "
          "square):")
    for name, values in ratios.items():
        print(f"  {name:<44}{statistics.median(values):6.2f}")
    print()


def network_orderings(paired: bool, quick: bool, seed: int) -> dict:
    """stale-nn-workers' orderings of the test loss over the workers (seed 001 §5.2), by
    name, its points paired along ``workers`` or, as independent points, not (their common
    starts not paired either)."""
    experiment, dataset = run_study(NETWORKS, "workers", paired, quick, seed, {},
                                    starts_paired=paired)
    return {v.check: v for v in experiment.checks(dataset) if v.kind == "ordering"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full configuration")
    parser.add_argument("--seeds", type=int, default=3, help="seeds, from 2016 on")
    parser.add_argument("--calibration", type=int, default=0,
                        help="groups of replicates of the calibration of the paired errors "
                             "(0: none)")
    parser.add_argument("--speed-up", type=int, default=0,
                        help="groups of replicates of the calibration of the paired "
                             "speed-ups' errors alone (0: none; the other parts then run too)")
    parser.add_argument("--independent", action="store_true",
                        help="with --speed-up: the study as shipped, each worker count on its "
                             "own streams (the replicates' starts common)")
    args = parser.parse_args()
    started = time.perf_counter()
    quick, seeds = not args.full, range(SEED, SEED + args.seeds)
    if args.speed_up:
        speedup_calibration(args.speed_up, quick, paired=not args.independent)
        print(f"{time.perf_counter() - started:.0f} s")
        return
    size = "full" if args.full else "quick"
    for label, grid in GRIDS.items():
        compare(f"{NAME} ({size}), {label}, designs off", seeds,
                lambda paired, seed, grid=grid: verdicts(paired, quick, seed, grid))
    compare(f"{NETWORKS} ({size}), paired along workers", seeds,
            lambda paired, seed: network_orderings(paired, quick, seed))
    if args.calibration:
        for label, grid in GRIDS.items():
            calibration(label, grid, args.calibration, quick)
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


def speedup_calibration(n_groups: int, quick: bool, paired: bool = True) -> None:
    """Whether the speed-ups' errors are right: stale-blr-speedup, one run of ``n_groups``
    times its replicates (seeding blocks of its size, so every group is a run of its own),
    each group's log S_P (the held-out log-loss's variance curves crossing the group's
    target, as :func:`bounds.speedup.speedup_check` finds them) against the errors stated
    for it: the paired crossings' bootstrap's (:func:`bounds.speedup.paired_crossing_covariance`,
    1000 resamples of the same replicates at every worker count) and the independent one
    (each curve's crossing error from its variance error over its local log-log slope, added
    in quadrature). ``paired``: the study paired along its workers (common streams); else as
    shipped, each worker count its own streams, its replicates sharing only their starts
    (replicate r of every worker count starts from the same θ₀)."""
    from bounds.speedup import crossing, paired_crossing_covariance
    from workbench.experiments import get

    size = get(SPEEDUP).configure(quick=quick)["n_replicates"]
    _, dataset = run_study(SPEEDUP, "workers", paired, quick, SEED,
                           {"n_replicates": size * n_groups, "replicate_block": size})
    curves = dataset.sel(test_function="log_loss")
    workers = curves["workers"].values
    samples = curves["estimate"].transpose("workers", "checkpoint", "replicate").values
    iterations = curves["iterations_per_worker"].transpose("workers", "checkpoint").values
    logs, bootstrap, independent = [], [], []
    for group in range(n_groups):
        part = samples[:, :, group * size:(group + 1) * size]
        part = part[:, :, np.all(np.isfinite(part), axis=(0, 1))]
        variances = part.var(axis=-1, ddof=1)
        squares = (part - part.mean(axis=-1, keepdims=True)) ** 2
        errors = squares.std(axis=-1, ddof=1) / math.sqrt(part.shape[-1])
        target = float(variances[:, -1].max())
        found = [crossing(i, v, e, target) for i, v, e in zip(iterations, variances, errors,
                                                             strict=True)]
        log_l = np.log([f[0] for f in found])
        own = np.array([f[1] for f in found])
        covariance, _ = paired_crossing_covariance(iterations, part,
                                                   np.random.default_rng([SEED, group]))
        logs.append(log_l[0] - log_l[1:])
        bootstrap.append(np.sqrt(covariance[0, 0] + np.diag(covariance)[1:]
                                 - 2 * covariance[0, 1:]))
        independent.append(np.sqrt(own[0] ** 2 + own[1:] ** 2))
    logs, bootstrap, independent = (np.asarray(a) for a in (logs, bootstrap, independent))
    usable = np.all(np.isfinite(logs) & np.isfinite(bootstrap), axis=1)
    spread = 1 / math.sqrt(2 * (usable.sum() - 1))
    design = ("paired along workers (common streams)" if paired else
              "as shipped (each worker count its own streams; common starts)")
    print(f"calibration of the speed-ups, {SPEEDUP} ({'quick' if quick else 'full'}) "
          f"{design}, {n_groups} groups of {size} replicates (seed {SEED}; "
          f"{usable.sum()} with every curve crossing): SD of log S_P across groups against "
          f"the median stated error (an SD over that many groups is itself uncertain by about "
          f"±{spread:.0%})")
    print("  P   SD(log S_P)  bootstrap error  ratio   independent error  ratio")
    for k, p in enumerate(workers[1:]):
        observed = float(np.std(logs[usable, k], ddof=1))
        mine, theirs = (float(np.median(a[usable, k])) for a in (bootstrap, independent))
        print(f"  {p:<3} {observed:11.4g} {mine:16.4g} {observed / mine:6.2f} {theirs:19.4g} "
              f"{observed / theirs:6.2f}")
    print()


if __name__ == "__main__":
    main()
