"""Fault injection: runs of ``workbench`` in forked children that are killed, limited, starved.

A child is this test process forked (no second import of the workbench: a run costs about a
second), running :func:`workbench.cli.main.main` with its stdout and stderr in a file; a fault is
injected by patching the child only (``before``) or by signalling it from here. Every run is
the small stale-gaussian sweep ``QUICK`` (three points), one process unless a test asks for a
pool.
"""

from __future__ import annotations

import faulthandler
import itertools
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.cli import main as cli
from workbench.store.netcdf import read_netcdf

QUICK = ["--quick", "--quiet", "--seed", "5", "--set", "staleness=[1,2,3]",
         "--set", "designs=false", "--set", "base_iterations=50",
         "--set", "n_replicates=20"]
N_POINTS = 3
_numbers = itertools.count()
STACKS_SIGNAL = signal.SIGUSR1  # a child writes every thread's stack to its log on this


@dataclass
class Child:
    """A forked ``workbench`` run: the process and the file holding what it printed."""

    process: multiprocessing.Process
    log: Path

    def finish(self, timeout: float = 60.0) -> int:
        self.process.join(timeout)
        if self.process.exitcode is None:  # stuck: its threads' stacks say where
            os.kill(self.process.pid, STACKS_SIGNAL)
            time.sleep(1.0)
            self.process.kill()
            self.process.join()
            raise AssertionError(f"still running after {timeout} s; its log and stacks:\n"
                                 f"{self.output}")
        return self.process.exitcode

    @property
    def output(self) -> str:
        return self.log.read_text()

    def wait_for(self, condition: Callable[[], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert self.process.is_alive(), f"exited early:\n{self.output}"
            assert time.monotonic() < deadline, f"condition not met in {timeout} s"
            time.sleep(0.02)


def _main(argv: list[str], log: Path, before: Callable[[], None] | None) -> None:
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    sys.stdout = sys.stderr = open(descriptor, "w", buffering=1)  # noqa: SIM115 - until exit
    # as in a fresh `workbench` process, whatever earlier tests installed or blocked in this
    # one (a fork inherits the forking thread's signal mask)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, STACKS_SIGNAL})
    faulthandler.register(STACKS_SIGNAL, file=sys.stderr, all_threads=True)
    if before is not None:
        before()
    status = cli.main(argv)
    sys.stdout.flush()
    os._exit(status)


def start(argv: list[str], directory: Path, before: Callable[[], None] | None = None) -> Child:
    """``workbench ARGV`` in a forked child; ``before`` runs in the child first."""
    log = Path(directory) / f"child-{next(_numbers)}.log"
    process = multiprocessing.get_context("fork").Process(target=_main,
                                                          args=(argv, log, before))
    process.start()
    return Child(process, log)


def run(argv: list[str], directory: Path, before: Callable[[], None] | None = None) -> Child:
    """:func:`start`, then wait for the child to exit."""
    child = start(argv, directory, before)
    child.finish()
    return child


def temporaries(out: Path) -> list[Path]:
    return sorted(Path(out).rglob(".*.tmp"))


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """The uninterrupted run's combined Dataset."""
    out = tmp_path_factory.mktemp("reference")
    assert cli.main(["run", "stale-gaussian", *QUICK, "--processes", "1", "--out", str(out)]) == 0
    return read_netcdf(out / "stale-gaussian.nc")
