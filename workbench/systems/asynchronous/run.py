"""A model replayed under a simulated asynchronous schedule, scored on held-out data.

One sweep point of seed 001's real-model experiments (§5.1-§5.2, Figures 2-4): the system of
:mod:`.system` (P workers on each of S servers) is simulated for L applied updates per server,
and the engine (:func:`workbench.engine.replay.replay`) replays the schedule over R replicates at
once with the stale sampler. Held-out test functions φ (predictive log-loss, accuracy) cost a pass
over the held-out set per position, so they are evaluated on ``n_evaluations`` equally spaced
draws of each chain rather than at every update; φ̂_L is the running average over the draws
kept up to update L (a thinned sample average: same limit, same 1/L decay of its variance).

Multiple servers (seed 001 §3.3, Theorems 6-7): the S chains are independent (own workers,
own noise and minibatches) and their samples are pooled at test time, so the estimate of a
replicate is the mean of its servers' φ̂_L. A replicate with a diverged server is marked and
left out of every summary (NaN), never silently.

Protocols (seed 003; :func:`.system.make_system` by the configuration's ``system``): downpour
replays the master's versions, every push π local steps of a worker; elastic averaging's P
chains (the schedule's servers) are pooled like servers (seed 003 Appendix B, equal steps),
and its L counts each chain's own local steps, so its iterations per worker are L.

Seeds: the schedule and the engine's streams are keyed by the point; the data, the held-out
subset and the initial positions by the experiment, so every point starts from the same
dispersed positions (common random numbers across the sweep). The replicates run in seeding
blocks of ``replicate_block`` (the engine's *Randomness*): the first R replicates of a larger
run are the same bits as a run of R when R is a multiple of the block, and the engine steps as
many blocks at once as its memory budget allows, so more replicates cost time, never a memory
refusal.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from simulators import validation
from simulators.seeding import derive, generator
from workbench.core.parameters import Parameter
from workbench.core.validators import at_least_one
from workbench.run.experiment import point_key
from workbench.run.parameters import (
    BATCH_SIZE,
    CONFIDENCE,
    DIVERGENCE_THRESHOLD,
    FALSE_FAILURE_RATE,
    FRICTION,
    N_CHECKPOINTS,
    N_REPLICATES,
    REPLICATE_BLOCK,
    SAMPLER,
    STEP_SIZE,
)
from workbench.samplers import make_sampler
from workbench.systems.asynchronous.system import ELASTIC, make_system

# xarray, the engine, the diagnostics and the models are imported by the functions that run
# and combine points: the parameters alone are read by `workbench show` and argument checks
# (issue 15)
if TYPE_CHECKING:
    import xarray as xr

    from simulators.schedule import Schedule

RUN_PARAMETERS = (
    SAMPLER,
    STEP_SIZE,
    FRICTION,
    replace(BATCH_SIZE, default=50, help="minibatch size n (seed 001's code: 50)"),
    replace(N_REPLICATES, default=10),
    REPLICATE_BLOCK,
    Parameter("n_evaluations", 400, "draws per chain scored on the held-out set",
              at_least_one),
    N_CHECKPOINTS,
    CONFIDENCE,
    FALSE_FAILURE_RATE,
    DIVERGENCE_THRESHOLD,
)


def run_parameters(**changes: dict) -> tuple[Parameter, ...]:
    """:data:`RUN_PARAMETERS` (what :func:`held_out_run` reads) with an experiment's own
    ``default``, ``help`` or ``validate`` per name, e.g. ``step_size={"default": 1e-6}``."""
    unknown = set(changes) - {p.name for p in RUN_PARAMETERS}
    if unknown:
        raise ValueError(f"not run parameters: {sorted(unknown)}")
    return tuple(replace(p, **changes.get(p.name, {})) for p in RUN_PARAMETERS)


def check_sizes(config: dict, shortest_run: int, field: str) -> None:
    """Every point must keep ``n_checkpoints`` running averages from its ``n_evaluations``
    draws (so the points share the checkpoint dim): refuse sizes that cannot, naming the
    field."""
    if config["n_checkpoints"] > config["n_evaluations"]:
        raise validation.InvalidParameter(
            "n_checkpoints", config["n_checkpoints"],
            f"must be <= n_evaluations = {config['n_evaluations']}")
    if shortest_run < config["n_evaluations"]:
        raise validation.InvalidParameter(
            field, shortest_run,
            f"the shortest run must have at least n_evaluations = {config['n_evaluations']} "
            "updates")


def schedule_for(experiment: str, config: dict, point: dict, seed, n_workers: int,
                 n_servers: int, n_updates: int) -> Schedule:
    """The point's schedule: L applied updates on each server (module docstring)."""
    seed_point = derive(seed, experiment, point_key(point))
    system = make_system(config, n_workers, n_servers)
    return system.simulate(n_updates, derive(seed_point, "schedule"))


def schedule_summary(schedule: Schedule, n_updates: int, iterations: np.ndarray,
                     n_workers: int, burn_in: int = 0) -> dict:
    """Per-checkpoint iterations per worker and simulated time (mean over servers), and the
    realised staleness: the coordinates of seed 001's Figure 2 axes. ``iterations`` count the
    updates after the first ``burn_in`` of the ``n_updates`` simulated."""
    staleness = schedule.update_staleness(n_updates)
    times = schedule.update_times(n_updates).mean(axis=1)
    return {
        "iterations": ("checkpoint", iterations),
        "iterations_per_worker": ("checkpoint", iterations / n_workers),
        "time": ("checkpoint", times[burn_in + iterations - 1]),
        "mean_staleness": ((), float(staleness.mean())),
        "max_staleness": ((), int(staleness.max())),
    }


def held_out_run(experiment: str, config: dict, point: dict, seed, model, *, n_workers: int,
                 n_servers: int, n_updates: int, burn_in: int = 0,
                 test_functions=None, sampler=None) -> xr.Dataset:
    """Server-averaged held-out φ̂_L per replicate at log-spaced checkpoints.

    Reads :data:`RUN_PARAMETERS` from ``config``. The chains run ``burn_in + n_updates``
    updates and φ̂_L averages the draws of the last ``n_updates`` (L counts from the end of the
    burn-in); ``test_functions``: the φ scored, by default the model's held-out ones;
    ``sampler``: by default the built-in one the configuration names.
    Dims: ``estimate`` ``(test_function, checkpoint, replicate)``; ``diverged``
    ``(replicate,)``; the schedule's coordinates of :func:`schedule_summary`; the diagnostics
    of the scored draws (:func:`workbench.stats.diagnostics.diagnose`, every replicate-server
    chain a chain, the model's exact score): ``ess_bulk``, ``ess_tail``, ``rhat``,
    ``mcse_mean`` over ``test_function``, ``ksd`` over ``replicate``.
    """
    import xarray as xr

    from workbench.engine.replay import log_checkpoints, replay
    from workbench.stats.diagnostics import diagnose, is_positionwise
    from workbench.systems.asynchronous.models import initial_positions

    n_replicates = config["n_replicates"]
    total = burn_in + n_updates
    schedule = schedule_for(experiment, config, point, seed, n_workers, n_servers, total)
    thin = max(1, n_updates // config["n_evaluations"])
    start = initial_positions(model, config, generator(seed, experiment, "initial"),
                              (n_replicates, n_servers))
    if sampler is None:
        sampler = make_sampler(config["sampler"], config["step_size"], config["friction"])
    run = replay(schedule, sampler,
                 model.minibatch_gradient(), n_updates=total, n_replicates=n_replicates,
                 initial_position=start, seed=derive(seed, experiment, point_key(point),
                                                     "engine"),
                 batch_size=config["batch_size"], test_functions=(), thin=thin,
                 replicate_block=config["replicate_block"],
                 divergence_threshold=config["divergence_threshold"])
    diverged = (run.diverged_at >= 0).any(axis=1)
    kept = run.draw_iterations > burn_in
    draws, draw_iterations = run.draws[:, :, kept], run.draw_iterations[kept] - burn_in
    checkpoints = log_checkpoints(draw_iterations.size, config["n_checkpoints"])
    functions = model.test_functions() if test_functions is None else tuple(test_functions)
    estimates, values = [], {}
    with np.errstate(all="ignore"):
        for function in functions:
            values[function.name] = function(draws)  # (replicate, server, draw, 1)
            running = (np.cumsum(values[function.name][..., 0], axis=-1)[..., checkpoints - 1]
                       / checkpoints)
            estimates.append(running.mean(axis=1).T)  # servers pooled: (checkpoint, replicate)
    estimate = np.stack(estimates)
    diagnostics = diagnose(draws, values, lambda theta: -model.potential_gradient(theta),
                           valid=~diverged,
                           positionwise=is_positionwise(model.potential_gradient)
                           ).isel(component=0, drop=True)
    estimate[:, :, diverged] = np.nan
    iterations = draw_iterations[checkpoints - 1]
    # elastic: every chain is a worker's, and L counts its own local steps
    per_server = 1 if schedule.attrs.get("protocol") == ELASTIC else n_workers
    data = {"estimate": (("test_function", "checkpoint", "replicate"), estimate),
            "diverged": ("replicate", diverged),
            **schedule_summary(schedule, total, iterations, per_server, burn_in),
            **{name: diagnostics[name].variable for name in diagnostics.data_vars}}
    return xr.Dataset(data, coords={"test_function": [f.name for f in functions],
                                    "checkpoint": np.arange(checkpoints.size),
                                    "replicate": np.arange(n_replicates)},
                      attrs=diagnostics.attrs)


def at_point(dataset: xr.Dataset, point: dict, dims: tuple[str, ...]) -> xr.Dataset:
    """``dataset`` with the point's sweep ``dims`` as length-1 leading dims (for ``combine``)."""
    return dataset.expand_dims({dim: [point[dim]] for dim in dims})


def combine_grid(datasets: list[xr.Dataset], sizes: dict[str, int]) -> xr.Dataset:
    """The points of a full grid (each from :func:`at_point`, in row-major order over
    ``sizes``, outer dim first) as one Dataset with those dims."""
    import xarray as xr

    for dim, size in reversed(sizes.items()):
        datasets = [xr.concat(datasets[i:i + size], dim=dim, data_vars="minimal",
                              coords="minimal", compat="equals", join="exact")
                    for i in range(0, len(datasets), size)]
    [combined] = datasets
    return combined
