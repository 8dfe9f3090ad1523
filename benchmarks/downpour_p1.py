"""What the synchronous (P = 1) runs of ``downpour-period``'s logistic part measure.

With one worker, downpour with period π (seed 003 Algorithm 1) is plain SGLD run for π·L local
steps whose master versions are every π-th local state (:mod:`workbench.engine.protocols`: local
step j of push l draws gradient evaluation lπ + j), so φ̂_L(π) averages the held-out log-loss
over a π-times longer stretch of one SGLD trajectory started at the Laplace approximation.
This script measures, on the experiment's own model, data, starts, reference posterior, step h
and engine streams (quick configuration unless ``--full``):

- the experiment's P = 1 values φ̂_L(π) at L pushes (what ``reference/log_loss/period=π,
  workers=1`` judges);
- (a) π = 1 with π_max·L pushes against π = π_max with L pushes: the same local trajectory
  (the master versions of the second are the thinned versions of the first, checked exactly),
  averaged over every state or every π_max-th; the paired difference with its error;
- (b) the stationary value of SGLD at step h (one long π = 1 run per replicate, the first
  ``--burn-in`` steps dropped), with minibatches (the experiment's sampler) and with the full
  gradient (all N points without replacement: the Euler-Maruyama bias alone), each against the
  reference posterior;
- (c) the held-out log-loss along the trajectory from the Laplace start (window means over
  log-spaced windows, replicate mean ± error), with the slowest relaxation time of Langevin
  dynamics in the Laplace approximation, 1/(h·λ_min(H)) steps for the mean.

It also prints h·λ_max(H) beside the stability limits of gradient steps with a constant delay
τ, x_{n+1} = x_n − a·x_{n−τ} stable iff 0 < a < 2 sin(π/(2(2τ + 1))) (Levin & May 1976,
"A note on difference-delay equations", Theor. Popul. Biol. 9): where h·λ_max is near the limit
at τ = π(P − 1), staleness amplifies the chain's moves rather than perturbing them, which is
what the logistic E₃ checks of ``downpour-period`` meet at the largest π(P − 1).

Errors: replicates are independent, so every run error is the standard error across replicates
(the paired difference's for (a)); comparisons with the reference combine it with the
reference's batch-means error σ_ref. Each difference d is reported with σ and z = d/σ; at the
two-sided false-failure rate ``--false-failure-rate`` (default 0.001, Bonferroni over the
comparisons printed) |z| above the printed z* is a detected difference.

    python benchmarks/downpour_p1.py [--seed 2016] [--replicates 40] [--long 40000]
    python benchmarks/downpour_p1.py --full --long 200000 --burn-in 100000 --exact-replicates 10
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bounds.verdict import z_for_family
from simulators.seeding import derive
from workbench import experiments
from workbench.engine.replay import replay
from workbench.reference import combined_error, reference_value
from workbench.samplers.sgld import SGLD
from workbench.studies.paired_protocol_point import TEST_FUNCTION, laplace_approximation, setup
from workbench.systems.protocols.run import make_protocol

NAME = "downpour-period"
#: comparisons judged at z*: (a)'s paired difference, and against the reference: (b) minibatch,
#: (b) full gradient, the starts, (a)'s every-state average
N_COMPARISONS = 5


def mean_error(values: np.ndarray) -> tuple[float, float]:
    """Replicate mean and its standard error (replicates on the last axis)."""
    return float(values.mean(axis=-1)), float(values.std(axis=-1, ddof=1)
                                              / np.sqrt(values.shape[-1]))


def run(config, shared, seed, period, pushes, checkpoints=None, thin=0, batch_size=None,
        replacement=True, replicates=None):
    """The P = 1 downpour run of the experiment (its schedule and engine seeds) with
    ``pushes`` master versions, from the first ``replicates`` starts (default all): the
    replay's output."""
    model, function, _, starts = shared
    starts = starts[:replicates]
    schedule = make_protocol(config, "downpour", 1, period).simulate(
        pushes, derive(seed, NAME, "p1-benchmark", period))
    return replay(schedule, SGLD(config["step_size"]), model.minibatch_gradient(),
                  n_updates=pushes, n_replicates=starts.shape[0],
                  initial_position=starts[:, None, :],
                  seed=derive(seed, NAME, "logistic-engine"),
                  batch_size=batch_size or config["batch_size"], replacement=replacement,
                  test_functions=(function,),
                  checkpoints=checkpoints or [pushes], thin=thin,
                  replicate_block=starts.shape[0])


def window_means(result, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(edges, means ``(window, R)``): φ averaged over the states in (edge_k, edge_{k+1}],
    from the cumulative averages at the checkpoints."""
    edges = np.concatenate([[0], result.checkpoints])
    sums = result.averages[name][:, :, 0, 0] * result.checkpoints[:, None]
    sums = np.vstack([np.zeros(sums.shape[1]), sums])
    return edges, np.diff(sums, axis=0) / np.diff(edges)[:, None]


def compare(label: str, observed: tuple[float, float], target: tuple[float, float],
            z_star: float) -> None:
    difference = observed[0] - target[0]
    error = combined_error(observed[1], target[1])
    flag = "DIFFERENT" if abs(difference) > z_star * error else "not detected"
    print(f"  {label:<46} {observed[0]:.5f} ± {observed[1]:.2g}  vs {target[0]:.5f} ± "
          f"{target[1]:.2g}:  d = {difference:+.3g} ± {error:.2g}  z = {difference / error:+6.2f}"
          f"  ({flag} at z* = {z_star:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=2016)
    parser.add_argument("--replicates", type=int, default=None,
                        help="replicates R (default: the configuration's logistic_n_replicates)")
    parser.add_argument("--long", type=int, default=40_000, help="steps of the long run (b)")
    parser.add_argument("--burn-in", type=int, default=10_000,
                        help="steps dropped from the long run")
    parser.add_argument("--exact-replicates", type=int, default=None,
                        help="replicates of the full-gradient run (default all; it costs N/n "
                             "times more per step)")
    parser.add_argument("--full", action="store_true", help="the full configuration, not quick")
    parser.add_argument("--false-failure-rate", type=float, default=0.001)
    args = parser.parse_args()
    overrides = {} if args.replicates is None else {"logistic_n_replicates": args.replicates}
    experiment = experiments.get(NAME)
    study = experiment.study
    # the logistic part's own configuration, its keys without the prefix
    config = study.part_config(experiment.configure(overrides, quick=not args.full),
                               study.parts[1])
    started = time.perf_counter()
    shared = setup(NAME, config, args.seed, study.streams(study.parts[1]))
    model, function, reference, starts = shared
    name, periods, pushes = function.name, config["period"], config["n_iterations"]
    h, n_replicates = config["step_size"], starts.shape[0]
    m = reference_value(reference, TEST_FUNCTION, 0)
    z_star = z_for_family(args.false_failure_rate, N_COMPARISONS)
    curvatures = np.linalg.eigvalsh(laplace_approximation(model)[1])
    lambda_min, lambda_max = float(curvatures[0]), float(curvatures[-1])
    print(f"{NAME} logistic part, {'full' if args.full else 'quick'} configuration, seed "
          f"{args.seed}: d = {model.dim}, N = {config['n_train']}, batch {config['batch_size']},"
          f" h = {h:g}, L = {pushes} pushes, R = {n_replicates} replicates")
    print(f"reference posterior (HMC): m = {m[0]:.5f} ± {m[1]:.5f}; z* = {z_star:.2f} "
          f"(two-sided, false-failure rate {args.false_failure_rate:g} over {N_COMPARISONS})")
    print(f"Laplace starts: φ = {mean_error(function(starts)[:, 0])[0]:.5f}; slowest "
          f"relaxation 1/(h·λ_min(H)) = {1 / (h * lambda_min):.0f} steps (λ_min = "
          f"{lambda_min:.3g})")
    print(f"stiffest direction: h·λ_max(H) = {h * lambda_max:.3g}; gradient steps with a "
          "constant delay τ are stable for hλ < 2 sin(π/(2(2τ + 1))) (Levin & May 1976): "
          + ", ".join(f"τ = {tau}: {2 * np.sin(np.pi / (2 * (2 * tau + 1))):.3g}"
                      for tau in (1, 3, 6, 12, 24)))

    print(f"\nexperiment's P = 1 runs, L = {pushes} pushes (π·L local steps):")
    for period in periods:
        values = run(config, shared, args.seed, period, pushes).averages[name][-1, :, 0, 0]
        print(f"  π = {period}: {period * pushes:6d} steps  φ̂_L = "
              "{:.5f} ± {:.5f}".format(*mean_error(values)))

    top = max(periods)
    print(f"\n(a) same {top * pushes} local steps: π = 1 with {top * pushes} pushes against "
          f"π = {top} with {pushes}")
    every = run(config, shared, args.seed, 1, top * pushes, thin=top)
    thinned = run(config, shared, args.seed, top, pushes, thin=1)
    gap = float(np.max(np.abs(every.draws - thinned.draws)))
    print(f"  master versions of π = {top} equal every {top}th state of π = 1: max |Δθ| = "
          f"{gap:.3g}")
    a, b = every.averages[name][-1, :, 0, 0], thinned.averages[name][-1, :, 0, 0]
    compare(f"every state (π = 1) against every {top}th, paired", mean_error(a - b),
            (0.0, 0.0), z_star)
    print("  means: every state {:.5f} ± {:.5f}, ".format(*mean_error(a))
          + "thinned {:.5f} ± {:.5f}".format(*mean_error(b)))

    edges = np.unique(np.append(np.rint(np.geomspace(25, args.long, 16)), args.burn_in))
    long = run(config, shared, args.seed, 1, args.long, checkpoints=[int(e) for e in edges])
    edges, windows = window_means(long, name)
    print(f"\n(c) held-out log-loss along the trajectory from the Laplace start (π = 1, "
          f"minibatch {config['batch_size']}): window means")
    for low, high, values in zip(edges[:-1], edges[1:], windows, strict=True):
        print(f"  steps ({low:6d}, {high:6d}]: " + "{:.5f} ± {:.5f}".format(
            *mean_error(values)))

    cumulative = long.averages[name][:, :, 0, 0]
    stationary = ((cumulative[-1] * args.long - cumulative[list(long.checkpoints).index(
        args.burn_in)] * args.burn_in) / (args.long - args.burn_in))
    full = run(config, shared, args.seed, 1, args.long, checkpoints=[args.burn_in, args.long],
               batch_size=config["n_train"], replacement=False,
               replicates=args.exact_replicates)
    tail = full.averages[name][:, :, 0, 0]
    exact_gradient = (tail[-1] * args.long - tail[0] * args.burn_in) / (args.long
                                                                        - args.burn_in)
    print(f"\n(b) stationary value at h = {h:g}: steps ({args.burn_in}, {args.long}] of each "
          "replicate, against the reference")
    compare(f"SGLD, minibatch {config['batch_size']}", mean_error(stationary), m, z_star)
    compare(f"full gradient (all N, {tail.shape[1]} replicates: Euler-Maruyama)",
            mean_error(exact_gradient), m, z_star)
    compare("Laplace starts (step 0)", mean_error(function(starts)[:, 0]), m, z_star)
    compare(f"every state of π = 1, {top * pushes} steps (a)", mean_error(a), m, z_star)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
