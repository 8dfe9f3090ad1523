"""Splitting a data set into shards: IID, Gaussian blobs, label skew, class-disjoint.

A :class:`Sharding` is a list of disjoint index sets into a source data set; ``arrange`` puts
the shards one after the other, which is the layout the sharded models and the engine use
(shard s occupies rows ``offsets[s] : offsets[s] + sizes[s]``). The splitters follow the
papers' data regimes:

- :func:`iid_shards`: a uniformly random partition (seed 004 §3.2.1 assumes one);
- :func:`gaussian_blobs`: shard s drawn around its own centre (seed 002 §5.1, centres uniform
  on a square, :func:`uniform_centres`);
- :func:`label_skew`: shard s holds a proportion π_s ~ Beta(a, b) of positive labels (seed 002
  §5.3: Beta(100, 100) is near IID, Beta(0.5, 0.5) strongly non-IID);
- :func:`class_disjoint`: no class appears in two shards (seed 002 §5.2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulators import validation


@dataclass(frozen=True, eq=False)
class Sharding:
    """Disjoint, non-empty index sets into a source data set of ``n_source`` points."""

    shards: tuple[np.ndarray, ...]
    n_source: int

    def __post_init__(self) -> None:
        n_source = validation.integer("n_source", self.n_source, minimum=1)
        shards = tuple(np.asarray(s, dtype=np.int64).ravel() for s in self.shards)
        if not shards:
            raise validation.InvalidParameter("shards", [], "needs at least one shard")
        for s, indices in enumerate(shards):
            if indices.size == 0:
                raise validation.InvalidParameter(f"shards[{s}]", [], "must not be empty")
            if indices.min() < 0 or indices.max() >= n_source:
                raise validation.InvalidParameter(f"shards[{s}]", "indices",
                                                  f"must lie in [0, {n_source})")
            indices.setflags(write=False)
        everything = np.concatenate(shards)
        if np.unique(everything).size != everything.size:
            raise validation.InvalidParameter("shards", "indices", "shards must be disjoint")
        object.__setattr__(self, "shards", shards)

    @property
    def n_shards(self) -> int:
        return len(self.shards)

    @property
    def sizes(self) -> np.ndarray:
        return np.array([s.size for s in self.shards], dtype=np.int64)

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.sizes)[:-1]))

    @property
    def order(self) -> np.ndarray:
        """Source indices, shard after shard."""
        return np.concatenate(self.shards)

    def arrange(self, array: np.ndarray) -> np.ndarray:
        """Rows of ``array`` (indexed like the source) with the shards contiguous."""
        return np.asarray(array)[self.order]


def equal_sizes(n_data: int, n_shards: int) -> list[int]:
    """Sizes as equal as possible (the first ``n_data mod n_shards`` shards one larger)."""
    n_data = validation.integer("n_data", n_data, minimum=1)
    n_shards = validation.integer("n_shards", n_shards, minimum=1)
    if n_shards > n_data:
        raise validation.InvalidParameter("n_shards", n_shards,
                                          f"must be <= n_data = {n_data} (no empty shard)")
    base, extra = divmod(n_data, n_shards)
    return [base + (1 if s < extra else 0) for s in range(n_shards)]


def iid_shards(rng: np.random.Generator, n_data: int, sizes) -> Sharding:
    """A uniformly random partition of ``n_data`` points into shards of the given sizes."""
    sizes = validation.sizes("shard_sizes", sizes, total=validation.integer("n_data", n_data))
    permutation = rng.permutation(n_data)
    bounds = np.cumsum([0] + sizes)
    return Sharding(tuple(permutation[a:b] for a, b in zip(bounds[:-1], bounds[1:],
                                                             strict=True)), n_data)


def uniform_centres(rng: np.random.Generator, n_shards: int, dim: int,
                    half_width: float) -> np.ndarray:
    """``(n_shards, dim)`` centres uniform on the cube [-half_width, half_width]^dim."""
    n_shards = validation.integer("n_shards", n_shards, minimum=1)
    dim = validation.integer("dim", dim, minimum=1)
    half_width = validation.non_negative("centre_half_width", half_width)
    return rng.uniform(-half_width, half_width, (n_shards, dim))


def gaussian_blobs(rng: np.random.Generator, centres: np.ndarray, sizes,
                   scale: float) -> tuple[np.ndarray, Sharding]:
    """Shard s: ``sizes[s]`` points from N(centres[s], scale² I); data shard after shard."""
    centres = np.atleast_2d(np.asarray(centres, dtype=float))
    sizes = validation.sizes("shard_sizes", sizes)
    if len(sizes) != centres.shape[0]:
        raise validation.InvalidParameter("shard_sizes", sizes,
                                          f"needs one size per centre ({centres.shape[0]})")
    scale = validation.positive("noise_scale", scale)
    data = np.concatenate([c + scale * rng.standard_normal((n, centres.shape[1]))
                           for c, n in zip(centres, sizes, strict=True)])
    bounds = np.cumsum([0] + sizes)
    return data, Sharding(tuple(np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:],
                                                                  strict=True)), data.shape[0])


def label_skew(rng: np.random.Generator, labels, sizes, a: float,
               b: float) -> tuple[Sharding, np.ndarray]:
    """Shards of the given sizes whose proportions of positive labels are drawn from Beta(a, b).

    Shard s takes round(π_s N_s) positives and the rest negatives, drawn without replacement
    from the data's positives and negatives. Returns the sharding and the realised proportions.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.isin(labels, (0, 1)).all():
        raise validation.InvalidParameter("labels", "values", "must be a 1-d array of 0 and 1")
    sizes = validation.sizes("shard_sizes", sizes)
    a = validation.positive("beta_a", a)
    b = validation.positive("beta_b", b)
    proportions = rng.beta(a, b, len(sizes))
    positives = np.floor(proportions * np.asarray(sizes) + 0.5).astype(np.int64)
    pools = [rng.permutation(np.flatnonzero(labels == value)) for value in (0, 1)]
    needed = (int(np.sum(sizes) - positives.sum()), int(positives.sum()))
    for value, pool, need in zip((0, 1), pools, needed, strict=True):
        if need > pool.size:
            raise validation.InvalidParameter(
                "shard_sizes", sizes, f"the drawn proportions need {need} points of label"
                f" {value}; the data has {pool.size}")
    taken = [0, 0]
    shards = []
    for size, positive in zip(sizes, positives.tolist(), strict=True):
        counts = (size - positive, positive)
        parts = [pools[v][taken[v]:taken[v] + counts[v]] for v in (0, 1)]
        taken = [taken[v] + counts[v] for v in (0, 1)]
        shards.append(np.sort(np.concatenate(parts)))
    return Sharding(tuple(shards), labels.size), positives / np.asarray(sizes)


def class_disjoint(rng: np.random.Generator, labels, n_shards: int) -> Sharding:
    """Classes dealt into ``n_shards`` groups at random (as equal as possible); shard s holds
    every point whose class is in group s, so no class is in two shards."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    n_shards = validation.integer("n_shards", n_shards, minimum=1)
    if n_shards > classes.size:
        raise validation.InvalidParameter(
            "n_shards", n_shards, f"must be <= the number of classes ({classes.size})")
    groups = np.array_split(rng.permutation(classes), n_shards)
    return Sharding(tuple(np.flatnonzero(np.isin(labels, g)) for g in groups), labels.size)
