"""Simulator throughput: processed gradient events per second of the asynchronous system.

System: one server (seed 001, Algorithm 2) with 1,000 workers whose gradient computations take
exponential times (mean 1); each processed gradient is one event (a row of the schedule). The
time covers everything ``AsyncServerSystem.simulate`` does: the per-worker latency streams
(1,000 seeded generators), the event queue, and building the Schedule. Median of several
repeats. Target: >= 200,000 events per second.

Second system: seed 004's traveling chains in the setting of Figure 2(a)-(b) (20 chains over 20
workers, trajectories of 70 and 10 updates, random-permutation rounds, constant delays), each
chain making ``--chain-updates`` updates; every update and every hop is an event.

Run: ``python benchmarks/simulator_throughput.py [--repeats 5] [--updates 200000]
[--chain-updates 100000]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.traveling_chains import TravelingChains


def _median_rate(simulate, repeats: int) -> tuple[float, object]:
    rates = []
    for repeat in range(repeats):
        start = time.perf_counter()
        schedule = simulate(repeat)
        rates.append(schedule.staleness.size / (time.perf_counter() - start))
    return statistics.median(rates), schedule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--updates", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=1000)
    parser.add_argument("--chain-updates", type=int, default=100_000)
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
