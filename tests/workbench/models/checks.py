"""Shared gradient checks: central finite differences and the engine's estimator contract."""

from __future__ import annotations

import dataclasses

import numpy as np


def finite_difference_gradient(potential, theta: np.ndarray, coordinates=None,
                               step: float = 1e-5) -> np.ndarray:
    """Central differences of ``potential`` at positions ``theta`` ``(B, d)``."""
    theta = np.asarray(theta, dtype=float)
    coordinates = range(theta.shape[-1]) if coordinates is None else coordinates
    columns = []
    for j in coordinates:
        shift = np.zeros(theta.shape[-1])
        shift[j] = step
        columns.append((potential(theta + shift) - potential(theta - shift)) / (2 * step))
    return np.stack(columns, axis=-1)


def assert_gradient_matches(model, theta: np.ndarray, coordinates=None,
                            rtol: float = 1e-5) -> None:
    """∇U against central differences of U (on ``coordinates`` only, when given)."""
    analytic = model.potential_gradient(theta)
    if coordinates is not None:
        analytic = analytic[..., list(coordinates)]
    numeric = finite_difference_gradient(model.potential, theta, coordinates)
    np.testing.assert_allclose(analytic, numeric, rtol=rtol,
                               atol=rtol * max(1.0, float(np.abs(numeric).max())))


def assert_estimator_matches(model, theta: np.ndarray, rows: np.ndarray) -> None:
    """The engine's estimator against θ/σ₀² + (N/n)(∇U_B(θ) - θ/σ₀²), replicate by replicate.

    U_B is the potential of the same model on the batch's rows alone (repeats included), whose
    ∇U_B is itself checked against finite differences.
    """
    estimator = model.minibatch_gradient()
    got = estimator(theta, estimator.prepare(rows))
    flat_theta, flat_rows = theta.reshape(-1, model.dim), rows.reshape(-1, rows.shape[-1])
    expected = []
    for position, batch in zip(flat_theta, flat_rows, strict=True):
        sub = dataclasses.replace(model, features=model.features[batch],
                                  labels=model.labels[batch], test_features=None,
                                  test_labels=None)
        prior = position / model.prior_scale**2
        scale = model.n_data / batch.size
        expected.append(prior + scale * (sub.potential_gradient(position) - prior))
    np.testing.assert_allclose(got, np.reshape(expected, theta.shape), rtol=1e-9, atol=1e-9)


def scores_positionwise(gradient, theta: np.ndarray) -> bool:
    """Whether ``gradient`` gives every position of ``theta`` ``(B, d)`` the same bits alone,
    inside the whole batch, in blocks of 7 and as a ``(2, B/2, d)`` stack (what a model's
    ``positionwise_gradient`` promises, :mod:`workbench.models.protocol`)."""
    whole = gradient(theta)
    alone = np.concatenate([gradient(theta[i:i + 1]) for i in range(len(theta))])
    sevens = np.concatenate([gradient(theta[i:i + 7]) for i in range(0, len(theta), 7)])
    stacked = gradient(theta.reshape(2, -1, theta.shape[-1])).reshape(theta.shape)
    return all(np.array_equal(whole.view(np.int64), other.view(np.int64))
               for other in (alone, sevens, stacked))
