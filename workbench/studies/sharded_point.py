"""One sweep point of a study on sharded Gaussian data: D-SGLD on traveling chains (seed 004)
or DSGLD / FSGLD on federated rounds (seed 002), its exact oracle and its references.

The model (``[model] kind = "sharded-gaussian"``) is the Gaussian mean of docs/math.md §7 on data
split into shards (:mod:`workbench.systems.distributed.data`: ``iid`` as in seed 004
§4.1, ``blobs`` around per-shard centres as in seed 002 §5.1). The step size is given as the
papers quote it, ``welling_teh_step_size`` = ε; the sampler is SGLD with h = ε/2 (docs/math.md §1).

- ``[system] kind = "traveling-chains"`` (seed 004 §3.2, Algorithm 1): one chain per shard,
  rotating over the workers, ``trajectory_length`` updates per visit; the estimator is D-SGLD's
  N/(N_s q_s)-scaled shard gradient (:class:`~workbench.gradients.sharded.ShardScaled`). Stored
  beside the window statistics, when a ``distance`` check reads them: the references of seed
  004 §3.2.1 (posterior, standard SGLD posterior, mixture of local posteriors) and the
  per-shard stationary laws. With ``[sampler] kind = "coupled-sgld"`` the chains are coupled
  in groups of ``group_size`` (seed 004 §3.2.3, Eq. 6;
  :mod:`workbench.systems.distributed.coupling`): stored too, each chain's group (its first
  member), the number of groups and the simulated time per update, which the groups' waits
  lengthen. With a ``gradient-noise`` check, ``gradient_draws`` draws of a group's gradient
  error at the posterior mean and their exact expectations (docs/math.md §11.2).
- ``[system] kind = "federated-rounds"`` (seed 002 Algorithm 1): ``n_chains`` independent
  chains, a uniformly chosen client per round of ``local_updates`` updates; every estimator in
  ``[sampler] estimator`` (DSGLD, FSGLD with conducive gradients, seed 002 Eq. 7) replays the
  same client draws, each from its own random stream, along the dim ``estimator``. Stored
  beside the window statistics: running window means at ``n_checkpoints`` window lengths,
  the exact stationary E(θ - μ)² averaged over a round (docs/math.md §13, Φ(a, T) for DSGLD) and its
  closed form where it applies, the shards, the surrogates, and γ_s², ε_s² of seed 002's
  Theorems 1-2 on a grid over [-w, w]^d (Figure 4).

A traveling-chains point splits into its replicates' seeding blocks (``replicate_block``):
:func:`run_blocks` replays some of them, :func:`finish_point` makes the point of all of them,
bit for bit what :func:`run_point` gives (issue 35), since everything but the replay (data,
schedule, oracle, references, the step ladder, the gradient draws) is fixed by the point and
the seed, and each block's replay by its own streams. A federated-rounds point splits into its
estimators, each replaying the schedule from its own streams; once its replicates fill more
than one seeding block, into those blocks instead, every estimator replayed in each (so that
the blocks are the same bits whatever the replicate count, and kept across looks).

A ``limit`` check's step ladder may also run on ``limit_schedules`` − 1 more schedules of the
same system, each from its own seed (:func:`_other_schedules`): no replay reads them, so they
are computed when the point is finished, and its replicate blocks do not depend on them.

Every variable made by the runs carries the point's sweep dims (leading, size one); what
depends only on the data, the step and the minibatch (posterior, references, shards) does not,
which is why those fields cannot be swept in a sharded study (:mod:`workbench.studies.schema`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import xarray as xr

from simulators.seeding import derive, generator
from simulators.traveling_chains import waiting_time
from workbench.engine.replay_setup import Replay, block_rows
from workbench.gradients.sharded import ShardScaled
from workbench.oracles.federated import (
    dsgld_stationary_variance,
    round_stationary,
    shard_round_maps,
)
from workbench.oracles.gradient_noise import (
    coupled_gradient_noise,
    epsilon_squared,
    gamma_squared,
    theta_grid,
)
from workbench.oracles.sharded_gaussian import ShardedGaussianOracle
from workbench.run.experiment import point_key
from workbench.samplers import SGLD
from workbench.samplers.coupled import CoupledSGLD
from workbench.studies.schema import COUPLED_SGLD, LIMIT_SCHEDULES, SECTIONS, TRAVELING
from workbench.systems.distributed import chen_step_size
from workbench.systems.distributed.arm import (
    finish_arm,
    replay_arm,
    with_diagnostics,
)
from workbench.systems.distributed.balancing import plan_lengths, trajectory_blocks, worker_timing
from workbench.systems.distributed.coupling import first_members, gradient_errors, group_sizes
from workbench.systems.distributed.data import data_attributes, make_sharded
from workbench.systems.distributed.federation import Federation, running_window_means
from workbench.systems.distributed.references import (
    REFERENCES,
    local_components,
    references,
)
from workbench.systems.distributed.traveling import traveling_system
from workbench.systems.distributed.windows import exact_moments

PAIR = ("component", "component2")


def run_point(experiment: str, config: dict, point: dict, seed, dims: Sequence[str],
              references: bool = True, paired: Sequence[str] = ()) -> xr.Dataset:
    """The point's Dataset (module docstring); ``dims``: the study's sweep dims;
    ``references``: whether a traveling-chains point keeps seed 004 §3.2.1's references (a
    ``distance`` check reads them); ``paired``: the sweep dims whose points share every random
    number (``[study] paired``)."""
    if config["system"] == TRAVELING:
        return _traveling(experiment, config, point, seed, dims, references, paired)
    return _federated(experiment, config, point, seed, dims)


def _leading(dims: Sequence[str]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The point's sweep dims as leading dims of size one: their names and shape."""
    return tuple(dims), (1,) * len(dims)


def _traveling(experiment, config, point, seed, dims, with_references, paired) -> xr.Dataset:
    """D-SGLD on traveling chains (seed 004 §3.2.1), one trajectory length on every worker or
    one per shard (§4.1) or a balancing plan for slow workers (§3.2.2), with or without the
    N_s/(N q_s) correction, the chains coupled in groups when the sampler is coupled SGLD
    (§3.2.3)."""
    arm = _Traveling.build(experiment, config, point, seed, paired)
    return arm.dataset(arm.replay(config), config, point, dims, with_references)


def run_blocks(experiment: str, config: dict, point: dict, seed, paired: Sequence[str],
               blocks: Sequence[int], by_replicates: bool) -> xr.Dataset:
    """The raw results of some of the point's blocks: their replays
    (:func:`workbench.systems.distributed.arm.replay_arm`), each the same bits whichever
    blocks share the call. ``by_replicates``: the blocks are the replicates' seeding blocks
    (always on traveling chains; on federated rounds every estimator replays each), with a
    ``replicate`` coordinate of global indices; else a federated-rounds point's estimators,
    along ``estimator``."""
    rows = None
    if by_replicates:
        rows = block_rows(config["n_replicates"], config["replicate_block"], blocks)
    if config["system"] == TRAVELING:
        arm = _Traveling.build(experiment, config, point, seed, paired, ladder=False)
        return _raw(arm.replay(config, blocks), rows)
    federation = Federation.build(experiment, config, seed, int(config["local_updates"]))
    methods = list(config["estimator"]) if by_replicates else [config["estimator"][b]
                                                               for b in blocks]
    replayed = blocks if by_replicates else None  # every replicate of an estimator's block
    rows = rows if by_replicates else np.arange(config["n_replicates"])
    return xr.concat([_raw(_federated_replay(experiment, config, point, seed, federation,
                                             method, replayed), rows) for method in methods],
                     dim=xr.DataArray(methods, dims="estimator", name="estimator"))


def join_blocks(raws: Sequence[xr.Dataset]) -> xr.Dataset:
    """The raw results of consecutive groups of blocks (:func:`run_blocks`), in order: along
    ``estimator`` where they are a federated-rounds point's estimators (no estimator in two
    groups), else along ``replicate``."""
    if len(raws) == 1:
        return raws[0]
    by_estimator = "estimator" in raws[0].dims and not (
        set(raws[0]["estimator"].values) & set(raws[1]["estimator"].values))
    return xr.concat(raws, dim="estimator" if by_estimator else "replicate",
                     data_vars="minimal", coords="minimal", compat="equals", join="exact")


def finish_point(experiment: str, config: dict, point: dict, seed, dims: Sequence[str],
                 with_references: bool, paired: Sequence[str], raw: xr.Dataset) -> xr.Dataset:
    """The point from the raw results of all its blocks (:func:`join_blocks`): what
    :func:`run_point` gives, bit for bit."""
    if config["system"] == TRAVELING:
        arm = _Traveling.build(experiment, config, point, seed, paired)
        return arm.dataset(_replayed(raw), config, point, dims, with_references)
    federation = Federation.build(experiment, config, seed, int(config["local_updates"]))
    runs = [_replayed(raw.sel(estimator=method)) for method in config["estimator"]]
    return _federated_point(experiment, config, point, seed, dims, federation, runs)


def _raw(run: Replay, replicates: np.ndarray) -> xr.Dataset:
    """A replay as a block's raw results: its averages at the checkpoints, where each chain
    diverged, its thinned draws and last positions, over ``replicates``."""
    server = ("replicate", "chain")
    data = {f"average_{name}": (("checkpoint",) + server + (f"{name}_value",), values)
            for name, values in run.averages.items()}
    data.update(diverged_at=(server, run.diverged_at),
                draws=(server + ("draw", "component"), run.draws),
                final_position=(server + ("component",), run.final_position))
    return xr.Dataset(data, coords={"replicate": replicates, "checkpoint": run.checkpoints,
                                    "draw_iteration": ("draw", run.draw_iterations)})


def _replayed(raw: xr.Dataset) -> Replay:
    """The replay of every replicate from the joined raw results (:func:`_raw`), its arrays
    C-contiguous as a replay's are (numpy's reductions may sum in another order over strided
    ones)."""
    def values(name):
        return np.ascontiguousarray(raw[name].values)

    averages = {name[len("average_"):]: values(name) for name in raw.data_vars
                if name.startswith("average_")}
    return Replay(checkpoints=values("checkpoint"), averages=averages,
                  diverged_at=values("diverged_at"), draws=values("draws"),
                  draw_iterations=values("draw_iteration"),
                  final_position=values("final_position"))


@dataclasses.dataclass(frozen=True)
class _Traveling:
    """What a traveling-chains point's replay and its dataset share: the data, the schedule
    (simulated once for the longest step ladder), the oracle, the estimator and the sampler,
    all fixed by the point and the seed whichever replicates run."""

    sharded: object
    schedule: object
    oracle: ShardedGaussianOracle
    estimator: object
    sampler: object
    seed_point: object
    initial: np.ndarray
    steps: np.ndarray
    lengths: list
    groups: list | None
    plan_mean: float | None
    h: float
    burn_in: int
    n_updates: int
    system: object  # the traveling system the schedule was simulated from
    schedule_seed: object

    @classmethod
    def build(cls, experiment, config, point, seed, paired, ladder: bool = True) -> _Traveling:
        """The point's setup; ``ladder=False``: the schedule of the run's updates alone, not
        of the step ladder's longer runs (enough for a replay: a traveling-chains
        simulation's first updates are the same whatever number it runs to)."""
        sharded = make_sharded(experiment, config, seed)
        model = sharded.model
        n_shards, dim = sharded.n_shards, model.dim
        burn_in, n_updates = config["burn_in"], config["burn_in"] + config["n_iterations"]
        own = {k: v for k, v in point.items() if k not in paired}
        h = chen_step_size(config["welling_teh_step_size"])
        plan_mean = None
        if config["slow_trajectory_length"]:
            plan_mean, fixed_length = plan_lengths(config)
            lengths = [fixed_length] * n_shards
        else:
            lengths = (config["trajectory_lengths"]
                       or [int(config["trajectory_length"])] * n_shards)
        group_size = int(config.get("group_size", 1))  # a key of coupled studies only
        groups = group_sizes(n_shards, group_size) if config["sampler"] == COUPLED_SGLD else None
        options = ({} if groups is None else
                   {"coupling_groups": tuple(groups), "coupling_time": config["coupling_time"]})
        if config["balancing"] == "adaptive":
            options.update(balancing="adaptive", mean_trajectory_length=(
                plan_mean if plan_mean is not None else float(np.mean(lengths))))
        longest = max(config.get("step_divisor", []), default=1) if ladder else 1
        system = traveling_system(config, lengths, timing=worker_timing(config), **options)
        schedule_seed = _schedule_seed(experiment, own, seed)
        schedule = system.simulate(longest * n_updates, schedule_seed)
        corrected = config["correction"] == "corrected"
        oracle = ShardedGaussianOracle.for_model(sharded, config["batch_size"],
                                                 config["replacement"], correction=corrected)
        base = sharded.shard_gradient()
        mu = model.posterior_mean
        initial = (mu + config["initial_offset"] * np.sqrt(model.posterior_variance)
                   if "initial_offset" in config else np.full(dim, config["initial_position"]))
        steps = (np.arange(config["thin"], n_updates + 1, config["thin"])
                 if "target_error" in config else np.array([], dtype=int))
        return cls(sharded, schedule, oracle, ShardScaled(base) if corrected else base,
                   SGLD(h) if groups is None else
                   CoupledSGLD(h, groups, noise_correction=config["noise_correction"]),
                   derive(seed, experiment, point_key(own)), initial, steps, lengths, groups,
                   plan_mean, h, burn_in, n_updates, system, schedule_seed)

    def replay(self, config: dict, blocks: Sequence[int] | None = None) -> Replay:
        """The replay of the point's replicates (of its seeding ``blocks``; default all)."""
        return replay_arm(self.schedule, self.sampler, self.estimator, config,
                          derive(self.seed_point, "engine"), burn_in=self.burn_in,
                          n_updates=self.n_updates, initial=self.initial,
                          extra_checkpoints=self.steps, blocks=blocks)

    def dataset(self, run: Replay, config, point, dims, with_references) -> xr.Dataset:
        """The point's Dataset from the replay ``run`` of all its replicates."""
        sharded, schedule, oracle, estimator = (self.sharded, self.schedule, self.oracle,
                                                self.estimator)
        model = sharded.model
        n_shards, dim = sharded.n_shards, model.dim
        burn_in, n_updates, h, initial = self.burn_in, self.n_updates, self.h, self.initial
        groups, steps, lengths, mu = self.groups, self.steps, self.lengths, model.posterior_mean
        seed_point, plan_mean = self.seed_point, self.plan_mean
        group_size = int(config.get("group_size", 1))
        divisors = config.get("step_divisor", [])
        arm = finish_arm(run, schedule, self.sampler, oracle, config, burn_in=burn_in,
                         n_updates=n_updates, initial=initial,
                         potential_gradient=model.potential_gradient, groups=groups)
        lead, ones = _leading(dims)

        def per_point(value, value_dims):
            return lead + value_dims, np.asarray(value).reshape(ones + np.shape(value))

        data = {
            "window_mean": per_point(arm.window_mean, ("replicate", "chain", "component")),
            "window_second": per_point(arm.window_second, ("replicate", "chain") + PAIR),
            "exact_window_mean": per_point(arm.exact_window_mean, ("chain", "component")),
            "exact_window_second": per_point(arm.exact_window_second, ("chain",) + PAIR),
            "posterior_mean": (("component",), model.posterior_mean),
            "posterior_variance": ((), model.posterior_variance),
            "step_size": ((), h),
        }
        if not steps.size:  # a time-to-target check keeps the error curves instead of the draws
            data["samples"] = per_point(arm.samples, ("chain", "draw", "component"))
        coords = {**{d: [point[d]] for d in dims}, "component": np.arange(dim),
                  "component2": np.arange(dim)}
        if with_references:
            frequencies = np.full(n_shards, 1.0 / n_shards)
            refs = references(sharded, oracle, frequencies, h, config["batch_size"])
            component_means, component_covariances = local_components(oracle, frequencies, h)
            data.update({
                "reference_mean": (("reference", "component"),
                                   np.stack([refs[r][0] for r in REFERENCES])),
                "reference_covariance": (("reference",) + PAIR,
                                         np.stack([refs[r][1] for r in REFERENCES])),
                "local_mean": (("shard", "component"), component_means),
                "local_covariance": (("shard",) + PAIR, component_covariances),
            })
            coords.update({"reference": list(REFERENCES), "shard": np.arange(n_shards)})
        if groups is not None:
            data.update({
                "first_member": per_point(first_members(groups), ("chain",)),
                "n_groups": per_point(len(groups), ()),
                "time_per_update": per_point(
                    schedule.update_times(n_updates)[-1].mean() / n_updates, ()),
            })
            coords["chain"] = np.arange(n_shards)
        if "gradient_draws" in config:
            total, minibatch = gradient_errors(
                estimator, sharded, group_size, config["batch_size"],
                config["replacement"], config["gradient_draws"],
                derive(seed_point, "gradient-draws"))
            scores = [sharded.point_scores(model.posterior_mean, s) for s in range(n_shards)]
            exact = coupled_gradient_noise(scores, config["batch_size"],
                                           group_size,
                                           replacement=config["replacement"])
            data.update({
                "gradient_error": per_point(total, ("gradient_draw",)),
                "gradient_minibatch_error": per_point(minibatch, ("gradient_draw",)),
                "exact_gradient_error": per_point(exact["total"], ()),
                "exact_gradient_minibatch_error": per_point(exact["minibatch"], ()),
            })
        if divisors:
            data.update(_step_ladder(oracle, schedule, n_updates, burn_in, h, initial, divisors,
                                     per_point))
            coords["step_divisor"] = list(divisors)
        schedules = config.get(LIMIT_SCHEDULES, 1)  # a key of studies with a limit check
        if divisors and schedules > 1:
            data.update(_other_schedules(self, schedules, divisors, per_point))
            coords.update({"limit_schedule": np.arange(1, schedules),
                           "ladder_divisor": [1, *divisors]})
        if config["trajectory_lengths"]:
            data.update(_shards(sharded, schedule, lengths))
            coords["shard"] = np.arange(n_shards)
        if steps.size:
            data.update(_error_curves(arm, schedule, mu, steps, n_updates, lengths,
                                      config["gantt_rounds"], per_point))
            coords.update({"step": steps, "shard": np.arange(n_shards)})
        if plan_mean is not None:
            data["mean_trajectory_length"] = ((), plan_mean)
        dataset = with_diagnostics(xr.Dataset(data, coords=coords), [arm],
                                   {d: [point[d]] for d in dims})
        dataset.attrs.update(data_attributes(sharded))
        return dataset


def _error_curves(arm, schedule, mu, steps, n_updates, lengths, gantt_rounds,
                  per_point) -> dict:
    """What a time-to-target check reads: ‖θ - μ‖² of every chain at every ``thin``-th update
    and its exact expectation, the simulated time of those updates, the fraction of the run
    each chain spent waiting, the final trajectory plan, and the first ``gantt_rounds``
    trajectories of every chain (who ran where and when: the waits balancing removes)."""
    error = np.sum((arm.run.draws - mu) ** 2, axis=-1)  # (replicate, chain, step)
    index = np.searchsorted(arm.exact.checkpoints, steps)
    exact_mean, exact_second = arm.exact.mean[index], arm.exact.second[index]
    exact_error = (np.sum((exact_mean - mu) ** 2, axis=-1)
                   + np.trace(exact_second, axis1=-2, axis2=-1) - np.sum(exact_mean**2, axis=-1))
    times = schedule.update_times(n_updates)
    plan = schedule.attrs.get("final_plan", ",".join(map(str, lengths)))
    blocks = trajectory_blocks(schedule, gantt_rounds)
    return {
        "squared_error": per_point(error, ("replicate", "chain", "step")),
        "exact_squared_error": per_point(exact_error.T, ("chain", "step")),
        "update_time": per_point(times[steps - 1].T, ("chain", "step")),
        "waiting_fraction": per_point(waiting_time(schedule) / times[-1], ("chain",)),
        "trajectory_plan": per_point(np.array(plan.split(","), dtype=np.int64), ("shard",)),
        **{f"gantt_{name}": per_point(values, ("trajectory",))
           for name, values in blocks.items()},
    }


def _other_schedules(arm: _Traveling, count: int, divisors, per_point) -> dict:
    """The exact window moments at ε and at each ε/k on ``count`` − 1 more schedules of the
    point's system, each simulated from its own seed (``limit_schedules``; the run's is the
    first, :func:`_step_ladder`): chains on independent schedules for a ``limit`` check, which
    no replay reads (so the replicate blocks do not depend on them)."""
    longest = max(divisors)
    means, seconds = [], []
    for index in range(1, count):
        schedule = arm.system.simulate(longest * arm.n_updates,
                                       derive(arm.schedule_seed, "limit-schedule", index))
        ladder = [_window_at_step(arm.oracle, schedule, arm.n_updates, arm.burn_in, arm.h,
                                  arm.initial, k) for k in (1, *divisors)]
        means.append(np.stack([m for m, _ in ladder]))
        seconds.append(np.stack([q for _, q in ladder]))
    return {
        "exact_window_mean_other_schedules": per_point(
            np.stack(means), ("limit_schedule", "ladder_divisor", "chain", "component")),
        "exact_window_second_other_schedules": per_point(
            np.stack(seconds), ("limit_schedule", "ladder_divisor", "chain") + PAIR),
    }


def _schedule_seed(experiment: str, point: dict, seed):
    """The seed of a traveling point's schedule: keyed by the point's values of what shapes the
    system (every swept value but the ``[sampler]`` fields; ``point`` without its paired
    dims), so that points differing only in the sampler or its gradient (arms, corrections)
    replay one schedule, as seed 004 §4.1 compares its arms."""
    sampler_fields = {spec.name for spec in SECTIONS["sampler"]}
    shaping = {k: v for k, v in point.items() if k not in sampler_fields}
    return derive(seed, experiment, *([point_key(shaping)] if shaping else []), "schedule")


def _window_at_step(oracle, schedule, n_updates, burn_in, h, initial, divisor: int):
    """The exact window mean and second moment at step h/k (k = ``divisor``) over updates
    k·burn-in .. k·n_updates of ``schedule``: the window of the same simulated length as the
    run's at h."""
    k = divisor
    return exact_moments(oracle, schedule, k * n_updates, h / k, initial,
                         [k * burn_in, k * n_updates]).window(k * burn_in, k * n_updates)


def _step_ladder(oracle, schedule, n_updates, burn_in, h, initial, divisors, per_point):
    """The exact window moments without minibatch noise at the run's step (the noise's share
    of the excess over the posterior), and with minibatch noise at each smaller step ε/k on the
    same schedule over a window of the same simulated length (updates k·burn-in ..
    k·n_updates): the same Langevin time at every step, so that the moments are a smooth
    function of ε whose ε → 0 limit a ``limit`` check extrapolates."""
    quiet = dataclasses.replace(oracle, shard_covariances=np.zeros_like(
        oracle.shard_covariances))
    quiet_mean, quiet_second = exact_moments(quiet, schedule, n_updates, h, initial,
                                             [burn_in, n_updates]).window(burn_in, n_updates)
    smaller = [_window_at_step(oracle, schedule, n_updates, burn_in, h, initial, k)
               for k in divisors]
    return {
        "exact_window_mean_without_minibatch_noise": per_point(quiet_mean, ("chain",
                                                                            "component")),
        "exact_window_second_without_minibatch_noise": per_point(quiet_second,
                                                                 ("chain",) + PAIR),
        "exact_window_mean_smaller_steps": per_point(np.stack([m for m, _ in smaller]),
                                                     ("step_divisor", "chain", "component")),
        "exact_window_second_smaller_steps": per_point(np.stack([q for _, q in smaller]),
                                                       ("step_divisor", "chain") + PAIR),
    }


def _shards(sharded, schedule, lengths) -> dict:
    """What makes shards unequal (seed 004 §4.1): each shard's size, mean, trajectory length,
    visit frequency q_s and local target p(θ) p(X_s|θ)^(N/N_s), which the uncorrected
    gradient pulls towards while the chain is on shard s."""
    frequency = np.zeros(sharded.n_shards)
    frequency[schedule.update_shards().ravel()] = schedule.update_column(
        "shard_frequency").ravel()
    local = [sharded.local_posterior(s, sharded.model.n_data / size)
             for s, size in enumerate(sharded.shard_sizes)]
    return {
        "shard_size": (("shard",), np.asarray(sharded.shard_sizes)),
        "shard_mean": (("shard", "component"), sharded.shard_means),
        "trajectory_length": (("shard",), np.asarray(lengths)),
        "shard_frequency": (("shard",), frequency),
        "local_posterior_mean": (("shard", "component"), np.stack([m for m, _ in local])),
        "local_posterior_variance": (("shard",), np.array([v for _, v in local])),
    }


def _federated(experiment, config, point, seed, dims) -> xr.Dataset:
    """Every estimator on one federated schedule of ``local_updates`` (seed 002 §5.1)."""
    federation = Federation.build(experiment, config, seed, int(config["local_updates"]))
    runs = [_federated_replay(experiment, config, point, seed, federation, method)
            for method in config["estimator"]]
    return _federated_point(experiment, config, point, seed, dims, federation, runs)


def _federated_replay(experiment, config, point, seed, federation, method,
                      blocks: Sequence[int] | None = None) -> Replay:
    """One estimator's replay of the federated schedule, from its own streams (of its
    replicates' seeding ``blocks``; default all)."""
    burn_in = config["burn_in"]
    return replay_arm(federation.schedule, SGLD(chen_step_size(config["welling_teh_step_size"])),
                      federation.estimators[method], config,
                      derive(derive(seed, experiment, point_key(point)), "engine", method),
                      burn_in=burn_in, n_updates=burn_in + config["n_iterations"],
                      initial=np.full(federation.sharded.model.dim, config["initial_position"]),
                      extra_checkpoints=burn_in + federation.window, blocks=blocks)


def _federated_point(experiment, config, point, seed, dims, federation, runs) -> xr.Dataset:
    """The point from every estimator's replay (``runs``, in ``config["estimator"]``'s
    order): the oracle's moments, the stationary moments and the rest of the dataset."""
    local = int(config["local_updates"])
    sharded, after = federation.sharded, federation.window
    model = sharded.model
    burn_in = config["burn_in"]
    n_updates = burn_in + config["n_iterations"]
    h = chen_step_size(config["welling_teh_step_size"])
    equal = len(set(sharded.shard_sizes)) == 1
    per_method = []
    for method, run in zip(config["estimator"], runs, strict=True):
        oracle = federation.oracles[method]
        arm = finish_arm(run, federation.schedule, SGLD(h), oracle, config, burn_in=burn_in,
                         n_updates=n_updates,
                         initial=np.full(model.dim, config["initial_position"]),
                         potential_gradient=model.potential_gradient)
        stationary, closed = _stationary(oracle, federation.probabilities, h, local, sharded,
                                         config["batch_size"], method,
                                         equal and config["replacement"])
        per_method.append({
            "window_mean": arm.window_mean, "window_second": arm.window_second,
            "exact_window_mean": arm.exact_window_mean,
            "exact_window_second": arm.exact_window_second,
            "running_mean": running_window_means(arm.run, burn_in, after),
            "exact_running_mean": np.stack([arm.exact.window(burn_in, burn_in + k)[0]
                                            for k in after]),
            "samples": arm.samples, "arm": arm,
            "stationary_second_moment": stationary, "closed_form_second_moment": closed,
        })
    return _federated_dataset(experiment, config, federation, per_method, point, dims, h, seed)


def _stationary(oracle, probabilities, h, local, sharded, batch, method, closed_applies):
    """Exact stationary E(θ - μ)² per coordinate, averaged over a round (docs/math.md §13), and
    §7.5's closed form where its assumptions (equal shards, uniform choice, replacement) hold."""
    model = sharded.model
    dim = model.dim
    if not oracle.diagonal:
        return np.full(dim, np.nan), np.full(dim, np.nan)
    a, c, q = shard_round_maps(oracle, probabilities, h, model.posterior_mean)
    _, second = round_stationary(a, c, q, probabilities, local)
    if not closed_applies or (method == "fsgld" and oracle.alpha != 1.0):
        return second, np.full(dim, np.nan)
    scale = model.n_data**2 / model.noise_scale**4
    within = scale * sharded.shard_variances.mean(axis=0) / batch
    between = scale * sharded.shard_means.var(axis=0)
    closed = np.array([dsgld_stationary_variance(h, model.precision, within[j], between[j],
                                                 local, method == "fsgld")
                       for j in range(dim)])
    return second, closed


def _federated_dataset(experiment, config, federation, per_method, point, dims, h,
                       seed) -> xr.Dataset:
    sharded, fitted, after = federation.sharded, federation.fitted, federation.window
    model = sharded.model
    dim, n_shards = model.dim, sharded.n_shards
    components = np.arange(dim)
    grid = theta_grid(config["grid_half_width"], config["grid_points"], dim)
    gamma = gamma_squared(sharded.point_scores, n_shards, grid)
    epsilon = epsilon_squared(sharded.point_scores, sharded.shard_sizes, grid, fitted)
    n_samples = per_method[0]["samples"].shape[1]
    posterior_draws = (model.posterior_mean + np.sqrt(model.posterior_variance)
                       * generator(seed, experiment, "posterior").standard_normal(
                           (n_samples, dim)))
    names = list(config["estimator"])
    lead, ones = _leading(dims)

    def stacked(name, value_dims):
        values = np.stack([m[name] for m in per_method])
        return lead + ("estimator",) + value_dims, values.reshape(ones + values.shape)

    data = {
        "window_mean": stacked("window_mean", ("replicate", "chain", "component")),
        "window_second": stacked("window_second", ("replicate", "chain") + PAIR),
        "exact_window_mean": stacked("exact_window_mean", ("chain", "component")),
        "exact_window_second": stacked("exact_window_second", ("chain",) + PAIR),
        "running_mean": stacked("running_mean", ("checkpoint", "replicate", "chain",
                                                 "component")),
        "exact_running_mean": stacked("exact_running_mean", ("checkpoint", "chain",
                                                             "component")),
        "samples": stacked("samples", ("chain", "draw", "component")),
        "stationary_second_moment": stacked("stationary_second_moment", ("component",)),
        "closed_form_second_moment": stacked("closed_form_second_moment", ("component",)),
        "iterations": (("checkpoint",), after),
        "posterior_mean": (("component",), model.posterior_mean),
        "posterior_variance": ((), model.posterior_variance),
        "posterior_samples": (("draw", "component"), posterior_draws),
        "gamma_squared": (("shard",), gamma),
        "epsilon_squared": (("shard",), epsilon),
        "shard_size": (("shard",), np.asarray(sharded.shard_sizes)),
        "shard_mean": (("shard", "component"), sharded.shard_means),
        "surrogate_mean": (("shard", "component"), fitted.means),
        "surrogate_covariance": (("shard",) + PAIR, fitted.covariances),
        "data": (("point", "component"), model.data),
        "step_size": ((), h),
    }
    coords = {**{d: [point[d]] for d in dims}, "estimator": names, "component": components,
              "component2": components, "checkpoint": np.arange(after.size),
              "shard": np.arange(n_shards)}
    dataset = with_diagnostics(xr.Dataset(data, coords=coords), [m["arm"] for m in per_method],
                               {**{d: [point[d]] for d in dims}, "estimator": names})
    dataset.attrs.update(data_attributes(sharded))
    return dataset
