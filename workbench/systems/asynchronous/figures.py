"""Figure pieces in the style of seed 001 Figures 2-4: one curve per system size with its
interval band, on log or linear axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from workbench.systems.distributed.plots import finish, new

__all__ = ["bands", "finish", "new"]


def bands(ax, x, y, lower, upper, labels, *, log: bool = True) -> None:
    """Curves ``y[k]`` against ``x[k]`` (log axis) with shaded ``[lower[k], upper[k]]``, one
    per label (colours ordered by size, as the paper's legends of workers and servers); ``log``
    puts y on a log axis too."""
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(labels)))
    for k, (label, colour) in enumerate(zip(labels, colours, strict=True)):
        ax.plot(x[k], y[k], color=colour, label=label, linewidth=1.4)
        ax.fill_between(x[k], lower[k], upper[k], color=colour, alpha=0.2, linewidth=0)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=7)
