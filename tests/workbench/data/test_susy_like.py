"""SUSY-shaped synthetic data (seed 002 §5.3): shapes, the exact Bayes posterior, the MLP that
fits it, and the SUSY.csv reader on small fixture files written here (never a download)."""

import gzip

import numpy as np
import pytest
from scipy.special import expit, log_expit

from simulators.validation import InvalidParameter
from workbench.data.susy_like import (
    N_FEATURES,
    bayes_average_log_likelihood,
    bayes_log_odds,
    load_susy_csv,
    susy_like,
)
from workbench.models.mlp import MultilayerPerceptron

Z = 4.0  # Monte Carlo tolerances are Z standard errors


def test_shapes_balance_and_seeding():
    n = 20_000
    features, labels = susy_like(np.random.default_rng(5), n)
    assert features.shape == (n, N_FEATURES) == (n, 18) and labels.shape == (n,)
    assert labels.dtype == np.int64 and set(np.unique(labels)) == {0, 1}
    assert abs(labels.mean() - 0.5) <= Z * np.sqrt(0.25 / n)
    again, again_labels = susy_like(np.random.default_rng(5), n)
    np.testing.assert_array_equal(again, features)
    np.testing.assert_array_equal(again_labels, labels)
    skewed = susy_like(np.random.default_rng(5), n, positive_fraction=0.2)[1].mean()
    assert abs(skewed - 0.2) <= Z * np.sqrt(0.2 * 0.8 / n)


def test_high_level_features_are_functions_of_the_low_level_ones():
    features, _ = susy_like(np.random.default_rng(5), 50)
    x = features[:, :8]
    np.testing.assert_allclose(features[:, 8], x[:, 0] * x[:, 1])
    np.testing.assert_allclose(features[:, 17], x[:, 5] * x[:, 6] * x[:, 7])


def _calibration_misses(log_odds, labels, n_bins=10):
    """Bins (by predicted probability) whose positive fraction is off by more than Z s.e."""
    predicted = expit(log_odds)
    bins = np.minimum((predicted * n_bins).astype(int), n_bins - 1)
    misses = []
    for k in range(n_bins):
        inside = bins == k
        expected = predicted[inside].mean()
        error = np.sqrt(expected * (1 - expected) / inside.sum())
        if abs(labels[inside].mean() - expected) > Z * error:
            misses.append(k)
    return misses


@pytest.mark.parametrize("positive_fraction", [0.5, 0.3])
def test_bayes_log_odds_are_calibrated(positive_fraction):
    features, labels = susy_like(np.random.default_rng(5), 100_000, positive_fraction)
    log_odds = bayes_log_odds(features, positive_fraction)
    assert _calibration_misses(log_odds, labels) == []
    assert _calibration_misses(0.5 * log_odds, labels) != []  # negative control


def test_bayes_average_log_likelihood_is_the_mean_log_posterior():
    features, labels = susy_like(np.random.default_rng(5), 20_000)
    log_odds = bayes_log_odds(features)
    by_hand = np.mean(np.where(labels == 1, log_expit(log_odds), log_expit(-log_odds)))
    best = bayes_average_log_likelihood(features, labels)
    assert best == pytest.approx(by_hand, rel=1e-12)
    assert np.log(0.5) + 0.2 < best < 0  # well above the constant predictor's log 0.5
    assert best == pytest.approx(-0.429, abs=0.01)  # E log σ(2s² + 2sZ), module docstring
    with pytest.raises(InvalidParameter, match="labels"):
        bayes_average_log_likelihood(features, labels + 1)


def test_the_seed_002_mlp_fits_this_shape():
    rng = np.random.default_rng(5)
    features, labels = susy_like(rng, 200)
    model = MultilayerPerceptron(features=features, labels=labels, hidden_sizes=(18, 18, 8),
                                 n_classes=2, prior_scale=1.0)
    assert model.dim == (18 + 1) * 18 + (18 + 1) * 18 + (18 + 1) * 8 + (8 + 1) * 2
    theta = model.initial_position(rng, (2,))
    gradient = model.potential_gradient(theta)
    assert gradient.shape == (2, model.dim)
    step, basis = 1e-5, np.eye(model.dim)
    numeric = np.stack([(model.potential(theta + step * basis[j])
                         - model.potential(theta - step * basis[j])) / (2 * step)
                        for j in range(model.dim)], axis=-1)
    # atol for the components that are exactly 0 (weights into ReLUs dead on all 200 rows)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-5)


def test_the_mlp_refuses_held_out_rows_with_another_feature_count():
    features, labels = susy_like(np.random.default_rng(5), 50)
    with pytest.raises(InvalidParameter, match=r"test_features.*\(50, 17\).*\(18,\)"):
        MultilayerPerceptron(features=features, labels=labels, hidden_sizes=(18, 18, 8),
                             n_classes=2, test_features=features[:, :17], test_labels=labels)


def _row(label, start):
    return ",".join([label] + [f"{start + k / 10:.6e}" for k in range(18)])


ROWS = [_row("1.000000000000000000e+00", 0), _row("0.000000000000000000e+00", 1),
        _row("1.0", 2), _row("0.0", 3), _row("0.0", 4)]


def test_reads_a_susy_csv_fixture(tmp_path):
    path = tmp_path / "SUSY.csv"
    path.write_text("\n".join(ROWS) + "\n")
    features, labels = load_susy_csv(path)
    assert features.shape == (5, 18) and labels.dtype == np.int64
    np.testing.assert_array_equal(labels, [1, 0, 1, 0, 0])
    np.testing.assert_allclose(features[2], 2 + np.arange(18) / 10)
    first, first_labels = load_susy_csv(path, n_rows=2)
    np.testing.assert_array_equal(first, features[:2])
    np.testing.assert_array_equal(first_labels, [1, 0])
    packed = tmp_path / "SUSY.csv.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    np.testing.assert_array_equal(load_susy_csv(packed)[0], features)


def test_malformed_susy_lines_are_refused_with_their_number(tmp_path):
    path = tmp_path / "SUSY.csv"
    path.write_text("\n".join(ROWS[:2] + [ROWS[2].rsplit(",", 1)[0]] + ROWS[3:]))
    with pytest.raises(InvalidParameter,
                       match=r"data_source.*line 3 of SUSY.csv: expected 19 columns, found 18"):
        load_susy_csv(path)
    assert load_susy_csv(path, n_rows=2)[0].shape == (2, 18)  # stops before the bad line
    path.write_text("\n".join(ROWS[:3] + [ROWS[3].replace(",3.1", ",x3.1")]))
    with pytest.raises(InvalidParameter, match=r"line 4 of SUSY.csv: .*'x3\.100000e\+00'"):
        load_susy_csv(path)
    path.write_text("\n".join(ROWS[:1] + ["2.0" + ROWS[1][ROWS[1].index(","):]]))
    with pytest.raises(InvalidParameter, match=r"line 2 of SUSY.csv: the label must be 0 or 1"):
        load_susy_csv(path)
    path.write_text("\n".join(ROWS[:4] + [ROWS[4].replace(",4.200000e+00", ",nan")]))
    with pytest.raises(InvalidParameter, match=r"line 5 of SUSY.csv: values must be finite"):
        load_susy_csv(path)
    path.write_text("\n\n")
    with pytest.raises(InvalidParameter, match="data_source.*no data lines"):
        load_susy_csv(path)
    with pytest.raises(InvalidParameter, match="data_source.*no such file"):
        load_susy_csv(tmp_path / "absent.csv")
