"""Seed 002 §5.2's metric-learning pairs on the bundled digits (class-disjoint shards, the
logistic-regression design, refusals) and the labelled-file loader on fixtures written here."""

import numpy as np
import pytest
from scipy.special import expit

from simulators.validation import InvalidParameter
from workbench.data.digits import digits
from workbench.data.metric_pairs import (
    labelled_file,
    load_labelled_csv,
    metric_pairs,
    principal_directions,
)
from workbench.models.logistic import LogisticRegression

SIMILAR, DISSIMILAR, SHARDS, TEST_PAIRS, K = 400, 600, 5, 200, 10
CSV = """# label, two features
0, 1.0, 2.0
1, 3.0, 4.0

2, 5.0, 6.0
0, 1.5, 2.5
1, 3.5, 4.5
2, 5.5, 6.5
"""


@pytest.fixture(scope="module")
def data():
    return digits()


@pytest.fixture(scope="module")
def pairs(data):
    return metric_pairs(np.random.default_rng(3), data, SIMILAR, DISSIMILAR, SHARDS, TEST_PAIRS,
                        K)


def shared_classes(pair_classes, shards):
    """The shard pairs (s, t) whose rows' points share a class (empty when class-disjoint)."""
    seen = [set(pair_classes[rows].ravel().tolist()) for rows in shards]
    return [(s, t) for s in range(len(seen)) for t in range(s + 1, len(seen))
            if seen[s] & seen[t]]


def test_shards_are_class_disjoint_with_their_share_of_pairs(pairs, data):
    assert pairs.n_shards == SHARDS
    assert shared_classes(pairs.pair_classes, pairs.shards.shards) == []
    assert sorted(sum(pairs.shard_classes, ())) == list(range(10))
    for rows, classes in zip(pairs.shards.shards, pairs.shard_classes, strict=True):
        assert set(pairs.pair_classes[rows].ravel().tolist()) <= set(classes)
        assert (pairs.labels[rows] == 1).sum() == SIMILAR // SHARDS
        assert (pairs.labels[rows] == -1).sum() == DISSIMILAR // SHARDS
    np.testing.assert_array_equal(pairs.pair_classes, data.train_labels[pairs.points])
    same = pairs.pair_classes[:, 0] == pairs.pair_classes[:, 1]
    np.testing.assert_array_equal(same, pairs.labels == 1)
    assert np.all(pairs.points[:, 0] != pairs.points[:, 1])
    test_classes = data.test_labels[pairs.test_points]
    np.testing.assert_array_equal(test_classes[:, 0] == test_classes[:, 1], pairs.test_labels == 1)
    assert (pairs.test_labels == 1).sum() == (pairs.test_labels == -1).sum() == TEST_PAIRS // 2


def test_the_design_is_scaled_and_seeded(pairs, data):
    assert pairs.features.shape == (SIMILAR + DISSIMILAR, K + 1)
    assert pairs.test_features.shape == (TEST_PAIRS, K + 1)
    np.testing.assert_allclose(pairs.features.mean(axis=0), [-1.0] * K + [1.0])
    assert np.all(pairs.test_features[:, -1] == 1) and np.all(pairs.test_features[:, :K] <= 0)
    again = metric_pairs(np.random.default_rng(3), data, SIMILAR, DISSIMILAR, SHARDS,
                         TEST_PAIRS, K)
    np.testing.assert_array_equal(again.features, pairs.features)
    directions = principal_directions(data.train_features, K)
    np.testing.assert_allclose(directions.T @ directions, np.eye(K), atol=1e-12)
    assert np.all(directions[np.argmax(np.abs(directions), axis=0), np.arange(K)] > 0)


def test_the_logistic_gradient_matches_finite_differences_of_the_potential(pairs):
    model = LogisticRegression(pairs.features, pairs.labels, prior_scale=1.0,
                               test_features=pairs.test_features, test_labels=pairs.test_labels)
    gradient = model.minibatch_gradient()
    everything = gradient.prepare(np.tile(np.arange(model.n_data), (3, 1)))
    theta = 0.3 * np.random.default_rng(3).standard_normal((3, K + 1))
    step = 1e-5 * np.eye(K + 1)
    differences = (model.potential(theta[:, None, :] + step)
                   - model.potential(theta[:, None, :] - step)) / 2e-5
    estimate = gradient(theta, everything)
    np.testing.assert_allclose(estimate, differences, rtol=1e-6,
                               atol=1e-6 * np.abs(differences).max())


def test_p_similar_is_the_metric_model_of_yang_et_al(pairs, data):
    """σ(μ - ‖x_i - x_j‖²_A) with A = Σ γ_k v_k v_kᵀ / scale_k is σ(wᵀθ) of the pair's row."""
    rng = np.random.default_rng(3)
    theta = np.append(rng.uniform(0.1, 2.0, K), rng.normal())
    metric = (pairs.directions * (theta[:K] / pairs.scales)) @ pairs.directions.T
    for row in (0, SIMILAR // SHARDS, len(pairs.labels) - 1):
        d = data.train_features[pairs.points[row, 0]] - data.train_features[pairs.points[row, 1]]
        np.testing.assert_allclose(expit(theta[K] - d @ metric @ d),
                                   expit(pairs.features[row] @ theta), rtol=1e-12)


def test_overlapping_shards_are_caught(pairs):
    """Negative control: two shards made by hand from one shard's class group share classes."""
    rows = pairs.shards.shards[0]
    halves = (rows[: rows.size // 2], rows[rows.size // 2:])
    assert shared_classes(pairs.pair_classes, halves) == [(0, 1)]


def test_refusals_name_the_limit(data):
    rng = np.random.default_rng(3)
    with pytest.raises(InvalidParameter, match=r"n_shards.*at most 5.*10 classes"):
        metric_pairs(rng, data, 600, 600, 6, 100, K)
    with pytest.raises(InvalidParameter, match=r"n_components.*feature count \(64\)"):
        metric_pairs(rng, data, 500, 500, 5, 100, 65)
    with pytest.raises(InvalidParameter, match=r"n_test_pairs.*even"):
        metric_pairs(rng, data, 500, 500, 5, 101, K)
    with pytest.raises(InvalidParameter, match=r"n_similar.*multiple of n_shards \(5\)"):
        metric_pairs(rng, data, 502, 500, 5, 100, K)
    with pytest.raises(InvalidParameter, match=r"n_dissimilar.*integer >= 5"):
        metric_pairs(rng, data, 500, 0, 5, 100, K)


def test_labelled_csv_skips_comments_and_blank_lines(tmp_path):
    path = tmp_path / "toy.csv"
    path.write_text(CSV)
    features, labels = load_labelled_csv(path)
    np.testing.assert_array_equal(features, [[1, 2], [3, 4], [5, 6], [1.5, 2.5], [3.5, 4.5],
                                             [5.5, 6.5]])
    assert labels.dtype == np.int64 and labels.tolist() == [0, 1, 2, 0, 1, 2]
    split = labelled_file(path, test_fraction=0.5)
    np.testing.assert_array_equal(split.test_features, features[3:])
    np.testing.assert_array_equal(split.train_labels, [0, 1, 2])
    _, last = load_labelled_csv(path, label_column=-1)
    np.testing.assert_array_equal(last, [2.0, 4.0, 6.0, 2.5, 4.5, 6.5])


def test_a_malformed_line_is_refused_with_its_number(tmp_path):
    path = tmp_path / "toy.csv"
    path.write_text(CSV + "1, 3.0\n")
    with pytest.raises(InvalidParameter,
                       match=r"data_source.*line 9 of toy.csv: expected 3 columns, found 2"):
        load_labelled_csv(path)
    path.write_text(CSV.replace("3.5", "x"))
    with pytest.raises(InvalidParameter, match=r"line 7 of toy.csv: 'x' is not a number"):
        load_labelled_csv(path)
    with pytest.raises(InvalidParameter, match=r"label_column.*3 columns"):
        load_labelled_csv(path, label_column=3)
