"""A point of a model without an oracle split into replicate blocks (issue 35: every point
splittable): its blocks run apart, grouped into tasks, and finished give exactly the unsplit point
(logistic regression, a digits network, a network with the averaged prediction on downpour,
elastic averaging's chains, a second server); and the runner splits such a point over two
processes into the dataset of one. Negative control: another seed's blocks finish into another
point."""

from __future__ import annotations

import pytest
import xarray as xr

from tests.studies.blocks import split_point
from workbench import experiments
from workbench.run.executors import open_workers
from workbench.run.runner import run_sweep

SEED = 5
SMALL = {"n_replicates": 6, "replicate_block": 2}
#: the speed-up check's study divides variances over at least ten replicates
LOGISTIC = {"n_replicates": 12, "replicate_block": 4}
#: (experiment, its quick configuration changed by, the point): replicates in three blocks
CASES = [
    ("stale-blr-speedup", LOGISTIC, {"workers": 2}),
    ("stale-nn-workers", {**SMALL, "network": ["cnn"]}, {"network": "cnn", "workers": 2}),
    ("protocols-networks", SMALL, {"part": "downpour", "network": "mlp", "workers": 4}),
    ("protocols-networks", SMALL, {"part": "elastic", "network": "mlp", "workers": 4}),
    ("multi-server", {"logistic_n_replicates": 6, "logistic_replicate_block": 2},
     {"part": "logistic", "servers": 2}),
]


@pytest.mark.parametrize(("name", "changes", "point"), CASES,
                         ids=[f"{n}-{p.get('part', '')}" for n, _, p in CASES])
def test_blocks_run_apart_finish_into_the_whole_point(name, changes, point):
    experiment = experiments.get(name)
    config = experiment.configure(changes, quick=True)
    assert point in experiment.points(config)
    assert experiment.replicate_blocks(config, point) == 3
    whole = experiment.run_point(config, point, SEED)
    assert int(whole["n_valid"].min()) > 0
    # one task of one block, one of two: every way a task holds blocks
    xr.testing.assert_identical(split_point(experiment, config, point, SEED, ([0], [1, 2])), whole)


def test_another_seeds_blocks_finish_into_another_point():
    name, changes, point = CASES[0]
    experiment = experiments.get(name)
    config = experiment.configure(changes, quick=True)
    whole = experiment.run_point(config, point, SEED)
    other = split_point(experiment, config, point, SEED + 1, ([0], [1, 2]))
    with pytest.raises(AssertionError):
        xr.testing.assert_identical(other, whole)


def test_two_processes_split_a_held_out_sweep_into_the_dataset_of_one():
    experiment = experiments.get("stale-blr-speedup")
    config = experiment.configure({**LOGISTIC, "workers": [1, 2, 4]}, quick=True)
    serial = run_sweep(experiment, config, SEED)
    with open_workers(processes=2) as workers:
        pooled = run_sweep(experiment, config, SEED, workers=workers)
    assert not serial.split and pooled.split
    xr.testing.assert_identical(pooled.dataset, serial.dataset)
