"""``workbench store drop-blocks``: remove the replicate blocks sequential checks kept.

A sequential check (:mod:`workbench.run.until_decided`) keeps each run of replicate blocks it
computes in ``<out>/store/<experiment>.blocks/`` (:func:`workbench.store.result_store.
block_store`), so that its next look computes only the replicates it adds. Nothing removes
them: after a quick ``check --all --until-decided --budget 10m`` they took 357 MB beside the
points' 100 MB. They are a cache: a later look that finds none computes its replicates whole,
and the points and the combined datasets do not depend on them.

:func:`drop` removes such directories, every experiment's or one's, and says how many bytes
each held. A directory under which a run holds a lock (its manifest's, or a block's while it is
written) is left as it is and named, with the reason: dropping it then could make that run's
next write fail. A lock taken after the check (a run started meanwhile) is not seen, so drop
blocks while no run writes to that ``--out``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from filelock import Timeout

from workbench.store.result_store import BLOCKS_SUFFIX, STORE_DIR, PointLock, ResultStore


@dataclass(frozen=True)
class Dropped:
    """One experiment's kept blocks: their directory, the bytes it held, and, where it was left
    in place, why (empty: removed)."""

    path: Path
    size: int
    left: str = ""


def directories(out: Path, experiment: str | None = None) -> list[Path]:
    """The kept-block directories under ``out``'s store: every experiment's, or
    ``experiment``'s alone."""
    root = Path(out) / STORE_DIR
    if not root.is_dir():
        return []
    if experiment is not None:
        path = root / f"{experiment}{BLOCKS_SUFFIX}"
        return [path] if path.is_dir() else []
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.endswith(BLOCKS_SUFFIX))


def drop(out: Path, experiment: str | None = None) -> list[Dropped]:
    """Remove the kept-block directories of :func:`directories`, each unless a run holds a
    lock under it (module docstring)."""
    return [_drop_one(path) for path in directories(out, experiment)]


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _drop_one(path: Path) -> Dropped:
    size = _size(path)
    store = ResultStore(path.parent, path.name)
    manifest = store.manifest_lock()
    try:
        manifest.acquire(timeout=0)
    except Timeout:
        return Dropped(path, size, "a run is writing its manifest")
    try:
        for lock_file in sorted((path / "points").glob("*.lock")):
            lock = PointLock(lock_file)
            if not lock.acquire(blocking=False):
                return Dropped(path, size, f"a run holds the lock of {lock_file.name}")
            lock.release()
        shutil.rmtree(path)
    finally:
        manifest.release()
    return Dropped(path, size)

