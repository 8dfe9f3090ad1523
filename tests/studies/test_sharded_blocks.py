"""A sharded-Gaussian point split into its replicates' seeding blocks (issue 35: every point
splittable): its blocks run apart, grouped into tasks, and finished give exactly the unsplit
point, for each of the shipped traveling-chains studies (imbalanced shards with the step
ladder, trajectory lengths with the references, slow workers with adaptive balancing and the
time-to-target curves, coupled groups with the gradient draws) and for federated rounds
(fsgld-gaussian) of more than one block, every estimator replayed in each; the runner splits a
one-point sweep over two processes into the dataset of one; a later look with more replicates
reads the kept blocks into what a plain run stores (tests/workbench/test_kept_blocks.py).
A federated-rounds point of one block splits into its estimators. Negative controls: another
seed's blocks finish into another point."""

from __future__ import annotations

import pytest
import xarray as xr

from tests.studies.blocks import split_point
from workbench import experiments
from workbench.run.executors import open_workers
from workbench.run.runner import run_sweep

SEED = 5
#: three seeding blocks of short runs
SMALL = {"n_replicates": 3, "replicate_block": 1}
#: (experiment, its quick configuration changed by, the point)
CASES = [
    ("dsgld-imbalance", {**SMALL, "burn_in": 400, "n_iterations": 1600},
     {"correction": "uncorrected"}),
    ("dsgld-trajectory", {**SMALL, "burn_in": 400, "n_iterations": 1600},
     {"trajectory_length": 200}),
    ("dsgld-load-balancing", SMALL, {"slowdown": 1.0, "balancing": "adaptive"}),
    ("dsgld-coupling", SMALL, {"group_size": 2}),
    # federated rounds of more than one seeding block: every estimator replayed in each
    ("fsgld-gaussian", {**SMALL, "burn_in": 200, "n_iterations": 800}, {"local_updates": 10}),
]


@pytest.mark.parametrize(("name", "changes", "point"), CASES, ids=[n for n, _, _ in CASES])
def test_blocks_run_apart_finish_into_the_whole_point(name, changes, point):
    experiment = experiments.get(name)
    config = experiment.configure(changes, quick=True)
    assert point in experiment.points(config)
    assert experiment.replicate_blocks(config, point) == 3
    assert experiment.kept_blocks(config, point) == [range(0, 1), range(1, 2), range(2, 3)]
    whole = experiment.run_point(config, point, SEED)
    # one task of one block, one of two: every way a task holds blocks
    xr.testing.assert_identical(split_point(experiment, config, point, SEED, ([0], [1, 2])),
                                whole)
    # negative control: another seed's blocks finish into another point
    assert not split_point(experiment, config, point, SEED + 1, ([0, 1, 2],)).equals(whole)


def test_a_federated_rounds_point_splits_into_its_estimators():
    """fsgld-gaussian: DSGLD and FSGLD replay one schedule, each from its own streams, as two
    blocks joined along ``estimator``; their blocks are not replicate blocks, so none is kept
    across looks. Negative control: another seed's blocks finish into another point."""
    experiment = experiments.get("fsgld-gaussian")
    config = experiment.configure({"burn_in": 200, "n_iterations": 800}, quick=True)
    point = {"local_updates": 10}  # a point of the sweep (not of its bound grid's design)
    assert point in experiment.points(config)
    assert experiment.replicate_blocks(config, point) == len(config["estimator"]) == 2
    assert experiment.kept_blocks(config, point) is None
    whole = experiment.run_point(config, point, SEED)
    xr.testing.assert_identical(split_point(experiment, config, point, SEED, ([0], [1])), whole)
    assert not split_point(experiment, config, point, SEED + 1, ([0, 1],)).equals(whole)


def test_two_processes_split_a_traveling_point_into_the_dataset_of_one():
    name, changes, _ = CASES[0]
    experiment = experiments.get(name)
    config = experiment.configure({**changes, "correction": ["corrected"]}, quick=True)
    serial = run_sweep(experiment, config, SEED)
    with open_workers(processes=2) as workers:
        pooled = run_sweep(experiment, config, SEED, workers=workers)
    assert not serial.split and pooled.split
    xr.testing.assert_identical(pooled.dataset, serial.dataset)
