"""What every classifier model shares: label checks, held-out sets and test functions.

Training and held-out examples are read by each model (a design matrix, images; signs or
class indices) and checked here the same way for all (:func:`labelled_examples`): one label
per example, a held-out set given whole or not at all, held-out examples shaped like the
training ones.

Held-out test functions (seed 001 §5.1-§5.2: the logistic loss on a9a's test set, the test
loss of the networks) score one parameter vector θ on the held-out examples (x_j, y_j):

    log_loss(θ) = -(1/M) Σ_j log p(y_j | x_j, θ),
    accuracy(θ) = (1/M) Σ_j [argmax_k p(k | x_j, θ) = y_j].

The engine averages them over samples, φ̂_L = (1/L) Σ_l φ(θ_l): the posterior expectation of
the per-sample loss (the quantity seed 001's Figures 2-4 plot), not the loss of the averaged
predictive distribution. That one, the Bayesian model average seed 003 scores (Appendix C:
test error and NLL of the samples' averaged prediction), is :func:`averaged_prediction_scores`
of p̄(k | x_j) = (1/L) Σ_l p(k | x_j, θ_l):

    averaged_log_loss = -(1/M) Σ_j log p̄(y_j | x_j),
    averaged_error    = (1/M) Σ_j [argmax_k p̄(k | x_j) ≠ y_j].

By Jensen's inequality averaged_log_loss ≤ E φ̂_L(log_loss) for the same draws.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from simulators import validation
from workbench.core.phi import TestFunction
from workbench.models.per_example import over_positions

Reader = Callable[[str, Any], Any]  # (field, value) -> validated value


def class_indices(field: str, labels, n_classes: int) -> np.ndarray:
    """Integer labels in ``{0, ..., n_classes - 1}`` as int64; anything else names the field."""
    values = np.asarray(labels)
    if values.ndim != 1 or values.size == 0:
        raise validation.InvalidParameter(field, values.shape, "must be a non-empty 1-d array")
    if not np.issubdtype(values.dtype, np.number) or np.any(~np.isfinite(values)):
        raise validation.InvalidParameter(field, values.dtype, "must be finite numbers")
    outside = np.unique(values[(values != np.round(values)) | (values < 0)
                               | (values >= n_classes)])
    if outside.size:
        raise validation.InvalidParameter(
            field, outside[:5].tolist(),
            f"labels must be integers in {{0, ..., {n_classes - 1}}} (n_classes = {n_classes})")
    return values.astype(np.int64)


def binary_signs(field: str, labels) -> np.ndarray:
    """Binary labels in {0, 1} (booleans too) or {-1, +1} as signs s = ±1 (float)."""
    values = np.asarray(labels)
    if values.dtype == bool:
        values = values.astype(np.int64)
    if values.ndim != 1 or values.size == 0:
        raise validation.InvalidParameter(field, values.shape, "must be a non-empty 1-d array")
    if not np.issubdtype(values.dtype, np.number):
        raise validation.InvalidParameter(field, values.dtype, "must be numbers")
    present = set(np.unique(values).tolist())
    if present <= {0, 1}:
        return np.where(values == 1, 1.0, -1.0)
    if present <= {-1, 1}:
        return values.astype(float)
    raise validation.InvalidParameter(field, sorted(present)[:5],
                                      "binary labels must all be in {0, 1} or all in {-1, +1}")


def held_out_test_functions(log_probabilities: Callable[[np.ndarray], np.ndarray],
                            labels: np.ndarray, dim: int,
                            cost_per_position: int) -> tuple[TestFunction, TestFunction]:
    """``log_loss`` and ``accuracy`` (module docstring), each ``(..., d) -> (..., 1)``.

    log_probabilities: ``(B, d) -> (B, M, K)``, log p(k | x_j, θ_b) on the held-out set.
    labels: ``(M,)`` class indices. cost_per_position: elements of the largest intermediate
    per position, to bound memory (:func:`workbench.models.per_example.over_positions`).
    """
    labels = np.asarray(labels, dtype=np.int64)
    columns = np.arange(labels.size)

    def log_loss(theta: np.ndarray) -> np.ndarray:
        def block(rows):
            return -log_probabilities(rows)[:, columns, labels].mean(axis=1, keepdims=True)
        return over_positions(block, theta, dim, cost_per_position)

    def accuracy(theta: np.ndarray) -> np.ndarray:
        def block(rows):
            predicted = log_probabilities(rows).argmax(axis=-1)
            return (predicted == labels).mean(axis=1, keepdims=True)
        return over_positions(block, theta, dim, cost_per_position)

    return TestFunction("log_loss", log_loss), TestFunction("accuracy", accuracy)


def averaged_prediction_scores(mean_probabilities: np.ndarray,
                               labels: np.ndarray) -> dict[str, np.ndarray]:
    """``averaged_log_loss`` and ``averaged_error`` (module docstring) of the averaged
    predictive probabilities ``(..., M, K)`` against the held-out class indices ``(M,)``,
    each ``(...)``."""
    labels = np.asarray(labels, dtype=np.int64)
    true = np.take_along_axis(mean_probabilities,
                              np.broadcast_to(labels[:, None],
                                              mean_probabilities.shape[:-1] + (1,)),
                              axis=-1)[..., 0]
    with np.errstate(divide="ignore"):
        log_loss = -np.log(true).mean(axis=-1)
    error = (mean_probabilities.argmax(axis=-1) != labels).mean(axis=-1)
    return {"averaged_log_loss": log_loss, "averaged_error": error}


def _one_label_each(field: str, labels, examples) -> None:
    if labels.shape[0] != examples.shape[0]:
        raise validation.InvalidParameter(field, labels.shape[0],
                                          f"must have one label per example ({examples.shape[0]})")


def labelled_examples(read_inputs: Reader, read_labels: Reader, features, labels,
                      test_features, test_labels) -> tuple[Any, Any, Any, Any]:
    """``(features, labels, test_features, test_labels)`` read and checked (module
    docstring); the held-out pair is ``(None, None)`` when not given."""
    features = read_inputs("features", features)
    labels = read_labels("labels", labels)
    _one_label_each("labels", labels, features)
    if (test_features is None) != (test_labels is None):
        missing = "test_labels" if test_labels is None else "test_features"
        raise validation.InvalidParameter(missing, None,
                                          "test_features and test_labels go together")
    if test_features is None:
        return features, labels, None, None
    test = read_inputs("test_features", test_features)
    if test.shape[1:] != features.shape[1:]:
        raise validation.InvalidParameter(
            "test_features", test.shape,
            f"must have examples of shape {features.shape[1:]}, like the training set")
    test_labels = read_labels("test_labels", test_labels)
    _one_label_each("test_labels", test_labels, test)
    return features, labels, test, test_labels
