"""The Experiment browser's interface to stored results: list, open, slice, and run quick.

This is the one place the dashboard touches result files and the runner, so pointing the
browser at another store is a change here only:

- :func:`list_results` lists the combined result files ``<directory>/<experiment>.nc`` that
  ``workbench run``/``check`` write (with the experiment, seed and configuration kind read from
  their attributes), and reports unreadable, foreign or corrupt files (arrays not matching
  their recorded checksum) instead of failing or showing them;
- :func:`load_result` opens one with :func:`workbench.store.netcdf.read_netcdf`, which verifies it;
- :func:`diagnostics_rows` tabulates a result's convergence diagnostics
  (:mod:`workbench.stats.diagnostics`), one row per sweep point, test function and component;
- :func:`run_quick` runs an experiment's ``--quick`` configuration through the same runner and
  result store as ``workbench check NAME --quick`` (:func:`workbench.run.main_job.run_one`), with
  the runner's point callback driving the page's progress bar.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import xarray as xr

from bounds.verdict import Verdict
from workbench import experiments
from workbench.run.executors import open_workers
from workbench.run.main_job import run_one
from workbench.stats.diagnostics import DIAGNOSTIC_VARIABLES, RHAT_LIMIT
from workbench.store.netcdf import config_of, read_netcdf


@dataclass(frozen=True)
class StoredResult:
    """One result file; ``problem`` says why it cannot be opened (empty when it can)."""

    path: Path
    experiment: str
    seed: int | None
    configuration: str  # "default", "quick" or "custom"
    size_bytes: int
    modified: float
    problem: str = ""

    @property
    def label(self) -> str:
        if self.problem:
            return f"{self.path.name} (unreadable)"
        return f"{self.experiment} — {self.configuration}, seed {self.seed} ({self.path.name})"


def _configuration_kind(experiment: str, config: dict) -> str:
    if experiment not in experiments.EXPERIMENTS:
        return "custom"
    known = experiments.get(experiment)
    for kind, quick in (("default", False), ("quick", True)):
        if known.configure(quick=quick) == config:
            return kind
    return "custom"


def describe_file(path: Path) -> StoredResult:
    """What a result file is, from its attributes, once its arrays are verified against the
    checksum it records (:func:`workbench.store.netcdf.read_netcdf`): a foreign, altered or torn
    file is listed with its problem and never shown."""
    path = Path(path)
    stat = path.stat()
    try:
        dataset = read_netcdf(path)
        attrs = dict(dataset.attrs)
        experiment = str(attrs["experiment"])
        config = config_of(dataset)
    except Exception as error:  # noqa: BLE001 - any unreadable file is listed with its reason
        return StoredResult(path, "", None, "", stat.st_size, stat.st_mtime,
                            f"{type(error).__name__}: {error}")
    seed = attrs.get("seed")
    return StoredResult(path, experiment, None if seed is None else int(seed),
                        _configuration_kind(experiment, config), stat.st_size, stat.st_mtime)


def list_results(directory: Path) -> list[StoredResult]:
    """The result files directly under ``directory``, newest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [describe_file(p) for p in directory.glob("*.nc") if p.is_file()]
    return sorted(found, key=lambda r: r.modified, reverse=True)


def load_result(path: Path) -> xr.Dataset:
    return read_netcdf(path)


def figure_files(result: StoredResult) -> list[Path]:
    """The figures ``workbench run`` wrote beside the result (``<experiment>*.png``)."""
    return sorted(result.path.parent.glob(f"{result.experiment}*.png"))


def checks(dataset: xr.Dataset) -> list[Verdict]:
    """The experiment's verdicts on a stored result, as ``workbench check`` prints them."""
    return experiments.for_dataset(dataset).checks(dataset)


# A stored result, its verdicts and its bound overlays, cached per file version (path and
# modification time) for the life of the process: the dashboard's pages read through these,
# and ``workbench dashboard`` fills them for the files present when it starts (:func:`warm`).
@lru_cache(maxsize=16)
def stored(path: str, modified: float) -> xr.Dataset:
    return load_result(Path(path))


@lru_cache(maxsize=16)
def stored_checks(path: str, modified: float) -> list[Verdict]:
    return checks(stored(path, modified))


@lru_cache(maxsize=16)
def stored_overlays(path: str, modified: float) -> list:
    from workbench.explore import overlays

    dataset = stored(path, modified)
    return overlays.overlays_of(dataset.attrs["experiment"], dataset)


def warm(directory: Path) -> None:
    """Open, check and overlay every readable result file under ``directory`` (newest first)."""
    for result in list_results(directory):
        if not result.problem:
            stored_checks(str(result.path), result.modified)
            stored_overlays(str(result.path), result.modified)


def verdict_rows(verdicts: list[Verdict]) -> list[dict]:
    """One table row per verdict, with the same fields ``workbench check`` prints."""
    return [{"check": v.check, "verdict": v.verdict, "observed": v.observed,
             "expected": v.expected, "MC error": v.mc_error, "margin": v.margin,
             "z": v.z_threshold, "false-failure rate": v.false_failure_rate,
             "detail": v.detail} for v in verdicts]


def diagnostics_rows(dataset: xr.Dataset) -> list[dict]:
    """One row per sweep point, test function and component: ESS (bulk, tail), R-hat and
    MCSE across the point's chains, the median and largest KSD over its replicates, the chains
    used, and whether R-hat passes the 1.01 rule. A result with several parts stores a part's
    diagnostics under its prefix (``logistic_rhat`` over ``logistic_servers``): its rows name
    the part. Empty when the result has no diagnostics (its runs keep no draws)."""
    rows = []
    for prefix in sorted(name.removesuffix("ksd") for name in dataset.data_vars
                         if name.endswith("ksd")):
        names = [prefix + name for name in (*DIAGNOSTIC_VARIABLES, "diagnostic_chains")]
        if not set(names) <= set(dataset.data_vars):
            continue
        part = dataset[names]
        part = part.rename({name: name.removeprefix(prefix) for name in (*names, *part.dims)
                            if name.startswith(prefix) and prefix})
        ksd = part["ksd"]
        table = xr.Dataset({
            **{name: part[name] for name in ("ess_bulk", "ess_tail", "rhat", "mcse_mean")},
            "ksd_median": ksd.median("replicate"), "ksd_max": ksd.max("replicate"),
            "diagnostic_chains": part["diagnostic_chains"],
        }).to_dataframe().reset_index()
        table = table.dropna(subset=["ess_bulk", "rhat"], how="all")
        table["rhat_ok"] = table["rhat"] <= RHAT_LIMIT
        if prefix:
            table.insert(0, "part", prefix.removesuffix("_"))
        rows.extend(table.to_dict("records"))
    return rows


def plottable(dataset: xr.Dataset) -> list[str]:
    """Numeric data variables with at least one dim."""
    return [name for name, array in dataset.data_vars.items()
            if array.ndim >= 1 and np.issubdtype(array.dtype, np.number)]


@dataclass(frozen=True)
class QuickRun:
    path: Path
    figures: list[Path]
    verdicts: list[Verdict]
    seconds: float


def run_quick(name: str | experiments.Experiment, directory: Path, seed: int,
              progress: Callable[[int, int], None] | None = None,
              overrides: dict | None = None) -> QuickRun:
    """``workbench check NAME --quick --out DIRECTORY --seed SEED [--set K=V ...]`` in this
    process (the same runner and result store: points already stored are reused), reporting
    progress(done, total) once the stored points are loaded and after each computed one.
    ``name`` may also be an experiment itself (a study being edited)."""
    experiment = experiments.get(name) if isinstance(name, str) else name
    config = experiment.configure(overrides, quick=True)
    with open_workers(processes=1) as workers:
        outcome = run_one(experiment, config, seed, Path(directory), workers, judge=True,
                          on_point=progress)
    return QuickRun(outcome.paths[0], outcome.paths[1:], outcome.verdicts, outcome.seconds)
