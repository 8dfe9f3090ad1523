"""Coverage of the stored confidence intervals against the exact oracle (issue 12).

Runs ``stale-gaussian`` in its quick configuration (100 replicates per staleness, the seed
design only) for many seeds and counts, for bias, MSE and variance of φ̂(θ) and φ̂(θ²), how
often the stored interval covers the exact value (every staleness and checkpoint). Each line
gives the coverage, its binomial standard error as if every interval were independent, and
the standard error across seeds (intervals of one run share replicates, so this one is the
honest error), and whether the coverage lies within ``--tolerance`` of the nominal level.

    python benchmarks/interval_coverage.py --seeds 100 --processes 2
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from workbench.experiments import get
from workbench.run.runner import run_experiment

NAME = "stale-gaussian"
QUANTITIES = ("bias", "mse", "variance")


def covered(seed: int) -> dict[tuple[str, str], np.ndarray]:
    """Per (quantity, test function): ``(2, n)`` booleans, row 0 True where the interval
    covers the exact value, row 1 True where it lies wholly below it (a low-side miss)."""
    experiment = get(NAME)
    config = experiment.configure({"designs": False}, quick=True)
    dataset = run_experiment(experiment, config, seed)
    exact = {"bias": dataset["exact_bias"], "mse": dataset["exact_mse"],
             "variance": dataset["exact_variance"]}
    out = {}
    for quantity in QUANTITIES:
        below = dataset[f"{quantity}_upper"] < exact[quantity]
        inside = (dataset[f"{quantity}_lower"] <= exact[quantity]) & ~below
        for function in dataset["test_function"].values.tolist():
            out[quantity, function] = np.stack(
                [a.sel(test_function=function).values.ravel() for a in (inside, below)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="number of seeds (1..N)")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--tolerance", type=float, default=0.015)
    args = parser.parse_args()
    config = get(NAME).configure({}, quick=True)
    nominal = config["confidence"]
    started = time.perf_counter()
    with ProcessPoolExecutor(args.processes) as pool:
        runs = list(pool.map(covered, range(1, args.seeds + 1)))
    print(f"{NAME} --quick: {args.seeds} seeds x {config['n_replicates']} replicates, "
          f"{len(config['staleness'])} staleness values x {config['n_checkpoints']} checkpoints;"
          f" nominal {nominal:.0%}; {time.perf_counter() - started:.0f} s")
    print(f"{'quantity':<10}{'φ':<15}{'intervals':>10}{'coverage':>10}{'binomial':>10}"
          f"{'by seed':>9}{'low miss':>10}  within ±{args.tolerance:.1%}")
    for key in runs[0]:
        per_seed = np.array([run[key][0].mean() for run in runs])
        pooled = np.concatenate([run[key] for run in runs], axis=1)
        total = pooled.shape[1]
        coverage, low = (float(row.mean()) for row in pooled)
        binomial = np.sqrt(coverage * (1 - coverage) / total)
        by_seed = per_seed.std(ddof=1) / np.sqrt(per_seed.size)
        verdict = "yes" if abs(coverage - nominal) <= args.tolerance else "NO"
        print(f"{key[0]:<10}{key[1]:<15}{total:>10}{coverage:>10.4f}{binomial:>10.4f}"
              f"{by_seed:>9.4f}{low:>10.4f}  {verdict}")


if __name__ == "__main__":
    main()
