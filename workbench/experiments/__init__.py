"""The registry of experiments, in a stable order."""

from __future__ import annotations

from simulators.validation import InvalidParameter
from workbench.experiments.base import Experiment
from workbench.experiments.downpour_period import DownpourPeriod
from workbench.experiments.dsgld_coupling import DsgldCoupling
from workbench.experiments.dsgld_imbalance import DsgldImbalance
from workbench.experiments.dsgld_load_balancing import DsgldLoadBalancing
from workbench.experiments.dsgld_trajectory import DsgldTrajectory
from workbench.experiments.elastic_vs_downpour import ElasticVsDownpour
from workbench.experiments.fsgld_gaussian import FsgldGaussian
from workbench.experiments.integrator_order import IntegratorOrder
from workbench.experiments.multi_server import MultiServer
from workbench.experiments.real_vs_simulated import RealVsSimulated
from workbench.experiments.stale_blr_speedup import StaleBlrSpeedup
from workbench.experiments.stale_gaussian import StaleGaussian
from workbench.experiments.stale_nn_workers import StaleNnWorkers
from workbench.studies.experiment import StudyExperiment
from workbench.studies.study import load, loads

EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    StaleGaussian(), FsgldGaussian(), DsgldImbalance(), DsgldTrajectory(),
    DsgldLoadBalancing(), DsgldCoupling(), StaleBlrSpeedup(),
    StaleNnWorkers(), MultiServer(), DownpourPeriod(),
    ElasticVsDownpour(), RealVsSimulated(), IntegratorOrder())}


def get(name: str) -> Experiment:
    """A built-in experiment by name, or the study in a ``.toml`` file (a path)."""
    if name in EXPERIMENTS:
        return EXPERIMENTS[name]
    if str(name).endswith(".toml"):
        return StudyExperiment(load(name))
    raise InvalidParameter("experiment", name, f"must be one of {', '.join(EXPERIMENTS)} "
                                               "or a study file (.toml)")


def for_dataset(dataset) -> Experiment:
    """The experiment that made a stored result: a built-in one by name, otherwise the study
    whose text the result carries (attribute ``study_toml``)."""
    name = dataset.attrs["experiment"]
    if name not in EXPERIMENTS and "study_toml" in dataset.attrs:
        return StudyExperiment(loads(dataset.attrs["study_toml"], f"<study {name}>"))
    return get(name)


__all__ = ["EXPERIMENTS", "Experiment", "for_dataset", "get"]


def rebuild_study(cls: type, text: str, origin: str, plugin) -> Experiment:
    """A study experiment from its pickled form (:meth:`StudyExperiment.__reduce__`): a
    built-in one is made afresh (its study file and plug-in are fixed), any other is parsed
    again from its text."""
    if cls is StudyExperiment:
        return StudyExperiment(loads(text, origin), plugin)
    return cls()
