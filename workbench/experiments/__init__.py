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
from workbench.experiments.stale_blr_speedup import StaleBlrSpeedup
from workbench.experiments.stale_gaussian import StaleGaussian
from workbench.experiments.stale_nn_workers import StaleNnWorkers

EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    StaleGaussian(), FsgldGaussian(), DsgldImbalance(), DsgldTrajectory(),
    DsgldLoadBalancing(), DsgldCoupling(), StaleBlrSpeedup(),
    StaleNnWorkers(), MultiServer(), DownpourPeriod(),
    ElasticVsDownpour(), IntegratorOrder())}


def get(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise InvalidParameter("experiment", name, f"must be one of {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]


__all__ = ["EXPERIMENTS", "Experiment", "get"]
