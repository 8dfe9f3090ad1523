"""Peak memory of one replay against R·d: replicate groups under the memory budget, against
one group (the engine before issue 15).

Each cell runs in a fresh interpreter and reports its peak resident set size
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``) and the interpreter's own baseline (the same
imports, no replay), so the difference is the replay's. Workload: the Gaussian mean with
N = 1000 points, stale SGLD τ = 10, minibatch 10, ``--updates`` updates, averages of θ and θ² at
one checkpoint. A run that the budget refuses says so (it needs more for its results alone).
``--protocol downpour`` replays a downpour schedule instead (seed 003: 4 workers, period π = 4,
so 4 gradient evaluations per update and each worker's state kept between its pushes), which
the budget bounds in the same way (:mod:`workbench.engine.protocols`).

Run from the repository root:
``python benchmarks/engine_memory.py [--updates 128] [--protocol downpour]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CELLS = ((1_000, 10), (10_000, 10), (100_000, 10), (10_000, 100), (100_000, 100))

CHILD = """
import json, resource, sys
import numpy as np
from simulators.seeding import generator
from simulators.static import constant_staleness
from simulators.validation import InvalidParameter
from workbench.engine import replay as engine
from workbench.core import memory_budget
from workbench.models.gaussian import GaussianMeanModel
from workbench.samplers import SGLD
replicates, dim, updates, mode = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
model = GaussianMeanModel.generate(generator(0, "benchmark"), 1000, dim)
gradient = model.minibatch_gradient()
if sys.argv[5] == "downpour":
    from simulators.downpour import DownpourSystem
    from simulators.latency import WorkerTiming
    schedule = DownpourSystem(4, WorkerTiming(), period=4).simulate(updates, seed=3)
else:
    schedule = constant_staleness(updates, 10)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
outcome = "ran"
if mode == "one group":
    engine.GROUP_ELEMENTS = 1 << 62
budget = 1 << 50 if mode == "one group" else memory_budget.MEMORY_BUDGET
if mode != "baseline":
    try:
        engine.replay(schedule, SGLD(1e-5), gradient, n_updates=updates,
                      n_replicates=replicates, initial_position=0.0, seed=1, batch_size=10,
                      memory_budget=budget)
    except InvalidParameter as error:
        outcome = "refused: " + str(error)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_mib": before / 1024, "peak_mib": peak / 1024, "outcome": outcome}))
"""


def _cell(replicates: int, dim: int, updates: int, mode: str, protocol: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(replicates), str(dim), str(updates),
                           mode, protocol], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=128)
    parser.add_argument("--one-group-max", type=float, default=2e6,
                        help="run the one-group variant only up to this R·d")
    parser.add_argument("--protocol", choices=("stale", "downpour"), default="stale",
                        help="stale SGLD with τ = 10 (default) or downpour with π = 4")
    args = parser.parse_args()
    baseline = _cell(1, 1, 64, "baseline", args.protocol)["peak_mib"]
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {args.protocol}, L = "
          f"{args.updates}; peak RSS MiB (interpreter with imports: {baseline:.0f} MiB)")
    print(f"{'R':>7} {'d':>4} {'R·d':>9} {'grouped, 1 GiB budget':>22} {'one group':>10}")
    for replicates, dim in CELLS:
        grouped = _cell(replicates, dim, args.updates, "grouped", args.protocol)
        text = (f"{grouped['peak_mib']:.0f}" if grouped["outcome"] == "ran"
                else "refused")
        single = "-"
        if replicates * dim <= args.one_group_max:
            single = _cell(replicates, dim, args.updates, "one group", args.protocol)
            single = f"{single['peak_mib']:.0f}"
        print(f"{replicates:>7} {dim:>4} {replicates * dim:>9} {text:>22} {single:>10}",
              flush=True)
        if grouped["outcome"] != "ran":
            print(f"        {grouped['outcome']}")


if __name__ == "__main__":
    main()
