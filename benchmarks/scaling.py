"""Scaling: the main job (``workbench check --all --quick``, or the full ``check --all``) in 1,
2, 4, ... processes up to the core count, against what the machine offers.

Each round runs the job fresh (every point computed, a new output directory) once per process
count, in a fresh interpreter, interleaved so that every count meets the same load; the last
count's directory is then run again (every point read from the store: the floor T_floor that
no number of processes shortens). For each count P it prints the median wall time T_P, the
speed-up T₁/T_P, the speed-up of the compute part (T₁ − T_floor)/(T_P − T_floor), the
parallelism a pure-Python busy loop got in P processes side by side during the same round (the
control of ``sweep_scaling.py``: what the machine offered; P on P idle cores), and the share of
that control the job's speed-up reaches. The longest experiment of each run (its sweep and
checks) says what bounds the speed-up: one long point that nothing splits caps it whatever the
cores (issue 35).

Run: ``python benchmarks/scaling.py [--rounds 3] [--max-processes N] [--full]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from main_job import longest_experiment, run_once  # noqa: E402
from sweep_scaling import available_parallelism  # noqa: E402

#: busy-loop iterations of the control: about a second of one core
SPIN = 20_000_000


def counts(largest: int) -> list[int]:
    """1, 2, 4, ... below ``largest``, and ``largest`` itself."""
    found, p = [], 1
    while p < largest:
        found.append(p)
        p *= 2
    return found + [largest]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--full", action="store_true",
                        help="the full check --all instead of the quick main job")
    args = parser.parse_args()
    processes = counts(args.max_processes)
    job = "check --all" + ("" if args.full else " --quick")
    print(f"workbench {job}: {args.rounds} rounds, processes {processes}, "
          f"{os.cpu_count()} cores")
    walls = {p: [] for p in processes}
    control = {p: [] for p in processes}
    floors = []
    for round_index in range(args.rounds):
        load = os.getloadavg()[0]
        line = []
        for p in processes:
            with tempfile.TemporaryDirectory() as out:
                seconds, _, _, stderr = run_once(out, p, quick=not args.full)
                if p == processes[-1]:
                    floor, _, _, _ = run_once(out, p, quick=not args.full)
                    floors.append(floor)
            walls[p].append(seconds)
            control[p].append(1.0 if p == 1 else available_parallelism(p, SPIN))
            longest = longest_experiment(stderr)
            line.append(f"P={p} {seconds:.1f} s (longest {longest['name']} "
                        f"{float(longest['sweep']):.1f} s)")
        print(f"  round {round_index + 1} (load {load:.2f}): " + "; ".join(line)
              + f"; floor {floors[-1]:.1f} s")
    one, floor = statistics.median(walls[1]), statistics.median(floors)
    print(f"\n  floor (rerun from the store, P={processes[-1]}): {floor:.1f} s")
    print(f"  {'P':>3} {'wall s':>8} {'speed-up':>9} {'compute':>8} {'control':>8} "
          f"{'share':>6}")
    for p in processes:
        wall = statistics.median(walls[p])
        speedup = one / wall
        compute = (one - floor) / (wall - floor) if wall > floor else float("nan")
        offered = statistics.median(control[p])
        print(f"  {p:>3} {wall:8.1f} {speedup:9.2f} {compute:8.2f} {offered:8.2f} "
              f"{speedup / offered:6.2f}")
    print("  share: speed-up / control, the part of what the machine offered that the job "
          "used (issue 35 asks for at least 0.9 here)")


if __name__ == "__main__":
    main()
