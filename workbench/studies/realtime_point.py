"""The one point of a real-processes study: its worker counts run one after the other, each
real run against the simulator calibrated on it.

Seed 001 (Chen et al. 2016, "Stochastic gradient MCMC with stale gradients") Appendix A
describes the asynchronous parameter server the workbench simulates. ``[system] kind =
"real-processes"`` runs it for real on the Gaussian mean: a server and ``n_workers`` worker
processes on this machine (:mod:`workbench.realtime.processes`) with injected compute times
(``latency``, ``latency_mean``, ``latency_shape``, stragglers) and an injected
``server_update_time`` per applied update, for ``n_iterations`` applied updates; the simulator
is calibrated on each recorded run and simulated ``simulated_factor`` times as long
(:func:`workbench.realtime.comparison.compare_real_and_simulated`, dims ``workers`` and
``staleness``; the first named after the study's sweep dim).

The study sweeps one dim, which gives ``n_workers`` (1 among them: the speed-ups' baseline;
``n_workers = "workers"`` names it ``workers``). Its whole grid is ONE sweep point, which runs
the worker counts in increasing order, and the study runs alone
(:attr:`workbench.run.experiment.Experiment.runs_alone`): separate points could run side by
side on the runner's workers and time each other, one point never shares the machine. Seeds:
the data (seed, study, "data") as at every Gaussian-mean point; the run of P workers
(seed, study, "real", P), its simulation (seed, study, "simulated", P). A real run's timing is
not reproducible: a stored result records one run, and ``--recompute`` measures afresh.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simulators.validation import InvalidParameter
from workbench.systems.asynchronous.system import count_grid

if TYPE_CHECKING:
    import xarray as xr

#: the comparison's dim of worker counts, renamed after the study's sweep dim
COMPARISON_DIM = "workers"


def worker_counts(resolved: list[dict], dim: str) -> list[int]:
    """The worker counts of the study's points (their configurations ``resolved``) in
    increasing order, refused naming the field where they are not distinct, lack 1 (the
    speed-ups' baseline) or are fewer than three (the fitted bend's), or where anything but
    ``dim`` and ``n_workers`` differs between the points (one real run per worker count)."""
    counts = count_grid("n_workers", [point["n_workers"] for point in resolved])
    for point in resolved[1:]:
        for key, value in point.items():
            if key not in (dim, "n_workers") and value != resolved[0][key]:
                raise InvalidParameter(key, value, f"must be the same at every worker count "
                                                   f"of a real-processes study, not "
                                                   f"{resolved[0][key]!r} and {value!r}")
    return counts


def run_point(experiment: str, resolved: list[dict], seed, dim: str) -> xr.Dataset:
    """The comparison over the points ``resolved`` (the study's grid, in order), along
    ``dim`` (module docstring)."""
    from simulators.latency import LatencyModel, WorkerTiming
    from simulators.seeding import derive
    from workbench.realtime.comparison import compare_real_and_simulated
    from workbench.realtime.server import RealRunSettings
    from workbench.samplers import make_sampler
    from workbench.studies.gaussian_point import make_model
    from workbench.studies.schema import sampler_name

    config = resolved[0]
    timing = WorkerTiming(LatencyModel(config["latency"], config["latency_mean"],
                                       config["latency_shape"]),
                          straggler_probability=config["straggler_probability"],
                          straggler_slowdown=config["straggler_slowdown"])
    bound = config["staleness_bound"]
    settings = RealRunSettings(
        n_workers=1, n_updates=config["n_iterations"], batch_size=config["batch_size"],
        initial_position=config["initial_position"], replacement=config["replacement"],
        timing=timing, staleness_bound=None if bound < 0 else bound,
        server_delay=config["server_update_time"], timeout=config["run_timeout"])
    sampler = make_sampler(sampler_name(config), config["step_size"], config["friction"])
    dataset = compare_real_and_simulated(make_model(experiment, config, seed), sampler, settings,
                                         worker_counts(resolved, dim), derive(seed, experiment),
                                         config["simulated_factor"])
    return dataset if dim == COMPARISON_DIM else dataset.rename({COMPARISON_DIM: dim})
