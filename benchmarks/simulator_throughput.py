"""Simulator throughput: processed gradient events per second of the asynchronous system.

System: one server (seed 001, Algorithm 2) with 1,000 workers whose gradient computations take
exponential times (mean 1); each processed gradient is one event (a row of the schedule). The
time covers everything ``AsyncServerSystem.simulate`` does: the per-worker latency streams
(1,000 seeded generators), the event queue, and building the Schedule. Median of several
repeats. Target: >= 200,000 events per second.

Second system: seed 004's traveling chains in the setting of Figure 2(a)-(b) (20 chains over 20
workers, trajectories of 70 and 10 updates, random-permutation rounds, constant delays), each
chain making ``--chain-updates`` updates; every update and every hop is an event.

Third part: trajectories per second of the traveling-chain simulator in the shapes the main job
(``workbench check --all --quick``) simulates: dsgld-imbalance (20 workers, lengths 70 and 10,
permutation rounds, 80,000 updates), dsgld-load-balancing at D = 10 (speed factors 1 and 1/10,
a fixed plan of 55 and the adaptive plan with τ̄ = 55, 15,000 updates), dsgld-coupling (length
10, exchange time 0.5, groups of 1 and of 5, 8,000 updates) and dsgld-trajectory (4 workers,
cyclic, τ = 200, 50,000 updates). A round moves every chain through one trajectory, so a run
makes ``n_rounds * n_chains`` trajectories. Beside it, from the same run, the seconds per
simulation of the compiled round loop (:mod:`simulators.traveling_kernel`) and of the numpy
round loop it replaced (the simulator module as of ``--before``, default ce84fc5, loaded from
git), interleaved repeat by repeat, their ratio, and whether the two schedules are identical
(every column and attribute).

Run: ``python benchmarks/simulator_throughput.py [--repeats 5] [--updates 200000]
[--chain-updates 100000] [--only traveling] [--before REV]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np

from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import ROW_FIELDS
from simulators.traveling_chains import TravelingChains

BEFORE = "ce84fc5"  # the last commit with the numpy round loop


def _median_rate(simulate, repeats: int) -> tuple[float, object]:
    rates = []
    for repeat in range(repeats):
        start = time.perf_counter()
        schedule = simulate(repeat)
        rates.append(schedule.staleness.size / (time.perf_counter() - start))
    return statistics.median(rates), schedule


def main_job_systems() -> dict[str, tuple[TravelingChains, int]]:
    """name -> (system, n_updates) in the shapes of the main job's traveling-chain points."""
    constant = WorkerTiming(LatencyModel("constant", 1.0))
    slow = WorkerTiming(LatencyModel("constant", 1.0), speed_factors=(1.0,) * 10 + (0.1,) * 10)
    return {
        "dsgld-imbalance": (TravelingChains(
            20, trajectory_lengths=(70,) * 10 + (10,) * 10, assignment="permutation",
            timing=constant), 80_000),
        "dsgld-load-balancing fixed": (TravelingChains(
            20, trajectory_lengths=55, assignment="permutation", timing=slow), 15_000),
        "dsgld-load-balancing adaptive": (TravelingChains(
            20, trajectory_lengths=55, balancing="adaptive", mean_trajectory_length=55.0,
            assignment="permutation", timing=slow), 15_000),
        "dsgld-coupling R=1": (TravelingChains(
            20, trajectory_lengths=10, assignment="permutation", timing=constant,
            coupling_groups=(1,) * 20, coupling_time=0.5), 8_000),
        "dsgld-coupling R=5": (TravelingChains(
            20, trajectory_lengths=10, assignment="permutation", timing=constant,
            coupling_groups=(5,) * 4, coupling_time=0.5), 8_000),
        "dsgld-trajectory tau=200": (TravelingChains(
            4, trajectory_lengths=200, timing=constant), 50_000),
    }


def module_at(revision: str, path: str) -> types.ModuleType | None:
    """The module in file ``path`` as it was at git ``revision`` (None when git cannot say)."""
    root = Path(__file__).resolve().parent.parent
    shown = subprocess.run(["git", "show", f"{revision}:{path}"],
                           cwd=root, capture_output=True, text=True)
    if shown.returncode != 0:
        return None
    name = f"{Path(path).stem}_at_{revision}"
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(shown.stdout, f"{revision}:{path}", "exec"), module.__dict__)
    return module


def simulator_at(revision: str) -> types.ModuleType | None:
    """``simulators.traveling_chains`` as it was at ``revision`` (None when git cannot say)."""
    return module_at(revision, "simulators/traveling_chains.py")


def identical(a, b) -> bool:
    return a.attrs == b.attrs and all(
        getattr(a, n).dtype == getattr(b, n).dtype and np.array_equal(getattr(a, n), getattr(b, n))
        for n in ROW_FIELDS)


def traveling_rates(repeats: int, before: str) -> None:
    old = simulator_at(before)
    print(f"traveling chains in the main job's shapes; median of {repeats} repeats; "
          f"before = the numpy round loop at {before}" + ("" if old else " (unavailable)"))
    print(f"  {'system':32s} {'trajectories':>12s} {'trajectories/s':>15s} {'after s':>8s} "
          f"{'before s':>9s} {'speed-up':>9s} {'identical':>9s}")
    for name, (system, n_updates) in main_job_systems().items():
        old_system = (old.TravelingChains(**{f: getattr(system, f)
                                             for f in system.__dataclass_fields__})
                      if old else None)
        system.simulate(n_updates, repeats)  # compiled and warm, like the old one below
        seconds, old_seconds, same, trajectories = [], [], True, 0
        for repeat in range(repeats):
            start = time.perf_counter()
            schedule = system.simulate(n_updates, repeat)
            seconds.append(time.perf_counter() - start)
            trajectories = schedule.attrs["n_rounds"] * system.n_chains
            if old_system is not None:
                start = time.perf_counter()
                old_schedule = old_system.simulate(n_updates, repeat)
                old_seconds.append(time.perf_counter() - start)
                same = same and identical(schedule, old_schedule)
        after = statistics.median(seconds)
        line = f"  {name:32s} {trajectories:12,d} {trajectories / after:15,.0f} {after:8.3f}"
        if old_seconds:
            old_median = statistics.median(old_seconds)
            line += f" {old_median:9.3f} {old_median / after:8.1f}x {'yes' if same else 'NO':>9s}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--updates", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=1000)
    parser.add_argument("--chain-updates", type=int, default=100_000)
    parser.add_argument("--only", choices=("traveling",), default=None,
                        help="run only the traveling chains in the main job's shapes")
    parser.add_argument("--before", default=BEFORE,
                        help="git revision of the round loop to compare with (default %(default)s)")
    args = parser.parse_args()
    if args.only == "traveling":
        traveling_rates(args.repeats, args.before)
        return
    system = AsyncServerSystem(args.workers, WorkerTiming(LatencyModel("exponential", 1.0)))
    rate, schedule = _median_rate(lambda seed: system.simulate(args.updates, seed), args.repeats)
    print(f"single server, {args.workers} workers, exponential latencies, {args.updates:,} "
          f"updates; median of {args.repeats} repeats")
    print(f"  events per second     {rate:12,.0f}       (target >= 200,000)")
    print(f"  mean staleness        {float(schedule.staleness.mean()):12.1f}")
    chains = TravelingChains(20, trajectory_lengths=(70,) * 10 + (10,) * 10,
                             assignment="permutation",
                             timing=WorkerTiming(LatencyModel("constant", 1.0)))
    rate, schedule = _median_rate(lambda seed: chains.simulate(args.chain_updates, seed),
                                  args.repeats)
    print(f"traveling chains (seed 004 Fig. 2a-b), 20 chains x {args.chain_updates:,} updates; "
          f"median of {args.repeats} repeats")
    print(f"  events per second     {rate:12,.0f}")
    traveling_rates(args.repeats, args.before)


if __name__ == "__main__":
    main()
