"""scikit-learn's bundled handwritten digits (8×8 images, 10 classes), split deterministically.

The networks of seed 001 §5.2 are trained on MNIST (28×28); the workbench uses the 1,797 8×8
digits that scikit-learn ships with its wheel (``load_digits`` reads a file inside the package,
never the network) so the experiments run anywhere. Pixels (0-16) are scaled to [0, 1].

Split: per class, the last ``round(test_fraction · N_c)`` images in file order are held out —
stratified, and the same on every machine without any random draw.
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

from simulators import validation
from workbench.data.dataset import ClassificationData

DIGITS_SHAPE = (8, 8)


def digits(test_fraction: float = 0.2) -> ClassificationData:
    """Flattened (N, 64) digits in [0, 1] with labels 0-9; reshape rows to 8×8 for the CNN."""
    test_fraction = validation.probability("test_fraction", test_fraction)
    if not 0.0 < test_fraction < 1.0:
        raise validation.InvalidParameter("test_fraction", test_fraction,
                                          "must lie strictly between 0 and 1")
    images, labels = load_digits(return_X_y=True)
    held_out = np.zeros(labels.size, dtype=bool)
    for digit in np.unique(labels):
        members = np.flatnonzero(labels == digit)
        n_test = max(1, min(members.size - 1, round(test_fraction * members.size)))
        held_out[members[members.size - n_test:]] = True
    features = images / 16.0
    return ClassificationData(features[~held_out], labels[~held_out], features[held_out],
                              labels[held_out],
                              source=f"scikit-learn digits, test fraction {test_fraction}")
