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
- ``duplicate manifest line`` / ``torn manifest line``: a key listed more than once (the last
  line wins, so the others are dead weight) or a line cut short by a crash;
- ``kept aside`` (``*.corrupt``, ``*.orphaned``, ``*.before-repair``), ``lock`` and ``in
  progress`` (a temporary younger than this process: another run may be writing it) are
  listed for completeness and are not problems.

Figures and ``report.html`` are written atomically but carry no checksum (they are rebuilt
from the verified Dataset by every run), so they are not listed.

:func:`repair` moves the bad files aside, never deleting anything: a corrupt point becomes
``<key>.nc.corrupt`` (and is dropped from the manifest), a corrupt combined file
``<name>.nc.corrupt``, an orphaned temporary ``<name>.orphaned``, and a manifest with
duplicate or torn lines is rewritten atomically with one line per listed point, the old one
kept as ``manifest.jsonl.before-repair``. A ``workbench run`` afterwards recomputes what is
missing.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from workbench.store.atomic import atomic_write, process_started
from workbench.store.netcdf import CorruptResult, read_netcdf
from workbench.store.result_store import STORE_FORMAT, CorruptPoint, ResultStore, code_versions

COMPLETE = "complete"
STALE = "stale version"
CORRUPT = "corrupt"
ORPHANED = "orphaned temporary"
DUPLICATE = "duplicate manifest line"
TORN = "torn manifest line"
ASIDE = "kept aside"
LOCK = "lock"
BAD = (CORRUPT, ORPHANED, DUPLICATE, TORN)
ASIDE_SUFFIXES = (".corrupt", ".orphaned", ".before-repair")
STORE_DIR = "store"


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
        state = STALE if "stale version" in error.reason else CORRUPT
        return Finding(path, state, error.reason)
    return Finding(path, COMPLETE)


def _store(store: ResultStore, started: float) -> list[Finding]:
    findings = []
    lines = []
    if store.manifest_path.exists():
        lines = store.manifest_path.read_text(errors="replace").splitlines()
    listed: Counter[str] = Counter()
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
            key = record["key"]
        except (ValueError, TypeError, KeyError):
            findings.append(Finding(store.manifest_path, TORN, f"line {number}", store))
            continue
        if record.get("removed"):
            listed.pop(key, None)
        else:
            listed[key] += 1
    findings += [Finding(store.manifest_path, DUPLICATE, f"{key} listed {count} times", store,
                         key) for key, count in sorted(listed.items()) if count > 1]
    entries = store.manifest()
    for key in sorted(entries):
        if not store.path(key).exists():
            findings.append(Finding(store.path(key), CORRUPT,
                                    "listed in the manifest but missing", store, key))
    directory = store.points_directory
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        other = _other(path, started)
        if other is not None:
            findings.append(other)
        elif path.suffix == ".nc":
            findings.append(_point(store, path.stem, entries.get(path.stem)))
    return findings


def _point(store: ResultStore, key: str, entry: dict | None) -> Finding:
    path = store.path(key)
    try:
        dataset = store.load(key, entry)
    except CorruptPoint as error:
        return Finding(path, CORRUPT, error.reason, store, key)
    identity = json.loads(dataset.attrs.get("store_identity", "{}"))
    written = {"store_format": identity.get("store_format"), **identity.get("versions", {})}
    current = {"store_format": STORE_FORMAT, **code_versions()}
    if written != current:
        return Finding(path, STALE, f"written by {written}, this is {current}", store, key)
    return Finding(path, COMPLETE, store=store, key=key)


def repair(findings: list[Finding]) -> list[tuple[Finding, Path]]:
    """Move the bad files among ``findings`` aside (module docstring); what moved where."""
    moved = []
    manifests = {}
    for finding in findings:
        if finding.state in (DUPLICATE, TORN):
            manifests[finding.store.manifest_path] = finding
        elif finding.state == CORRUPT and finding.store is not None:
            target = finding.store.quarantine(finding.key)
            moved.append((finding, target or finding.store.manifest_path))
        elif finding.state == CORRUPT or finding.state == ORPHANED:
            suffix = ".corrupt" if finding.state == CORRUPT else ".orphaned"
            target = finding.path.with_name(finding.path.name + suffix)
            os.replace(finding.path, target)
            moved.append((finding, target))
    for finding in manifests.values():
        moved.append((finding, _rewrite_manifest(finding.store)))
    return moved


def _rewrite_manifest(store: ResultStore) -> Path:
    """One line per listed point, atomically; the old manifest kept beside. Returns that."""
    kept = store.manifest_path.with_name(store.manifest_path.name + ".before-repair")
    with store.manifest_lock():
        content = store.manifest_path.read_bytes()
        atomic_write(kept, content)
        lines = [json.dumps(entry, sort_keys=True, ensure_ascii=True) + "\n"
                 for entry in store.manifest().values()]
        atomic_write(store.manifest_path, "".join(lines).encode())
    return kept
