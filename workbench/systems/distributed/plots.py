"""Figure pieces in the style of seeds 002 and 004: sample clouds, data by shard, ellipses."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Ellipse  # noqa: E402

from workbench.store.atomic import save_figure  # noqa: E402

plt.rcParams.setdefault("figure.max_open_warning", 0)


def ellipse(ax, mean, covariance, n_sd: float = 2.0, **style) -> None:
    """The ``n_sd`` standard-deviation ellipse of a 2-d Gaussian (first two coordinates)."""
    covariance = np.asarray(covariance, dtype=float)[:2, :2]
    values, vectors = np.linalg.eigh(covariance)
    angle = float(np.degrees(np.arctan2(vectors[1, -1], vectors[0, -1])))
    width, height = 2 * n_sd * np.sqrt(np.maximum(values[::-1], 0.0))
    style = {"fill": False, **style}
    ax.add_patch(Ellipse(np.asarray(mean, dtype=float)[:2], width, height, angle=angle,
                         **style))


def shard_colours(n_shards: int):
    return plt.cm.tab20(np.linspace(0, 1, max(n_shards, 2)))[:n_shards]


def data_by_shard(ax, data: np.ndarray, sizes, size: float = 4, alpha: float = 0.5) -> None:
    """The data points (first two coordinates), one colour per shard (seed 002 Figure 2)."""
    colours = shard_colours(len(sizes))
    start = 0
    for colour, n in zip(colours, sizes, strict=True):
        block = data[start:start + n]
        ax.scatter(block[:, 0], block[:, 1], s=size, color=colour, alpha=alpha, linewidths=0)
        start += n


def cloud(ax, draws: np.ndarray, colour: str = "k", size: float = 3, alpha: float = 0.4,
          label: str | None = None) -> None:
    """Posterior draws ``(..., d)`` as a scatter of their first two coordinates."""
    points = np.asarray(draws).reshape(-1, draws.shape[-1])
    ax.scatter(points[:, 0], points[:, 1], s=size, color=colour, alpha=alpha, linewidths=0,
               label=label)


def mse_with_exact(ax, x, at, label: str) -> None:
    """``at["mse"]`` against ``x`` with its 95 % interval (1.96·``mse_se``) as points, and the
    exact oracle's ``exact_mse`` dashed in the same colour."""
    line = ax.errorbar(x, at["mse"], yerr=1.96 * at["mse_se"], marker="o", label=label)
    ax.plot(x, at["exact_mse"], "--", color=line[0].get_color(), linewidth=0.8)


def finish(fig, path) -> object:
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def new(n_rows: int, n_columns: int, width: float, height: float):
    return plt.subplots(n_rows, n_columns, figsize=(width, height), constrained_layout=True,
                        squeeze=False)
