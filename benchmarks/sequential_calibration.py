"""Calibration of sequential checks (issue 33): the error rates of ``--until-decided`` against
those of one fixed-R judgement, on checks of known truth.

The checks are stale-gaussian's oracle checks (its model, constant-staleness system and SGLD,
one point at τ = 2, L = 300) with ``false_failure_rate = 0.05`` so that the rate can be
measured; each seed is one run of the sequential procedure (looks at 50, 100, 200, ...
replicates, at most ``--looks``) and one fixed-R judgement of its first look's data.

- **True difference 0** (the sampler as the oracle describes it): how often the family has a
  ``violated`` check. Both must be at most 0.05 within the binomial error.
- **True difference at the margin**: the sampler starts from θ₀ + Δ while the oracle is that
  of θ₀, with Δ computed from the exact oracle so that E φ̂_L(θ) moves by exactly the mean
  check's margin, half the exact per-replicate standard deviation of φ̂_L(θ). How often that
  check comes out ``holds``: at most 0.05 within the binomial error.

    python benchmarks/sequential_calibration.py [--seeds 400] [--looks 5] [--processes 2]
"""

from __future__ import annotations

import argparse
import io
import math
import tempfile
import time
from multiprocessing import Pool
from pathlib import Path

STUDY = """
[study]
name = "sequential-calibration"
summary = "stale-gaussian's oracle checks at one point, false_failure_rate 0.05"
source = "seed 001 (Chen et al. 2016) §5.1; docs/math.md §7"

[model]
kind = "gaussian-mean"
n_data = 1000
dim = 1

[system]
kind = "constant"

[sampler]
kind = "sgld"
step_size = 4e-4

[run]
n_iterations = 300
n_replicates = 50
replicate_block = 50
n_checkpoints = 4
initial_position = 1.0
batch_size = 10
test_function = "theta"
false_failure_rate = 0.05

[sweep]
staleness = [2]

[[check]]
kind = "oracle"
"""

MEAN_CHECK = "oracle/theta/mean/staleness=2"


def _experiment(directory: Path):
    from workbench import experiments

    path = directory / "sequential-calibration.toml"
    if not path.exists():
        path.write_text(STUDY)
    return experiments.get(str(path))


def start_shift(directory: Path) -> float:
    """Δθ₀ that moves E φ̂_L(θ) by half its exact per-replicate standard deviation (the mean
    check's margin), from the exact oracle: E φ̂_L(θ) is linear in θ₀."""
    from workbench.studies import gaussian_point

    experiment = _experiment(directory)
    config = experiment.configure({"n_replicates": 2, "replicate_block": 2})
    point = experiment.points(config)[0]
    exact = []
    for start in (1.0, 2.0):
        resolved = experiment.resolve({**config, "initial_position": start}, point)
        finished = gaussian_point.run_point(experiment.name, resolved, point, 0)
        final = finished.sel(test_function="theta").isel(checkpoint=-1).squeeze()
        exact.append((float(final["exact_bias"]), float(final["exact_variance"])))
    slope = exact[1][0] - exact[0][0]
    return 0.5 * math.sqrt(exact[0][1]) / slope


def _move_start(gaussian_point, shift: float) -> None:
    """Make the sampler start from θ₀ + ``shift`` (the oracle keeps θ₀): patched once per
    process, from the original run_blocks, so tasks in the same worker do not stack."""
    original = getattr(gaussian_point, "_unshifted_run_blocks", gaussian_point.run_blocks)
    gaussian_point._unshifted_run_blocks = original

    def shifted(name, config, point, seed, blocks, *args, **kwargs):
        moved = {**config, "initial_position": config["initial_position"] + shift}
        return original(name, moved, point, seed, blocks, *args, **kwargs)

    gaussian_point.run_blocks = shifted if shift else original


def one_seed(task: tuple[int, float, int, str]) -> dict:
    """The sequential and the fixed-R outcome of one seed (shift 0: the true sampler)."""
    seed, shift, looks, root = task
    from bounds.verdict import HOLDS, VIOLATED
    from workbench.run.executors import open_workers
    from workbench.run.main_job import run_all
    from workbench.run.until_decided import until_decided
    from workbench.studies import gaussian_point

    directory = Path(root)
    experiment = _experiment(directory)
    _move_start(gaussian_point, shift)
    out = directory / f"seed-{seed}-{shift:g}"
    with open_workers(processes=1) as workers:
        (sequential,), _ = until_decided([experiment], [{}], seed, out, workers, math.inf,
                                         log=io.StringIO(), max_looks=looks)
        (fixed,) = run_all([experiment], False, seed, out, workers, figures=False,
                           log=io.StringIO())
    result = {}
    for label, outcome in (("sequential", sequential), ("fixed", fixed)):
        verdicts = {v.check: v.verdict for v in outcome.verdicts}
        result[label] = {"any_violated": VIOLATED in verdicts.values(),
                         "mean_holds": verdicts[MEAN_CHECK] == HOLDS,
                         "mean_violated": verdicts[MEAN_CHECK] == VIOLATED}
    result["looks"] = max(v.evidence["sequential"]["look"] for v in sequential.verdicts)
    return result


def _rate(hits: int, n: int) -> str:
    p = hits / n
    return f"{p:.4f} ± {math.sqrt(max(p * (1 - p), 1e-12) / n):.4f} ({hits}/{n})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--looks", type=int, default=5)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        shift = start_shift(Path(root))
        print(f"{args.seeds} seeds, at most {args.looks} looks (50 to "
              f"{50 * 2 ** (args.looks - 1)} replicates); at the margin θ₀ is moved by "
              f"{shift:.4g}")
        for label, moved in (("true difference 0", 0.0), ("true difference at the margin",
                                                           shift)):
            started = time.perf_counter()
            tasks = [(seed, moved, args.looks, root) for seed in range(args.seeds)]
            with Pool(args.processes) as pool:
                results = pool.map(one_seed, tasks, chunksize=4)
            looks = sorted(r["looks"] for r in results)
            print(f"\n{label} ({time.perf_counter() - started:.0f} s; looks used: median "
                  f"{looks[len(looks) // 2]}, most {looks[-1]})")
            rates = (("any_violated", "some oracle check violated"),) if moved == 0 else (
                ("mean_holds", f"{MEAN_CHECK} holds"),
                ("mean_violated", f"{MEAN_CHECK} violated (the worst case of a false "
                                  "failure: a sampler off by exactly the margin)"))
            for key, what in rates:
                print(f"  rate of '{what}'")
                for procedure in ("sequential", "fixed"):
                    hits = sum(r[procedure][key] for r in results)
                    print(f"    {procedure:<10} {_rate(hits, len(results))}")


if __name__ == "__main__":
    main()
