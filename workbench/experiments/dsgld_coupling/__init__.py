"""Experiment ``dsgld-coupling``: seed 004 §3.2.3, Eq. 6.

The experiment is the shipped study file ``workbench/studies/library/dsgld-coupling.toml``:
sharded Gaussian data, traveling chains coupled in groups of R (``[sampler] kind =
"coupled-sgld"``, R swept), judged by the gradient-noise, oracle and posterior check kinds
(:mod:`workbench.studies.sharded_judgements`). What a study file cannot say is this plug-in: the
seed's figure (:mod:`.figures`).
"""

from __future__ import annotations

from pathlib import Path

from workbench.studies.experiment import Plugin

# the figure (matplotlib, xarray) is imported where it is drawn: describing and configuring the
# experiment (`workbench show`, argument errors) stays light (issue 15)


class CouplingFigure(Plugin):
    """The gradient error and the samples' spread against R, and two sample clouds."""

    default_figures = False

    def figures(self, name, dataset, out_dir: Path):
        from workbench.experiments.dsgld_coupling.figures import figure_coupling

        return [figure_coupling(dataset, out_dir / f"{name}.png")]
