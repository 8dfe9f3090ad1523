"""What the first run after an install spends compiling: numba's compile time per kernel in
the main job, ``workbench check --all --quick``, in one process with an empty numba cache.

numba compiles each kernel the first time a process calls it with a new signature (argument
types, array layouts and read-only flags included) and keeps the machine code in its cache,
so that later runs load it. This script runs the main job in this interpreter, one process
(``--processes 1``, so that every compile is seen here), with ``NUMBA_CACHE_DIR`` set to a new
directory, records numba's compile events and prints per function: its own compile seconds
(the event's duration less the functions it compiled inside it: helpers and numba's own
overloads), the seconds including them, and how many signatures it compiled. Then the total
compile time against the run's wall time. A function with more than one signature compiled
again for another layout or flag of some argument; numba's own overloads (``numba.*``) are
what a kernel's code pulled in, such as the formatted shape error of an array assigned to a
subarray.

Run: ``python benchmarks/compile_cost.py [--top 30]`` (about four minutes here).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import sys
import tempfile
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=30, help="functions to list")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="compile-cost-") as directory:
        # set before numba is imported, so that its configuration reads it
        os.environ["NUMBA_CACHE_DIR"] = os.path.join(directory, "numba-cache")
        from numba.core import event

        recorder = event.RecordingListener()
        event.register("numba:compile", recorder)
        from workbench.cli.main import main as workbench

        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # its verdicts: not this script's
            status = workbench(["check", "--all", "--quick", "--processes", "1", "--quiet",
                                "--out", os.path.join(directory, "results")])
        wall = time.perf_counter() - started
    if status not in (0, 1):  # 1: some claim violated (the built-in controls)
        print(f"the main job failed (exit status {status})", file=sys.stderr)
        return status
    own = collections.Counter()
    inclusive = collections.Counter()
    signatures = collections.Counter()
    stack = []  # [name, started, seconds of the compiles inside]
    for stamp, record in recorder.buffer:
        function = record.data["dispatcher"].py_func
        if record.is_start:
            stack.append([f"{function.__module__}.{function.__qualname__}", stamp, 0.0])
            continue
        name, start, inside = stack.pop()
        seconds = stamp - start
        own[name] += seconds - inside
        inclusive[name] += seconds
        signatures[name] += 1
        if stack:
            stack[-1][2] += seconds
    total = sum(own.values())
    print(f"main job, one process, empty numba cache: {wall:.1f} s; compiling "
          f"{total:.1f} s ({total / wall:.0%}) in {len(own)} functions")
    print(f"{'own s':>7} {'with inner s':>12} {'signatures':>10}  function")
    for name, seconds in own.most_common(args.top):
        print(f"{seconds:7.2f} {inclusive[name]:12.2f} {signatures[name]:10d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
