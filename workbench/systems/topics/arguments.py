"""The checked arguments every topic-model runner shares (:mod:`.dsgld`, :mod:`.gibbs`,
:mod:`.counts`): LDA's K and priors, the training corpus and its shards, the cost model, the
workers' speed factors, the evaluation times and the replicates. Each bad value is refused
naming its field."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simulators import validation
from workbench.data.corpus import Corpus
from workbench.systems.topics.cost import CostModel


def check_model(n_topics, alpha, beta) -> tuple[int, float, float]:
    """LDA's K >= 2 and its Dirichlet priors α > 0, β > 0."""
    return (validation.integer("n_topics", n_topics, minimum=2),
            validation.positive("alpha", alpha), validation.positive("beta", beta))


def checked_speed_factors(speed_factors, n_workers: int | None = None) -> np.ndarray:
    """Finite speed factors > 0, one a worker (``n_workers`` of them where given)."""
    factors = np.atleast_1d(np.asarray(speed_factors, dtype=np.float64))
    if factors.ndim != 1 or factors.size == 0 or not np.all(np.isfinite(factors)) \
            or (factors <= 0).any() or (n_workers is not None and factors.size != n_workers):
        count = "" if n_workers is None else f"{n_workers} "
        raise validation.InvalidParameter("speed_factors", factors.tolist(),
                                          f"must be {count}finite numbers > 0, one a worker")
    return factors


@dataclass(frozen=True)
class RunArguments:
    """The checked arguments common to the topic-model runners (module docstring)."""

    shards: tuple[np.ndarray, ...]
    n_topics: int
    alpha: float
    beta: float
    speed_factors: np.ndarray
    evaluation_times: np.ndarray
    n_replicates: int

    @classmethod
    def check(cls, training, shards, n_topics, alpha, beta, cost, speed_factors,
              evaluation_times, n_replicates) -> RunArguments:
        """Refuse bad input, naming the field: ``shards`` must partition the training
        documents into non-empty shards, one speed factor > 0 per shard, evaluation times
        finite, >= 0 and increasing."""
        if not isinstance(training, Corpus):
            raise validation.InvalidParameter("training", type(training).__name__,
                                              "must be a Corpus")
        if not isinstance(cost, CostModel):
            raise validation.InvalidParameter("cost", type(cost).__name__,
                                              "must be a CostModel")
        n_topics, alpha, beta = check_model(n_topics, alpha, beta)
        n_replicates = validation.integer("n_replicates", n_replicates, minimum=1)
        if not isinstance(shards, Sequence) or not shards:
            raise validation.InvalidParameter("shards", shards,
                                              "must be a non-empty list of index arrays")
        shards = tuple(np.asarray(shard) for shard in shards)
        if (any(shard.ndim != 1 or shard.size == 0 or shard.dtype.kind not in "iu"
                for shard in shards)
                or not np.array_equal(np.sort(np.concatenate(shards)),
                                      np.arange(training.n_documents))):
            raise validation.InvalidParameter(
                "shards", [shard.size for shard in shards],
                f"must hold each of the {training.n_documents} training documents once, "
                "in non-empty shards")
        speeds = checked_speed_factors(speed_factors, len(shards))
        times = np.asarray(evaluation_times, dtype=float)
        if (times.ndim != 1 or times.size == 0 or not np.all(np.isfinite(times))
                or times[0] < 0 or np.any(np.diff(times) <= 0)):
            raise validation.InvalidParameter(
                "evaluation_times", evaluation_times,
                "must be a non-empty list of finite times >= 0, increasing")
        return cls(tuple(shard.astype(np.int64) for shard in shards), n_topics, alpha, beta,
                   speeds, times, n_replicates)
