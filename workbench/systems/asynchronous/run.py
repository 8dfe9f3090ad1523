"""A model replayed under a simulated asynchronous schedule, scored on held-out data.

One sweep point of seed 001's real-model experiments (§5.1-§5.2, Figures 2-4): the system of
:mod:`.system` (P workers on each of S servers) is simulated for L applied updates per server,
and the engine (:func:`workbench.engine.replay.replay`) replays the schedule over R replicates at
once with the stale sampler. Held-out test functions φ (predictive log-loss, accuracy) cost a pass
over the held-out set per position, so they are evaluated on ``n_evaluations`` equally spaced
draws of each chain rather than at every update; φ̂_L is the running average over the draws
kept up to update L (a thinned sample average: same limit, same 1/L decay of its variance).
With ``thinning = "wall-clock"`` the draws are instead the chain's state every
``sample_interval`` R units of simulated time, as seed 003 collects its samples "from the master
every R seconds" (Appendix C): at each time kR after the burn-in, k = 1 .. ``n_evaluations``,
the last update applied by then (the servers' mean time where a replicate has several chains),
so runs with different worker counts compare at equal wall-clock and equal sample counts;
``n_iterations`` then only bounds the updates simulated, and those after the last draw's time
are not replayed. With ``averaged_prediction`` the model's averaged prediction is scored too,
at every checkpoint, on the draws kept so far, pooled over the chains
(:func:`averaged_prediction`).

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
from workbench.core.validators import at_least_one, positive
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

#: how a held-out run thins its chains (module docstring)
THINNINGS = ("updates", "wall-clock")

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
    Parameter("thinning", THINNINGS[0], "which draws are scored: updates, n_evaluations "
              "evenly spaced in updates; wall-clock, the state every sample_interval of "
              "simulated time (seed 003 Appendix C)", choices=THINNINGS),
    Parameter("sample_interval", 5.0, "R: simulated time between draws where thinning = "
              "\"wall-clock\" (seed 003: 5 s for MNIST, 30 s for text)", positive),
    Parameter("averaged_prediction", False, "also score the draws' averaged prediction at "
              "every checkpoint (seed 003 Appendix C): averaged_log_loss and averaged_error "
              "of a classifier, averaged_nll of a language model"),
    CONFIDENCE,
    FALSE_FAILURE_RATE,
    DIVERGENCE_THRESHOLD,
)


def run_parameters(**changes: dict) -> tuple[Parameter, ...]:
    """:data:`RUN_PARAMETERS` (what :func:`held_out_blocks` reads) with an experiment's own
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
    if config.get("thinning") == THINNINGS[1]:
        return  # the run's length in time is known with its schedule (wall_clock_draws)
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


def wall_clock_draws(schedule: Schedule, config: dict, n_updates: int,
                     burn_in: int) -> tuple[np.ndarray, np.ndarray]:
    """(updates, times): the update (counted from 1) current at each of the ``n_evaluations``
    times kR of simulated wall-clock after the burn-in's last update, R = ``sample_interval``,
    and those times (module docstring); an update repeats when no other was applied between
    two times. A run whose ``n_updates`` end before the last time is refused, naming
    ``sample_interval``; so is a first time before any update (no state recorded yet)."""
    times = schedule.update_times(n_updates).mean(axis=1)
    start = times[burn_in - 1] if burn_in else 0.0
    interval, count = config["sample_interval"], config["n_evaluations"]
    sample_times = start + interval * np.arange(1, count + 1)
    if sample_times[-1] > times[-1]:
        raise validation.InvalidParameter(
            "sample_interval", interval,
            f"n_evaluations = {count} draws every {interval:g} need simulated time "
            f"{sample_times[-1]:.4g} after the burn-in, and the run's {n_updates} updates end "
            f"at {times[-1]:.4g}: raise n_iterations or lower sample_interval")
    updates = np.searchsorted(times, sample_times, side="right")
    if updates[0] < max(burn_in, 1):
        raise validation.InvalidParameter(
            "sample_interval", interval,
            f"the first draw's time {sample_times[0]:.4g} comes before the first update "
            f"({times[0]:.4g}): raise sample_interval")
    return updates, sample_times


def prediction_sums(model, draws: np.ndarray, checkpoints: np.ndarray,
                    n_replicates: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """The model's averaged-prediction scores at every checkpoint, ``name -> (checkpoint,
    replicate)``: p̄ is the mean predictive probability over the first c draws of every chain
    of a replicate, pooled (``model.held_out_predictions``, ``model.
    averaged_prediction_scores``; :mod:`workbench.models.classification`); and per replicate
    the sum of its chains' mean probabilities over all draws and its draws' votes for each
    class, ``(replicate, M, K)``, which :func:`pooled_prediction` pools over replicates.
    draws: ``(replicate, server, draw, d)`` of some of the point's ``n_replicates``, in blocks
    of draws so that the probabilities of all of them would stay small: the blocks, and so the
    running sums' roundings, are those of the whole point whichever replicates the call holds
    (one seeding block at a time, so that each call's products are the same too)."""
    from workbench.models.per_example import BLOCK_BUDGET

    rows, n_servers, n_draws, _ = draws.shape
    one = model.held_out_predictions(draws[:1, :1, :1])[0, 0, 0]
    step = max(1, BLOCK_BUDGET // max(1, n_replicates * n_servers * one.size))
    total = np.zeros((rows,) + one.shape)
    votes = np.zeros((rows,) + one.shape)
    classes = np.arange(one.shape[-1])
    scores: dict[str, list] = {}
    wanted = list(checkpoints)
    for first in range(0, n_draws, step):
        probabilities = model.held_out_predictions(draws[:, :, first:first + step])
        votes += (probabilities.argmax(axis=-1)[..., None] == classes).sum(axis=(1, 2))
        running = total[:, None] + np.cumsum(probabilities.mean(axis=1), axis=1)
        while wanted and wanted[0] <= first + running.shape[1]:
            count = wanted.pop(0)
            for name, value in model.averaged_prediction_scores(
                    running[:, count - first - 1] / count).items():
                scores.setdefault(name, []).append(value)
        total = running[:, -1]
    return {name: np.stack(values) for name, values in scores.items()}, total, votes


def pooled_prediction(total: np.ndarray, votes: np.ndarray, valid: np.ndarray,
                      n_draws: int) -> dict:
    """Per held-out example ``(M,)``, over all draws of the ``valid`` replicates pooled (seed
    003 Figure 3's uncertainty; ``total`` and ``votes`` of :func:`prediction_sums`):
    ``predicted_class`` argmax_k p̄_k, ``predictive_entropy`` H(p̄) = −Σ_k p̄_k log p̄_k in
    nats, and ``disagreement``, the fraction of those draws whose most probable class is not
    p̄'s."""
    pooled, voted = total[valid].mean(axis=0) / n_draws, votes[valid].sum(axis=0)
    predicted = pooled.argmax(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(pooled > 0, pooled * np.log(pooled), 0.0).sum(axis=-1)
        disagreement = 1 - np.take_along_axis(voted, predicted[:, None], -1)[:, 0] / voted.sum(-1)
    return {"predicted_class": predicted, "predictive_entropy": entropy,
            "disagreement": disagreement}


#: the variables of :func:`schedule_summary`
SCHEDULE_SUMMARY = ("iterations", "iterations_per_worker", "time", "mean_staleness",
                    "max_staleness")


def schedule_summary(schedule: Schedule, n_updates: int, iterations: np.ndarray,
                     n_workers: int, burn_in: int = 0,
                     times: np.ndarray | None = None) -> dict:
    """Per-checkpoint iterations per worker and simulated time (mean over servers, unless the
    draws' own ``times`` are given), and the realised staleness: the coordinates of seed 001's
    Figure 2 axes. ``iterations`` count the updates after the first ``burn_in`` of the
    ``n_updates`` simulated."""
    staleness = schedule.update_staleness(n_updates)
    if times is None:
        times = schedule.update_times(n_updates).mean(axis=1)[burn_in + iterations - 1]
    return {
        "iterations": ("checkpoint", iterations),
        "iterations_per_worker": ("checkpoint", iterations / n_workers),
        "time": ("checkpoint", times),
        "mean_staleness": ((), float(staleness.mean())),
        "max_staleness": ((), int(staleness.max())),
    }


def held_out_blocks(experiment: str, config: dict, point: dict, seed, model, *, n_workers: int,
                    n_servers: int, n_updates: int, burn_in: int = 0, test_functions=None,
                    sampler=None, blocks=None, streams: dict | None = None) -> xr.Dataset:
    """Raw results of some of the point's replicate blocks (``blocks``, default all), which
    :func:`held_out_finish` turns into the point's server-averaged held-out φ̂_L per replicate
    at log-spaced checkpoints.

    Reads :data:`RUN_PARAMETERS` from ``config``. The chains run ``burn_in + n_updates``
    updates and φ̂_L averages the draws of the last ``n_updates`` (L counts from the end of the
    burn-in); ``test_functions``: the φ scored, by default the model's held-out ones;
    ``sampler``: by default the built-in one the configuration names; ``streams``: what keys
    the engine's random numbers (minibatches, injected noise), by default the point itself;
    points given the same ``streams`` share them (common random numbers; the schedule stays
    the point's, the starts are drawn from one stream for every point).

    Kept per replicate: its running φ̂_L (``estimate``, diverged ones not yet masked),
    ``diverged``, whether the diagnostics use it (``diagnosed``), its ``ksd``, every scored φ
    at its draws (``draw_value``) and, for a classifier's averaged prediction, its pooled
    probabilities and votes per held-out example; beside them the schedule's coordinates. The
    ``replicate`` coordinate holds global indices.

    Every replicate's values are the same bit for bit whichever blocks are run together: the
    engine's streams are the block's (module docstring, *Seeds*), the starts are drawn for all
    replicates and sliced, and the averaged prediction is scored one seeding block at a time.
    So a point split into groups of blocks, each run by its own task and joined in block
    order, is finished (:func:`held_out_finish`) into exactly the unsplit point."""
    import xarray as xr

    from workbench.engine.replay import log_checkpoints, replay
    from workbench.engine.replay_setup import replicate_blocks
    from workbench.stats.diagnostics import is_positionwise, kept_replicates, stein_discrepancies
    from workbench.systems.asynchronous.models import initial_positions

    n_replicates = config["n_replicates"]
    ranges = replicate_blocks(n_replicates, config["replicate_block"])
    chosen = [ranges[b] for b in (range(len(ranges)) if blocks is None else blocks)]
    replicates = np.concatenate([np.arange(r.start, r.stop) for r in chosen])
    total = burn_in + n_updates
    schedule = schedule_for(experiment, config, point, seed, n_workers, n_servers, total)
    sample_times = None
    if config.get("thinning") == THINNINGS[1]:
        sampled, sample_times = wall_clock_draws(schedule, config, total, burn_in)
        thin = np.unique(sampled)
        total = int(sampled[-1])  # the updates after the last draw's time change nothing
    else:
        thin = max(1, n_updates // config["n_evaluations"])
    start = initial_positions(model, config, generator(seed, experiment, "initial"),
                              (n_replicates, n_servers))
    if sampler is None:
        sampler = make_sampler(config["sampler"], config["step_size"], config["friction"])
    run = replay(schedule, sampler,
                 model.minibatch_gradient(), n_updates=total, n_replicates=n_replicates,
                 initial_position=start if blocks is None else start[replicates],
                 seed=derive(seed, experiment, point_key(point if streams is None else streams),
                             "engine"),
                 batch_size=config["batch_size"], test_functions=(), thin=thin,
                 replicate_block=config["replicate_block"],
                 blocks=None if blocks is None else list(blocks),
                 divergence_threshold=config["divergence_threshold"])
    diverged = (run.diverged_at >= 0).any(axis=1)
    if sample_times is None:
        kept = run.draw_iterations > burn_in
    else:  # every sample time's update, repeated where no other came between two times
        kept = np.searchsorted(run.draw_iterations, sampled)
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
    names = [f.name for f in functions]
    data = {}
    if config.get("averaged_prediction"):
        edges = np.cumsum([0] + [len(r) for r in chosen])
        sums = [prediction_sums(model, draws[a:b], checkpoints, n_replicates)
                for a, b in zip(edges[:-1], edges[1:], strict=True)]
        for name in sums[0][0]:
            names.append(name)
            estimates.append(np.concatenate([scores[name] for scores, _, _ in sums], axis=1))
        if getattr(model, "test_labels", None) is not None:  # per example: a classifier's
            layout = ("replicate", "test_point", "class")
            data["prediction_total"] = (layout, np.concatenate([s[1] for s in sums]))
            data["prediction_votes"] = (layout, np.concatenate([s[2] for s in sums]))
    diagnosed = kept_replicates(draws, values, ~diverged)
    ksd = stein_discrepancies(draws, diagnosed, lambda theta: -model.potential_gradient(theta),
                              positionwise=is_positionwise(model.potential_gradient))
    iterations = draw_iterations[checkpoints - 1]
    # elastic: every chain is a worker's, and L counts its own local steps
    per_server = 1 if schedule.attrs.get("protocol") == ELASTIC else n_workers
    data.update({
        "estimate": (("test_function", "checkpoint", "replicate"), np.stack(estimates)),
        "diverged": ("replicate", diverged),
        "diagnosed": ("replicate", diagnosed),
        "ksd": ("replicate", ksd),
        "draw_value": (("scored_function", "replicate", "server", "draw"),
                       np.stack([values[f.name][..., 0] for f in functions])),
        **schedule_summary(schedule, total, iterations, per_server, burn_in,
                           None if sample_times is None else sample_times[checkpoints - 1])})
    return xr.Dataset(data, coords={"test_function": names,
                                    "scored_function": [f.name for f in functions],
                                    "checkpoint": np.arange(checkpoints.size),
                                    "replicate": replicates})


def held_out_finish(raw: xr.Dataset) -> xr.Dataset:
    """The point's held-out run from the raw results of all its replicate blocks
    (:func:`held_out_blocks`, joined in block order): diverged replicates masked, the
    diagnostics over every kept replicate-server chain, a classifier's averaged prediction per
    held-out example over every valid replicate's draws.

    Dims: ``estimate`` ``(test_function, checkpoint, replicate)``; ``diverged``
    ``(replicate,)``; the schedule's coordinates of :func:`schedule_summary`; the diagnostics
    of the scored draws (:func:`workbench.stats.diagnostics.diagnose`, every replicate-server
    chain a chain, the model's exact score): ``ess_bulk``, ``ess_tail``, ``rhat``,
    ``mcse_mean`` over ``test_function``, ``ksd`` over ``replicate``."""
    import xarray as xr

    from workbench.stats.diagnostics import pooled_diagnostics

    diverged = raw["diverged"].values
    names = list(raw["test_function"].values)
    scored = list(raw["scored_function"].values)
    values = {name: raw["draw_value"].values[i][..., None] for i, name in enumerate(scored)}
    diagnostics = pooled_diagnostics(values, raw["diagnosed"].values, raw["ksd"].values,
                                     raw.sizes["server"]).isel(component=0, drop=True)
    if len(names) > len(scored):  # no per-draw chain behind an averaged prediction
        diagnostics = diagnostics.reindex(test_function=names)
    per_example = ({} if "prediction_total" not in raw else pooled_prediction(
        raw["prediction_total"].values, raw["prediction_votes"].values, ~diverged,
        raw.sizes["draw"]))
    estimate = raw["estimate"].values.copy()
    estimate[:, :, diverged] = np.nan
    data = {"estimate": (("test_function", "checkpoint", "replicate"), estimate),
            "diverged": ("replicate", diverged),
            **{name: raw[name].variable for name in SCHEDULE_SUMMARY},
            **{name: diagnostics[name].variable for name in diagnostics.data_vars},
            **{name: ("test_point", value) for name, value in per_example.items()}}
    return xr.Dataset(data, coords={"test_function": names,
                                    "checkpoint": raw["checkpoint"].values,
                                    "replicate": np.arange(raw.sizes["replicate"])},
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
