"""``workbench store verify``: the state of every file under an ``--out`` directory, and repair.

Each file gets one state:

- ``complete``: a stored point that the manifest lists with its SHA-256, that hashes to it,
  opens as netCDF and carries its key; a combined ``<out>/<name>.nc`` whose arrays match the
  checksum it records (:func:`workbench.store.netcdf.read_netcdf`);
- ``stale version``: complete, but written by another store format or other package versions,
  so this workbench never reads it (it computes the point afresh under another key);
- ``corrupt``: anything else that should be a result (truncated, altered, garbage, unlisted,
  listed but missing, a combined file without or against its checksum);
- ``orphaned temporary``: a ``.*.tmp`` a crashed writer left (older than this process);
- ``duplicate manifest line``: a key listed more than once (the last line wins, so the others
  are dead weight);
- ``torn manifest line``: a line that is not JSON, as one a crash cut short;
- ``malformed manifest line``: a line that is not UTF-8, not a JSON object, or whose fields
  have the wrong type (:func:`workbench.store.result_store.manifest_problem`); each manifest
  line is listed with its number, and the points such lines would have listed are not in the
  manifest (their files show as ``corrupt``, unlisted);
- ``kept aside`` (``*.corrupt``, ``*.orphaned``, ``*.before-repair``, ``*.rejected``), ``lock``
  and ``in progress`` (a temporary younger than this process: another run may be writing it)
  are listed for completeness and are not problems.

Figures and ``report.html`` are written atomically but carry no checksum (they are rebuilt
from the verified Dataset by every run), so they are not listed.

:func:`repair` moves the bad files aside, never deleting anything: a corrupt point becomes
``<key>.nc.corrupt`` (and is dropped from the manifest), a corrupt combined file
``<name>.nc.corrupt``, an orphaned temporary ``<name>.orphaned`` (a fresh name,
``<name>.1.corrupt`` and so on, where one is there already), and a manifest with duplicate,
torn or malformed lines is rewritten atomically, under the manifest's lock, with one line per
listed point: the torn and malformed lines are appended, as they were, to
``manifest.jsonl.rejected`` and the whole old manifest is kept as
``manifest.jsonl.before-repair``. A lock file no process holds (left by an older version,
which did not remove them) is removed. A ``workbench run`` afterwards recomputes what is
missing. A file that cannot be moved (an immutable file, a read-only file system) raises
:class:`workbench.store.atomic.WriteFailed` naming it, after the other repairs are done.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from workbench.store.atomic import (
    WriteFailed,
    aside_name,
    atomic_write,
    move_aside,
    process_started,
)
from workbench.store.netcdf import CorruptResult, read_netcdf
from workbench.store.result_store import (
    STORE_DIR,
    STORE_FORMAT,
    CorruptPoint,
    PointLock,
    ResultStore,
    code_versions,
    manifest_entries,
    parse_manifest,
)

COMPLETE = "complete"
STALE = "stale version"
CORRUPT = "corrupt"
ORPHANED = "orphaned temporary"
DUPLICATE = "duplicate manifest line"
TORN = "torn manifest line"
MALFORMED = "malformed manifest line"
ASIDE = "kept aside"
LOCK = "lock"
BAD = (CORRUPT, ORPHANED, DUPLICATE, TORN, MALFORMED)
MANIFEST_LINES = (DUPLICATE, TORN, MALFORMED)
ASIDE_SUFFIXES = (".corrupt", ".orphaned", ".before-repair", ".rejected")


@dataclass(frozen=True)
class Finding:
    """One file's state; ``key`` and ``line`` locate a stored point or a manifest line."""

    path: Path
    state: str
    detail: str = ""
    store: ResultStore | None = None
    key: str | None = None

    def describe(self) -> str:
        return f"{self.state:<24} {self.path}" + (f"  ({self.detail})" if self.detail else "")


def verify(out: Path) -> list[Finding]:
    """The state of every file the workbench wrote under ``out`` (module docstring)."""
    out = Path(out)
    started = process_started()
    findings = []
    for path in sorted(out.iterdir()) if out.is_dir() else []:
        if path.is_file():
            findings.append(_other(path, started) or _combined(path))
    store_root = out / STORE_DIR
    for directory in sorted(store_root.iterdir()) if store_root.is_dir() else []:
        if directory.is_dir():
            findings += _store(ResultStore(store_root, directory.name), started)
    return [f for f in findings if f is not None]


def _other(path: Path, started: float) -> Finding | None:
    """Temporaries, files kept aside and locks; ``None`` for anything else."""
    if path.name.startswith(".") and path.name.endswith(".tmp"):
        if path.stat().st_mtime < started:
            return Finding(path, ORPHANED, "left by a writer that crashed")
        return Finding(path, "in progress", "a temporary another process is writing")
    if path.name.endswith(ASIDE_SUFFIXES):
        return Finding(path, ASIDE)
    if path.suffix == ".lock":
        return Finding(path, LOCK)
    return None


def _combined(path: Path) -> Finding | None:
    if path.suffix != ".nc":
        return None  # figures, the report: written atomically, not checksummed
    try:
        read_netcdf(path)
    except CorruptResult as error:
        state = STALE if error.stale else CORRUPT
        return Finding(path, state, error.reason)
    return Finding(path, COMPLETE)


def _store(store: ResultStore, started: float) -> list[Finding]:
    findings = []
    lines = parse_manifest(_manifest_bytes(store))
    listed: Counter[str] = Counter()
    for line in lines:
        if line.record is None:
            state = TORN if line.torn else MALFORMED
            findings.append(Finding(store.manifest_path, state,
                                    f"line {line.number}: {line.problem}", store))
        elif line.record.get("removed"):
            listed.pop(line.record["key"], None)
        else:
            listed[line.record["key"]] += 1
    findings += [Finding(store.manifest_path, DUPLICATE, f"{key} listed {count} times", store,
                         key) for key, count in sorted(listed.items()) if count > 1]
    entries = manifest_entries(lines)
    for key in sorted(entries):
        if not store.path(key).exists():
            findings.append(Finding(store.path(key), CORRUPT,
                                    "listed in the manifest but missing", store, key))
    directory = store.points_directory
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        other = _other(path, started)
        if other is not None and other.state == LOCK:
            findings.append(Finding(path, LOCK, other.detail, store))
        elif other is not None:
            findings.append(other)
        elif path.suffix == ".nc":
            findings.append(_point(store, path.stem, entries.get(path.stem)))
    return findings


def _manifest_bytes(store: ResultStore) -> bytes:
    try:
        return store.manifest_path.read_bytes()
    except FileNotFoundError:
        return b""


def _point(store: ResultStore, key: str, entry: dict | None) -> Finding:
    path = store.path(key)
    if entry is None:  # looked up here: ResultStore.load would read the manifest again
        return Finding(path, CORRUPT, "file is not in the manifest (an interrupted write, or "
                                      "its manifest line is unusable)", store, key)
    try:
        dataset = store.load(key, entry)
    except CorruptPoint as error:
        return Finding(path, CORRUPT, error.reason, store, key)
    try:
        identity = json.loads(dataset.attrs.get("store_identity", "{}"))
        versions = identity.get("versions", {})
        written = {"store_format": identity.get("store_format"), **versions}
    except (ValueError, TypeError, AttributeError, RecursionError):
        return Finding(path, CORRUPT, "its store_identity attribute is not a JSON object",
                       store, key)
    current = {"store_format": STORE_FORMAT, **code_versions()}
    if written != current:
        return Finding(path, STALE, f"written by {written}, this is {current}", store, key)
    return Finding(path, COMPLETE, store=store, key=key)


def repair(findings: list[Finding]) -> list[tuple[Finding, Path]]:
    """Move the bad files among ``findings`` aside (module docstring); what moved where.

    Every repair that can be done is done; then the first file that could not be moved is
    raised as :class:`WriteFailed` (``failures`` on it lists them all).
    """
    moved = []
    failures: list[WriteFailed] = []
    manifests: dict[Path, list[Finding]] = {}
    for finding in findings:
        try:
            if finding.state in MANIFEST_LINES:
                manifests.setdefault(finding.store.manifest_path, []).append(finding)
            elif finding.state == CORRUPT and finding.store is not None:
                target = finding.store.quarantine(finding.key)
                moved.append((finding, target or finding.store.manifest_path))
            elif finding.state in (CORRUPT, ORPHANED):
                target = move_aside(finding.path,
                                    ".corrupt" if finding.state == CORRUPT else ".orphaned")
                if target is not None:
                    moved.append((finding, target))
            elif finding.state == LOCK and finding.store is not None:
                if _remove_free_lock(finding.path):  # a point's, left by an older version
                    moved.append((finding, finding.path))
        except WriteFailed as error:
            failures.append(error)
    for bad_lines in manifests.values():
        try:
            rejected, kept = _rewrite_manifest(bad_lines[0].store)
        except WriteFailed as error:
            failures.append(error)
            continue
        moved += [(finding, kept if finding.state == DUPLICATE else rejected)
                  for finding in bad_lines]
    if failures:
        failures[0].failures = failures
        raise failures[0]
    return moved


def _remove_free_lock(path: Path) -> bool:
    """Remove a point's lock file if no process holds it (taken, then removed as its holder
    does: :class:`workbench.store.result_store.PointLock`); whether it was removed."""
    lock = PointLock(path)
    try:
        if not lock.acquire(blocking=False):
            return False
        lock.release()
    except OSError as error:
        raise WriteFailed(path, error) from error
    return True


def _rewrite_manifest(store: ResultStore) -> tuple[Path, Path]:
    """Under the manifest's lock: the torn and malformed lines appended to
    ``manifest.jsonl.rejected``, the old manifest kept beside (``.before-repair``, a fresh
    name if one is there), and the manifest rewritten atomically with one line per listed
    point. Returns the rejected lines' file and the old manifest's."""
    path = store.manifest_path
    rejected = path.with_name(path.name + ".rejected")
    with store.manifest_lock():
        content = path.read_bytes()  # as it is now: lines may have been added since verify
        lines = parse_manifest(content)
        bad = b"".join(line.raw + b"\n" for line in lines if line.record is None)
        if bad:
            try:
                with open(rejected, "ab") as stream:
                    stream.write(bad)
                    stream.flush()
                    os.fsync(stream.fileno())
            except OSError as error:
                raise WriteFailed(rejected, error) from error
        kept = aside_name(path, ".before-repair")
        atomic_write(kept, content)
        compacted = [json.dumps(entry, sort_keys=True, ensure_ascii=True) + "\n"
                     for entry in manifest_entries(lines).values()]
        atomic_write(path, "".join(compacted).encode())
    return rejected, kept
