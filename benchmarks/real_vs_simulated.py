"""Real against calibrated simulated asynchronous runs on this machine (issue 17).

For P in ``--workers`` (default 1 2 4), a real parameter server with P worker processes runs
stale SGLD on the Gaussian mean (1,000 points, d = 2, minibatch 10) with injected exponential
compute times (``--latency-mean`` seconds) and an injected server update time
(``--server-delay`` seconds, which makes the server saturate so that the time speed-up bends at
P* = c/u). The simulator is calibrated on each run and simulated 10 times as long; printed per
P: the fitted model, the chi-square test of the staleness counts (thinned 1 in P; see
``workbench/realtime/calibration.py`` for why not KS), and the real and simulated time
speed-ups and iteration speed-ups (updates per worker iteration, relative to P = 1).

Run: ``python benchmarks/real_vs_simulated.py [--updates 600] [--latency-mean 0.004]
[--server-delay 0.002] [--workers 1 2 4] [--seed 17]``.
"""

from __future__ import annotations

import argparse
import time

from simulators.latency import LatencyModel, WorkerTiming
from simulators.seeding import generator
from workbench.models.gaussian import GaussianMeanModel
from workbench.realtime.comparison import compare_real_and_simulated
from workbench.realtime.server import RealRunSettings
from workbench.samplers import SGLD


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=600)
    parser.add_argument("--latency-mean", type=float, default=0.004)
    parser.add_argument("--server-delay", type=float, default=0.002)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    model = GaussianMeanModel.generate(generator(args.seed, "data"), 1000, 2)
    settings = RealRunSettings(
        n_workers=1, n_updates=args.updates, batch_size=10,
        timing=WorkerTiming(LatencyModel("exponential", args.latency_mean)),
        server_delay=args.server_delay)
    started = time.perf_counter()
    result = compare_real_and_simulated(model, SGLD(1e-4), settings, args.workers, args.seed)
    print(f"{args.updates} real updates per P, simulated x{result.attrs['simulated_factor']}; "
          f"{time.perf_counter() - started:.1f} s in all")
    print(" P  fitted latency (ms)        u (ms)  δ (ms)  chi2 (dof)   p      "
          "T_P real  sim   iter real  sim")
    for p in result["workers"].values:
        at = result.sel(workers=p)
        ms = {name: 1e3 * float(at[name]) for name in
              ("latency_mean", "server_update_time", "network_delay")}
        print(f"{p:2d}  {str(at['latency'].values):11s} mean {ms['latency_mean']:5.2f}"
              f" shape {float(at['latency_shape']):4.2f}  {ms['server_update_time']:5.2f}"
              f"  {ms['network_delay']:5.2f}  {float(at['staleness_chi2']):6.2f} "
              f"({int(at['staleness_chi2_dof'])})  {float(at['staleness_p_value']):5.3f}  "
              f"{float(at['real_time_speedup']):5.2f}  {float(at['simulated_time_speedup']):5.2f}"
              f"   {float(at['real_iteration_speedup']):5.2f}  "
              f"{float(at['simulated_iteration_speedup']):5.2f}")


if __name__ == "__main__":
    main()
