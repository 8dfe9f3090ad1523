"""Simulator throughput: processed gradient events per second of the asynchronous system.

System: one server (seed 001, Algorithm 2) with 1,000 workers whose gradient computations take
exponential times (mean 1); each processed gradient is one event (a row of the schedule). The
time covers everything ``AsyncServerSystem.simulate`` does: the per-worker latency streams
(1,000 seeded generators), the event queue, and building the Schedule. Median of several
repeats. Target: >= 200,000 events per second.

Run: ``python benchmarks/simulator_throughput.py [--repeats 5] [--updates 200000]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--updates", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=1000)
    args = parser.parse_args()
    system = AsyncServerSystem(args.workers, WorkerTiming(LatencyModel("exponential", 1.0)))
    rates = []
    for repeat in range(args.repeats):
        start = time.perf_counter()
        schedule = system.simulate(args.updates, seed=repeat)
        elapsed = time.perf_counter() - start
        rates.append(schedule.staleness.size / elapsed)
    print(f"single server, {args.workers} workers, exponential latencies, {args.updates:,} "
          f"updates; median of {args.repeats} repeats")
    print(f"  events per second     {statistics.median(rates):12,.0f}       (target >= 200,000)")
    print(f"  mean staleness        {float(schedule.staleness.mean()):12.1f}")


if __name__ == "__main__":
    main()
