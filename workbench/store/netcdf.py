"""Result files: self-describing xarray Datasets written atomically as netCDF.

Attributes carry the experiment name, the full configuration (TOML), the seed and how seeds
are derived, and the package versions, so a file alone says how to reproduce it. Files are
written to a temporary name and renamed, so a crash never leaves a half-written result under
the real name, and carry the SHA-256 of their arrays and the store format, which every reader
checks (:func:`read_netcdf`): an altered or torn file is refused by name, never shown.
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import numpy as np
import scipy
import xarray as xr

import workbench
from workbench.core.parameters import to_toml
from workbench.store.atomic import atomic_write, netcdf_bytes, netcdf_loaded
from workbench.store.result_store import STORE_FORMAT

CHECKSUM_ATTR = "arrays_sha256"
FORMAT_ATTR = "store_format"

SEED_SCHEME = (
    "numpy SeedSequence(seed) tree keyed by identity: data (seed, experiment, 'data'); "
    "sweep point p: (seed, experiment, key(p)); engine streams (point, 'engine', 'noise'|"
    "'minibatch', replicate block); schedules (point, 'schedule', ...); "
    "string keys hashed with blake2b-64"
)


class CorruptResult(Exception):
    """A result file that must not be shown; ``reason`` says why."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


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


def array_checksum(dataset: xr.Dataset) -> str:
    """SHA-256 of every variable's name, dims and values, as a reader decodes them.

    Strings are hashed as text (written as ``<U9``, read back as objects) and every NaN as the
    one NaN netCDF's fill value decodes to, so a file's arrays hash the same before writing
    and after reading back.
    """
    digest = hashlib.sha256()
    for name in sorted(dataset.variables, key=str):
        variable = dataset.variables[name]
        values = np.asarray(variable.values)
        if values.dtype.kind in "OUS":
            kind, data = "text", "\x1f".join(
                v.decode() if isinstance(v, bytes) else str(v) for v in values.ravel()).encode()
        else:
            if values.dtype.kind in "fc":
                values = np.where(np.isnan(values), np.nan, values).astype(values.dtype)
            kind, data = values.dtype.str, np.ascontiguousarray(values).tobytes()
        digest.update(f"{name}|{variable.dims}|{values.shape}|{kind}|".encode())
        digest.update(data)
    return digest.hexdigest()


def write_netcdf(dataset: xr.Dataset, path: Path) -> Path:
    """Write atomically (:func:`workbench.store.atomic.atomic_write`), with the store format and the
    checksum of the arrays in the attributes (:data:`FORMAT_ATTR`, :data:`CHECKSUM_ATTR`).

    Encodings carried over from files read earlier are dropped: a string coordinate read with
    width 9 and concatenated with longer labels would otherwise be written truncated to 9
    characters ("uncorrected" as "uncorrect")."""
    clean = dataset.drop_encoding()
    clean.attrs = {**dataset.attrs, FORMAT_ATTR: STORE_FORMAT,
                   CHECKSUM_ATTR: array_checksum(dataset)}
    atomic_write(path, netcdf_bytes(clean))
    return Path(path)


def read_netcdf(path: Path) -> xr.Dataset:
    """Load a result written by :func:`write_netcdf`, verified, fully into memory.

    Raises :class:`CorruptResult` naming the file when it is not netCDF, was written by
    another store format, carries no checksum, or its arrays do not match the checksum; the
    format and checksum attributes are removed from the returned Dataset.
    """
    path = Path(path)
    try:
        dataset = netcdf_loaded(path)
    except FileNotFoundError:
        raise
    except Exception as error:  # noqa: BLE001 - any failure to decode means corrupt
        raise CorruptResult(path, f"not readable as netCDF ({type(error).__name__}: {error})"
                            ) from error
    attrs = dict(dataset.attrs)
    expected = attrs.pop(CHECKSUM_ATTR, None)
    version = attrs.pop(FORMAT_ATTR, None)
    if expected is None:
        raise CorruptResult(path, f"carries no checksum (attribute {CHECKSUM_ATTR}): not a "
                                  "workbench result, or one written before they had one")
    if version != STORE_FORMAT:
        raise CorruptResult(path, f"store format {version!r}, this workbench reads "
                                  f"{STORE_FORMAT} (stale version: run it again)")
    dataset.attrs = attrs
    actual = array_checksum(dataset)
    if actual != expected:
        raise CorruptResult(path, f"arrays hash to {actual[:12]}…, the file records "
                                  f"{str(expected)[:12]}… (altered or torn)")
    return dataset
