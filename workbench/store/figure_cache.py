"""Figures drawn once per content: a run whose dataset and figure code are unchanged reuses
the figures it drew before instead of drawing them again (issue 15: ``savefig`` was 12 % of
the main job, and a rerun over a full store redrew every figure).

A figure set is keyed by the SHA-256 of the experiment's name, the dataset (its arrays through
:func:`workbench.store.netcdf.array_checksum`, and its attributes), the matplotlib version and the
source of the ``workbench`` package (so editing any figure code redraws). The key and the
SHA-256 of every figure file go to ``<out>/.figures/<name>.json``, written after the figures
(atomically, :func:`workbench.store.atomic.atomic_write`); the figures are reused only if the key
matches and every file is there with its recorded digest, so a deleted, damaged or hand-edited
figure is drawn again, and a crash between figure and record only costs a redraw. A run
that writes a dataset without drawing its figures removes the recorded ones drawn from other
content (:func:`discard_stale`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import xarray as xr

import workbench
from workbench.store.atomic import atomic_write, under
from workbench.store.netcdf import array_checksum

RECORD_DIR = ".figures"


@cache
def code_fingerprint() -> str:
    """SHA-256 of every source file of the ``workbench`` package and of matplotlib's version
    (computed once per process)."""
    import matplotlib

    digest = hashlib.sha256(matplotlib.__version__.encode())
    root = Path(workbench.__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def content_key(name: str, dataset: xr.Dataset) -> str:
    """The key of ``name``'s figures of ``dataset`` (module docstring)."""
    attrs = json.dumps({str(k): str(v) for k, v in dataset.attrs.items()}, sort_keys=True)
    digest = hashlib.sha256()
    for part in (name, array_checksum(dataset), attrs, code_fingerprint()):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def figures_once(name: str, dataset: xr.Dataset, out: Path,
                 draw: Callable[[xr.Dataset, Path], list[Path]]) -> list[Path]:
    """``draw(dataset, out)``'s figures: the ones already in ``out`` if they were drawn from
    the same content (module docstring), else drawn now and recorded."""
    out = Path(out)
    record_path = under(out, out / RECORD_DIR / f"{name}.json")
    key = content_key(name, dataset)
    reused = _recorded(record_path, key, out)
    if reused is not None:
        return reused
    paths = [Path(p) for p in draw(dataset, out)]
    record = {"key": key, "figures": {str(p.relative_to(out)) if p.is_relative_to(out)
                                      else str(p): _sha256(p) for p in paths}}
    atomic_write(record_path, json.dumps(record, indent=1, sort_keys=True).encode())
    return paths


def discard_stale(name: str, dataset: xr.Dataset, out: Path) -> list[Path]:
    """Remove ``name``'s recorded figures in ``out`` unless they were drawn from ``dataset``
    (same key, module docstring), and their record; returns the files removed.

    For a run that writes ``<name>.nc`` without drawing: figures of other numbers must not be
    left beside it. Only files the record lists are touched (what this module drew); a figure
    already gone is skipped.
    """
    out = Path(out)
    record_path = under(out, out / RECORD_DIR / f"{name}.json")
    try:
        record = json.loads(record_path.read_text())
        if record.get("key") == content_key(name, dataset):
            return []
        listed = [out / relative for relative in record["figures"]]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        listed = []  # unreadable record: drop it, the figures it named are unknown
    removed = []
    for path in listed:
        try:
            path.unlink()
            removed.append(path)
        except FileNotFoundError:
            pass
    record_path.unlink(missing_ok=True)
    return removed


def _recorded(record_path: Path, key: str, out: Path) -> list[Path] | None:
    """The recorded figures if the record has ``key`` and every file is intact, else None."""
    try:
        record = json.loads(record_path.read_text())
        if record.get("key") != key:
            return None
        paths = []
        for name, digest in record["figures"].items():
            path = out / name
            if _sha256(path) != digest:
                return None
            paths.append(path)
        return paths
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing, unreadable or foreign: draw again


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
