"""Power of stale-gaussian's oracle checks (issue 12): a sampler whose step is 3 % off
(h·1.03), judged against the exact oracle at h with the full configuration, must be caught.
Prints every verdict that is not ``holds`` and how many are violated.

    python benchmarks/oracle_power.py
"""

import xarray as xr

from workbench.engine import log_checkpoints
from workbench.experiments import get
from workbench.experiments.stale_gaussian import point
from workbench.experiments.stale_gaussian.checks import oracle_checks

NAME, SEED, STEP_ERROR = "stale-gaussian", 2016, 1.03


def main() -> None:
    config = get(NAME).configure({})
    parts = []
    for tau in config["staleness"]:
        length, h = point.step_size(config, tau)
        checkpoints = log_checkpoints(length, config["n_checkpoints"])
        at = {"staleness": tau}
        blocks = range(len(point.replicate_blocks(config["n_replicates"],
                                                  config["replicate_block"])))
        raw = point.run_blocks(NAME, config, at, SEED, blocks,
                               (length, h * STEP_ERROR, checkpoints))
        finished = point.finish_point(NAME, config, at, SEED, raw, (length, h, checkpoints))
        parts.append(finished.isel(checkpoint=[-1]).assign_coords(checkpoint=[0])
                     .drop_vars(["iterations"]))
    verdicts = oracle_checks(xr.concat(parts, "staleness", data_vars="all"),
                             config["false_failure_rate"])
    for v in verdicts:
        if v.verdict != "holds":
            print(f"{v.verdict:<12} {v.check}  d = {v.difference:+.4g}, σ = {v.mc_error:.3g}, "
                  f"margin {v.margin:.3g}")
    print(f"step ×{STEP_ERROR}: {sum(v.verdict == 'violated' for v in verdicts)} of "
          f"{len(verdicts)} oracle checks violated")


if __name__ == "__main__":
    main()
