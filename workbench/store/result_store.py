"""The result store: one netCDF file per sweep point, content-addressed, with a manifest.

Layout under a root directory (``<out>/store`` for the CLI)::

    <root>/<experiment>/manifest.jsonl         index of the valid points (JSON lines)
    <root>/<experiment>/points/<key>.nc        one point's Dataset (netCDF-4)
    <root>/<experiment>/points/<key>.nc.corrupt   the last file found corrupt under that key
    <root>/<experiment>/points/<key>.lock      held while a process computes the point
    <root>/<experiment>/manifest.jsonl.lock    held while a process writes the manifest

**Key.** A point's key is the SHA-256 (first 24 hex digits, 96 bits) of the canonical JSON of
its *identity*: the experiment name; the configuration the point depends on
(``Experiment.point_identity``: by default the configuration without the sweep-grid keys the
point sets, so extending or reordering a grid reuses the points already stored); the point; the
root seed; and the versions of the code that produces the numbers (the workbench, numpy whose
random streams and reductions may change between releases, scipy used by the exact oracles),
plus the store format. A stored point is therefore exactly what this software would compute
now; upgrading any of those packages recomputes rather than silently mixing versions. During
development, where the version string does not move with the code, ``--recompute`` ignores the
store.

**Validity.** A file is used only if the manifest lists it with the SHA-256 of its bytes, the
bytes on disk hash to that value, the file opens as netCDF and its ``store_key`` attribute is
its key. Anything else (missing manifest entry, truncated or altered file, unreadable netCDF)
is reported and the point recomputed; a corrupt file is kept beside as ``.corrupt``.
Nothing is ever unpickled: points are netCDF and the manifest is JSON.

**Crash safety.** A point file is written to a temporary name and renamed, and only then is a
line naming it appended to the manifest (one JSON object per line, the last line for a key
wins, a removal is a line with ``"removed": true``); a crash between the two leaves an unlisted
file that is recomputed and replaced, and a line cut short by a crash is ignored. Appending
keeps the cost of recording a point independent of the sweep's size. Within a run the parent
process is the only writer; files are written through :func:`workbench.store.atomic.atomic_write`.

**Concurrency.** Several processes may share one store (two runs into one ``--out``). A point
is computed under its lock (``points/<key>.lock``, an OS file lock from ``filelock``, which the
kernel releases when its holder dies, so a killed run leaves no stale lock): a second process
finding the lock held waits for it and then reads the first one's result
(:meth:`ResultStore.claim`). Manifest lines are appended under ``manifest.jsonl.lock``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy
import xarray as xr
from filelock import FileLock, Timeout

import workbench
from workbench.store.atomic import (
    WriteFailed,
    atomic_write,
    netcdf_bytes,
    netcdf_loaded,
    remove_orphaned_temporaries,
    under,
)

STORE_FORMAT = 4  # 2: calibrated intervals, exact Var φ̂(θ²); 3: run diagnostics;
# 4: diagnostics of every run with draws, the KSD over `replicate` (was `chain`)
KEY_DIGITS = 24


class CorruptPoint(Exception):
    """A stored point that must not be used; ``reason`` says why."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def code_versions() -> dict[str, str]:
    """The versions of the code that produces the numbers (part of every point's key)."""
    return {"workbench": workbench.__version__, "numpy": np.__version__,
            "scipy": scipy.__version__}


def point_identity(experiment, config: dict, point: dict, seed: int) -> dict[str, Any]:
    """Everything a stored point's key is computed from (module docstring)."""
    return {
        "store_format": STORE_FORMAT,
        "experiment": experiment.name,
        "config": experiment.point_identity(config, point),
        "point": point,
        "seed": int(seed),
        "versions": code_versions(),
    }


def store_key(identity: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(identity).encode()).hexdigest()[:KEY_DIGITS]


@dataclass(frozen=True)
class EncodedPoint:
    """A point as the store writes it: its netCDF bytes, and the Dataset those bytes load as
    (so a point just computed and one read back from the store are the same Dataset)."""

    content: bytes
    dataset: xr.Dataset


def encode_point(key: str, identity: dict[str, Any], dataset: xr.Dataset) -> EncodedPoint:
    """``dataset`` stamped with its key and identity, as netCDF bytes, and read back.

    Pure and picklable, so the runner calls it in the worker that computed the point: writing
    and re-reading netCDF was most of the parent's time in a sweep of short points, and the
    workers waited for it (issue 15). :meth:`ResultStore.write` then only writes the bytes.
    """
    dataset = dataset.copy()
    dataset.attrs["store_key"] = key
    dataset.attrs["store_identity"] = canonical_json(identity)
    content = netcdf_bytes(dataset)
    return EncodedPoint(content, netcdf_loaded(content))


@dataclass
class ResultStore:
    """The stored points of one experiment (module docstring)."""

    root: Path
    experiment: str

    @property
    def directory(self) -> Path:
        return under(self.root, Path(self.root) / self.experiment)

    @property
    def manifest_path(self) -> Path:
        return self.directory / "manifest.jsonl"

    @property
    def points_directory(self) -> Path:
        return self.directory / "points"

    def path(self, key: str) -> Path:
        return self.points_directory / f"{key}.nc"

    def lock(self, key: str) -> FileLock:
        """The lock a process holds while it computes and stores the point ``key``."""
        self.points_directory.mkdir(parents=True, exist_ok=True)
        return FileLock(self.points_directory / f"{key}.lock", thread_local=False)

    def claim(self, key: str) -> FileLock | None:
        """The point's lock, acquired, or ``None`` if another process holds it."""
        lock = self.lock(key)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return None
        return lock

    def remove_orphaned_temporaries(self, claimed: set[str]) -> list[Path]:
        """Delete the temporary files that crashed writers left: older than this process, or
        of a point in ``claimed`` (whose lock this process holds, so no one else writes it)."""
        def of_a_claimed_point(path: Path) -> bool:
            return path.name[1:].split(".", 1)[0] in claimed  # .<key>.nc.<random>.tmp

        return remove_orphaned_temporaries(self.points_directory, of_a_claimed_point)

    def manifest(self) -> dict[str, dict[str, Any]]:
        """The valid points' entries by key (an unreadable line counts as absent)."""
        try:
            lines = self.manifest_path.read_text().splitlines()
        except FileNotFoundError:
            return {}
        entries: dict[str, dict[str, Any]] = {}
        for line in lines:
            try:
                record = json.loads(line)
                key = record["key"]
            except (ValueError, TypeError, KeyError):
                continue  # a line cut short by a crash
            if record.get("removed"):
                entries.pop(key, None)
            else:
                entries[key] = record
        return entries

    def load(self, key: str, entry: dict[str, Any] | None = None) -> xr.Dataset | None:
        """The stored point, ``None`` if there is none; raises :class:`CorruptPoint`.

        entry: the point's manifest entry if already read (:meth:`manifest`), else looked up.
        """
        path = self.path(key)
        if entry is None:
            entry = self.manifest().get(key)
        if entry is None:
            if path.exists():
                raise CorruptPoint(path, "file is not in the manifest (interrupted write?)")
            return None
        try:
            content = path.read_bytes()
        except FileNotFoundError as error:
            raise CorruptPoint(path, "listed in the manifest but missing") from error
        digest = hashlib.sha256(content).hexdigest()
        if digest != entry.get("sha256"):
            raise CorruptPoint(path, f"SHA-256 {digest[:12]}… of {len(content)} bytes differs "
                                     f"from the manifest's {str(entry.get('sha256'))[:12]}… of "
                                     f"{entry.get('bytes')} bytes (truncated or altered)")
        try:
            dataset = netcdf_loaded(content)
        except Exception as error:  # noqa: BLE001 - any failure to decode means corrupt
            raise CorruptPoint(path, f"not readable as netCDF ({error})") from error
        if dataset.attrs.get("store_key") != key:
            raise CorruptPoint(path, f"store_key attribute {dataset.attrs.get('store_key')!r} "
                                     "is not the file's key")
        return dataset

    def quarantine(self, key: str) -> Path | None:
        """Move a corrupt file aside (``.corrupt``) and drop it from the manifest."""
        path = self.path(key)
        self._record({"key": key, "removed": True})
        if not path.exists():
            return None
        target = path.with_name(path.name + ".corrupt")
        os.replace(path, target)
        return target

    def save(self, key: str, identity: dict[str, Any], dataset: xr.Dataset,
             seconds: float) -> xr.Dataset:
        """Store a point atomically, list it in the manifest, and return it as stored."""
        return self.write(key, identity, encode_point(key, identity, dataset), seconds)

    def write(self, key: str, identity: dict[str, Any], encoded: EncodedPoint,
              seconds: float) -> xr.Dataset:
        """:meth:`save` for a point :func:`encode_point` has already encoded (where it was
        computed); returns it as stored."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        content = atomic_write(path, encoded.content)
        self._record({
            "key": key,
            "file": str(path.relative_to(self.directory)),
            "point": identity["point"],
            "seed": identity["seed"],
            "sha256": hashlib.sha256(content).hexdigest(),
            "bytes": len(content),
            "compute_seconds": round(float(seconds), 3),
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        })
        return encoded.dataset

    def manifest_lock(self) -> FileLock:
        """Held while the manifest is appended to or rewritten."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return FileLock(self.manifest_path.with_name(self.manifest_path.name + ".lock"),
                        thread_local=False)

    def _record(self, record: dict[str, Any]) -> None:
        """Append one manifest line (on a fresh line if a crash cut the last one short)."""
        line = json.dumps(record, sort_keys=True, ensure_ascii=True) + "\n"
        try:
            with self.manifest_lock(), open(self.manifest_path, "a+b") as manifest:
                if manifest.tell() > 0:
                    manifest.seek(-1, os.SEEK_END)
                    if manifest.read(1) != b"\n":
                        line = "\n" + line
                manifest.write(line.encode())
                manifest.flush()
                os.fsync(manifest.fileno())
        except OSError as error:
            raise WriteFailed(self.manifest_path, error) from error
