"""Figure of ``protocols-networks``: seed 003's Figures 1-2 (Appendix C: test error against
wall-clock for 1 and 4 workers) and Figure 3 (t-SNE of the test digits with the samples'
uncertainty). Top row: the test error of the averaged prediction of the samples collected every
R seconds of simulated wall-clock, per protocol and network, P = 1 and P = 4, the mean over
replicates with a band of ±1 sd. Bottom: the held-out digits embedded by scikit-learn's t-SNE
(on their pixels), coloured by the posterior predictive entropy of downpour pSGLD's samples on
the MLP at P = 4 (the seed's 400-400 FNN sampled by downpour pSGLD), the digits on which at
least a fifth of the samples disagree with the averaged prediction ringed, and those the
averaged prediction gets wrong crossed."""

from __future__ import annotations

import xarray as xr

from workbench.studies.figures import mean_band
from workbench.studies.parts_experiment import part_slice
from workbench.systems.distributed.plots import finish

PROTOCOLS = {"downpour": "downpour pSGLD", "elastic": "elastic SGHMC"}
NETWORKS = ("mlp", "cnn")
#: the fraction of samples disagreeing with the averaged prediction that rings a digit
DISAGREEING = 0.2


def uncertainty_panel(ax, at: xr.Dataset) -> None:
    """The t-SNE picture of one point's held-out digits (module docstring)."""
    from sklearn.manifold import TSNE

    from workbench.data.digits import digits

    pixels = digits().test_features[at["test_row"].values]
    xy = TSNE(perplexity=min(30.0, (len(pixels) - 1) / 3), init="pca",
              random_state=0).fit_transform(pixels)
    entropy = at["predictive_entropy"].values
    shown = ax.scatter(xy[:, 0], xy[:, 1], c=entropy, s=9, cmap="viridis")
    ax.figure.colorbar(shown, ax=ax, label="predictive entropy (nats)")
    ringed = at["disagreement"].values >= DISAGREEING
    ax.scatter(xy[ringed, 0], xy[ringed, 1], s=40, facecolors="none", edgecolors="red",
               linewidths=0.8, label=f"≥ {DISAGREEING:.0%} of samples disagree")
    wrong = at["predicted_class"].values != at["test_label"].values
    ax.scatter(xy[wrong, 0], xy[wrong, 1], s=14, marker="x", color="black", linewidths=0.7,
               label="averaged prediction wrong")
    ax.set(xticks=[], yticks=[], title="held-out digits by t-SNE: downpour pSGLD, MLP, P = 4")
    ax.legend(fontsize=7, loc="lower right")


def figures_one_to_three(dataset: xr.Dataset, path):
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(15, 8.5), constrained_layout=True)
    top, bottom = fig.subfigures(2, 1)
    panels = [(protocol, network) for protocol in PROTOCOLS for network in NETWORKS]
    for ax, (protocol, network) in zip(top.subplots(1, 4), panels, strict=True):
        data = part_slice(dataset, protocol, list(PROTOCOLS)).sel(
            network=network, test_function="averaged_error")
        for workers in data["workers"].values.tolist():
            at = data.sel(workers=workers)
            mean_band(ax, at["time"].values, at["estimate"], f"P = {workers}")
        ax.set(xlabel="simulated wall-clock", ylabel="test error (averaged prediction)",
               title=f"{PROTOCOLS[protocol]}, {network.upper()}")
        ax.legend(fontsize=7)
    at = part_slice(dataset, "downpour", list(PROTOCOLS)).sel(network="mlp", workers=4)
    left, middle, right = bottom.subplots(1, 3, width_ratios=(1, 2, 1))
    left.axis("off")
    right.axis("off")
    uncertainty_panel(middle, at)
    fig.suptitle("Seed 003 Appendix C: 1 and 4 workers on the digits networks (Figures 1-2) "
                 "and the samples' uncertainty (Figure 3)", fontsize=10)
    return finish(fig, path)
