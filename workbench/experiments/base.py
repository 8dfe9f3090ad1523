"""What an experiment is: parameters, a sweep grid, a pure per-point run, checks and figures.

Each sweep point is a pure function of (configuration, point, seed): this is what lets a sweep
run in one process or many and give the same Dataset, and what issue-level tooling (result
store, executors) builds on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import xarray as xr

from bounds.verdict import Verdict
from workbench.config import Parameter, resolve


class Experiment:
    """Base class; subclasses set the class attributes and implement the methods."""

    name: str = ""
    summary: str = ""
    source: str = ""
    parameters: tuple[Parameter, ...] = ()
    quick: dict[str, Any] = {}
    sweep_dims: tuple[str, ...] = ()

    def configure(self, overrides: dict[str, Any] | None = None, quick: bool = False) -> dict:
        return resolve(self.parameters, overrides, self.quick if quick else None)

    def points(self, config: dict) -> list[dict[str, Any]]:
        raise NotImplementedError

    def run_point(self, config: dict, point: dict[str, Any], seed) -> xr.Dataset:
        raise NotImplementedError

    def combine(self, config: dict, datasets: list[xr.Dataset]) -> xr.Dataset:
        return xr.concat(datasets, dim=self.sweep_dims[0], data_vars="minimal",
                         coords="minimal", compat="equals", join="exact")

    def checks(self, dataset: xr.Dataset) -> list[Verdict]:
        raise NotImplementedError

    def figures(self, dataset: xr.Dataset, out_dir: Path) -> list[Path]:
        raise NotImplementedError


def point_key(point: dict[str, Any]) -> str:
    """A canonical text name for a sweep point, used as its seed-tree key."""
    return ",".join(f"{k}={point[k]!r}" for k in sorted(point))
