"""Experiment ``multi-server``: seed 001 §3.3, Figure 4, Theorems 6-7 — S servers pooled.

S independent servers, each with its own P workers (the asynchronous system of Appendix A,
:mod:`..asynchronous.system`), run stale SGLD for L updates each; their samples are pooled at
test time. Theorems 6-7: pooling does not reduce the bias, and divides the variance by S.

- Gaussian mean (:mod:`.gaussian`, exact oracle): bias and variance of the pooled φ̂_L(θ)
  against the exact values for every S, the variance's slope against S (−1), and the bias
  unchanged across S;
- Bayesian logistic regression (a9a-shaped data, :mod:`..asynchronous.models`): the held-out
  test loss against iterations for 1, 2, 4 servers (Figure 4), its variance's slope against S
  and its mean unchanged across S.

The two parts share the dim ``servers``; the logistic part's variables and dims carry the
prefix ``logistic_`` in the combined Dataset.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from workbench.core.parameters import Parameter
from workbench.core.validators import (
    at_least_one,
    at_least_two,
    finite,
    positive,
)
from workbench.run.experiment import Experiment
from workbench.run.parameters import INVARIANCE_MARGIN, N_UPDATES, SLOPE_MARGIN
from workbench.systems.asynchronous.models import LOGISTIC_PARAMETERS, logistic_model
from workbench.systems.asynchronous.run import (
    at_point,
    check_sizes,
    held_out_run,
    run_parameters,
)
from workbench.systems.asynchronous.summaries import held_out_summary
from workbench.systems.asynchronous.system import SYSTEM_PARAMETERS, count_grid

# the per-point run, checks and figures (engine, sympy, matplotlib, xarray) are imported
# by the methods that use them: describing and configuring the experiment (`workbench
# show`, argument errors) stays light (issue 15)
if TYPE_CHECKING:
    import xarray as xr

PARTS = ("gaussian", "logistic")
PREFIX = "logistic_"


PARAMETERS = (
    *SYSTEM_PARAMETERS,
    Parameter("workers_per_server", 4, "workers P of every server", at_least_one),
    Parameter("servers", [1, 2, 4], "server counts S (seed 001 Figure 4: 1, 2, 4)",
              count_grid),
    Parameter("gaussian_n_data", 1000, "Gaussian mean: data points N", at_least_one),
    Parameter("gaussian_batch_size", 10, "Gaussian mean: minibatch size n", at_least_one),
    Parameter("gaussian_step_size", 1e-4, "Gaussian mean: SGLD step h", positive),
    Parameter("gaussian_iterations", 2000, "Gaussian mean: updates L per server", at_least_one),
    Parameter("gaussian_replicates", 1000, "Gaussian mean: independent runs R", at_least_two),
    Parameter("gaussian_initial_position", 5.0, "Gaussian mean: θ₀ (sets the bias)", finite),
    *LOGISTIC_PARAMETERS,
    replace(N_UPDATES, default=5000, help="logistic: updates L per server"),
    *run_parameters(step_size={"default": 1.5e-6}, n_replicates={"default": 20}),
    replace(SLOPE_MARGIN, default=0.1, help="variance against S: slope within this of −1"),
    replace(INVARIANCE_MARGIN, default=0.25, help="Gaussian bias across S: within this ratio"),
    Parameter("loss_margin", 0.02, "logistic mean test loss across S: within this ratio",
              positive),
)


def prefixed(dataset: xr.Dataset) -> xr.Dataset:
    """The logistic part under its own names (module docstring)."""
    names = {**{dim: PREFIX + dim for dim in dataset.dims},
             **{name: PREFIX + name for name in dataset.data_vars}}
    return dataset.rename(names)


class MultiServer(Experiment):
    parameters = PARAMETERS
    quick = {"gaussian_replicates": 400, "gaussian_iterations": 1000, "n_train": 8000,
             "n_test": 2000, "n_test_points": 300, "n_updates": 2000, "n_replicates": 12,
             "n_evaluations": 100, "step_size": 6e-6}
    sweep_dims = ("servers",)

    def points(self, config):
        check_sizes(config, config["n_updates"], "n_updates")
        return [{"part": part, "servers": s} for part in PARTS for s in config["servers"]]

    def work(self, config, point):
        if point["part"] == "gaussian":
            return config["gaussian_iterations"] * config["gaussian_replicates"] * point["servers"]
        return config["n_updates"] * config["n_replicates"] * point["servers"]

    def run_point(self, config, point, seed):
        from workbench.experiments.multi_server.gaussian import run_gaussian

        if point["part"] == "gaussian":
            return at_point(run_gaussian(self.name, config, point, seed), point, self.sweep_dims)
        model = logistic_model(self.name, config, seed)
        run = held_out_run(self.name, config, point, seed, model,
                           n_workers=config["workers_per_server"], n_servers=point["servers"],
                           n_updates=config["n_updates"])
        run = run.merge(held_out_summary(run["estimate"], config["confidence"]))
        return at_point(run, point, self.sweep_dims)

    def combine(self, config, datasets):
        import xarray as xr

        size = len(config["servers"])
        gaussian = super().combine(config, datasets[:size])
        logistic = prefixed(super().combine(config, datasets[size:]))
        return xr.merge([gaussian, logistic], combine_attrs="override")

    def checks(self, dataset):
        from workbench.experiments.multi_server.checks import multi_server_checks

        return multi_server_checks(dataset)

    def figures(self, dataset, out_dir):
        from workbench.experiments.multi_server.figures import figure_servers

        return [figure_servers(dataset, out_dir / f"{self.name}.png")]
