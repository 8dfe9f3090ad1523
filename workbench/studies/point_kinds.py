"""The registry of point kinds: what runs one sweep point of a study, what judges its checks,
and what else its kind changes (:class:`PointKind`, :data:`POINT_KINDS`).

A study's model and system say which kind its points are; a few kinds are told apart by a
field (``[run] phase_space``, ``[system] n_servers``, ``[run] start``). Every place that
depends on the kind of point asks this registry (:func:`point_kind`), so a new kind of point
is one entry here, its point module, its judgements module and the fields it reads
(:mod:`.schema`, with ``only``) — not a branch in every module of the study layer. The entries
are exclusive (:func:`.schema.validate_kinds` refuses the combinations that would make two
apply), but for the last, the Gaussian mean of :mod:`.gaussian_point`, which takes whatever no
other entry does; the first that applies is the kind.

Each entry names the module that runs its points and the module whose
``judge(kind, dataset, ctx, options)`` judges one ``[[check]]`` of it; both are imported only
when a point runs or a check is judged (they need xarray, scipy and sympy, which reading,
showing and configuring a study does not).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

from workbench.studies.schema import (
    ASYNCHRONOUS,
    FEDERATED,
    FEDERATED_MODELS,
    GAUSSIAN,
    HELD_OUT,
    LDA,
    LOGISTIC,
    PAIRED_PROTOCOL,
    PAIRED_UNUSED,
    POOLED,
    POOLED_UNUSED,
    PROTOCOL_ORACLE,
    PROTOCOL_SYSTEMS,
    PROTOCOL_UNUSED,
    REAL_PROCESSES,
    REAL_UNUSED,
    SHARDED,
    STARTS,
    TRAVELING,
    fields,
    validate_federated_data,
    validate_phase_space_point,
    validate_sharded_point,
)

#: the fields of a model without an oracle and of federated rounds that a point of federated
#: rounds on such a model does not read (the simulated server's, the Gaussian federation's)
FEDERATED_MODELS_UNUSED = (
    "n_workers", "n_servers", "latency", "latency_mean", "latency_shape", "server_update_time",
    "network_delay", "straggler_probability", "straggler_slowdown", "n_chains",
    "grid_half_width", "grid_points", "bound_step_factors", "friction", "replicate_block",
    "test_functions", "python_test_functions", "test_function_entry_points")

if TYPE_CHECKING:
    import xarray as xr

    from bounds.verdict import Verdict
    from workbench.studies.gaussian_judgements import Context

#: how a point of a kind runs: (the study's :class:`~.experiment.StudyExperiment`, its
#: configuration, the point, the seed); the experiment is typed loosely, since it imports this
#: registry
Runner = Callable[[Any, dict, dict, Any], "xr.Dataset"]


#: raw results of some blocks of a point: (the study's experiment, its configuration, the
#: point, the seed, the blocks)
BlockRunner = Callable[[Any, dict, dict, Any, Sequence[int]], "xr.Dataset"]
#: the point from the raw results of all its blocks, joined in block order: (the experiment,
#: its configuration, the point, the seed, the raw results)
BlockFinisher = Callable[[Any, dict, dict, Any, "xr.Dataset"], "xr.Dataset"]


def seeding_ranges(experiment, resolved: dict) -> list[range]:
    """The replicates of each seeding block (``replicate_block``) of a resolved point."""
    from workbench.engine.replay_setup import replicate_blocks

    return replicate_blocks(resolved["n_replicates"], resolved["replicate_block"])


def _seeding_blocks(experiment, resolved: dict) -> int:
    return len(seeding_ranges(experiment, resolved))


def _logistic_ranges(experiment, resolved: dict) -> list[range] | None:
    """A held-out point's blocks where they are the same bits whatever its replicate count:
    logistic regression's, whose starts are one draw for all the point's replicates (the first
    rows of a larger draw), unless an averaged prediction is scored (in draw blocks sized by
    the replicate count). A network's starts are drawn layer by layer, so its blocks depend on
    the count (:func:`workbench.systems.asynchronous.models.initial_positions`)."""
    if resolved["model"] != LOGISTIC or resolved.get("averaged_prediction"):
        return None
    return seeding_ranges(experiment, resolved)


@dataclass(frozen=True)
class Blocks:
    """How a kind's point runs as independently seeded blocks that separate tasks may run:
    its replicates' seeding blocks (``replicate_block``), or the parts it runs side by side
    each from its own seed (a topic model's samplers; a federated point's estimators and its
    reference posterior). ``count(experiment, resolved)``: the blocks of a resolved point;
    ``run`` gives the raw results of some blocks, the same bits for each whichever blocks
    share the call; ``join(raws)`` joins the raw results of consecutive groups of blocks in
    order (None: along ``replicate``, :meth:`~workbench.run.experiment.Experiment.
    merge_blocks`); ``finish`` makes the point of all of them (what the kind's ``run`` gives
    for the whole point). ``kept(experiment, resolved)``: each block's replicates, given only
    where a block's raw results are the same bits whatever the point's replicate count (None
    at a point where they are not), so that a sequential check's later looks compute only
    their new blocks (:meth:`~workbench.run.experiment.Experiment.kept_blocks`)."""

    run: BlockRunner
    finish: BlockFinisher
    count: Callable[[Any, dict], int] = _seeding_blocks
    join: Callable[[Sequence[xr.Dataset]], xr.Dataset] | None = None
    kept: Callable[[Any, dict], list[range] | None] | None = None


@dataclass(frozen=True)
class PointKind:
    """One kind of sweep point.

    ``applies(value, named)``: whether a study is of this kind, ``value(name)`` giving a
    field's value (its default where the study does not write it) and ``named`` the fields
    the study writes or sweeps. ``run`` runs one point; ``judgements`` names the module judging
    its checks (relative to this package where it starts with a dot), with the study's
    ``test_function`` filled in where a check names none if ``fills_test_function``.

    ``marks``: the kind's name joins the study's model and system kinds (:func:`study_kinds`),
    so that fields and check kinds can name it; ``describes`` then says what it is, and its
    checks are its own check kinds alone, of which ``family`` may be judged in the study's one
    family. ``unused``: fields of its model and system kinds that it does not read, refused
    with ``unused_because`` (which may name the ``{system}``).

    ``validate``: what a resolved point needs beyond each field's range; ``resolve``: the
    resolved point as it runs. ``burn_in``: ``n_iterations`` counts after a burn-in, which the
    plan's work counts too; ``blocks``: its point splits into blocks that separate tasks may
    run (:class:`Blocks`); ``whole_grid``: its one point runs the whole grid, timed alone (so
    nothing else runs beside it); ``user_code``: it may run the researcher's code, probed
    before any work. ``panel``: ``module:function`` (relative to this package where it starts
    with a dot) drawing every check's default figure panel as ``function(ax, kind, dataset,
    ctx, options)``; empty: each check kind's own panel (:mod:`.figures`). ``updates``: the
    updates of one replicate at a resolved point, which the plan's work and memory count, where
    the kind runs for something other than ``n_iterations`` (a topic model's simulated time)."""

    name: str
    applies: Callable[[Callable[[str], Any], Collection[str]], bool]
    run: Runner
    judgements: str
    fills_test_function: bool = False
    marks: bool = False
    describes: str = ""
    family: tuple[str, ...] = ()
    unused: tuple[str, ...] = ()
    unused_because: str = ""
    validate: Callable[[dict], None] | None = None
    resolve: Callable[[dict], dict] | None = None
    burn_in: bool = False
    blocks: Blocks | None = None
    whole_grid: bool = False
    user_code: bool = False
    panel: str = ""
    updates: Callable[[dict], int] | None = None

    def judge(self, kind: str, dataset: xr.Dataset, ctx: Context,
              options: dict) -> list[Verdict]:
        """The verdicts of one ``[[check]]`` of the check ``kind``."""
        if self.fills_test_function:
            from workbench.studies.gaussian_judgements import with_test_function

            options = with_test_function(options, ctx)
        return import_module(self.judgements, __package__).judge(kind, dataset, ctx, options)


def _imported(module: str, function: str) -> Callable[..., Any]:
    """``module.function`` (``module`` relative to this package where it starts with a dot),
    imported when first called, so that the registry itself imports no point module."""
    def call(*arguments):
        return getattr(import_module(module, __package__), function)(*arguments)
    return call


def _zipped(module: str, *arguments: Callable[[Any], Any]) -> Runner:
    """A runner calling ``module.run_point(name, resolved, point, seed, dims, *arguments)``,
    each argument read from the experiment, the values zipped with a sweep dim placed as
    coordinates along it."""
    def run(experiment, config: dict, point: dict, seed) -> xr.Dataset:
        dataset = import_module(module, __package__).run_point(
            experiment.name, experiment.resolve(config, point), point, seed,
            experiment.sweep_dims, *(argument(experiment) for argument in arguments))
        return experiment.zipped_coords(dataset, point)
    return run


def _run_real(experiment, config: dict, point: dict, seed):
    """The study's one point: every point of its grid, run one after the other."""
    from workbench.studies import grid, realtime_point

    study = experiment.study
    return realtime_point.run_point(
        experiment.name, [experiment.resolve(config, p)
                          for p in grid.points(config, study.product, study.zipped)],
        seed, experiment.sweep_dims[0])


def _run_by_blocks(experiment, config: dict, point: dict, seed):
    """Its blocks, then the point (:meth:`StudyExperiment.run_blocks`, ``finish_point``)."""
    from workbench.run.experiment import Experiment

    return Experiment.run_point(experiment, config, point, seed)


def _seeded_blocks(module: str, run_options: Callable[[Any, dict], dict] | None = None,
                   finish_options: Callable[[Any, dict], dict] | None = None) -> Blocks:
    """The blocks of a kind whose points are their replicates' seeding blocks, kept across
    looks: ``module.run_blocks(name, resolved, point, seed, blocks, **run_options)`` and
    ``module.finish_point(name, resolved, point, seed, raw, dims=..., **finish_options)``,
    the options read from the experiment and the point (the Gaussian mean's, with the
    study's common streams; its phase space's; its pooled servers'; seed 003's protocols' on
    it and on logistic regression from Laplace starts, with their streams' prefix)."""
    def run(experiment, config: dict, point: dict, seed, blocks: Sequence[int]):
        return import_module(module, __package__).run_blocks(
            experiment.name, experiment.resolve(config, point), point, seed, blocks,
            **(run_options(experiment, point) if run_options else {}))

    def finish(experiment, config: dict, point: dict, seed, raw):
        return experiment.zipped_coords(import_module(module, __package__).finish_point(
            experiment.name, experiment.resolve(config, point), point, seed, raw,
            dims=experiment.sweep_dims,
            **(finish_options(experiment, point) if finish_options else {})), point)

    return Blocks(run, finish, kept=seeding_ranges)


def _prefixed(experiment, point: dict) -> dict:
    """A protocol point's options: its random streams' prefix (a later part of shared
    points)."""
    return {"streams": experiment.streams}


def _held_out_blocks(experiment, config: dict, point: dict, seed, blocks: Sequence[int]):
    from workbench.studies import held_out_point

    return held_out_point.run_blocks(experiment.name, experiment.resolve(config, point), point,
                                     seed, experiment.code_directory(), blocks,
                                     experiment.common_streams(point))


def _finish_held_out(experiment, config: dict, point: dict, seed, raw):
    from workbench.studies import held_out_point

    return experiment.zipped_coords(held_out_point.finish_point(
        experiment.name, experiment.resolve(config, point), point, seed, experiment.sweep_dims,
        experiment.code_directory(), experiment.with_reference(), raw), point)


def _sharded_ranges(experiment, resolved: dict) -> list[range] | None:
    """A sharded point's replicate seeding blocks where they are its blocks, each the same
    bits whatever the point's replicate count (its replay's streams are the block's; the
    schedule, the oracle and the references are the point's): always on traveling chains, on
    federated rounds once the replicates fill more than one block (every estimator replayed in
    each); None for a federated-rounds point of one block, whose blocks are its estimators."""
    ranges = seeding_ranges(experiment, resolved)
    return ranges if resolved["system"] == TRAVELING or len(ranges) > 1 else None


def _sharded_count(experiment, resolved: dict) -> int:
    """A sharded point's blocks: its replicate seeding blocks (:func:`_sharded_ranges`), else
    its estimators (each replaying the schedule from its own streams)."""
    ranges = _sharded_ranges(experiment, resolved)
    return len(resolved["estimator"]) if ranges is None else len(ranges)


def _sharded_blocks(experiment, config: dict, point: dict, seed, blocks: Sequence[int]):
    from workbench.studies import sharded_point

    resolved = experiment.resolve(config, point)
    return sharded_point.run_blocks(experiment.name, resolved, point, seed,
                                    experiment.study.paired, blocks,
                                    _sharded_ranges(experiment, resolved) is not None)


def _finish_sharded(experiment, config: dict, point: dict, seed, raw):
    from workbench.studies import sharded_point

    return experiment.zipped_coords(sharded_point.finish_point(
        experiment.name, experiment.resolve(config, point), point, seed, experiment.sweep_dims,
        experiment.with_references(), experiment.study.paired, raw), point)


def _validate_backend(resolved: dict) -> None:
    """``backend = "jax"`` needs JAX installed (:mod:`workbench.engine.jax_replay`)."""
    if resolved["backend"] == "jax":
        from workbench.engine import jax_replay

        jax_replay.require()


def _check_held_out_sizes(resolved: dict) -> None:
    from workbench.systems.asynchronous.models import check_text
    from workbench.systems.asynchronous.run import check_sizes

    check_sizes(resolved, resolved["n_iterations"], "n_iterations")
    if "text_source" in resolved:  # a language model's
        check_text(resolved)


def _topic_blocks(experiment, config: dict, point: dict, seed, samplers: Sequence[int]):
    from workbench.studies import topic_point

    return topic_point.run_samplers(experiment.name, experiment.resolve(config, point), point,
                                    seed, samplers)


def _finish_topics(experiment, config: dict, point: dict, seed, raw):
    from workbench.studies import topic_point

    return topic_point.finish_point(experiment.name, experiment.resolve(config, point), point,
                                    seed, experiment.sweep_dims, raw)


def _federated_count(experiment, resolved: dict) -> int:
    from workbench.studies import federated_model_point

    return federated_model_point.block_count(resolved, experiment.with_reference())


def _federated_blocks(experiment, config: dict, point: dict, seed, blocks: Sequence[int]):
    from workbench.studies import federated_model_point

    return federated_model_point.run_blocks(experiment.name, experiment.resolve(config, point),
                                            point, seed, blocks)


def _finish_federated(experiment, config: dict, point: dict, seed, raw):
    from workbench.studies import federated_model_point

    return experiment.zipped_coords(federated_model_point.finish_point(
        experiment.name, experiment.resolve(config, point), point, seed, experiment.sweep_dims,
        experiment.with_reference(), raw), point)


#: the point kind of a topic-model study (:mod:`.topic_point`)
TOPIC_MODEL = "topic-model"

POINT_KINDS: tuple[PointKind, ...] = (
    PointKind(
        REAL_PROCESSES, lambda value, named: value("system") == REAL_PROCESSES, _run_real,
        ".realtime_judgements", unused=REAL_UNUSED,
        unused_because="means nothing on a real-processes point: one real run per worker "
                       "count, compared with the simulator calibrated on it, which measures "
                       "the network",
        whole_grid=True),
    PointKind(
        SHARDED, lambda value, named: value("model") == SHARDED,
        _zipped(".sharded_point", lambda e: e.with_references(), lambda e: e.study.paired),
        ".sharded_checks", validate=validate_sharded_point, burn_in=True,
        blocks=Blocks(_sharded_blocks, _finish_sharded, count=_sharded_count,
                      join=_imported(".sharded_point", "join_blocks"), kept=_sharded_ranges)),
    PointKind(
        PROTOCOL_ORACLE,
        lambda value, named: value("model") == GAUSSIAN and value("system") in PROTOCOL_SYSTEMS,
        _run_by_blocks, ".protocol_judgements", marks=True,
        describes="seed 003's protocols on the Gaussian mean",
        family=("oracle", "envelope", "rate"), unused=PROTOCOL_UNUSED,
        unused_because="means nothing on a {system} point of the Gaussian mean: seed 003's "
                       "exact protocol oracle fixes its model (d = 1, x ~ N(0, 1), prior "
                       "N(0, 1)) and runs SGLD with minibatches drawn with replacement",
        resolve=_imported(".protocol_point", "resolve"),
        blocks=_seeded_blocks(".protocol_point", _prefixed, _prefixed)),
    PointKind(
        "phase-space", lambda value, named: bool(value("phase_space")), _run_by_blocks,
        ".phase_space_judgements", fills_test_function=True,
        unused=("n_checkpoints", "initial_position", "n_draws"),
        unused_because="means nothing in a phase_space study: its chains start at rest at the "
                       "posterior mean, as its oracle assumes, and keep φ̂_L at the last sample "
                       "count alone",
        validate=validate_phase_space_point, panel=".figures:phase_space_panel",
        blocks=_seeded_blocks(".phase_space_point")),
    PointKind(
        POOLED, lambda value, named: value("model") == GAUSSIAN and
        value("system") == ASYNCHRONOUS and "n_servers" in named,
        _run_by_blocks, ".pooled_judgements", marks=True,
        describes="the Gaussian mean with n_servers pooled",
        family=("oracle", "slope", "invariance"), unused=POOLED_UNUSED,
        unused_because="means nothing on the Gaussian mean with n_servers pooled: its exact "
                       "pooled oracle judges θ in d = 1 and it keeps no draws",
        panel=".figures:pooled_panel",
        blocks=_seeded_blocks(".pooled_point")),
    PointKind(
        PAIRED_PROTOCOL, lambda value, named: value("start") == STARTS[1],
        _run_by_blocks, ".paired_protocol_judgements",
        marks=True, describes="seed 003's downpour with start = \"laplace\"",
        family=("reference", "rate", "ordering"), unused=PAIRED_UNUSED,
        unused_because="means nothing with start = \"laplace\": its points keep φ̂_L of the "
                       "held-out log-loss at L alone, from shared Laplace starts, with SGLD",
        blocks=_seeded_blocks(".paired_protocol_point", _prefixed, _prefixed)),
    PointKind(
        FEDERATED_MODELS,
        lambda value, named: value("model") in HELD_OUT and value("system") == FEDERATED,
        _zipped(".federated_model_point", lambda e: e.with_reference()),
        ".federated_model_judgements", marks=True,
        describes="federated rounds on a model without an oracle",
        family=("ordering", "spread", "invariance", "reference"),
        unused=FEDERATED_MODELS_UNUSED,
        unused_because="means nothing in federated rounds on a model without an oracle: its "
                       "n_replicates chains run SGLD on f_s = 1/S rounds in one block and "
                       "keep the model's held-out and learning log-loss and accuracy",
        validate=validate_federated_data, burn_in=True,
        panel=".figures:federated_models_panel",
        blocks=Blocks(_federated_blocks, _finish_federated, count=_federated_count,
                      join=_imported(".federated_model_point", "join_blocks"))),
    PointKind(
        TOPIC_MODEL, lambda value, named: value("model") == LDA, _zipped(".topic_point"),
        ".topic_judgements", marks=True, describes="LDA's samplers on topic workers",
        family=("perplexity", "time-to-perplexity"),
        unused=("sampler", "n_iterations", "replicate_block", "initial_position",
                "replacement"),
        unused_because="means nothing in a topic-model study: its samplers are topic_samplers, "
                       "each runs for time_horizon of simulated time, its replicates in one "
                       "block from seeded starts, and its minibatches are batch_size documents "
                       "drawn without replacement",
        validate=_imported(".topic_point", "validate_point"), panel=".figures:topic_panel",
        updates=_imported(".topic_point", "chain_steps"),
        blocks=Blocks(_topic_blocks, _finish_topics,
                      count=lambda experiment, resolved: len(resolved["topic_samplers"]),
                      join=_imported(".topic_point", "join_samplers"))),
    PointKind(
        "held-out",
        lambda value, named: value("model") in HELD_OUT and value("start") != STARTS[1]
        and value("system") != FEDERATED,
        _run_by_blocks,
        ".held_out_judgements", family=("slope", "invariance", "reference", "speed-up"),
        validate=_check_held_out_sizes, burn_in=True, user_code=True,
        blocks=Blocks(_held_out_blocks, _finish_held_out, kept=_logistic_ranges)),
    PointKind(GAUSSIAN, lambda value, named: True, _run_by_blocks, ".gaussian_judgements",
              blocks=_seeded_blocks(".gaussian_point", lambda experiment, point: {
                  "streams": experiment.common_streams(point)}),
              validate=_validate_backend),
)


def point_kind(values: Mapping[str, Any], named: Collection[str] | None = None) -> PointKind:
    """The kind of a study's points: ``values`` maps field names to values (a study's as
    written, or a configuration), defaults where absent; ``named``: the fields the study
    writes or sweeps (``values``' keys if not given)."""
    catalogue = fields()

    def value(name: str) -> Any:
        return values.get(name, catalogue[name].parameter.default)

    named = values.keys() if named is None else named
    return next(kind for kind in POINT_KINDS if kind.applies(value, named))


def study_kinds(values: Mapping[str, Any], swept: Collection[str]) -> set[str]:
    """A study's model and system kinds (``values``: its fields as written, defaults where
    absent), and its point kind's name where that kind marks the study (:attr:`PointKind.marks`;
    ``swept``: the names its sweep lists)."""
    catalogue = fields()
    kinds = {values.get(name, catalogue[name].parameter.default) for name in ("model", "system")}
    kind = point_kind(values, set(values) | set(swept))
    return kinds | {kind.name} if kind.marks else kinds


def marking() -> tuple[PointKind, ...]:
    """The point kinds whose name joins the study's kinds (:attr:`PointKind.marks`)."""
    return tuple(kind for kind in POINT_KINDS if kind.marks)


#: the held-out models' point kind (their checks' one family, :data:`.check_kinds.STUDY_FAMILY`)
HELD_OUT_KIND = next(kind for kind in POINT_KINDS if kind.name == "held-out")
