"""Power of stale-gaussian's oracle checks (issue 12): a sampler whose step is 3 % off
(h·1.03), judged against the exact oracle at h with the full configuration, must be caught.
Prints every verdict that is not ``holds`` and how many are violated.

    python benchmarks/oracle_power.py
"""

import xarray as xr

from workbench.experiments import get
from workbench.studies import gaussian_point
from workbench.studies.gaussian_judgements import oracle_checks

NAME, SEED, STEP_ERROR = "stale-gaussian", 2016, 1.03


def main() -> None:
    experiment = get(NAME)
    config = experiment.configure({})
    parts = []
    for at in experiment.points(config):
        if experiment.plugin.owns(at):
            continue
        resolved = experiment.resolve(config, at)
        length, h, checkpoints = gaussian_point.point_design(resolved, None)
        blocks = range(len(gaussian_point.replicate_blocks(resolved["n_replicates"],
                                                           resolved["replicate_block"])))
        raw = gaussian_point.run_blocks(NAME, resolved, at, SEED, blocks,
                                        (length, h * STEP_ERROR, checkpoints))
        finished = gaussian_point.finish_point(NAME, resolved, at, SEED, raw,
                                               (length, h, checkpoints), dims=("staleness",))
        parts.append(finished.isel(checkpoint=[-1]).assign_coords(checkpoint=[0])
                     .drop_vars(["iterations"]))
    verdicts = oracle_checks(xr.concat(parts, "staleness", data_vars="all"), ("staleness",),
                             config["false_failure_rate"])
    for v in verdicts:
        if v.verdict != "holds":
            print(f"{v.verdict:<12} {v.check}  d = {v.difference:+.4g}, σ = {v.mc_error:.3g}, "
                  f"margin {v.margin:.3g}")
    print(f"step ×{STEP_ERROR}: {sum(v.verdict == 'violated' for v in verdicts)} of "
          f"{len(verdicts)} oracle checks violated")


if __name__ == "__main__":
    main()
