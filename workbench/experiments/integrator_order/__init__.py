"""The figure plug-in of ``integrator-order`` (Chen, Ding & Carin 2015; docs/math.md §3, §15).

The experiment is the shipped study file ``workbench/studies/library/integrator-order.toml``:
SGHMC with the Euler integrator (K = 1) against symmetric splitting (K = 2), full gradients on
the Gaussian mean, each at its optimal step h*(L) (``step_size = "optimal"``), recording (θ, p)
(``phase_space``); its ``oracle`` and ``rate`` checks judge the MSE of φ̂_L(p²) against the
exact oracle and the registry bounds ``chen2015-mse-fixed-k1``/``-k2``, with Euler against
L^(−4/5) as the negative control. What a study file cannot say is the paper's figure
(:mod:`.figures`), drawn instead of the default ones.
"""

from __future__ import annotations

from pathlib import Path

from workbench.studies.experiment import Plugin

# the figure (matplotlib, sympy) is imported by the method that draws it: describing and
# configuring the experiment (`workbench show`, argument errors) stays light (issue 15)


class Figure(Plugin):
    """The MSE of φ̂_L(p²) at the optimal step against L for both integrators, and h*(L)."""

    default_figures = False

    def figures(self, name: str, dataset, out_dir: Path) -> list[Path]:
        from workbench.experiments.integrator_order.figures import figure_order

        return [figure_order(dataset, out_dir / f"{name}.png")]
