"""The plug-in of ``stale-blr-speedup`` (seed 001 §5.1, Figure 2).

The experiment is the shipped study file ``workbench/studies/library/stale-blr-speedup.toml``:
Bayesian logistic regression sampled by stale SGLD in the single-server asynchronous system
with P = 1, 2, 4, 6, 9 workers (a swept constant ``workers`` giving ``n_workers``), every P
running the same L, judged by the study's ``speed-up`` check (seed 001 Theorem 4, Corollary 5).
What a study file cannot say: the worker grid and the replicate count that check can use
(refused when configured, naming the field) and the seed's figure (:mod:`.figures`), drawn
instead of the default one.
"""

from __future__ import annotations

from pathlib import Path

from simulators import validation
from workbench.studies.experiment import Plugin
from workbench.systems.asynchronous.system import count_grid

#: replicates below which a variance over replicates is too rough to read a speed-up from
MIN_REPLICATES = 10

# the figure (matplotlib) is imported by the method that draws it: describing and configuring
# the experiment (`workbench show`, argument errors) stays light (issue 15)


class Figure2(Plugin):
    """The worker grid and replicates the speed-up check needs, and seed 001's Figure 2."""

    default_figures = False

    def validate(self, config: dict) -> None:
        count_grid("workers", config["workers"])
        validation.integer("n_replicates", config["n_replicates"], minimum=MIN_REPLICATES)

    def figures(self, name: str, dataset, out_dir: Path) -> list[Path]:
        from workbench.experiments.stale_blr_speedup.figures import figure_speedup

        return [figure_speedup(dataset, out_dir / f"{name}.png")]
