"""Result files: self-describing xarray Datasets written atomically as netCDF.

Attributes carry the experiment name, the full configuration (TOML), the seed and how seeds
are derived, and the package versions, so a file alone says how to reproduce it. Files are
written to a temporary name and renamed, so a crash never leaves a half-written result under
the real name.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy
import xarray as xr

import workbench
from workbench.config import to_toml

SEED_SCHEME = (
    "numpy SeedSequence(seed) tree keyed by identity: data (seed, experiment, 'data'); "
    "sweep point p: (seed, experiment, key(p)); engine streams (point, 'engine', 'noise'|"
    "'minibatch', replicate block); schedules (point, 'schedule', ...); "
    "string keys hashed with blake2b-64"
)


def with_provenance(dataset: xr.Dataset, experiment: str, config: dict, seed: int) -> xr.Dataset:
    dataset = dataset.copy()
    dataset.attrs.update({
        "experiment": experiment,
        "config_toml": to_toml(config),
        "seed": int(seed),
        "seed_scheme": SEED_SCHEME,
        "workbench_version": workbench.__version__,
        "numpy_version": np.__version__,
        "scipy_version": scipy.__version__,
        "xarray_version": xr.__version__,
    })
    return dataset


def config_of(dataset: xr.Dataset) -> dict:
    """The configuration a result was produced with."""
    if "config_toml" not in dataset.attrs:
        raise ValueError("dataset carries no configuration (attribute config_toml)")
    return tomllib.loads(dataset.attrs["config_toml"])


def atomic_write(path: Path, write: Callable[[str], object]) -> bytes:
    """Write through ``write(temporary_name)`` (same directory), rename onto ``path``.

    Returns the bytes written. A crash leaves either the old file or the new one under
    ``path``, never a partial one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would make results private to the writer
        write(temporary)
        content = Path(temporary).read_bytes()
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return content


def write_netcdf(dataset: xr.Dataset, path: Path) -> Path:
    """Write atomically (temporary file in the same directory, then rename).

    Encodings carried over from files read earlier are dropped: a string coordinate read with
    width 9 and concatenated with longer labels would otherwise be written truncated to 9
    characters ("uncorrected" as "uncorrect")."""
    clean = dataset.drop_encoding()
    atomic_write(path, lambda name: clean.to_netcdf(name, engine="h5netcdf",
                                                    invalid_netcdf=False))
    return Path(path)


def read_netcdf(path: Path) -> xr.Dataset:
    """Load a result fully into memory and close the file."""
    with xr.open_dataset(path, engine="h5netcdf") as dataset:
        return dataset.load()
