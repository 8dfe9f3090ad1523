"""The LIBSVM loader on small fixture files written here (never a download)."""

import numpy as np
import pytest

from simulators.validation import InvalidParameter
from workbench.data.libsvm import first_bad_line, load_libsvm_pair

TRAIN = """# a comment line
+1 1:1 3:1 5:0.5
-1 2:1 6:1  # trailing comment

+1 qid:3 4:2
"""
TEST = "-1 1:1\n+1 2:1 5:1\n"


@pytest.fixture
def pair(tmp_path):
    train, test = tmp_path / "toy", tmp_path / "toy.t"
    train.write_text(TRAIN)
    test.write_text(TEST)
    return train, test


def test_reads_a_pair_with_the_training_feature_count(pair):
    data = load_libsvm_pair(*pair)
    assert (data.n_train, data.n_test, data.n_features) == (3, 2, 6)
    np.testing.assert_array_equal(data.train_features.toarray(),
                                  [[1, 0, 1, 0, 0.5, 0], [0, 1, 0, 0, 0, 1], [0, 0, 0, 2, 0, 0]])
    np.testing.assert_array_equal(data.test_features.toarray(),
                                  [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 1, 0]])
    assert data.train_labels.dtype == np.int64
    np.testing.assert_array_equal(data.train_labels, [1, -1, 1])
    assert load_libsvm_pair(*pair, n_features=8).n_features == 8
    assert load_libsvm_pair(pair[0]).n_test == 2  # toy.t beside toy


def test_a_missing_path_is_refused(pair, tmp_path):
    with pytest.raises(InvalidParameter, match="train_path.*no such file"):
        load_libsvm_pair(tmp_path / "absent", pair[1])
    with pytest.raises(InvalidParameter, match="test_path.*no such file"):
        load_libsvm_pair(pair[0], tmp_path / "absent.t")


def test_a_malformed_line_is_refused_with_its_number(pair):
    train, test = pair
    train.write_text(TRAIN + "-1 2:1 x7:1\n")
    with pytest.raises(InvalidParameter, match=r"train_path.*line 6: 'x7:1' is not index:value"):
        load_libsvm_pair(train, test)
    train.write_text("+1 1:1\nyes 2:1\n")
    with pytest.raises(InvalidParameter, match=r"line 2: label 'yes'"):
        load_libsvm_pair(train, test)
    train.write_text("+1 3:1 2:1\n")
    with pytest.raises(InvalidParameter, match=r"line 1: feature indices must increase"):
        load_libsvm_pair(train, test)


def test_a_test_file_with_more_features_is_refused(pair):
    train, test = pair
    test.write_text(TEST + "+1 9:1\n")
    with pytest.raises(InvalidParameter,
                       match=r"test_path.*line 3: feature index 9 > 6 features.*training file"):
        load_libsvm_pair(train, test)
    with pytest.raises(InvalidParameter, match=r"train_path.*line 3: feature index 6 > 5"):
        load_libsvm_pair(train, test, n_features=5)


def test_first_bad_line_accepts_a_valid_file(pair):
    assert first_bad_line(pair[0]) is None
    assert first_bad_line(pair[0], n_features=4)[0] == 2
