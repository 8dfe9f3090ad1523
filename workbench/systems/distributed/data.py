"""Sharded Gaussian-mean data sets for the distributed experiments, and their parameters.

Two regimes: ``iid`` (every point from N(true_mean, σ_x² I), randomly partitioned; seed 004
§4.1) and ``blobs`` (shard s from N(c_s, σ_x² I), centres uniform on [-w, w]^d; seed 002
§5.1). The data depend only on the configuration and the seed (key ``(experiment, "data")``),
so every sweep point of an experiment sees the same data.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from simulators import validation
from simulators.seeding import generator
from workbench.core.parameters import Parameter
from workbench.core.validators import positive
from workbench.data.sharding import gaussian_blobs, iid_shards, uniform_centres
from workbench.run.parameters import (
    CONFIDENCE,
    DIM,
    FALSE_FAILURE_RATE,
    NOISE_SCALE,
    PRIOR_MEAN,
    PRIOR_SCALE,
    TRUE_MEAN,
)

# the models (through the minibatch code, numba) are imported where the data set is built:
# the parameters alone are read by ``workbench show`` and argument checks (issue 15)
if TYPE_CHECKING:
    from workbench.models.sharded_gaussian import ShardedGaussianMean

DATA_REGIMES = ("iid", "blobs")

SHARD_SIZES = Parameter("shard_sizes", [200] * 10,
                        "N_s of each shard (one shard per worker or client); N = their sum",
                        validation.sizes)
#: the regime of the sharded data; the logistic model's ``data`` (a data source,
#: :mod:`workbench.systems.asynchronous.models`) is another parameter of the same name
#: (``tests/test_declared_once.py``: ``EXCEPTIONS``)
DATA_REGIME = Parameter("data", "iid", "iid: one Gaussian, randomly partitioned (seed 004); "
                        "blobs: shard s around its own centre (seed 002)", choices=DATA_REGIMES)
CENTRE_HALF_WIDTH = Parameter("centre_half_width", 6.0,
                              "blobs: centres uniform on [-w, w]^d (seed 002: 6)", positive)


def data_parameters(shard_sizes_default: list[int], regime: str, dim: int = 2,
                    centre_half_width: float = 6.0) -> tuple[Parameter, ...]:
    """The parameters every distributed experiment shares (defaults per experiment)."""
    return (
        replace(SHARD_SIZES, default=shard_sizes_default),
        replace(DATA_REGIME, default=regime),
        replace(DIM, default=dim),
        replace(CENTRE_HALF_WIDTH, default=centre_half_width),
        TRUE_MEAN,
        NOISE_SCALE,
        PRIOR_SCALE,
        PRIOR_MEAN,
    )


CHECK_PARAMETERS = (CONFIDENCE, FALSE_FAILURE_RATE)


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
