"""LIBSVM-format train/test pairs (e.g. a9a and a9a.t) through scikit-learn's svmlight reader.

Seed 001 §5.1 runs on a9a (32,561 training and 16,281 test rows, 123 binary features), which
the workbench never downloads: a user with the two files on disk passes their paths.

Format: one example a line, ``label index:value index:value ...`` with indices starting at 1
(LIBSVM's convention; read with ``zero_based=False``) and strictly increasing; ``#`` starts a
comment. The feature count of the pair is ``n_features`` when given, else the training file's
largest index. A test file may use fewer features (a9a.t's largest index is 122) but not more:
a feature the training file never shows has no meaning for the model, so the pair is refused.

Errors name the file and the line: scikit-learn's parser reports what is wrong but not where,
so on any parse error the file is scanned line by line (:func:`first_bad_line`) to find it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

from simulators import validation
from workbench.data.dataset import ClassificationData


def load_libsvm_pair(train_path, test_path=None,
                     n_features: int | None = None) -> ClassificationData:
    """Read a training and a test file in LIBSVM format (module docstring).

    ``test_path`` defaults to the training path with ``.t`` appended, LIBSVM's own naming
    (a9a and a9a.t), so one path names the pair.
    """
    if n_features is not None:
        n_features = validation.integer("n_features", n_features, minimum=1)
    train_path = Path(train_path)
    test_path = Path(f"{train_path}.t") if test_path is None else Path(test_path)
    train_features, train_labels = _read("train_path", train_path, n_features, None)
    count = train_features.shape[1]
    test_features, test_labels = _read("test_path", test_path, count, train_path)
    return ClassificationData(train_features, train_labels, test_features, test_labels,
                              source=f"LIBSVM files {train_path} and {test_path}")


def _read(field: str, path: Path, n_features: int | None, train_path: Path | None):
    if not path.is_file():
        raise validation.InvalidParameter(field, str(path), "no such file")
    try:
        features, labels = load_svmlight_file(str(path), n_features=n_features,
                                              zero_based=False)
    except ValueError as error:
        found = first_bad_line(path, n_features)
        if found is None:
            raise validation.InvalidParameter(field, str(path),
                                              f"cannot be read as LIBSVM: {error}") from error
        line, reason = found
        if train_path is not None and reason.startswith("feature index"):
            reason += f" (the feature count of the training file {train_path})"
        raise validation.InvalidParameter(field, str(path), f"line {line}: {reason}") from error
    if features.shape[0] == 0:
        raise validation.InvalidParameter(field, str(path), "holds no examples")
    if np.all(labels == np.round(labels)):
        labels = labels.astype(np.int64)
    return features, labels


def first_bad_line(path: Path, n_features: int | None = None) -> tuple[int, str] | None:
    """The first line (1-based) that is not valid LIBSVM, with the reason; None if all are."""
    with open(path, encoding="utf-8", errors="replace") as lines:
        for number, text in enumerate(lines, start=1):
            reason = _line_problem(text.split("#", 1)[0].split(), n_features)
            if reason is not None:
                return number, f"{reason}: {text.strip()[:80]!r}"
    return None


def _line_problem(tokens: list[str], n_features: int | None) -> str | None:
    if not tokens:
        return None
    if not _is_number(tokens[0]):
        return f"label {tokens[0]!r} is not a number"
    pairs = tokens[1:]
    if pairs and pairs[0].startswith("qid:"):
        pairs = pairs[1:]
    previous = 0
    for pair in pairs:
        index, colon, value = pair.partition(":")
        if not colon or not index.isdigit() or not _is_number(value):
            return f"{pair!r} is not index:value"
        index = int(index)
        if index < 1:
            return "feature index 0: LIBSVM indices start at 1"
        if index <= previous:
            return f"feature indices must increase ({previous} then {index})"
        if n_features is not None and index > n_features:
            return f"feature index {index} > {n_features} features"
        previous = index
    return None


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
