"""Figure of ``protocols-rnn``: seed 003's Table 1 (Appendix C, NLL on War and Peace) laid out
with this study's held-out NLL per character beside it — rows downpour pSGLD and elastic SGHMC
at P = 1 and P = 4, columns LSTM and GRU with one and two layers; each of this study's cells is
E φ̂_L of the NLL at the last checkpoint, mean ± standard error over the replicates, and a
check mark where P = 4 is below P = 1."""

from __future__ import annotations

import xarray as xr

from workbench.studies.parts_experiment import part_slice
from workbench.systems.distributed.plots import finish, new

#: seed 003 Appendix C, Table 1: NLL per character on War and Peace, by protocol and P, then
#: cell and layers
SEED_TABLE = {("downpour", 1): {("lstm", 1): 1.778, ("lstm", 2): 1.408, ("gru", 1): 1.705,
                                ("gru", 2): 1.578},
              ("downpour", 4): {("lstm", 1): 1.582, ("lstm", 2): 1.266, ("gru", 1): 1.548,
                                ("gru", 2): 1.400},
              ("elastic", 1): {("lstm", 1): 1.513, ("lstm", 2): 1.429, ("gru", 1): 1.608,
                               ("gru", 2): 1.351},
              ("elastic", 4): {("lstm", 1): 1.403, ("lstm", 2): 1.315, ("gru", 1): 1.423,
                               ("gru", 2): 1.282}}
PROTOCOLS = {"downpour": "Downpour pSGLD", "elastic": "Elastic SGHMC"}
COLUMNS = (("lstm", 1), ("lstm", 2), ("gru", 1), ("gru", 2))


def final_nll(dataset: xr.Dataset, part: str) -> xr.Dataset:
    """A part's E φ̂_L of the NLL at the last checkpoint, its mean and standard error over the
    replicates, under the part's own names (:func:`~workbench.studies.parts_experiment.
    part_slice`)."""
    own = part_slice(dataset, part, list(PROTOCOLS)).sel(test_function="nll").isel(
        checkpoint=-1)
    return xr.Dataset({"mean": own["mean"], "se": own["mean_se"]})


def table_one(dataset: xr.Dataset, path):
    fig, axes = new(1, 2, 13, 3.2)
    labels = [f"{cell.upper()} {layers}-layer" for cell, layers in COLUMNS]
    rows, ours, seed = [], [], []
    for part, name in PROTOCOLS.items():
        final = final_nll(dataset, part)
        for workers in (1, 4):
            rows.append(f"{name}, P = {workers}")
            cells = []
            for cell, layers in COLUMNS:
                at = final.sel(cell=cell, n_layers=layers)
                value = at.sel(workers=workers)
                falls = workers == 4 and float(value["mean"]) < float(
                    at.sel(workers=1)["mean"])
                cells.append(f"{float(value['mean']):.3f} ± {float(value['se']):.3f}"
                             + (" ✓" if falls else ""))
            ours.append(cells)
            seed.append([f"{SEED_TABLE[(part, workers)][column]:.3f}" for column in COLUMNS])
    for ax, values, title in ((axes[0, 0], ours, "this study: held-out NLL per character "
                                                 "(Markov text; ✓: P = 4 below P = 1)"),
                              (axes[0, 1], seed, "seed 003 Table 1: NLL on War and Peace")):
        ax.axis("off")
        table = ax.table(cellText=values, rowLabels=rows, colLabels=labels, loc="center",
                         cellLoc="center")
        table.auto_set_font_size(False)
        table.set_fontsize(7)
        table.scale(1.0, 1.4)
        ax.set_title(title, fontsize=8)
    fig.suptitle("Seed 003 Appendix C, Table 1: 1 and 4 workers on character language models",
                 fontsize=10)
    return finish(fig, path)
