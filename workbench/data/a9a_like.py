"""Synthetic data shaped like a9a (seed 001 §5.1), generated from a known weight vector.

a9a binarises the 14 fields of the UCI Adult census records (age, work class, education, ...)
into 123 binary features, one active per present field: about 14 non-zeros a row (13.9 on
average), 32,561 training and 16,281 test rows, labels ±1. The generator keeps that shape:

- the ``n_features`` columns are split into ``n_fields`` consecutive fields of near-equal size;
  each field has its own category frequencies (Dirichlet(1)), so some features are rare as in
  a9a; a row takes one category per field, and a field is missing with probability
  ``missing`` (so ``n_fields · (1 - missing)`` active features a row on average);
- weights w ~ N(0, ``weight_scale``² I) and labels s = ±1 with p(s = +1 | x) = σ(xᵀw), the
  logistic link of :mod:`workbench.models.logistic`, so the model is well specified and the
  posterior concentrates near w as N grows.

Everything is drawn from the Generator passed in: the same seed gives the same data.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.special import expit

from simulators import validation
from workbench.data.dataset import ClassificationData

A9A_TRAIN = 32_561
A9A_TEST = 16_281
A9A_FEATURES = 123
A9A_FIELDS = 14


def a9a_like(rng: np.random.Generator, n_train: int = A9A_TRAIN, n_test: int = A9A_TEST,
             n_features: int = A9A_FEATURES, n_fields: int = A9A_FIELDS,
             missing: float = 0.01,
             weight_scale: float = 0.5) -> tuple[ClassificationData, np.ndarray]:
    """Sparse binary data of a9a's shape and the weight vector w that labelled it."""
    n_train = validation.integer("n_train", n_train, minimum=1)
    n_test = validation.integer("n_test", n_test, minimum=1)
    n_features = validation.integer("n_features", n_features, minimum=1)
    n_fields = validation.integer("n_fields", n_fields, minimum=1)
    if n_fields > n_features:
        raise validation.InvalidParameter("n_fields", n_fields,
                                          f"must be <= n_features = {n_features}")
    missing = validation.probability("missing", missing)
    weight_scale = validation.positive("weight_scale", weight_scale)

    fields = np.array_split(np.arange(n_features), n_fields)
    frequencies = [rng.dirichlet(np.ones(field.size)) for field in fields]
    weights = weight_scale * rng.standard_normal(n_features)

    def draw(n_rows: int):
        chosen = np.stack([rng.choice(field, size=n_rows, p=p)
                           for field, p in zip(fields, frequencies, strict=True)], axis=1)
        present = rng.random((n_rows, n_fields)) >= missing
        counts = present.sum(axis=1)
        indptr = np.concatenate(([0], np.cumsum(counts)))
        design = sparse.csr_matrix((np.ones(indptr[-1]), chosen[present], indptr),
                                   shape=(n_rows, n_features))
        positive = rng.random(n_rows) < expit(design @ weights)
        return design, np.where(positive, 1, -1)

    train_features, train_labels = draw(n_train)
    test_features, test_labels = draw(n_test)
    data = ClassificationData(train_features, train_labels, test_features, test_labels,
                              source=f"a9a-shaped synthetic data ({n_train} + {n_test} rows, "
                                     f"{n_features} features in {n_fields} fields)")
    return data, weights
