"""A point run as separate tasks: some of its blocks each, joined and finished, as the runner
does for a split point (issue 35, every point splittable)."""

from __future__ import annotations

import xarray as xr


def split_point(experiment, config: dict, point: dict, seed, groups) -> xr.Dataset:
    """The point from one task a group of its blocks (``groups``, consecutive, in order)."""
    raws = [experiment.run_blocks(config, point, seed, blocks) for blocks in groups]
    return experiment.finish_point(config, point, seed,
                                   experiment.merge_blocks(config, point, raws))
