"""A classification data set split into training and held-out examples.

Every loader and generator in :mod:`workbench.data` returns one, so a model is built the same
way whatever the source: ``Model(data.train_features, data.train_labels, ...,
test_features=data.test_features, test_labels=data.test_labels)``. Features are a dense
``(N, p)`` array or a SciPy CSR matrix (LIBSVM files, a9a-shaped data); labels a 1-d array.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simulators import validation


@dataclass(frozen=True, eq=False)
class ClassificationData:
    """Training and held-out features and labels, and where they came from."""

    train_features: Any
    train_labels: np.ndarray
    test_features: Any
    test_labels: np.ndarray
    source: str

    def __post_init__(self) -> None:
        for split in ("train", "test"):
            features = getattr(self, f"{split}_features")
            labels = np.asarray(getattr(self, f"{split}_labels"))
            if len(features.shape) != 2:
                raise validation.InvalidParameter(f"{split}_features", features.shape,
                                                  "must be an (N, p) array")
            if labels.shape != (features.shape[0],):
                raise validation.InvalidParameter(
                    f"{split}_labels", labels.shape,
                    f"must hold one label per row: shape ({features.shape[0]},)")
            object.__setattr__(self, f"{split}_labels", labels)
        if self.train_features.shape[1] != self.test_features.shape[1]:
            raise validation.InvalidParameter(
                "test_features", self.test_features.shape,
                f"must have the training set's {self.train_features.shape[1]} features")

    @property
    def n_train(self) -> int:
        return int(self.train_features.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.test_features.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.train_features.shape[1])
