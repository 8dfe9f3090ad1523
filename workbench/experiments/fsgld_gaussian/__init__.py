"""Experiment ``fsgld-gaussian``: seed 002 §5.1, Figures 2, 3 and 4.

The seed design is the shipped study file ``workbench/studies/library/fsgld-gaussian.toml``:
non-IID Gaussian shards, federated rounds with T local updates swept, DSGLD and FSGLD on the
same client draws; its checks are the exact oracle given each chain's schedule, the stationary
second moment against the exact round average (docs/math.md §13), FSGLD's invariance in T and
DSGLD's growth with T (:mod:`workbench.studies.sharded_judgements`).

What a study file cannot say is this plug-in: the bound grid (:mod:`.bound_grid`), which runs
both estimators at other step sizes and judges seed 002's Theorems 1 and 2, with the data's
γ_s² and ε_s², by an envelope fitted at the seed design's step; and the seed's Figures 2-4
(:mod:`.figures`).
"""

from __future__ import annotations

from pathlib import Path

from simulators import validation
from workbench.core.parameters import Parameter
from workbench.studies.experiment import Plugin

# the bound grid and the figures (engine, sympy, xarray, matplotlib) are imported by the
# plug-in's methods that run, combine, judge and draw: describing and configuring the
# experiment (`workbench show`, argument errors) stays light (issue 15)


def _step_factors(name, value):
    factors = [validation.positive(f"{name}[{i}]", v) for i, v in enumerate(value)]
    if len(set(factors)) != len(factors) or 1.0 in factors:
        raise validation.InvalidParameter(
            name, value, "must be distinct and exclude 1 (the seed design's own step)")
    return sorted(factors)


PARAMETERS = (
    Parameter("bound_step_factors", [0.5, 2.0],
              "bound grid: steps h·factor run beside the seed design (factor 1) to judge "
              "Theorems 1-2's envelope fitted at h", _step_factors),
)


class BoundGrid(Plugin):
    """Seed 002's Theorems 1 and 2 on their own grid of step sizes, and the seed's figures."""

    parameters = PARAMETERS
    default_figures = False

    def validate(self, config):
        if config["dim"] < 2:
            raise validation.InvalidParameter("dim", config["dim"], "must be >= 2 (2-d figures)")
        if config["local_updates"] != sorted(config["local_updates"]):
            raise validation.InvalidParameter("local_updates", config["local_updates"],
                                              "must be increasing (the bound grid's order)")
        if config["estimator"] != ["dsgld", "fsgld"]:
            raise validation.InvalidParameter("estimator", config["estimator"],
                                              "must be ['dsgld', 'fsgld'] (the bound grid "
                                              "judges both)")

    def points(self, config):
        from workbench.experiments.fsgld_gaussian import bound_grid

        return bound_grid.points(config)

    def owns(self, point):
        from workbench.experiments.fsgld_gaussian import bound_grid

        return bound_grid.is_design_point(point)

    def run(self, experiment, config, point, seed):
        from workbench.experiments.fsgld_gaussian import bound_grid

        return bound_grid.run(experiment, config, point, seed)

    def combine(self, combined, datasets):
        import xarray as xr

        from workbench.experiments.fsgld_gaussian import bound_grid

        return xr.merge([combined, bound_grid.combine(combined, datasets)],
                        combine_attrs="override")

    def checks(self, dataset):
        from workbench.experiments.fsgld_gaussian import bound_grid
        from workbench.store.netcdf import config_of

        return bound_grid.theorem_checks(dataset, config_of(dataset))

    def figures(self, name, dataset, out_dir: Path):
        from workbench.experiments.fsgld_gaussian import bound_grid
        from workbench.experiments.fsgld_gaussian.figures import (
            figure_constants,
            figure_error,
            figure_samples,
        )
        from workbench.store.netcdf import config_of

        config = config_of(dataset)
        return [figure_samples(dataset, out_dir / f"{name}.png"),
                figure_error(dataset, out_dir / f"{name}-error.png"),
                figure_constants(dataset, out_dir / f"{name}-constants.png"),
                bound_grid.figure_theorems(dataset, config, out_dir / f"{name}-theorems.png")]
