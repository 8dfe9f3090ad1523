"""Experiment ``stale-gaussian``: seed 001 §5.1, Figure 1, and Theorems 3–4 as bounds.

The seed design is the shipped study file ``workbench/studies/library/stale-gaussian.toml``:
Gaussian-mean model, stale SGLD with staleness τ on a grid, L = L0·τ iterations and step size
h = C τ^(-2/3) L^(-1/3), which section 4 of seed 001 predicts keeps the optimal MSE
O((τ/L)^(2/3)) = O(L0^(-2/3)) the same for every τ; its checks are the oracle agreement, the
MSE invariance across τ and the variance's slope in τ.

What a study file cannot say is this plug-in: two bound designs (:mod:`.bound_design`) beside
the seed's, a rate design (fixed τ, L on a grid, h at Theorem 3's optimum) and an envelope grid
over (τ, h, L), their checks (:mod:`.bound_checks`: Theorem 3's rate and envelope, Theorem 4's
independence of τ), and the seed's Figure 1 with the oracle drawn in (:mod:`.figures`).
"""

from __future__ import annotations

from pathlib import Path

from workbench.core.parameters import Parameter
from workbench.core.validators import positive_grid
from workbench.run.parameters import BOOTSTRAP_RESAMPLES
from workbench.studies.check_kinds import SPLITS
from workbench.studies.experiment import Plugin

# the bound designs, their checks and the figures (engine, sympy, xarray, matplotlib) are
# imported by the plug-in's methods that run, combine, judge and draw: describing and
# configuring the experiment (`workbench show`, argument errors) stays light (issue 15)

PARAMETERS = (
    Parameter("bound_designs", True,
              "also run the rate design and the envelope grid below (Theorems 3 and 4)"),
    Parameter("rate_staleness", [2, 8],
              "rate design: fixed staleness values τ, each run at Theorem 3's optimal step",
              positive_grid(1, True, 1)),
    Parameter("rate_iterations", [1000, 2000, 4000, 8000, 16000],
              "rate design: iteration counts L; h = C·τ^a·L^b with a, b from Theorem 3",
              positive_grid(3, True, 1)),
    Parameter("envelope_staleness", [1, 2, 4, 8],
              "envelope grid: staleness values τ", positive_grid(2, True, 0)),
    Parameter("envelope_relative_step", [0.025, 0.05, 0.1],
              "envelope grid: step sizes as c = h/s² (stable iff c < 2 sin(π/(2(2τ+1))))",
              positive_grid(1, False, 0)),
    Parameter("envelope_iterations", [500, 1000, 2000, 4000, 8000],
              "envelope grid: sample counts L read from each (τ, h) run",
              positive_grid(2, True, 1)),
    Parameter("envelope_split", "checkerboard",
              "envelope calibration: checkerboard (alternate (τ, h) runs) or extrapolate "
              "(shorter half of the L grid)", choices=SPLITS),
    BOOTSTRAP_RESAMPLES,
)


class BoundDesigns(Plugin):
    """Theorems 3 and 4 of seed 001 on their own designs, and the seed's Figure 1."""

    parameters = PARAMETERS
    quick = {"rate_iterations": [1000, 2000, 4000], "envelope_staleness": [1, 2, 4],
             "envelope_iterations": [500, 1000, 2000], "bootstrap_resamples": 1000}
    default_figures = False

    def points(self, config):
        from workbench.experiments.stale_gaussian import bound_design

        return bound_design.points(config) if config["bound_designs"] else []

    def owns(self, point):
        from workbench.experiments.stale_gaussian import bound_design

        return bound_design.is_design_point(point)

    def run(self, experiment, config, point, seed):
        from workbench.experiments.stale_gaussian import bound_design

        return bound_design.run(experiment, config, point, seed)

    def point_identity(self, identity, point):
        from workbench.experiments.stale_gaussian import bound_design

        if point.get("design") == bound_design.ENVELOPE:
            identity["envelope_streams"] = bound_design.ENVELOPE_STREAMS
        return identity

    def combine(self, combined, datasets):
        import xarray as xr

        from workbench.experiments.stale_gaussian import bound_design

        return xr.merge([combined, bound_design.combine(datasets)], combine_attrs="override")

    def checks(self, dataset):
        from workbench.experiments.stale_gaussian.bound_checks import bound_checks
        from workbench.store.netcdf import config_of

        return bound_checks(dataset) if config_of(dataset)["bound_designs"] else []

    def figures(self, name, dataset, out_dir: Path):
        from workbench.experiments.stale_gaussian.bound_figures import figure_bounds
        from workbench.experiments.stale_gaussian.figures import figure_mse
        from workbench.store.netcdf import config_of

        figures = [figure_mse(dataset, out_dir / f"{name}.png")]
        if config_of(dataset)["bound_designs"]:
            figures.append(figure_bounds(dataset, out_dir / f"{name}-bounds.png"))
        return figures
