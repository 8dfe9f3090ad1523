"""A study of parts run as an experiment (:mod:`.parts`): each part a
:class:`~workbench.studies.experiment.StudyExperiment` on its own configuration, the points of
all parts in one sweep, one combined dataset, each part judged on its own slice.

A part's points, blocks, work, memory and store identity are its study's, with ``part`` in the
point (its seeds' key); the parts' datasets are merged with every part but the first under the
prefix ``<part>_``, and a result is sliced back into a part's own names, with the part's
configuration, before its checks judge it (:meth:`PartsExperiment.part_dataset`). With
``[study] points = "shared"`` a part runs the sweep point without ``part``, its streams named
by :meth:`~.parts.PartsStudy.streams`, the sweep dims stay unprefixed and the verdicts keep
their parts' names.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from simulators.validation import InvalidParameter
from workbench.run.experiment import Experiment
from workbench.studies.document import Document
from workbench.studies.experiment import PaperFigure, StudyExperiment, family_size
from workbench.studies.parts import Part, PartsStudy, from_document
from workbench.studies.study import Study

if TYPE_CHECKING:
    import xarray as xr


def part_slice(dataset: xr.Dataset, part: str, parts: list[str],
               shared: tuple[str, ...] = ()) -> xr.Dataset:
    """Part ``part``'s variables of a result of the study of ``parts``, under the part's own
    names: the first part's are unprefixed, a later part's carry ``<part>_`` (except the
    ``shared`` dims of shared points); what checks and the paper's figures read."""
    first, *others = parts
    if part == first:
        return dataset.drop_vars([n for n in dataset.variables
                                  if any(str(n).startswith(f"{p}_") for p in others)])
    prefix = f"{part}_"
    own = dataset.drop_vars([n for n in dataset.variables
                             if not str(n).startswith(prefix) and n not in shared])
    return own.rename({n: str(n).removeprefix(prefix) for n in (*own.dims, *own.data_vars)})


class PartsExperiment(Experiment):
    def __init__(self, study: PartsStudy, figure: PaperFigure | None = None):
        self.study = study
        #: the paper's figure, drawn instead of the parts' default figures
        self.figure = figure
        self.name, self.summary, self.source = study.name, study.summary, study.source
        self.parameters = study.parameters
        self.quick = study.quick
        self.sweep_dims = study.sweep_dims
        self.headline, self.paper = study.headline, study.paper
        self.until_decided = study.until_decided
        self.experiments = {part.name: StudyExperiment(part.study, streams=study.streams(part))
                            for part in study.parts}

    def __reduce__(self):
        # as a StudyExperiment: a worker process rebuilds it from the study's text
        return (rebuild_parts, (self.study.text, self.study.origin, self.figure))

    def configure(self, overrides=None, quick=False):
        """The study's configuration, each part's configured and checked as its study's
        (a refusal names the study's key). A field of a part's kinds that means nothing in
        that part is refused saying why, as in a study of one part (shared fields are
        written in the file, so none is unused)."""
        unused = {part.key(name): reason for part in self.study.parts
                  for name, reason in part.study.unused.items()}
        for key, value in (overrides or {}).items():
            if key in unused:
                raise InvalidParameter(key, value, unused[key])
        config = super().configure(overrides, quick)
        for part in self.study.parts:
            try:
                self.experiments[part.name].configure(self.study.part_config(config, part))
            except InvalidParameter as error:
                name, mark, rest = error.field.partition("[")
                raise InvalidParameter(part.key(name) + mark + rest, error.value,
                                       error.allowed) from None
        return config

    def check_code(self, config: dict, seed: int) -> None:
        for part in self.study.parts:
            self.experiments[part.name].check_code(self.study.part_config(config, part), seed)

    # ------------------------------------------------------------------------- the sweep
    def _part(self, method: str, config: dict, point: dict, *args):
        """The part's experiment's ``method`` at ``point``, on the part's configuration."""
        part = next(p for p in self.study.parts if p.name == point["part"])
        own = self.study.part_config(config, part)
        if self.study.shared:  # the sweep point alone keys the part's seeds
            point = {k: v for k, v in point.items() if k != "part"}
        return getattr(self.experiments[part.name], method)(own, point, *args)

    def points(self, config):
        return [{"part": part.name, **point} for part in self.study.parts
                for point in self.experiments[part.name].points(
                    self.study.part_config(config, part))]

    def point_identity(self, config, point):
        return self._part("point_identity", config, point)

    def work(self, config, point):
        return self._part("work", config, point)

    def memory(self, config, point):
        return self._part("memory", config, point)

    def replicate_blocks(self, config, point):
        return self._part("replicate_blocks", config, point)

    def kept_blocks(self, config, point):
        return self._part("kept_blocks", config, point)

    def run_blocks(self, config, point, seed, blocks):
        return self._part("run_blocks", config, point, seed, blocks)

    def keys_read_by(self, checks):
        """The parameters of the parts that own the verdicts ``checks`` (named
        ``<part>/<check>``), the shared ones included: a part's checks read its points alone.
        None (every key) for shared points, whose verdicts keep their parts' names."""
        if self.study.shared:
            return None
        owners = {check.partition("/")[0] for check in checks}
        return {part.key(parameter.name) for part in self.study.parts if part.name in owners
                for parameter in part.study.parameters}

    def merge_blocks(self, config, point, raws):
        return self._part("merge_blocks", config, point, raws)

    def finish_point(self, config, point, seed, raw):
        return self._part("finish_point", config, point, seed, raw)

    def run_point(self, config, point, seed):
        return self._part("run_point", config, point, seed)

    def combine(self, config, datasets):
        """Each part's points combined by its study, the first part's under its own names,
        the others' prefixed ``<part>_``; the result carries the study's text."""
        import xarray as xr

        combined, start = [], 0
        for part in self.study.parts:
            own = self.study.part_config(config, part)
            experiment = self.experiments[part.name]
            count = len(experiment.points(own))
            dataset = experiment.combine(own, datasets[start:start + count])
            start += count
            if combined:
                dataset = dataset.rename({name: f"{part.name}_{name}"
                                          for name in (*dataset.dims, *dataset.data_vars)
                                          if name not in self.shared_dims()})
            combined.append(dataset)
        return xr.merge(combined, combine_attrs="override").assign_attrs(
            study_toml=self.study.text)

    def shared_dims(self) -> tuple[str, ...]:
        """The dims every part's variables keep unprefixed: the sweep dims of shared points."""
        return self.sweep_dims if self.study.shared else ()

    # ------------------------------------------------------------------------ judgements
    def part_dataset(self, dataset: xr.Dataset, part: Part) -> xr.Dataset:
        """The part's slice of a result under the part's own names, with the part's
        configuration (what its checks and figures read)."""
        from workbench.core.parameters import to_toml
        from workbench.store.netcdf import config_of

        own = part_slice(dataset, part.name, [p.name for p in self.study.parts],
                         self.shared_dims())
        config = self.study.part_config(config_of(dataset), part)
        return own.assign_attrs(config_toml=to_toml(config))

    def checks(self, dataset):
        """Every part's verdicts on its slice, named ``<part>/<check>`` (as the part names
        them for shared points); with ``[study] family = "study"`` one Bonferroni family over
        all parts' verdicts."""
        slices = {part.name: self.part_dataset(dataset, part) for part in self.study.parts}

        def verdicts(family: int = 0):
            return [verdict if self.study.shared else
                    replace(verdict, check=f"{name}/{verdict.check}")
                    for name, experiment in self.experiments.items()
                    for verdict in experiment.verdicts(slices[name], family)]

        found = verdicts()
        if self.study.family == "study":
            found = verdicts(family_size(found))
        return found

    def figures(self, dataset, out_dir):
        """The paper's figure, or each part's default figures on its slice, named
        ``<study>-<part>-<kind>.png``."""
        if self.figure is not None:
            return self.figure(self.name, dataset, Path(out_dir))
        from workbench.studies import figures as default_figures

        paths = []
        for part in self.study.parts:
            own = self.part_dataset(dataset, part)
            experiment = self.experiments[part.name]
            paths += default_figures.draw(f"{self.name}-{part.name}", part.study.checks,
                                          experiment.context(own), own, Path(out_dir))
        return paths


def rebuild_parts(text: str, origin: str, figure) -> PartsExperiment:
    """A study of parts' experiment from its pickled form (:meth:`PartsExperiment.__reduce__`)."""
    return PartsExperiment(from_document(Document.parse(text, origin)), figure)


def experiment_of(study: Study | PartsStudy, figure: PaperFigure | None = None) -> Experiment:
    """The experiment that runs ``study`` (:func:`workbench.studies.files.load`): a
    :class:`~.experiment.StudyExperiment`, or a :class:`PartsExperiment` for a study of
    parts; ``figure``: the paper's, drawn instead of the default figures."""
    if isinstance(study, PartsStudy):
        return PartsExperiment(study, figure)
    return StudyExperiment(study, figure)
