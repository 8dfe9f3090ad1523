"""Experiment ``real-vs-simulated``: the simulator against real asynchronous runs (issue 17).

For each worker count P, a real parameter server with P worker processes runs stale SGLD (or
SGHMC) on the Gaussian mean on this machine, with injected compute times and an injected
server update time (:mod:`workbench.realtime.processes`); the simulator of seed 001's
asynchronous system (Appendix A) is calibrated on the recorded run and simulated
(:mod:`workbench.realtime.comparison`). Judged: the mean staleness and the time speed-up T_P,
real against simulated; the chi-square test of the staleness counts, the fitted bends of both
speed-up curves and the calibrated P* travel as evidence. The figure shows both speed-up
curves against P beside min(P, P*), and both staleness histograms for every P.

The whole grid is one sweep point, run P after P so that no two real runs share the machine.
A real run's timing is not reproducible: a stored result is a record of one run, and rerunning
with ``--recompute`` measures afresh. The Gaussian mean stands in until the real-run path is
given the logistic model (any model of the protocol runs; only the experiment fixes this one).
"""

from __future__ import annotations

from dataclasses import replace

from simulators import validation
from simulators.latency import LatencyModel, WorkerTiming
from simulators.seeding import derive, generator
from workbench.core.parameters import Parameter
from workbench.core.validators import at_least_one, non_negative, positive
from workbench.run.experiment import Experiment
from workbench.run.parameters import (
    BATCH_SIZE,
    DIM,
    FRICTION,
    N_DATA,
    N_UPDATES,
    SAMPLER,
    SPEEDUP_MARGIN,
    STEP_SIZE,
)
from workbench.samplers import LINEAR_SAMPLER_NAMES, make_sampler
from workbench.systems.asynchronous.system import LATENCY, LATENCY_MEAN, LATENCY_SHAPE, WORKERS
from workbench.systems.distributed.data import CHECK_PARAMETERS

# the per-point run (the model, the real-run machinery), checks and figures (engine, sympy,
# matplotlib, xarray) are imported by the methods that use them: describing and configuring
# the experiment (`workbench show`, argument errors) stays light (issue 15)

PARAMETERS = (
    replace(WORKERS, default=[1, 2, 4], help="worker counts P of the real runs (1, the "
            "baseline, and at least two more)"),
    replace(N_UPDATES, default=600, help="applied updates of each real run"),
    replace(LATENCY, help="distribution of the injected compute time"),
    replace(LATENCY_MEAN, default=0.004, help="mean injected compute time per gradient (seconds)"),
    replace(LATENCY_SHAPE, help="lognormal σ or gamma shape of the injected compute time"),
    Parameter("server_delay", 0.002, "injected server time per applied update (seconds); the "
              "server saturates at P* = c/u", non_negative),
    Parameter("staleness_bound", -1, "drop gradients staler than this (-1: never)",
              lambda name, value: validation.integer(name, value, minimum=-1)),
    replace(SAMPLER, help="the server's sampler", choices=LINEAR_SAMPLER_NAMES),
    replace(STEP_SIZE, default=1e-4),
    replace(FRICTION, help="SGHMC friction D"),
    N_DATA,
    replace(DIM, default=2),
    BATCH_SIZE,
    Parameter("simulated_factor", 10, "simulated updates per real update", at_least_one),
    Parameter("staleness_margin", 0.5, "margin of the mean-staleness check (updates)",
              positive),
    replace(SPEEDUP_MARGIN, default=0.15, help="margin of the time speed-up check (relative)"),
    Parameter("run_timeout", 300.0, "seconds a real run may take before it is stopped",
              positive),
    *CHECK_PARAMETERS,
)


class RealVsSimulated(Experiment):
    parameters = PARAMETERS
    quick = {"n_updates": 200, "simulated_factor": 5}
    sweep_dims = ("workers",)
    runs_alone = True  # its real runs time themselves: no other sweep's tasks beside them

    def points(self, config):
        return [{}]

    def combine(self, config, datasets):
        return datasets[0]

    def run_point(self, config, point, seed):
        from workbench.models.gaussian import GaussianMeanModel
        from workbench.realtime.comparison import compare_real_and_simulated
        from workbench.realtime.server import RealRunSettings

        model = GaussianMeanModel.generate(generator(seed, self.name, "data"), config["n_data"],
                                           config["dim"])
        sampler = make_sampler(config["sampler"], config["step_size"], config["friction"])
        bound = config["staleness_bound"]
        settings = RealRunSettings(
            n_workers=1, n_updates=config["n_updates"], batch_size=config["batch_size"],
            timing=WorkerTiming(LatencyModel(config["latency"], config["latency_mean"],
                                             config["latency_shape"])),
            staleness_bound=None if bound < 0 else bound,
            server_delay=config["server_delay"], timeout=config["run_timeout"])
        return compare_real_and_simulated(model, sampler, settings, config["workers"],
                                          derive(seed, self.name),
                                          config["simulated_factor"])

    def checks(self, dataset):
        from workbench.experiments.real_vs_simulated.checks import real_vs_simulated_checks

        return real_vs_simulated_checks(dataset)

    def figures(self, dataset, out_dir):
        from workbench.experiments.real_vs_simulated.figures import figure_real_vs_simulated

        return [figure_real_vs_simulated(dataset, out_dir / f"{self.name}.png")]
