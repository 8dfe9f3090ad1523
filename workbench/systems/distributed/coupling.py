"""Chain coupling on traveling chains (seed 004 §3.2.3, Eq. 6): the groups, their parameters,
and draws of a group's gradient estimate at the posterior mean.

``group_size`` R couples consecutive chains in groups of R, the remainder in one smaller group
(R = 7 on 20 chains gives seed 004's hybrid 7, 7, 6). Every update each member steps from the
group's common state on its own worker's minibatch, and the group averages the new states
(:class:`workbench.samplers.coupled.CoupledSGLD`), waiting ``coupling_time`` to exchange them.
The averaged gradient's minibatch variance falls by R (Cov/n → Cov/(Rn)); the draws of
:func:`gradient_errors` measure it against docs/math.md §11.2's identity
(:func:`workbench.oracles.gradient_noise.coupled_gradient_noise`).
"""

from __future__ import annotations

import numpy as np

from simulators.seeding import generator
from workbench.core.parameters import Parameter
from workbench.core.validators import at_least_one, at_least_two, non_negative

# the minibatch kernels (numba) are imported where gradients are drawn: the study schema reads
# this module's parameters, and showing a study stays light (issue 15)

GROUP_SIZE = Parameter("group_size", 1, "R: chains per coupled group (the remainder in a "
                                        "smaller group: hybrid groups; seed 004 §3.2.3)",
                       at_least_one)
NOISE_CORRECTION = Parameter("noise_correction", True,
                             "add N(0, ((R - 1)/R) ε) after averaging (seed 004 Eq. 6); false: "
                             "seed 004's LDA runs, which sample the group at temperature 1/R")
COUPLING_TIME = Parameter("coupling_time", 0.5, "time to exchange and average a coupled "
                                                "group's states", non_negative)
GRADIENT_DRAWS = Parameter("gradient_draws", 20_000, "group gradient estimates drawn at θ = μ "
                                                     "per point (a gradient-noise check)",
                           at_least_two)


def group_sizes(n_chains: int, group_size: int) -> list[int]:
    """Groups of R consecutive chains, the remainder in one smaller group (hybrid)."""
    group_size = min(group_size, n_chains)
    sizes = [group_size] * (n_chains // group_size)
    return sizes + ([n_chains % group_size] if n_chains % group_size else [])


def first_members(groups) -> np.ndarray:
    """Whether each chain is the first of its group (its group's representative: the chains
    of a coupled group are identical)."""
    first = np.zeros(sum(groups), dtype=bool)
    first[np.cumsum([0] + list(groups[:-1]))] = True
    return first


def gradient_errors(estimator, sharded, group_size: int, batch_size: int, replacement: bool,
                    draws: int, seed, block: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """‖ĝ_R - ∇U(μ)‖² and its minibatch part ‖ĝ_R - E[ĝ_R | shards]‖² for ``draws`` groups on
    uniformly random sets of R distinct shards (the law of a group's shards under
    random-permutation rounds), drawn in blocks of ``block`` groups to bound memory."""
    rng = generator(seed)
    parts = [_gradient_block(estimator, sharded, group_size, batch_size, replacement, rng,
                             min(block, draws - start)) for start in range(0, draws, block)]
    total, minibatch = (np.concatenate(values) for values in zip(*parts, strict=True))
    return total, minibatch


def _gradient_block(estimator, sharded, group_size, batch_size, replacement, rng, draws):
    from workbench.gradients.minibatch import draw_indices

    n_shards = sharded.n_shards
    shards = np.argsort(rng.random((draws, n_shards)), axis=1)[:, :group_size]
    frequency = np.full(shards.shape, 1.0 / n_shards)
    sizes = np.asarray(sharded.shard_sizes)[shards]
    indices = draw_indices(rng, sizes, batch_size, shards.shape, replacement)
    minibatches = estimator.prepare(indices[None], shards[None], frequency[None])[0]
    theta = np.broadcast_to(sharded.model.posterior_mean, shards.shape + (sharded.model.dim,))
    estimate = estimator(theta, minibatches).mean(axis=1)
    full = sharded.model.potential_gradient(sharded.model.posterior_mean)
    conditional = estimator(theta, minibatches._replace(
        batch=sharded.shard_means[shards])).mean(axis=1)
    return (np.sum((estimate - full) ** 2, axis=-1),
            np.sum((estimate - conditional) ** 2, axis=-1))
