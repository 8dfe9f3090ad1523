"""Similar/dissimilar pairs for Bayesian metric learning (seed 002 §5.2; Yang, Jin and
Sukthankar, UAI 2007), laid out as a logistic-regression design.

Model: A = Σ_k γ_k v_k v_kᵀ over the top-K principal directions v_k of the data, and for a pair
(x_i, x_j) labelled y = +1 (same class) or -1 (different classes)

    p(y | pair, γ, μ) = 1/(1 + exp(y(‖x_i - x_j‖²_A - μ))),  ‖d‖²_A = Σ_k γ_k (v_kᵀd)².

With z_k = (v_kᵀ(x_i - x_j))² this is σ(y(μ - zᵀγ)) = σ(y wᵀθ) for θ = (γ_1..γ_K, μ) and the
design row w = (-z_1, ..., -z_K, 1): Bayesian logistic regression on the pairs
(:class:`workbench.models.logistic.LogisticRegression`), so no model of its own. Seed 002 deals
the classes into class-disjoint shards; each shard forms its pairs from its own classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse

from simulators import validation
from workbench.data.dataset import ClassificationData
from workbench.data.sharding import Sharding


def principal_directions(features, n_components: int) -> np.ndarray:
    """The top-``n_components`` eigenvectors (D, K) of the centred data's covariance, the v_k of
    seed 002 §5.2 (Yang et al. 2007), by descending eigenvalue; each vector's largest-|.| entry
    is made positive so that the directions do not depend on the eigensolver's signs."""
    features = features.toarray() if sparse.issparse(features) else np.asarray(features, float)
    dim = features.shape[1]
    if not 1 <= validation.integer("n_components", n_components) <= dim:
        raise validation.InvalidParameter(
            "n_components", n_components, f"must be at least 1 and at most the feature count"
            f" ({dim})")
    _, vectors = np.linalg.eigh(np.cov(features, rowvar=False))
    top = vectors[:, ::-1][:, :n_components]
    largest = top[np.argmax(np.abs(top), axis=0), np.arange(n_components)]
    return top * np.sign(largest)


@dataclass(frozen=True, eq=False)
class MetricPairs:
    """Design rows w = (-z/scales, 1) and labels ±1 of the training pairs, shard after shard
    (``shards``), and of the held-out pairs; each row's two points (indices into the training
    or test set), their classes (``pair_classes``) and each shard's classes."""

    features: np.ndarray
    labels: np.ndarray
    shards: Sharding
    test_features: np.ndarray
    test_labels: np.ndarray
    shard_classes: tuple[tuple, ...]
    points: np.ndarray
    test_points: np.ndarray
    pair_classes: np.ndarray
    directions: np.ndarray
    scales: np.ndarray
    source: str

    @property
    def n_shards(self) -> int:
        return self.shards.n_shards


def metric_pairs(rng: np.random.Generator, data: ClassificationData, n_similar: int = 5000,
                 n_dissimilar: int = 5000, n_shards: int = 10, n_test_pairs: int = 1000,
                 n_components: int = 10) -> MetricPairs:
    """Seed 002 §5.2's metric-learning data (Yang et al. 2007) as a logistic-regression design.

    The directions are the training features' principal ones. The training classes are dealt
    at random into ``n_shards`` groups; shard s draws ``n_similar/S`` similar pairs (a class of
    its group, then two distinct points of it) and ``n_dissimilar/S`` dissimilar ones (two
    distinct classes of its group, a point of each). ``n_test_pairs`` held-out pairs, half
    similar, come from the test points and all classes. Defaults are the paper's (|S| = |D| =
    5000, 1000 held-out pairs, 10 shards); K = 10 is ours. Each z_k column is divided by its
    mean over the training pairs (``scales``, applied to the held-out pairs too) so that the
    features are O(1): this only reparametrises γ_k as γ_k·scale_k.
    """
    train_labels = np.asarray(data.train_labels)
    classes = np.unique(train_labels)
    n_shards = validation.integer("n_shards", n_shards, minimum=1)
    if n_shards > classes.size // 2:
        raise validation.InvalidParameter(
            "n_shards", n_shards, f"must be at most {classes.size // 2}: each shard needs two"
            f" classes of its own to form dissimilar pairs, and the data has {classes.size}"
            " classes")
    counts = {}
    for field, value in (("n_similar", n_similar), ("n_dissimilar", n_dissimilar)):
        counts[field] = validation.integer(field, value, minimum=n_shards)
        if counts[field] % n_shards:
            raise validation.InvalidParameter(field, value,
                                              f"must be a multiple of n_shards ({n_shards})")
    n_test_pairs = validation.integer("n_test_pairs", n_test_pairs, minimum=2)
    if n_test_pairs % 2:
        raise validation.InvalidParameter("n_test_pairs", n_test_pairs,
                                          "must be even: half similar, half dissimilar")
    directions = principal_directions(data.train_features, n_components)
    groups = np.array_split(rng.permutation(classes), n_shards)
    points = np.concatenate([
        _draw_pairs(rng, train_labels, group, counts[field] // n_shards, field == "n_similar")
        for group in groups for field in ("n_similar", "n_dissimilar")])
    labels = np.tile(np.repeat([1.0, -1.0], [counts["n_similar"] // n_shards,
                                             counts["n_dissimilar"] // n_shards]), n_shards)
    test_labels = np.asarray(data.test_labels)
    test_classes = np.unique(test_labels)
    test_points = np.concatenate([_draw_pairs(rng, test_labels, test_classes, n_test_pairs // 2,
                                              similar) for similar in (True, False)])
    z = _squared_projections(data.train_features, points, directions)
    scales = z.mean(axis=0)
    if not np.all(scales > 0):
        raise validation.InvalidParameter("n_components", n_components,
                                          "a direction has no variation over the pairs")
    test_z = _squared_projections(data.test_features, test_points, directions)
    per_shard = labels.size // n_shards
    return MetricPairs(
        _design(z, scales), labels,
        Sharding(tuple(np.arange(s * per_shard, (s + 1) * per_shard) for s in range(n_shards)),
                 labels.size),
        _design(test_z, scales), np.repeat([1.0, -1.0], n_test_pairs // 2),
        tuple(tuple(group.tolist()) for group in groups), points, test_points,
        train_labels[points],
        directions, scales,
        source=f"metric-learning pairs of {data.source}: {n_shards} class-disjoint shards,"
               f" K = {n_components}")


def _draw_pairs(rng, labels, classes, n_pairs: int, similar: bool) -> np.ndarray:
    """(n_pairs, 2) point indices: two distinct points of one class of ``classes`` (similar)
    or a point of each of two distinct classes, the classes uniform."""
    members = [np.flatnonzero(labels == c) for c in classes]
    sizes = np.array([m.size for m in members])
    if similar and sizes.min() < 2 or sizes.size < 2:
        raise validation.InvalidParameter(
            "data", "classes", "needs two classes, each of two points or more, to form pairs")
    first = rng.integers(len(classes), size=n_pairs)
    second = first if similar else (first + rng.integers(1, len(classes), n_pairs)) % sizes.size
    a = rng.integers(sizes[first])
    b = rng.integers(sizes[second] - similar)
    b += similar & (b >= a)  # a distinct second point of the same class
    pool, starts = np.concatenate(members), np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return np.stack([pool[starts[first] + a], pool[starts[second] + b]], axis=1)


def _squared_projections(features, points: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """z_k = (v_kᵀ(x_i - x_j))² for each pair (i, j) of ``points``, shape (n_pairs, K)."""
    features = features.toarray() if sparse.issparse(features) else np.asarray(features, float)
    return ((features[points[:, 0]] - features[points[:, 1]]) @ directions) ** 2


def _design(z: np.ndarray, scales: np.ndarray) -> np.ndarray:
    return np.column_stack([-z / scales, np.ones(len(z))])


def load_labelled_csv(path, label_column: int = 0,
                      delimiter: str | None = ",") -> tuple[np.ndarray, np.ndarray]:
    """Features (N, p) and labels of a labelled text file, one example a line, the label in
    ``label_column`` (e.g. isolet for seed 002 §5.2); blank lines and lines starting with '#'
    are skipped. Labels are integers when all are, else floats, else strings. A malformed line
    is refused naming the file and its line number."""
    path = Path(path)
    if not path.is_file():
        raise validation.InvalidParameter("data_source", str(path), "no such file")
    label_column = validation.integer("label_column", label_column)
    rows, labels, width = [], [], None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        tokens = [token.strip() for token in line.split(delimiter)]
        if width is None and not -len(tokens) <= label_column < len(tokens):
            raise validation.InvalidParameter("label_column", label_column,
                                              f"{path.name} has {len(tokens)} columns")
        width = width or len(tokens)
        if len(tokens) != width:
            raise validation.InvalidParameter(
                "data_source", str(path),
                f"line {number} of {path.name}: expected {width} columns, found {len(tokens)}")
        labels.append(tokens.pop(label_column))
        try:
            rows.append([float(token) for token in tokens])
        except ValueError:
            bad = next(t for t in tokens if not _is_number(t))
            raise validation.InvalidParameter(
                "data_source", str(path),
                f"line {number} of {path.name}: {bad!r} is not a number") from None
    if not rows:
        raise validation.InvalidParameter("data_source", str(path), "holds no data lines")
    labels = np.array(labels)
    if all(_is_number(label) for label in labels):
        labels = labels.astype(float)
        labels = labels.astype(np.int64) if np.all(labels == np.round(labels)) else labels
    return np.array(rows), labels


def labelled_file(path, test_fraction: float = 0.2, label_column: int = 0,
                  delimiter: str | None = ",") -> ClassificationData:
    """:func:`load_labelled_csv` split per class as :mod:`workbench.data.digits` splits: the
    last round(test_fraction · N_c) examples of each class in file order are held out."""
    test_fraction = validation.probability("test_fraction", test_fraction)
    if not 0.0 < test_fraction < 1.0:
        raise validation.InvalidParameter("test_fraction", test_fraction,
                                          "must lie strictly between 0 and 1")
    features, labels = load_labelled_csv(path, label_column, delimiter)
    held_out = np.zeros(labels.size, dtype=bool)
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        n_test = max(1, min(members.size - 1, round(test_fraction * members.size)))
        held_out[members[members.size - n_test:]] = True
    return ClassificationData(features[~held_out], labels[~held_out], features[held_out],
                              labels[held_out],
                              source=f"labelled file {path}, test fraction {test_fraction}")


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True
