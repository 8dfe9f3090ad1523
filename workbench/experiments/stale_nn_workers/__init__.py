"""The figure plug-in of ``stale-nn-workers`` (seed 001 §5.2, Figure 3).

The experiment is the shipped study file ``workbench/studies/library/stale-nn-workers.toml``:
stale SGHMC on the digits networks (``[model] kind = "network"``, both swept) in the
single-server asynchronous system with P = 1, 2, 4, 6, 9 workers at a common budget of
gradients per worker, judged by the study's ``ordering`` check (the held-out cross-entropy
falls with P, and where it stops). What a study file cannot say is the seed's figure
(:mod:`.figures`), drawn instead of the default one.
"""

from __future__ import annotations

from pathlib import Path

from workbench.studies.experiment import Plugin

# the figure (matplotlib) is imported by the method that draws it: describing and configuring
# the experiment (`workbench show`, argument errors) stays light (issue 15)


class Figure3(Plugin):
    """Seed 001's Figure 3: the loss against iterations per worker, one panel per network."""

    default_figures = False

    def figures(self, name: str, dataset, out_dir: Path) -> list[Path]:
        from workbench.experiments.stale_nn_workers.figures import figure_workers

        return [figure_workers(dataset, out_dir / f"{name}.png")]
