"""Result files: self-describing xarray Datasets written atomically as netCDF.

Attributes carry the experiment name, the full configuration (TOML), the seed and how seeds
are derived, and the package versions, so a file alone says how to reproduce it. Files are
written to a temporary name and renamed, so a crash never leaves a half-written result under
the real name, and carry the store format and the SHA-256 of their content (every variable's
name, dims and values, and every attribute of the file and of its variables: the provenance
too, so an edited seed or configuration is caught like an edited number), which every reader
checks (:func:`read_netcdf`): an altered or torn file is refused by name, never shown.

Nothing rewrites a result's attributes after it is written (the combined file is rebuilt from
the store, whole), so the checksum covers all of them. Files written before it did carry
``arrays_sha256`` (:data:`LEGACY_CHECKSUM_ATTR`, the arrays only) and are read as a stale
version: refused, not reported corrupt, and rebuilt by the next run. The store's points are
not affected (the manifest holds the SHA-256 of their bytes), so the store format is
unchanged.
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import numpy as np
import scipy
import xarray as xr

import workbench
from simulators.exceptions import PicklesWithArguments
from workbench.core.parameters import to_toml
from workbench.store.atomic import atomic_write, netcdf_bytes, netcdf_loaded
from workbench.store.result_store import STORE_FORMAT

CHECKSUM_ATTR = "content_sha256"
LEGACY_CHECKSUM_ATTR = "arrays_sha256"  # arrays only: files written before content_sha256
FORMAT_ATTR = "store_format"

SEED_SCHEME = (
    "numpy SeedSequence(seed) tree keyed by identity: data (seed, experiment, 'data'); "
    "sweep point p: (seed, experiment, key(p)); engine streams (point, 'engine', 'noise'|"
    "'minibatch', replicate block); schedules (point, 'schedule', ...); "
    "string keys hashed with blake2b-64"
)


class CorruptResult(PicklesWithArguments, Exception):
    """A result file that must not be shown; ``reason`` says why, ``stale`` whether it is only
    of another store format (complete, but not what this workbench reads)."""

    def __init__(self, path: Path, reason: str, stale: bool = False):
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason
        self.stale = stale


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


def _attribute_bytes(value) -> bytes:
    """An attribute's value as a reader decodes it: text as text, numbers as their dtype and
    bytes (a Python int is read back as int64, a list as an array, a one-element list as a
    scalar)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    values = np.atleast_1d(np.asarray(value)).ravel()
    if values.dtype.kind in "OUS":
        return b"text|" + "\x1f".join(
            v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v)
            for v in values).encode("utf-8", "surrogateescape")
    if values.dtype.kind in "fc":
        values = np.where(np.isnan(values), np.nan, values).astype(values.dtype)
    return f"{values.dtype.str}|".encode() + np.ascontiguousarray(values).tobytes()


def _attributes_digest(digest, owner: str, attrs: dict) -> None:
    for name in sorted(attrs, key=str):
        if owner == "" and name in (CHECKSUM_ATTR, LEGACY_CHECKSUM_ATTR):
            continue
        value = _attribute_bytes(attrs[name])
        digest.update(f"{owner}@{name}|{len(value)}|".encode())
        digest.update(value)


def content_checksum(dataset: xr.Dataset) -> str:
    """SHA-256 of what a result file says: :func:`array_checksum`'s arrays, and every
    attribute of the Dataset and of each variable (name and value as a reader decodes it),
    the checksum attributes themselves left out."""
    digest = hashlib.sha256(array_checksum(dataset).encode())
    _attributes_digest(digest, "", dataset.attrs)
    for name in sorted(dataset.variables, key=str):
        _attributes_digest(digest, f"variable {name}", dataset.variables[name].attrs)
    return digest.hexdigest()


def write_netcdf(dataset: xr.Dataset, path: Path) -> Path:
    """Write atomically (:func:`workbench.store.atomic.atomic_write`), with the store format and the
    checksum of the content in the attributes (:data:`FORMAT_ATTR`, :data:`CHECKSUM_ATTR`).

    Encodings carried over from files read earlier are dropped: a string coordinate read with
    width 9 and concatenated with longer labels would otherwise be written truncated to 9
    characters ("uncorrected" as "uncorrect")."""
    clean = dataset.drop_encoding()
    attrs = {name: value for name, value in dataset.attrs.items()
             if name not in (CHECKSUM_ATTR, LEGACY_CHECKSUM_ATTR)}
    clean.attrs = {**attrs, FORMAT_ATTR: STORE_FORMAT}
    clean.attrs[CHECKSUM_ATTR] = content_checksum(clean)
    atomic_write(path, netcdf_bytes(clean))
    return Path(path)


def read_netcdf(path: Path) -> xr.Dataset:
    """Load a result written by :func:`write_netcdf`, verified, fully into memory.

    Raises :class:`CorruptResult` naming the file when it is not netCDF, carries no checksum,
    or its content does not match the checksum, and (``stale``) when it was written by another
    store format or before the checksum covered the attributes; the checksum attribute is
    removed from the returned Dataset, and so is the format, once checked.
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
    legacy = attrs.pop(LEGACY_CHECKSUM_ATTR, None)
    version = attrs.get(FORMAT_ATTR)
    if expected is None and legacy is None:
        raise CorruptResult(path, f"carries no checksum (attribute {CHECKSUM_ATTR}): not a "
                                  "workbench result, or one written before they had one")
    if not isinstance(version, (int, np.integer)) or version != STORE_FORMAT:
        raise CorruptResult(path, f"store format {version!r}, this workbench reads "
                                  f"{STORE_FORMAT} (stale version: run it again)", stale=True)
    if expected is None:
        raise CorruptResult(path, f"its checksum ({LEGACY_CHECKSUM_ATTR}) covers its arrays "
                                  "only, not its attributes: written by an earlier workbench "
                                  "(stale version: run it again)", stale=True)
    dataset.attrs = attrs
    try:
        actual = content_checksum(dataset)
    except Exception as error:  # noqa: BLE001 - content no result can hold
        raise CorruptResult(path, f"content cannot be hashed ({type(error).__name__}: "
                                  f"{error})") from error
    if actual != expected:
        raise CorruptResult(path, f"content hashes to {actual[:12]}…, the file records "
                                  f"{str(expected)[:12]}… (altered or torn: its numbers or "
                                  "its attributes)")
    del dataset.attrs[FORMAT_ATTR]
    return dataset
