"""Experiment ``dsgld-trajectory``: seed 004 §3.2.1 and §4.1, Figure 2(c)-(d).

The experiment is the shipped study file ``workbench/studies/library/dsgld-trajectory.toml``:
sharded Gaussian data, D-SGLD on traveling chains with the same trajectory length τ on every
worker, τ swept; its checks are the exact oracle given each chain's schedule and the ordering
of the samples' distances to the SGLD posterior and to the mixture of local posteriors
(:mod:`workbench.studies.sharded_judgements`). What a study file cannot say is this plug-in: the
seed's figure (:mod:`.figures`).
"""

from __future__ import annotations

from pathlib import Path

from workbench.studies.experiment import Plugin

# the figure (matplotlib, xarray) is imported where it is drawn: describing and configuring the
# experiment (`workbench show`, argument errors) stays light (issue 15)


class TrajectoryFigure(Plugin):
    """Seed 004 Figure 2(c)-(d) with the references and the exact distances drawn in."""

    default_figures = False

    def figures(self, name, dataset, out_dir: Path):
        from workbench.experiments.dsgld_trajectory.figures import figure_trajectories

        return [figure_trajectories(dataset, out_dir / f"{name}.png")]
