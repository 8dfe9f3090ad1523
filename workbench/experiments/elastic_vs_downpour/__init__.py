"""The figure plug-in of ``elastic-vs-downpour`` (seed 003, Algorithm 1 and Appendix B).

The experiment is the shipped study file ``workbench/studies/library/elastic-vs-downpour.toml``:
downpour and elastic SGLD (``[system] kind = "protocol"``, ``protocol`` swept) on the Gaussian
mean at one communication budget, judged by the study's ``oracle`` check against the exact
protocol oracle, point by point and for the difference of the two protocols' MSE. What a study
file cannot say is the seed's figure, MSE against messages exchanged (:mod:`.figures`), drawn
beside the default one.
"""

from __future__ import annotations

from pathlib import Path

from workbench.studies.experiment import Plugin

# the figure (matplotlib) is imported by the method that draws it: describing and configuring
# the experiment (`workbench show`, argument errors) stays light (issue 15)


class BudgetFigure(Plugin):
    """Seed 003's two protocols at one budget: MSE of φ̂(θ) against messages and against π."""

    def figures(self, name: str, dataset, out_dir: Path) -> list[Path]:
        from workbench.experiments.elastic_vs_downpour.figures import figure_budget

        return [figure_budget(dataset, out_dir / f"{name}.png")]
