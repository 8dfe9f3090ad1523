"""A point of the Gaussian mean with S servers pooled (multi-server's Gaussian part) split into
its replicates' seeding blocks (issue 35: every point splittable): run as tasks of one and of
two blocks, finished, it is exactly the unsplit point, every server of a replicate replayed in
its block; the shipped study runs one block. Negative control: another seed's blocks finish
into another point."""

from __future__ import annotations

import xarray as xr

from tests.studies.blocks import split_point
from workbench import experiments

SEED = 5


def test_a_pooled_point_split_into_its_seeding_blocks_is_the_whole_point():
    experiment = experiments.get("multi-server")
    shipped = experiment.configure(quick=True)
    point = {"part": "gaussian", "servers": 2}
    assert experiment.replicate_blocks(shipped, point) == 1
    config = experiment.configure({"gaussian_n_replicates": 30,
                                   "gaussian_replicate_block": "10"}, quick=True)
    assert experiment.replicate_blocks(config, point) == 3
    assert experiment.kept_blocks(config, point) == [range(0, 10), range(10, 20), range(20, 30)]
    whole = experiment.run_point(config, point, SEED)
    xr.testing.assert_identical(split_point(experiment, config, point, SEED, ([0], [1, 2])),
                                whole)
    assert not split_point(experiment, config, point, SEED + 1, ([0, 1, 2],)).equals(whole)
