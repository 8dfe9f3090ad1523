"""Commands the tests and benchmarks start beside themselves (a dashboard server, a Dask
scheduler and its workers): each in its own session, so that stopping it stops every process it
started, and its output in a log file to show when it fails."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def start(command: list[str], log: Path, **options) -> subprocess.Popen:
    """``command`` in a new session (its own process group), stdout and stderr to ``log``;
    ``options`` go to :class:`subprocess.Popen` (``cwd``, ``env``)."""
    with open(log, "w") as output:
        return subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                start_new_session=True, **options)


def stop(process: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM to ``process``'s whole group (what it started too), then wait for it."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:  # the group is gone already
        pass
    process.wait(timeout=timeout)


@contextmanager
def running(command: list[str], log: Path, **options) -> Iterator[subprocess.Popen]:
    """:func:`start`, and :func:`stop` on leaving, whatever happened."""
    process = start(command, log, **options)
    try:
        yield process
    finally:
        stop(process)


def healthy(url: str, process: subprocess.Popen, seconds: float) -> bool:
    """Wait until the Streamlit server at ``url`` answers its health check (True), or
    ``process`` has ended or ``seconds`` have passed (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                if answer.read().strip() == b"ok":
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False
