"""Common random numbers for stale-gaussian's invariance and slope checks (issue 33): the
paired Monte Carlo error beside the unpaired one at the same replicates.

stale-gaussian's checks that compare grid points judge (a) the MSE of φ̂_L(θ²) across τ
(invariance: every pair's log ratio) and (b) the log-log slope of the variance of φ̂_L(θ)
and φ̂_L(θ²) against τ. Its points draw independent minibatches and injected noise. Here the
same points run twice at the same replicates:

- *independent*: as the experiment runs them (each point its own streams);
- *common*: every point given the same streams (:func:`workbench.studies.gaussian_point.
  run_blocks`, ``streams=``), so replicate r of every τ sees the same minibatches and
  noise, consumed in the same order for as many updates as both run (L = L0·τ differs).

For the common run the error of each comparison is computed twice: unpaired (as the checks do
today, from each point's own standard error) and paired (from the replicates' joint values: the
covariance of the per-replicate squared errors for the MSE ratios; a bootstrap that resamples
replicates jointly across τ for the slopes). The independent run's unpaired error is printed
for reference. Nothing here is tuned: the gain is what the design gives.

    python benchmarks/common_random_numbers.py [--full] [--bootstrap 400]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

NAME, SEED = "stale-gaussian", 2016


def run(common: bool, quick: bool) -> tuple[list[int], np.ndarray, np.ndarray]:
    """τ values and per-replicate φ̂_L (rows: τ; columns: replicates) of θ and θ², and the
    posterior values of θ and θ²."""
    from workbench.experiments import get
    from workbench.studies import gaussian_point

    experiment = get(NAME)
    config = experiment.configure({"designs": False}, quick=quick)
    taus, estimates, truth = [], [], None
    for point in experiment.points(config):
        resolved = experiment.resolve(config, point)
        finished = gaussian_point.run_point(NAME, resolved, point, SEED,
                                            streams={"common": 0} if common else None)
        final = finished.isel(checkpoint=-1).sum("component").squeeze()
        taus.append(int(point["staleness"]))
        estimates.append(final["estimate"].transpose("test_function", "replicate").values)
        truth = final["posterior_value"].values
    return taus, np.stack(estimates), truth  # (tau, test_function, replicate), (test_function,)


def mse_pair_errors(estimates: np.ndarray, truth: float) -> tuple[np.ndarray, np.ndarray]:
    """Unpaired and paired standard errors of log(MSE_i/MSE_j) for every pair i < j (delta
    method on the per-replicate squared errors)."""
    squared = (estimates - truth) ** 2  # (tau, replicate)
    n = squared.shape[1]
    mse = squared.mean(axis=1)
    covariance = np.cov(squared) / n
    unpaired, paired = [], []
    for i in range(mse.size):
        for j in range(i + 1, mse.size):
            independent = covariance[i, i] / mse[i] ** 2 + covariance[j, j] / mse[j] ** 2
            unpaired.append(math.sqrt(independent))
            paired.append(math.sqrt(max(independent - 2 * covariance[i, j] / (mse[i] * mse[j]),
                                        0.0)))
    return np.array(unpaired), np.array(paired)


def slope_errors(taus: list[int], estimates: np.ndarray, n_boot: int,
                 rng: np.random.Generator) -> tuple[float, float]:
    """Bootstrap standard error of the log-log slope of the variance against τ: replicates
    resampled independently per τ (unpaired) and jointly across τ (paired)."""
    x = np.log(np.asarray(taus, dtype=float))
    n = estimates.shape[1]

    def slope(rows: np.ndarray) -> float:
        return float(np.polyfit(x, np.log(rows.var(axis=1, ddof=1)), 1)[0])

    independent = [slope(np.stack([row[rng.integers(0, n, n)] for row in estimates]))
                   for _ in range(n_boot)]
    joint = [slope(estimates[:, rng.integers(0, n, n)]) for _ in range(n_boot)]
    return float(np.std(independent, ddof=1)), float(np.std(joint, ddof=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full configuration")
    parser.add_argument("--bootstrap", type=int, default=400)
    args = parser.parse_args()
    started = time.perf_counter()
    taus, independent, truth = run(False, not args.full)
    _, common, _ = run(True, not args.full)
    rng = np.random.default_rng(7)
    print(f"{NAME} ({'full' if args.full else 'quick'}), τ = {taus}, "
          f"{common.shape[2]} replicates a point; {time.perf_counter() - started:.0f} s")
    print("\n" + "check".ljust(46) + "independent   common: unpaired   paired   paired/unpaired")
    for index, function in ((1, "theta_squared"),):
        base, _ = mse_pair_errors(independent[:, index], truth[index])
        unpaired, paired = mse_pair_errors(common[:, index], truth[index])
        print(f"invariance/mse/{function} (median of {unpaired.size} pairs)".ljust(46)
              + f"{np.median(base):11.4f}   {np.median(unpaired):16.4f}   "
                f"{np.median(paired):6.4f}   {np.median(paired / unpaired):15.2f}")
        print(f"  largest-ratio pair: τ = {taus[0]} against {taus[-1]}".ljust(46)
              + f"{base[len(taus) - 2]:11.4f}   {unpaired[len(taus) - 2]:16.4f}   "
                f"{paired[len(taus) - 2]:6.4f}   "
                f"{paired[len(taus) - 2] / unpaired[len(taus) - 2]:15.2f}")
    for index, function in ((0, "theta"), (1, "theta_squared")):
        base, _ = slope_errors(taus, independent[:, index], args.bootstrap, rng)
        unpaired, paired = slope_errors(taus, common[:, index], args.bootstrap, rng)
        print(f"slope/variance-vs-staleness/{function}".ljust(46)
              + f"{base:11.4f}   {unpaired:16.4f}   {paired:6.4f}   {paired / unpaired:15.2f}")


if __name__ == "__main__":
    main()
