"""A study run as an experiment: the same runner, store, checks, report and dashboard.

:class:`StudyExperiment` implements the experiment protocol of
:mod:`workbench.run.experiment` for any :class:`~workbench.studies.study.Study`: the sweep
points come from its grid (:mod:`workbench.studies.grid`), each point runs the shared
Gaussian-mean point (:mod:`workbench.studies.gaussian_point`, split into replicate blocks) or
the sharded-data point (:mod:`workbench.studies.sharded_point`, traveling chains or federated
rounds), the phase-space point of SGHMC (:mod:`workbench.studies.phase_space_point`), the
point of seed 003's protocols on the Gaussian mean (:mod:`workbench.studies.protocol_point`,
downpour or elastic), the Gaussian mean with S asynchronous servers pooled
(:mod:`workbench.studies.pooled_point`), the one point of a real-processes study
(:mod:`workbench.studies.realtime_point`, its worker counts one after the other, alone),
the point of a model without an oracle (:mod:`workbench.studies.held_out_point`, logistic
regression or the researcher's own model, against a reference posterior), or seed 003's
protocols on logistic regression with replicates paired across the sweep
(:mod:`workbench.studies.paired_protocol_point`); the points combine along the sweep dims, the
``[[check]]`` entries give the verdicts (:mod:`workbench.studies.gaussian_judgements`) and each
check kind its default figure (:mod:`workbench.studies.figures`). A Gaussian study's
``[[design]]`` tables add points of their own beside the sweep's
(:mod:`workbench.studies.designs`), run and combined by
:mod:`workbench.studies.design_point` and judged by :mod:`workbench.studies.design_judgements`.
A federated study's ``[run] bound_step_factors`` adds its step grid's points
(:mod:`workbench.studies.step_grid_point`), which its ``envelope`` checks judge
(:mod:`workbench.studies.step_envelope_judgements`; seed 002 Theorems 1-2).

A built-in experiment is a shipped study file plus, at most, the function that draws the
paper's figure (:class:`PaperFigure`, ``[study] figure``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bounds.family_sizes import family_of
from simulators.validation import InvalidParameter
from workbench.run.experiment import Experiment, results_bytes
from workbench.run.plan import check_memory, check_point_count, check_work
from workbench.studies import designs, grid
from workbench.studies.check_kinds import KINDS
from workbench.studies.document import Document
from workbench.studies.point_kinds import HELD_OUT_KIND, point_kind, seeding_ranges
from workbench.studies.schema import (
    COUPLED_SGLD,
    FEDERATED,
    HELD_OUT,
    LIMIT_SCHEDULES,
    RANDOM_ASSIGNMENT,
    STEP_DESIGN,
    STEP_FACTORS,
    TRAVELING,
    fields,
    kind_fields,
    validate_kinds,
)
from workbench.studies.study import Study, from_document
from workbench.studies.user_code import UserCodeError
from workbench.systems.asynchronous.system import DOWNPOUR, ELASTIC
from workbench.systems.topics.parameters import GENERATED_CORPUS

# the points, the checks and the figures (engine, xarray, scipy.stats, sympy, matplotlib) are
# imported by the methods that run, combine, judge and draw: loading, showing and configuring a
# study needs none of them (issue 15)
if TYPE_CHECKING:
    import xarray as xr

    from bounds.verdict import Verdict
    from workbench.studies.gaussian_judgements import Context


class PaperFigure:
    """The paper's figure of a built-in study (``[study] figure``), drawn instead of the
    default figures: ``load(reference)`` gives the function ``draw(dataset, path)``, resolved
    when the figure is drawn (describing and configuring the study imports no plotting); it
    returns the path it wrote, or a list of them (a figure in several files)."""

    def __init__(self, reference: str, load):
        self.reference, self.load = reference, load

    def __call__(self, name: str, dataset: xr.Dataset, out_dir: Path) -> list[Path]:
        drawn = self.load(self.reference)(dataset, Path(out_dir) / f"{name}.png")
        return drawn if isinstance(drawn, list) else [drawn]


class StudyExperiment(Experiment):
    unblocked_keys = (LIMIT_SCHEDULES,)  # the limit check's other schedules finish a point

    def __init__(self, study: Study, figure: PaperFigure | None = None, streams: str = ""):
        self.study = study
        #: the paper's figure, drawn instead of the check kinds' default figures
        self.figure = figure
        #: the prefix of its points' random streams (a later part of shared points,
        #: :meth:`~.parts.PartsStudy.streams`); the protocol points read it
        self.streams = streams
        self.name = study.name
        self.summary = study.summary
        self.source = study.source
        self.parameters = study.parameters
        self.quick = study.quick
        self.sweep_dims = study.sweep_dims
        self.headline, self.paper = study.headline, study.paper
        self.until_decided = study.until_decided
        # real runs time themselves: no other sweep's tasks beside them
        self.runs_alone = point_kind(study.values).whole_grid

    def __reduce__(self):
        # Validators built per study (grids, constants) are closures that do not pickle; a
        # worker process rebuilds the experiment from the study's text instead.
        return (rebuild_study, (self.study.text, self.study.origin, self.figure, self.streams))

    def configure(self, overrides=None, quick=False):
        """The run's configuration; every sweep point is resolved once so that a derived
        value out of range (``step_size`` ≤ 0 from a zero constant, say) is refused before
        anything runs, naming the derived field, the point and the expression. A field of
        the study's kinds that means nothing in it is refused saying why."""
        for key, value in (overrides or {}).items():
            if key in self.study.unused:
                raise InvalidParameter(key, value, self.study.unused[key])
        config = super().configure(overrides, quick)
        written = {k: self.study.values.get(k, fields()[k].parameter.default)
                   for k in ("model", "system")}
        if kind_fields({config["model"], config["system"]}) != kind_fields(set(written.values())):
            name = "model" if config["model"] != written["model"] else "system"
            raise InvalidParameter(name, config[name], "changes the study's kind and so its "
                                                       "fields; write a study file of that kind")
        validate_kinds(config)
        for check in self.study.checks:  # the grid a speed-up check reads, after --set
            if check.kind == "perplexity" and config["corpus"] != GENERATED_CORPUS:
                raise InvalidParameter("corpus", config["corpus"], "has no true topics: the "
                                       "study's perplexity check needs a generated corpus")
            if check.kind == "speed-up":
                _validate_speedup_grid(config, check.options["over"])
            _validate_pairs(config, check)
            for dim, value in check.options.get("baseline", {}).items():
                if value not in config[dim] or len(config[dim]) < 2:
                    raise InvalidParameter(dim, config[dim], f"must include {value} and another "
                                           f"value: the study's {check.kind} check compares "
                                           f"the others with {dim} = {value}")
        _validate_step_grid(config, self.study.checks)
        _validate_limit_schedules(config)
        kind = point_kind(config)
        check_point_count(grid.count(config, self.study.product, self.study.zipped),
                          f"{self.name} sweep")
        total, real = 0, []
        for point in grid.points(config, self.study.product, self.study.zipped):
            try:
                resolved = self.resolve(config, point)
                if kind.whole_grid:  # one run per worker count: no replicates, checkpoints
                    real.append(resolved)
                    continue
                if kind.validate is not None:
                    kind.validate(resolved)
                if resolved.get("n_checkpoints", 0) > resolved.get("n_iterations", 0) and \
                        not resolved.get("phase_space"):  # that keeps φ̂ at L alone
                    # checkpoints are distinct sample counts: a shorter run would have fewer,
                    # and the points could not share the checkpoint dim
                    at = ", ".join(f"{k} = {v}" for k, v in point.items()) or "the only point"
                    raise InvalidParameter("n_checkpoints", resolved["n_checkpoints"],
                                           f"must be at most n_iterations, which is "
                                           f"{resolved['n_iterations']} at {at}")
                # the plan's limits, point by point, before any point kind's code is imported
                total += _work(resolved)
                check_work(self.name, total)
                check_memory(self.name, _memory(resolved))
            except InvalidParameter as error:
                at = ", ".join(f"{k} = {v}" for k, v in point.items())
                written = config.get(error.field, error.value)
                if written == error.value:
                    raise
                raise InvalidParameter(error.field, written,
                                       f"evaluates to {error.value!r} at "
                                       f"{at or 'the only point'}, but {error.allowed}") from None
        if real:
            from workbench.studies import realtime_point

            realtime_point.worker_counts(real, self.sweep_dims[0])
        return config

    def code_directory(self) -> Path | None:
        """The study file's folder, searched first for a ``python`` model's module."""
        origin = Path(self.study.origin)
        return origin.parent.resolve() if origin.is_file() else None

    def check_code(self, config: dict, seed: int) -> None:
        """Build the researcher's model and sampler once, at the first sweep point, and probe
        their protocols (:mod:`.user_code`), before any work: a factory that does not import,
        fails, or breaks the protocol is a :class:`~workbench.studies.document.StudyError`
        naming the key and line. Call it only once running the code is allowed: it runs the
        code."""
        if not point_kind(config).user_code:
            return
        from workbench.studies import held_out_point

        first = self.resolve(config, grid.points(config, self.study.product,
                                                 self.study.zipped)[0])
        try:
            held_out_point.check_code_of(self.name, first, seed, self.code_directory())
        except UserCodeError as error:
            named = "entry_point" if "entry_point" in self.study.values else "python"
            key = error.key or ("model", named if config["model"] == "python" else "kind")
            doc = Document.parse(self.study.text, self.study.origin)
            raise doc.error(key, str(error)) from None

    # ------------------------------------------------------------------------- the sweep
    def points(self, config):
        if point_kind(config).whole_grid:
            return [{}]  # the whole grid, run in one point
        own = grid.points(config, self.study.product, self.study.zipped)
        return own + self.design_points(config) + self.step_points(config)

    def optional_lists(self, config):
        """The step factors, where the study has a step grid: the sweep's points run at h, and
        a step grid's point names its own factor."""
        return (STEP_FACTORS,) if STEP_FACTORS in config else ()

    @staticmethod
    def step_points(config) -> list[dict]:
        """The step grid's points (:mod:`.step_grid_point`; none without step factors)."""
        if not config.get(STEP_FACTORS):
            return []
        from workbench.studies import step_grid_point

        return step_grid_point.points(config)

    def design_points(self, config) -> list[dict]:
        """The points of the study's designs, in the order written (none if ``designs`` is
        false)."""
        if not config.get(designs.DESIGNS.name):
            return []
        return [point for design in self.study.designs for point in design.points(config)]

    def design_of(self, point: dict) -> designs.Design | None:
        name = designs.of(point)
        return next((d for d in self.study.designs if d.name == name), None)

    def _elsewhere(self, point: dict) -> bool:
        """Whether a point is a design's or the step grid's, not the sweep's."""
        return self.design_of(point) is not None or _on_step_grid(point)

    def resolve(self, config: dict, point: dict) -> dict:
        """The point's configuration (swept values in place, expressions evaluated)."""
        swept = {k: point[k] for k in self.study.swept if k in point}
        resolved = grid.resolve(config, swept, self.study.swept)
        kind = point_kind(config)
        return resolved if kind.resolve is None else kind.resolve(resolved)

    def point_identity(self, config, point):
        identity = super().point_identity(config, point)
        if config["model"] in HELD_OUT:
            identity["with_reference"] = self.with_reference()
        if config["system"] == TRAVELING:
            identity["with_references"] = self.with_references()
        design = self.design_of(point)
        if design is not None and design.paired:
            identity[design.parameter("streams")] = f"common across {', '.join(design.paired)}"
        elif design is None and any(dim in point for dim in self.study.paired):
            identity["streams"] = f"common across {', '.join(self.study.paired)}"
        return identity

    def common_streams(self, point: dict) -> dict | None:
        """What keys a sweep point's engine streams where the study pairs dims (``[study]
        paired``): the point without them, so that points along them share the engine's
        noise and minibatches; None (the point itself) where it pairs none."""
        if not self.study.paired:
            return None
        return {k: v for k, v in point.items() if k not in self.study.paired}

    def with_reference(self) -> bool:
        """Whether a check judges against the reference posterior, so that a point of a model
        without an oracle computes and keeps it (:attr:`.check_kinds.Kind.reference`)."""
        return any(KINDS[spec.kind].reference for spec in self.study.checks)

    def with_references(self) -> bool:
        """Whether a ``distance`` check compares the samples with seed 004 §3.2.1's references,
        so that a traveling-chains point computes and keeps them."""
        return any(spec.kind == "distance" for spec in self.study.checks)

    def _design_resolved(self, config: dict, point: dict) -> dict:
        """A design's point's configuration: the design's own values (its L among them) in
        place of the sweep's."""
        return grid.resolve(config, {k: v for k, v in point.items() if k != designs.DESIGN},
                            self.study.swept)

    def work(self, config, point):
        design = self.design_of(point)
        if design is not None:
            from workbench.studies import design_point

            resolved = self._design_resolved(config, point)
            length = design_point.read_out(design, resolved, point)[-1]
            return _work({**resolved, "n_iterations": length})
        if self._elsewhere(point) or point_kind(config).whole_grid:
            return 0
        return _work(self.resolve(config, point))

    def memory(self, config, point):
        if self._elsewhere(point) or point_kind(config).whole_grid:
            return 0
        return _memory(self.resolve(config, point))

    def replicate_blocks(self, config, point):
        if self.design_of(point) is not None:  # a design's point runs the Gaussian kind's
            return len(seeding_ranges(self, self._design_resolved(config, point)))
        blocks = point_kind(config).blocks
        if self._elsewhere(point) or not blocks:
            return 1
        return blocks.count(self, self.resolve(config, point))

    def kept_blocks(self, config, point):
        if self.design_of(point) is not None:
            return seeding_ranges(self, self._design_resolved(config, point))
        blocks = point_kind(config).blocks
        if self._elsewhere(point) or not blocks or blocks.kept is None:
            return None
        return blocks.kept(self, self.resolve(config, point))

    def run_point(self, config, point, seed):
        if self.design_of(point) is not None:  # its blocks, finished (run_blocks, finish_point)
            return super().run_point(config, point, seed)
        if _on_step_grid(point):
            from workbench.studies import step_grid_point

            return step_grid_point.run(self.name, self.resolve(config, point), point, seed)
        return point_kind(config).run(self, config, point, seed)

    def run_blocks(self, config, point, seed, blocks: Sequence[int]):
        design = self.design_of(point)
        if design is not None:
            from workbench.studies import design_point

            return design_point.run_blocks(self.name, design,
                                           self._design_resolved(config, point), point, seed,
                                           blocks)
        return point_kind(config).blocks.run(self, config, point, seed, blocks)

    def merge_blocks(self, config, point, raws):
        join = point_kind(config).blocks.join
        return super().merge_blocks(config, point, raws) if join is None else join(raws)

    def finish_point(self, config, point, seed, raw):
        design = self.design_of(point)
        if design is not None:
            from workbench.studies import design_point

            return design_point.finish(self.name, design, self._design_resolved(config, point),
                                       point, seed, raw)
        return point_kind(config).blocks.finish(self, config, point, seed, raw)

    def zipped_coords(self, dataset, point):
        """The values zipped with a sweep dim, as coordinates along it."""
        for group in self.study.zipped:
            dataset = dataset.assign_coords({name: (group[0], [point[name]])
                                             for name in group[1:]})
        return dataset

    def combine(self, config, datasets):
        """The sweep points along the sweep dims (the designs' and the step grid's merged in);
        the result carries the study's text, so a stored result can always be judged again."""
        import xarray as xr

        from workbench.studies import design_point

        n_own = 1 if point_kind(config).whole_grid else grid.count(config, self.study.product,
                                                                    self.study.zipped)
        n_designs = n_own + len(self.design_points(config))
        combined = self._combine_sweep(config, datasets[:n_own])
        if n_designs > n_own:
            combined = xr.merge([combined, design_point.combine(
                self.study.designs, datasets[n_own:n_designs])], combine_attrs="override")
        if len(datasets) > n_designs:
            from workbench.studies import step_grid_point

            combined = step_grid_point.combine(combined, datasets[n_designs:])
        return combined.assign_attrs(study_toml=self.study.text)

    def _combine_sweep(self, config, own):
        if not self.sweep_dims or point_kind(config).whole_grid:
            return own[0]
        import xarray as xr

        shape = [len(config[d]) for d in self.sweep_dims]
        nested = np.empty(shape, dtype=object)
        for index, dataset in zip(np.ndindex(*shape), own, strict=True):
            nested[index] = dataset
        # a value every point shares (the posterior's) stays without the sweep dims; one that
        # a swept model field changes (noise_scale, say) takes them
        return xr.combine_nested(nested.tolist(), concat_dim=list(self.sweep_dims),
                                 data_vars="different", coords="minimal", compat="equals",
                                 join="exact", combine_attrs="override")

    # ------------------------------------------------------------------------ judgements
    def context(self, dataset: xr.Dataset, family: int = 0) -> Context:
        from workbench.store.netcdf import config_of
        from workbench.studies.gaussian_judgements import Context

        config = config_of(dataset)
        return Context(self.name, config, self.sweep_dims, self.study.bounds,
                       int(dataset.attrs.get("seed", 0)), self.study.symbols,
                       self.study.checks, family, self.study.point_kinds, self.streams,
                       self.study.paired, self.common_starts(config))

    def common_starts(self, config: dict) -> tuple[str, ...]:
        """The sweep dims along which the replicates share their starts, judged as paired: a
        held-out study's (:func:`.held_out_point.common_start_dims`) unless it writes
        ``pair_common_starts = false``; none for the other kinds."""
        if not self.study.pair_common_starts or point_kind(config) is not HELD_OUT_KIND:
            return ()
        from workbench.studies import held_out_point

        return held_out_point.common_start_dims(self, config)

    def checks(self, dataset):
        """The verdicts of the study's checks; with ``[study] family = "study"`` one
        Bonferroni family over all of them (their count known from a first judgement)."""
        verdicts = self.verdicts(dataset)
        return self.verdicts(dataset, family_size(verdicts)) if self.study.family == "study" \
            else verdicts

    def verdicts(self, dataset: xr.Dataset, family: int = 0) -> list[Verdict]:
        """Every check's verdicts, each in its own family or, ``family`` > 0, in one family of
        that many comparisons (:meth:`~.gaussian_judgements.Context.z`)."""
        context = self.context(dataset, family)
        verdicts = []
        for index, spec in enumerate(self.study.checks):
            with family_of((self.name, index)):  # its families (bounds.family_sizes)
                verdicts.extend(KINDS[spec.kind].run(dataset, context, spec.options))
        if self.study.designs:
            from workbench.studies import design_judgements

            with family_of((self.name, "designs")):
                verdicts.extend(design_judgements.checks(dataset, self.study.designs, context))
        return verdicts

    def figures(self, dataset, out_dir):
        if self.figure is not None:
            return self.figure(self.name, dataset, Path(out_dir))
        from workbench.studies import figures as default_figures

        return default_figures.draw(self.name, self.study.checks, self.context(dataset),
                                    dataset, Path(out_dir))


def family_size(verdicts: Sequence[Verdict]) -> int:
    """The comparisons of a study's one family (``[study] family = "study"``): one per
    verdict, and one per held-out point of an envelope's."""
    return sum(int(v.evidence.get("n_held_out", 1)) if v.kind == "envelope" else 1
               for v in verdicts)


def _on_step_grid(point: dict) -> bool:
    """Whether a point is the step grid's (its design named as :mod:`.step_grid_point`'s)."""
    return point.get("design") == STEP_DESIGN


#: replicates below which the variance over replicates, whose ratios a ``speed-up`` check reads,
#: is too rough to read a speed-up from (its relative error √(2/(R − 1)) is above 47 %)
SPEEDUP_MIN_REPLICATES = 10


#: the check kinds comparing two sweep points along a dim: the option naming the dim, and
#: what its two values are
_PAIRED_OPTIONS = {"time-to-target": ("over", "the baseline, then the arm expected sooner"),
                   "oracle": ("difference", "the second minus the first")}


def _validate_pairs(config: dict, check) -> None:
    """A check comparing two sweep points along a dim (a time-to-target check's ``over``, an
    oracle check's ``difference``) needs that dim swept over two values after ``--set`` as in
    the study file."""
    option, what = _PAIRED_OPTIONS.get(check.kind, (None, ""))
    if option not in check.options:
        return
    dim = check.options[option]
    values = config[dim] if isinstance(config[dim], list) else [config[dim]]
    if len(values) != 2:
        raise InvalidParameter(dim, config[dim], f"must be swept over two values ({what}): the "
                               f"study's {check.kind} check compares them")


def _validate_speedup_grid(config: dict, over: str) -> None:
    """A ``speed-up`` check (seed 001 Theorem 4, Corollary 5) compares every worker count with
    one worker and fits the log-log slope of S_P through three or more counts
    (:func:`bounds.checks.slope_check`), from the variance over replicates."""
    counts = config[over] if isinstance(config[over], list) else [config[over]]
    if 1 not in counts:
        raise InvalidParameter(over, config[over], "must include 1: the study's speed-up check "
                               "compares every worker count with one worker")
    if len(set(counts)) < 3:
        raise InvalidParameter(over, config[over], "needs at least two counts besides 1: the "
                               "study's speed-up check fits its slope through three or more")
    if config["n_replicates"] < SPEEDUP_MIN_REPLICATES:
        raise InvalidParameter("n_replicates", config["n_replicates"], f"must be at least "
                               f"{SPEEDUP_MIN_REPLICATES}: the study's speed-up check divides "
                               "variances over replicates")


def _validate_step_grid(config: dict, checks) -> None:
    """A federated study's step grid runs along increasing local-update counts; its envelope
    checks judge their bound at the grid's steps, on estimators it runs (with no step factor,
    a run of the sweep alone, they are not judged:
    :func:`~.step_envelope_judgements.envelope_checks`)."""
    envelopes = [c for c in checks if c.kind == "envelope"] if config["system"] == FEDERATED \
        else []
    for check in envelopes:
        if check.options["estimator"] not in config["estimator"]:
            raise InvalidParameter("estimator", config["estimator"],
                                   f"must include {check.options['estimator']!r}: the "
                                   f"study's envelope check of {check.options['bound']} "
                                   "judges it")
    if config.get(STEP_FACTORS):
        local = config["local_updates"]
        if not isinstance(local, list) or local != sorted(local):
            raise InvalidParameter("local_updates", local, "must be swept in increasing order "
                                   "(the step grid's order)")


def _validate_limit_schedules(config: dict) -> None:
    """Other schedules of a traveling system add chains to a limit check only where the
    schedules are drawn at random, and the step ladder runs on them for uncoupled chains."""
    count = config.get(LIMIT_SCHEDULES, 1)
    if count == 1:
        return
    if config["assignment"] != RANDOM_ASSIGNMENT:
        raise InvalidParameter(LIMIT_SCHEDULES, count, f"needs assignment = "
                               f"\"{RANDOM_ASSIGNMENT}\": a {config['assignment']} rotation with "
                               "constant delays gives every seed the run's schedule, so other "
                               "schedules add no chains")
    if config["sampler"] == COUPLED_SGLD:
        raise InvalidParameter(LIMIT_SCHEDULES, count, "other schedules than the run's are for "
                               "uncoupled chains")


def rebuild_study(text: str, origin: str, figure, streams: str = "") -> StudyExperiment:
    """A study experiment from its pickled form (:meth:`StudyExperiment.__reduce__`): its study
    parsed again from its text, with its figure and streams."""
    return StudyExperiment(from_document(Document.parse(text, origin)), figure, streams)


def _updates(resolved: dict) -> int:
    """Updates of one replicate's chain at a resolved point (its burn-in included)."""
    kind = point_kind(resolved)
    if kind.updates is not None:
        return kind.updates(resolved)
    burn_in = resolved["burn_in"] if kind.burn_in else 0
    return resolved["n_iterations"] + burn_in


def _work(resolved: dict) -> int:
    """Replicate-updates of a resolved point of the study's own sweep, counted in local steps
    (gradient evaluations): downpour's every push is ``period`` of them, elastic averaging
    runs ``n_workers`` chains, and the asynchronous system one chain per server."""
    steps = {DOWNPOUR: resolved.get("period", 1), ELASTIC: resolved.get("n_workers", 1)}.get(
        resolved["system"], resolved.get("n_servers", 1))
    return _updates(resolved) * steps * resolved["n_replicates"]


def _memory(resolved: dict) -> int:
    """Bytes a resolved point's results need at least (:func:`results_bytes`)."""
    return results_bytes(resolved, _updates(resolved))
