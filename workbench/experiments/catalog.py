"""What the command line needs to know about the built-in experiments before running one.

``workbench list``, ``workbench --help`` and an unknown experiment name must answer in well under
a second, so they cannot import the experiments: those pull in scipy.stats, sympy, xarray and
matplotlib (seconds on a loaded machine, issue 15). Each entry names an experiment, the module
and class that implement it, and its one-line summary; :mod:`workbench.experiments` imports the
module the first time the experiment itself is asked for. The order is the registry's order.
``tests/workbench/test_experiment_catalog.py`` checks every entry against the class it names.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    name: str
    module: str  # under workbench.experiments
    cls: str
    summary: str

    def load(self):
        """A fresh instance of the experiment (imports its module)."""
        module = importlib.import_module(f"workbench.experiments.{self.module}")
        return getattr(module, self.cls)()


ENTRIES: tuple[Entry, ...] = (
    Entry("stale-gaussian", "stale_gaussian", "StaleGaussian",
          "Stale SGLD on a Gaussian mean, L = L0·τ, h ∝ τ^(-2/3) L^(-1/3): oracle agreement, "
          "MSE invariance across τ (seed 001 §5.1, Fig. 1)"),
    Entry("integrator-order", "integrator_order", "IntegratorOrder",
          "SGHMC Euler against symmetric splitting, full gradients, Gaussian mean: MSE "
          "at the optimal step, rates L^(−2/3) against L^(−4/5), exact oracle"),
    Entry("fsgld-gaussian", "fsgld_gaussian", "FsgldGaussian",
          "DSGLD vs FSGLD (conducive gradients) on non-IID Gaussian shards, T local updates: "
          "exact oracle, stationary variance vs T, γ²/ε² (seed 002 §5.1)"),
    Entry("dsgld-imbalance", "dsgld_imbalance", "DsgldImbalance",
          "D-SGLD on imbalanced shards visited unevenly, with and without the N_s/(N q_s) "
          "correction: exact oracle and posterior (seed 004 Fig. 2a-b)"),
    Entry("dsgld-trajectory", "dsgld_trajectory", "DsgldTrajectory",
          "Trajectory length: D-SGLD samples drift from the SGLD posterior to the mixture of "
          "local posteriors as τ grows (seed 004 Fig. 2c-d)"),
    Entry("dsgld-load-balancing", "dsgld_load_balancing", "DsgldLoadBalancing",
          "Adaptive trajectory lengths against block-by-the-slowest: simulated time to a fixed "
          "error, half the workers D× slower (seed 004 §3.2.2, Fig. 7)"),
    Entry("dsgld-coupling", "dsgld_coupling", "DsgldCoupling",
          "Chain coupling in groups of R: gradient-estimate error falls by R, coupled chains "
          "still sample the posterior (seed 004 §3.2.3)"),
    Entry("stale-blr-speedup", "stale_blr_speedup", "StaleBlrSpeedup",
          "Stale SGLD on Bayesian logistic regression, 1-9 asynchronous workers: variance and "
          "time speed-ups of the held-out loss (seed 001 §5.1, Fig. 2)"),
    Entry("stale-nn-workers", "stale_nn_workers", "StaleNnWorkers",
          "Stale SGHMC on the digits MLP and CNN, 1-9 asynchronous workers: held-out "
          "cross-entropy at a fixed per-worker budget (seed 001 §5.2, Fig. 3)"),
    Entry("multi-server", "multi_server", "MultiServer",
          "S servers with their own workers, pooled at test time: bias unchanged, variance / S "
          "(seed 001 §3.3, Fig. 4, Theorems 6-7)"),
    Entry("downpour-period", "downpour_period", "DownpourPeriod",
          "downpour SGLD: MSE against the communication period π and workers P; Gaussian "
          "mean: exact oracle and the E₃ = π²(P−1)²(Σε²)²/S_L² envelope and rate; logistic "
          "regression: reference posterior, E₃ rate (excess and staleness deviation) and "
          "ordering (seed 003)"),
    Entry("elastic-vs-downpour", "elastic_vs_downpour", "ElasticVsDownpour",
          "downpour and elastic SGLD at the same communication budget: MSE and message count "
          "against π, exact oracle (seed 003)"),
    Entry("real-vs-simulated", "real_vs_simulated", "RealVsSimulated",
          "Real multi-process parameter server against the simulator calibrated on it: "
          "staleness and time speed-ups for P workers (seed 001 Appendix A, Algorithm 2)"),
)
