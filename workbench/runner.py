"""Runs an experiment's sweep points and combines them into one Dataset.

Each point is a pure function of (configuration, point, seed), so running the points in one
process or in a pool of processes gives bit-identical results. Points are combined in grid
order whatever order they finish in.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, as_completed

import xarray as xr
from tqdm import tqdm

from simulators import validation
from workbench.experiments.base import Experiment
from workbench.results import with_provenance


def _run_point(experiment: Experiment, config: dict, point: dict, seed: int) -> xr.Dataset:
    return experiment.run_point(config, point, seed)


def run_experiment(experiment: Experiment, config: dict, seed: int, processes: int = 1,
                   progress: bool = False) -> xr.Dataset:
    """All sweep points of ``experiment`` under ``config`` and ``seed``, combined."""
    processes = validation.integer("processes", processes, minimum=1)
    seed = validation.integer("seed", seed, minimum=0)
    points = experiment.points(config)
    bar = tqdm(total=len(points), desc=experiment.name, unit="point", disable=not progress)
    results: list[xr.Dataset | None] = [None] * len(points)
    if processes == 1:
        for i, point in enumerate(points):
            results[i] = _run_point(experiment, config, point, seed)
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=processes) as pool:
            futures = {pool.submit(_run_point, experiment, config, point, seed): i
                       for i, point in enumerate(points)}
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                bar.update()
    bar.close()
    combined = experiment.combine(config, results)
    return with_provenance(combined, experiment.name, config, seed)

