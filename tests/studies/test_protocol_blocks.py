"""Points of seed 003's protocols on the Gaussian mean (elastic-vs-downpour, downpour-period's
Gaussian part) split into their replicates' seeding blocks (issue 35: every point
splittable): run as tasks of one and of two blocks, finished, each is exactly the unsplit
point, for downpour's master and for elastic's chains; the shipped studies run one block.
Negative control: another seed's blocks finish into another point."""

from __future__ import annotations

import pytest
import xarray as xr

from tests.studies.blocks import split_point
from workbench import experiments

SEED = 5


@pytest.mark.parametrize("name, prefix, point", [
    ("elastic-vs-downpour", "", {"protocol": "elastic", "period": 2}),
    ("elastic-vs-downpour", "", {"protocol": "downpour", "period": 4}),
    ("downpour-period", "gaussian_", {"part": "gaussian", "period": 2, "workers": 2}),
])
def test_a_protocol_point_split_into_its_seeding_blocks_is_the_whole_point(name, prefix, point):
    experiment = experiments.get(name)
    shipped = experiment.configure(quick=True)
    assert experiment.replicate_blocks(shipped, point) == 1
    config = experiment.configure({f"{prefix}n_replicates": 30, f"{prefix}n_iterations": 200,
                                   f"{prefix}replicate_block": "10"}, quick=True)
    assert experiment.replicate_blocks(config, point) == 3
    assert experiment.kept_blocks(config, point) == [range(0, 10), range(10, 20), range(20, 30)]
    whole = experiment.run_point(config, point, SEED)
    assert whole.sizes["replicate"] == 30
    xr.testing.assert_identical(split_point(experiment, config, point, SEED, ([0], [1, 2])),
                                whole)
    assert not split_point(experiment, config, point, SEED + 1, ([0, 1, 2],)).equals(whole)


def test_a_paired_protocol_point_split_into_its_seeding_blocks_is_the_whole_point():
    """downpour-period's logistic part (downpour from Laplace starts shared by every point):
    split, it is the unsplit point; a block's starts and numbers are the same bits at twice
    the replicates (so a sequential check's looks keep it)."""
    experiment = experiments.get("downpour-period")
    point = {"part": "logistic", "period": 2, "workers": 2}
    assert experiment.replicate_blocks(experiment.configure(quick=True), point) == 1
    small = {"logistic_n_iterations": 100, "logistic_replicate_block": 10}
    config = experiment.configure({**small, "logistic_n_replicates": 20}, quick=True)
    assert experiment.kept_blocks(config, point) == [range(0, 10), range(10, 20)]
    whole = experiment.run_point(config, point, SEED)
    xr.testing.assert_identical(split_point(experiment, config, point, SEED, ([0], [1])), whole)
    doubled = experiment.configure({**small, "logistic_n_replicates": 40}, quick=True)
    larger = experiment.run_point(doubled, point, SEED)
    xr.testing.assert_identical(larger["estimate"].isel(replicate=slice(0, 20)),
                                whole["estimate"])
    assert not split_point(experiment, config, point, SEED + 1, ([0, 1],)).equals(whole)
