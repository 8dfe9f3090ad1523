"""The result store: one netCDF file per sweep point, content-addressed, with a manifest.

Layout under a root directory (``<out>/store`` for the CLI)::

    <root>/<experiment>/manifest.jsonl         index of the valid points (JSON lines)
    <root>/<experiment>/points/<key>.nc        one point's Dataset (netCDF-4)
    <root>/<experiment>/points/<key>.nc.corrupt   a file found corrupt under that key (then
                                               <key>.nc.1.corrupt, ...: none is overwritten)
    <root>/<experiment>/points/<key>.lock      exists while a process computes the point
    <root>/<experiment>/manifest.jsonl.lock    held while a process writes the manifest
    <root>/<experiment>/manifest.jsonl.rejected   manifest lines `store verify --repair` set aside

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
file that is recomputed and replaced. Appending keeps the cost of recording a point
independent of the sweep's size. Within a run the parent process is the only writer; files
are written through :func:`workbench.store.atomic.atomic_write`.

**Any bytes in the manifest.** The manifest is read as bytes and decoded line by line
(:func:`read_manifest`): a line that is not UTF-8, not JSON (cut short by a crash), not an
object, or whose fields have the wrong type (:func:`manifest_problem` checks every field the
code reads) is skipped, with a one-line warning on stderr, and the point it would have listed
is simply not in the manifest, so it is recomputed. ``workbench store verify`` lists such lines
by number and ``--repair`` sets them aside in ``manifest.jsonl.rejected``.

**Blocks.** A sequential check (:mod:`workbench.run.until_decided`) runs the same points with
more and more replicates. Where a point's replicate blocks give the same bits whatever the
point's replicate count (each block draws from its own seed-tree stream), the runner keeps
each block's raw results in ``<root>/<experiment>.blocks``, a store of the same layout keyed
by :func:`block_identity`, and a larger run of the point reads the blocks it finds there and
computes only the others. Blocks are checked, quarantined and recomputed like points.

**Concurrency.** Several processes may share one store (two runs into one ``--out``). A point
is computed under its lock (``points/<key>.lock``, :class:`PointLock`: an OS file lock, which the
kernel releases when its holder dies, so a killed run leaves no stale lock): a second process
finding the lock held waits for it and then reads the first one's result
(:meth:`ResultStore.claim`). A point's lock is taken when its first task is handed to a
worker and released, its file removed, as soon as the point is stored, so a run holds a few
locks at a time whatever the number of points, and no lock file outlives its point. Manifest
lines are appended under ``manifest.jsonl.lock``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import scipy
import xarray as xr
from filelock import FileLock

import workbench
from simulators.exceptions import PicklesWithArguments
from workbench.store.atomic import (
    TEMPORARY_GLOB,
    WriteFailed,
    atomic_write,
    move_aside,
    netcdf_bytes,
    netcdf_loaded,
    process_started,
    under,
)

STORE_FORMAT = 4  # 2: calibrated intervals, exact Var φ̂(θ²); 3: run diagnostics;
# 4: diagnostics of every run with draws, the KSD over `replicate` (was `chain`)
STORE_DIR = "store"  # the result store's directory under a run's --out
BLOCKS_SUFFIX = ".blocks"  # the directory of an experiment's kept replicate blocks
KEY_DIGITS = 24
KEY_PATTERN = re.compile(f"[0-9a-f]{{{KEY_DIGITS}}}")
SHA256_PATTERN = re.compile("[0-9a-f]{64}")


class CorruptPoint(PicklesWithArguments, Exception):
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


def is_replicate_count(key: str) -> bool:
    """Whether a configuration key counts replicates: ``n_replicates``, or a part's
    ``*_replicates``."""
    return key == "n_replicates" or key.endswith("_replicates")


def positive_counts(values: dict, named: Callable[[str], bool]) -> tuple[str, ...]:
    """The keys of ``values`` that ``named`` accepts (:func:`is_replicate_count`, say) and
    that hold a positive integer."""
    return tuple(key for key, value in values.items()
                 if named(key) and isinstance(value, int) and not isinstance(value, bool)
                 and value > 0)


def block_identity(experiment, config: dict, point: dict, seed: int,
                   replicates: range) -> dict[str, Any]:
    """What a stored replicate block's key is computed from: the identity of its point
    (:func:`point_identity`) without the replicate counts and the keys no block reads
    (:attr:`~workbench.run.experiment.Experiment.unblocked_keys`), and the block's replicates
    ``[start, stop)``. Only for blocks whose raw results do not depend on how many replicates
    the point has (:meth:`workbench.run.experiment.Experiment.kept_blocks`): a point with
    more replicates then finds its first blocks stored under the same keys (module docstring,
    *Blocks*)."""
    identity = point_identity(experiment, config, point, seed)
    identity["config"] = {key: value for key, value in identity["config"].items()
                          if not is_replicate_count(key) and key not in experiment.unblocked_keys}
    identity["replicates"] = [replicates.start, replicates.stop]
    return identity


def block_store(root: Path, experiment: str) -> ResultStore:
    """Where the replicate blocks of ``experiment``'s points are kept: a store of its own
    beside the experiment's (``<root>/<experiment>.blocks``), so that a point and its blocks
    never share a manifest."""
    return ResultStore(root, f"{experiment}{BLOCKS_SUFFIX}")


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
    content = stamped_bytes(key, identity, dataset)
    return EncodedPoint(content, netcdf_loaded(content))


def stamped_bytes(key: str, identity: dict[str, Any], dataset: xr.Dataset) -> bytes:
    """``dataset`` stamped with its key and identity, as the netCDF bytes the store writes."""
    dataset = dataset.copy()
    dataset.attrs["store_key"] = key
    dataset.attrs["store_identity"] = canonical_json(identity)
    return netcdf_bytes(dataset)


def _shown(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def manifest_problem(record: Any) -> str | None:
    """Why a decoded manifest line cannot be used, or ``None``: it must be an object whose
    ``key`` is a store key and which is either a removal (``"removed": true``) or an entry with
    ``sha256`` (64 hex digits), ``bytes`` and ``seed`` (integers >= 0) and ``point`` (an object);
    ``file``, ``compute_seconds`` and ``written``, which nothing reads, are checked only for
    their type when present, and ``replicates`` (kept blocks: a pair of integers) too."""
    if not isinstance(record, dict):
        return f"not a JSON object but {_shown(record)}"
    key = record.get("key")
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        return f"field 'key' is {_shown(key)}, not a store key ({KEY_DIGITS} hex digits)"
    removed = record.get("removed", False)
    if not isinstance(removed, bool):
        return f"field 'removed' is {_shown(removed)}, not true or false"
    if removed:
        return None
    sha256 = record.get("sha256")
    if not isinstance(sha256, str) or not SHA256_PATTERN.fullmatch(sha256):
        return f"field 'sha256' is {_shown(sha256)}, not 64 hex digits"
    for name in ("bytes", "seed"):
        if not _is_int(record.get(name)) or record[name] < 0:
            return f"field {name!r} is {_shown(record.get(name))}, not an integer >= 0"
    if not isinstance(record.get("point"), dict):
        return f"field 'point' is {_shown(record.get('point'))}, not an object"
    for name, kinds, what in (("file", str, "a string"), ("written", str, "a string"),
                              ("compute_seconds", (int, float), "a number")):
        if name in record and (not isinstance(record[name], kinds)
                               or isinstance(record[name], bool)):
            return f"field {name!r} is {_shown(record[name])}, not {what}"
    rows = record.get("replicates", [0, 0])
    if not (isinstance(rows, list) and len(rows) == 2 and all(_is_int(r) for r in rows)):
        return f"field 'replicates' is {_shown(rows)}, not a pair of integers"
    return None


@dataclass(frozen=True)
class ManifestLine:
    """One line of a manifest: its number (from 1), its bytes (without the newline), and the
    record it holds, or why it holds none (``problem``; ``torn``: not JSON, as a line a crash
    cut short; ``terminated``: whether a newline ends it)."""

    number: int
    raw: bytes
    record: dict[str, Any] | None
    problem: str = ""
    torn: bool = False
    terminated: bool = True


def parse_manifest(content: bytes, first: int = 1) -> list[ManifestLine]:
    """Every line of a manifest's bytes, each decoded and checked on its own (any bytes);
    ``first``: the number of the first line."""
    pieces = content.split(b"\n")
    last = len(pieces) - 1
    lines = []
    for index, raw in enumerate(pieces):
        if index == last and raw == b"":
            break  # after the final newline
        number, terminated = first + index, index < last
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            problem = f"not UTF-8 (byte 0x{raw[error.start]:02x} at column {error.start + 1})"
            lines.append(ManifestLine(number, raw, None, problem, terminated=terminated))
            continue
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):
            lines.append(ManifestLine(number, raw, None, "not JSON (cut short by a crash?)",
                                      torn=True, terminated=terminated))
            continue
        problem = manifest_problem(record)
        lines.append(ManifestLine(number, raw, None if problem else record, problem or "",
                                  terminated=terminated))
    return lines


def manifest_entries(lines: list[ManifestLine],
                     entries: dict[str, dict[str, Any]] | None = None
                     ) -> dict[str, dict[str, Any]]:
    """The listed points' entries by key: the last line for a key wins, a removal drops it
    (``entries``: those of the lines before, updated in place)."""
    entries = {} if entries is None else entries
    for line in lines:
        if line.record is None:
            continue
        if line.record.get("removed"):
            entries.pop(line.record["key"], None)
        else:
            entries[line.record["key"]] = line.record
    return entries


def read_manifest(path: Path) -> list[ManifestLine]:
    """:func:`parse_manifest` of the file at ``path`` (no lines if there is none)."""
    try:
        content = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    return parse_manifest(content)


@dataclass
class _ManifestRead:
    """What :meth:`ResultStore.manifest` has read of a manifest file, to read only what was
    appended since: the file (device, inode), the bytes of its complete lines, their number,
    the last of them (to notice a file rewritten in place), and the entries they give."""

    file: tuple[int, int]
    offset: int = 0
    count: int = 0
    last: bytes = b""
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)


_LOOK_UP = object()


class PointLock:
    """An exclusive lock on a point, held through an OS lock (``flock``) on ``path``, which the
    kernel releases when the holder dies; the file exists only while someone holds or waits.

    Removing a lock file races with a process that opened it and waits for its lock: that
    process would then hold a lock on a file no longer at ``path`` while a third one creates a
    new file there and locks that. So, once the OS lock is taken, the file at ``path`` is
    checked to be the one locked (same device and inode), and if it is not (or is gone) the
    lock is taken again on whatever is there now; the holder removes the file before releasing
    it. One descriptor is open while the lock is held or awaited, none otherwise. A lock file
    that cannot be opened raises :class:`~workbench.store.atomic.WriteFailed`.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._descriptor: int | None = None

    @property
    def is_locked(self) -> bool:
        return self._descriptor is not None

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lock (waiting for it unless ``blocking`` is false); whether it was taken."""
        if self._descriptor is not None:
            raise RuntimeError(f"{self.path} is already held by this lock")
        while True:
            try:
                descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as error:  # a read-only store, too many open files
                raise WriteFailed(self.path, error) from error
            try:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
                except BlockingIOError:
                    os.close(descriptor)
                    return False
                held = os.fstat(descriptor)
                try:
                    there = os.stat(self.path)
                except FileNotFoundError:
                    there = None
            except BaseException:
                os.close(descriptor)
                raise
            if there is not None and (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino):
                self._descriptor = descriptor
                return True
            os.close(descriptor)  # its holder removed it meanwhile: lock what is there now

    def release(self) -> None:
        """Remove the lock file, then release the lock (nothing if not held)."""
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(descriptor)

    def __enter__(self) -> PointLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


@dataclass
class ResultStore:
    """The stored points of one experiment (module docstring)."""

    root: Path
    experiment: str
    warnings: TextIO | None = field(default=None, repr=False, compare=False)
    _warned: set[tuple[int, bytes]] = field(default_factory=set, init=False, repr=False,
                                            compare=False)
    _read: _ManifestRead | None = field(default=None, init=False, repr=False, compare=False)

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

    def lock(self, key: str) -> PointLock:
        """The lock a process holds while it computes and stores the point ``key`` (not yet
        taken)."""
        self.points_directory.mkdir(parents=True, exist_ok=True)
        return PointLock(self.points_directory / f"{key}.lock")

    def claim(self, key: str) -> PointLock | None:
        """The point's lock, acquired, or ``None`` if another process holds it."""
        lock = self.lock(key)
        return lock if lock.acquire(blocking=False) else None

    def remove_orphaned_temporaries(self, keys: set[str]) -> list[Path]:
        """Delete the temporary files that crashed writers left: those older than this
        process, and those of a point in ``keys`` whose lock is free (no one writes it), taken
        one at a time while the file is removed."""
        started = process_started()
        removed = []
        directory = self.points_directory
        for path in sorted(directory.glob(TEMPORARY_GLOB)) if directory.is_dir() else []:
            key = path.name[1:].split(".", 1)[0]  # .<key>.nc.<random>.tmp
            try:
                if path.stat().st_mtime < started:
                    path.unlink()
                    removed.append(path)
                elif key in keys and (lock := self.claim(key)) is not None:
                    try:
                        path.unlink()
                        removed.append(path)
                    finally:
                        lock.release()
            except FileNotFoundError:  # removed by another process meanwhile
                continue
        return removed

    def manifest_lines(self) -> list[ManifestLine]:
        """Every line of the manifest, each decoded and checked (:func:`read_manifest`)."""
        return read_manifest(self.manifest_path)

    def manifest(self) -> dict[str, dict[str, Any]]:
        """The listed points' entries by key (read-only: the dict is kept for the next call).

        A line that cannot be used (:func:`parse_manifest`) counts as absent and is named once
        in a warning on :attr:`warnings` (stderr); an unterminated last line that is not JSON
        is skipped silently, as a writer may be appending it. Only the bytes appended since
        the last call are read (a sweep waiting for many points reads the manifest for each),
        unless the file was replaced or rewritten.
        """
        try:
            with open(self.manifest_path, "rb") as stream:
                status = os.fstat(stream.fileno())
                read = self._read
                if (read is None or read.file != (status.st_dev, status.st_ino)
                        or status.st_size < read.offset):
                    read = None
                else:
                    stream.seek(read.offset - len(read.last))
                    content = stream.read()
                    if content.startswith(read.last):
                        content = content[len(read.last):]
                    else:  # rewritten in place: read it all again
                        read = None
                if read is None:
                    stream.seek(0)
                    content = stream.read()
                    read = _ManifestRead((status.st_dev, status.st_ino))
        except FileNotFoundError:
            self._read = None
            return {}
        end = content.rfind(b"\n") + 1
        lines = parse_manifest(content[:end], first=read.count + 1)
        manifest_entries(lines, read.entries)
        if lines:
            read.offset += end
            read.count += len(lines)
            read.last = lines[-1].raw + b"\n"
        self._read = read
        self._warn([line for line in lines if line.record is None])
        tail = parse_manifest(content[end:], first=read.count + 1)
        if tail and tail[0].record is not None:  # complete, but without its newline
            return manifest_entries(tail, dict(read.entries))
        return read.entries

    def _warn(self, bad: list[ManifestLine]) -> None:
        bad = [line for line in bad if (line.number, line.raw) not in self._warned]
        if not bad:
            return
        self._warned.update((line.number, line.raw) for line in bad)
        listed = "; ".join(f"line {line.number}: {line.problem}" for line in bad)
        print(f"workbench: warning: {self.manifest_path}: {len(bad)} unusable line(s) skipped "
              f"({listed}); the points they list are recomputed, and `workbench store verify "
              "--repair` sets the lines aside", file=self.warnings or sys.stderr)

    def load(self, key: str, entry: Any = _LOOK_UP) -> xr.Dataset | None:
        """The stored point, ``None`` if there is none; raises :class:`CorruptPoint`.

        entry: the point's manifest entry if already read (:meth:`manifest`; ``None``: it is
            not listed), else looked up.
        """
        path = self.path(key)
        if entry is _LOOK_UP:
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
        """Move a corrupt file aside (``.corrupt``, a fresh name if one is there already,
        :func:`workbench.store.atomic.move_aside`) and drop it from the manifest."""
        path = self.path(key)
        self._record({"key": key, "removed": True})
        return move_aside(path, ".corrupt")

    def save(self, key: str, identity: dict[str, Any], dataset: xr.Dataset,
             seconds: float) -> xr.Dataset:
        """Store a point atomically, list it in the manifest, and return it as stored."""
        return self.write(key, identity, encode_point(key, identity, dataset), seconds)

    def write(self, key: str, identity: dict[str, Any], encoded: EncodedPoint,
              seconds: float) -> xr.Dataset:
        """:meth:`save` for a point :func:`encode_point` has already encoded (where it was
        computed); returns it as stored."""
        self.write_bytes(key, identity, encoded.content, seconds)
        return encoded.dataset

    def write_bytes(self, key: str, identity: dict[str, Any], content: bytes,
                    seconds: float) -> None:
        """Store the bytes :func:`stamped_bytes` made of a point (or of kept blocks) and list
        them in the manifest."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        content = atomic_write(path, content)
        self._record({
            "key": key,
            "file": str(path.relative_to(self.directory)),
            "point": identity["point"],
            "seed": identity["seed"],
            "sha256": hashlib.sha256(content).hexdigest(),
            "bytes": len(content),
            "compute_seconds": round(float(seconds), 3),
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **({"replicates": identity["replicates"]} if "replicates" in identity else {}),
        })

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
