"""Sharded Gaussian-mean data sets for the distributed experiments, and their parameters.

Two regimes: ``iid`` (every point from N(true_mean, σ_x² I), randomly partitioned; seed 004
§4.1) and ``blobs`` (shard s from N(c_s, σ_x² I), centres uniform on [-w, w]^d; seed 002
§5.1). The data depend only on the configuration and the seed (key ``(experiment, "data")``),
so every sweep point of an experiment sees the same data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simulators import validation
from simulators.seeding import generator
from workbench.core.parameters import Parameter
from workbench.core.validators import at_least_one, finite, positive, rate
from workbench.data.sharding import gaussian_blobs, iid_shards, uniform_centres

# the models (through the minibatch code, numba) are imported where the data set is built:
# the parameters alone are read by ``workbench show`` and argument checks (issue 15)
if TYPE_CHECKING:
    from workbench.models.sharded_gaussian import ShardedGaussianMean

DATA_REGIMES = ("iid", "blobs")


def data_parameters(shard_sizes_default: list[int], regime: str, dim: int = 2,
                    centre_half_width: float = 6.0) -> tuple[Parameter, ...]:
    """The parameters every distributed experiment shares (defaults per experiment)."""
    return (
        Parameter("shard_sizes", shard_sizes_default,
                  "N_s of each shard (one shard per worker or client); N = their sum",
                  validation.sizes),
        Parameter("data", regime, "iid: one Gaussian, randomly partitioned (seed 004); blobs: "
                  "shard s around its own centre (seed 002)", choices=DATA_REGIMES),
        Parameter("dim", dim, "dimension d of θ", at_least_one),
        Parameter("centre_half_width", centre_half_width,
                  "blobs: centres uniform on [-w, w]^d (seed 002: 6)", positive),
        Parameter("true_mean", 0.0, "iid: data are drawn from N(true_mean, σ_x² I)", finite),
        Parameter("noise_scale", 1.0, "likelihood standard deviation σ_x", positive),
        Parameter("prior_scale", 1.0, "prior standard deviation σ₀", positive),
        Parameter("prior_mean", 0.0, "prior mean m₀", finite),
    )


CHECK_PARAMETERS = (
    Parameter("confidence", 0.95, "level of the stored confidence intervals", rate),
    Parameter("false_failure_rate", 0.001,
              "family-wise probability that a correct sampler fails a family of checks", rate),
)


def make_sharded(experiment: str, config: dict, seed) -> ShardedGaussianMean:
    """The sharded data set of a configuration (module docstring)."""
    from workbench.models.gaussian import GaussianMeanModel
    from workbench.models.sharded_gaussian import ShardedGaussianMean

    rng = generator(seed, experiment, "data")
    sizes = config["shard_sizes"]
    dim, scale = config["dim"], config["noise_scale"]
    if config["data"] == "blobs":
        centres = uniform_centres(rng, len(sizes), dim, config["centre_half_width"])
        data, _ = gaussian_blobs(rng, centres, sizes, scale)
    else:
        points = config["true_mean"] + scale * rng.standard_normal((sum(sizes), dim))
        data = iid_shards(rng, sum(sizes), sizes).arrange(points)
    model = GaussianMeanModel(data, scale, config["prior_scale"], config["prior_mean"])
    return ShardedGaussianMean(model, tuple(sizes))


def data_attributes(sharded: ShardedGaussianMean) -> dict[str, str]:
    """What a result file records about its data (enough to recompute every exact value),
    and the step-size convention it was run with."""
    model = sharded.model
    attrs = {f"data_{k}": str(v) for k, v in model.sufficient_statistics().items()}
    attrs["data_shard_sizes"] = str(list(sharded.shard_sizes))
    attrs["data_shard_means"] = str(sharded.shard_means.tolist())
    attrs["data_shard_covariances"] = str(sharded.shard_covariances.tolist())
    attrs["step_size_convention"] = (
        "welling_teh_step_size = ε as the seed quotes it; the samplers run with the Chen "
        "h = ε/2, stored as step_size")
    return attrs
