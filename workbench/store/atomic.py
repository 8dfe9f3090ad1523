"""Writing files safely: atomic replacement, named failures, and the leftovers of a crash.

Every file the workbench writes (a store point, the manifest's rewrite, the combined
``<out>/<name>.nc``, a figure, the report) is first produced as bytes in memory, then written
to a temporary name in the same directory (``.<name>.<random>.tmp``), flushed to disk and
renamed onto its real name: a crash leaves the old file or the new one, never a partial one.

Producing the bytes in memory is also what keeps a full disk from crashing the process: HDF5,
when a write to its own file fails (``ENOSPC``), raises from inside its flush and can then
segfault while closing; written here with plain ``os.write``, the same failure is an
``OSError`` like any other. Every such failure (disk full, file-size limit, read-only or
immutable directory, permission) becomes :class:`WriteFailed`, which names the path and the
reason, and the temporary file is removed.

A crash (SIGKILL, power loss) in the middle of a write can still leave a temporary file:
:func:`remove_orphaned_temporaries` deletes those older than the running process.
"""

from __future__ import annotations

import errno
import io
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from simulators.exceptions import PicklesWithArguments
from simulators.validation import InvalidParameter
from workbench.core.interrupts import interrupt_deferred

TEMPORARY_GLOB = ".*.tmp"


class WriteFailed(PicklesWithArguments, Exception):
    """A file could not be written; ``path`` and ``reason`` say which and why."""

    def __init__(self, path: Path, error: OSError):
        self.path = Path(path)
        code = errno.errorcode.get(error.errno, "") if error.errno else ""
        self.reason = f"{error.strerror or error}" + (f" ({code})" if code else "")
        super().__init__(f"cannot write {self.path}: {self.reason}")


def under(root: Path, path: Path) -> Path:
    """``path`` if it resolves (symbolic links followed) to a place inside ``root``; otherwise
    :class:`WriteFailed` saying so, before anything is written. Every file a run writes under
    ``--out`` goes through here: a name from a study file or a link inside ``--out`` cannot
    send a write elsewhere."""
    resolved_root = Path(root).resolve()
    if not Path(path).resolve().is_relative_to(resolved_root):
        raise WriteFailed(path, OSError(f"it lies outside {resolved_root}, where this run "
                                        "writes (--out)"))
    return Path(path)


def atomic_write(path: Path, content: bytes) -> bytes:
    """Write ``content`` to ``path`` through a flushed temporary file and a rename.

    Returns ``content``; raises :class:`WriteFailed` (no file left behind) if any step fails.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                             dir=path.parent)
    except OSError as error:
        raise WriteFailed(path, error) from error
    try:
        with os.fdopen(handle, "wb") as stream:
            os.fchmod(stream.fileno(), 0o644)  # mkstemp's 0600 would make results private
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise WriteFailed(path, error) from error
        raise
    return content


def aside_name(path: Path, suffix: str) -> Path:
    """``<path><suffix>``, or the first of ``<path>.1<suffix>``, ``<path>.2<suffix>``, ... that
    does not exist: a file kept aside never replaces one kept before."""
    path = Path(path)
    target, number = path.with_name(path.name + suffix), 0
    while os.path.lexists(target):
        number += 1
        target = path.with_name(f"{path.name}.{number}{suffix}")
    return target


def move_aside(path: Path, suffix: str) -> Path | None:
    """Rename ``path`` to :func:`aside_name` (nothing is deleted) and return where it went;
    ``None`` if it is not there (gone, or moved by another process meanwhile). A rename that
    fails (an immutable file or directory, a read-only file system) raises
    :class:`WriteFailed` naming the file and the reason."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    target = aside_name(path, suffix)
    try:
        os.replace(path, target)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise WriteFailed(path, error) from error
    return target


def require_writable(field: str, directory: Path) -> Path:
    """``directory``, created if missing, after proving a file can be created in it.

    Permission bits are not enough to tell (root ignores them, a read-only mount or an
    immutable directory does not show in them), so a temporary file is created and removed.

    A path that cannot be a directory (under a file, a name the file system refuses) is
    invalid input (:class:`InvalidParameter`, exit status 2); a directory where no file can be
    created or that cannot be made (no permission, read-only or immutable, full) is a write
    that failed (:class:`WriteFailed`, exit status 3), as any later write would be.
    """
    if "\x00" in str(directory):
        raise InvalidParameter(field, str(directory), "must be a path without NUL characters")
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        if error.errno not in _UNWRITABLE:
            reason = WriteFailed(directory, error).reason
            raise InvalidParameter(field, str(directory), f"must be a directory where files "
                                                          f"can be created ({reason})") from error
        raise _not_writable(field, directory, error) from error
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        raise _not_writable(field, directory, error) from error
    return directory


#: errors of a directory that exists (or could) but where nothing can be written
_UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC,
               getattr(errno, "EDQUOT", errno.ENOSPC)}


def _not_writable(field: str, directory: Path, error: OSError) -> WriteFailed:
    failure = WriteFailed(directory, error)
    failure.args = (f"{field} = {directory}: no file can be created there: {failure.reason}",)
    return failure


def process_started() -> float:
    """When this process started (seconds since the epoch), to the clock tick on Linux
    (psutil's ``create_time`` rounds the boot time to the second)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except OSError:  # not Linux
        return psutil.Process().create_time()
    age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
    return time.time() - age


def remove_orphaned_temporaries(directory: Path,
                                orphaned: Callable[[Path], bool] | None = None) -> list[Path]:
    """Delete the temporary files (``.*.tmp``) in ``directory`` that no live writer can own,
    and return them: those last written before this process started (a writer holds its
    temporary for one ``write`` call, so such a file belongs to a crashed one), and those
    ``orphaned(path)`` says are (the store knows whose point it is)."""
    started = process_started()
    removed = []
    for path in Path(directory).glob(TEMPORARY_GLOB):
        try:
            if path.is_file() and (path.stat().st_mtime < started
                                   or (orphaned is not None and orphaned(path))):
                path.unlink()
                removed.append(path)
        except FileNotFoundError:  # removed by another process meanwhile
            continue
    return removed


def save_figure(figure, path: Path, **options) -> Path:
    """Save a matplotlib ``figure`` to ``path`` atomically (format from the suffix)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format=Path(path).suffix.lstrip("."), **options)
    atomic_write(path, buffer.getvalue())
    return Path(path)


NETCDF_ENGINE = "netcdf4"
_NETCDF_LOCK = threading.Lock()  # the netCDF-C and HDF5 libraries are not thread-safe
"""netCDF-4 files are written and read through netCDF4-python (the same HDF5 format h5netcdf
reads and writes): on datasets shaped like store points, about 7x faster to write and 12x faster
to read than h5netcdf, with identical round trips (``benchmarks/store_io.py``)."""


def netcdf_bytes(dataset) -> bytes:
    """A Dataset as netCDF-4 bytes, produced in memory for :func:`atomic_write`.

    xarray takes a write lock from the active Dask scheduler; with a distributed client open
    (``--dask-local``, ``--scheduler``) that is a cluster-wide lock keyed by the target, which
    an in-memory buffer cannot be (the scheduler refuses it as unknown). The arrays here are
    in memory already, so the write runs under Dask's synchronous scheduler and a local lock.
    """
    import dask

    with interrupt_deferred(), _NETCDF_LOCK, dask.config.set(scheduler="synchronous"):
        return bytes(dataset.to_netcdf(engine=NETCDF_ENGINE))


def netcdf_loaded(source):
    """The Dataset in ``source`` (a path, or netCDF bytes), fully loaded and closed."""
    import xarray as xr

    with interrupt_deferred(), _NETCDF_LOCK:
        with xr.open_dataset(source, engine=NETCDF_ENGINE) as dataset:
            return dataset.load()
