"""SUSY-shaped data from a known process, and a reader for the real UCI SUSY.csv.

Seed 002 §5.3 trains an 18-18-8 ReLU MLP with a 2-class softmax on SUSY (Baldi, Sadowski and
Whiteson 2014, "Searching for exotic particles in high-energy physics with deep learning",
Nature Communications): 5,000,000 rows of a label (1.0 signal, 0.0 background) and 18 features,
8 low-level kinematic ones followed by 10 high-level functions of them. The workbench never
downloads it, so :func:`susy_like` draws data of the same shape from a process whose Bayes
posterior is known exactly:

- y ~ Bernoulli(positive_fraction);
- x_low | y ~ N(±m, I_8) (+ for y = 1), with m = separation · u for the fixed unit vector
  u ∝ (8, 7, ..., 1), so earlier features matter more. The Bayes log-odds is
  log p(y=1|x)/p(y=0|x) = 2 mᵀx_low + log(p/(1−p)); at p = 0.5 the Bayes classifier
  sign(mᵀx_low) is right with probability Φ(separation), and ``SEPARATION`` = Φ⁻¹(0.8) makes
  that 0.800, SUSY's accuracy for good classifiers. The expected Bayes average
  log-likelihood is E log σ(2s² + 2sZ) = −0.429 per example, Z ~ N(0, 1), s = separation
  (log 0.5 = −0.693 for a constant guess); 200,000 draws from ``default_rng(0)`` give 0.800
  and −0.430;
- x_high: 10 deterministic functions of x_low (x1..x8), like SUSY's high-level features:
  x1·x2, x3·x4, x1² + x2², √(x3² + x4² + x5²), |x5 − x6|, |x7| + |x8|, x1 + x2,
  max(x3, x4, x5), tanh(x1 − x6), x6·x7·x8. The first six are even in x_low, so without
  x_low (even all six together) they say nothing about y: x_low ↦ −x_low swaps the classes
  when p = 0.5. The last four are informative. None adds anything to x_low: y depends on the
  data only through x_low.

Features are laid out as in SUSY.csv: x_low then x_high, 18 columns.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
from scipy.special import log_expit
from scipy.stats import norm

from simulators import validation

N_FEATURES = 18
N_LOW_LEVEL = 8
SEPARATION = float(norm.ppf(0.8))
_BLOCK = 100_000  # data lines parsed before they are packed into one float array
_DIRECTION = np.arange(N_LOW_LEVEL, 0, -1) / np.linalg.norm(np.arange(N_LOW_LEVEL, 0, -1))


def _high_level(x: np.ndarray) -> np.ndarray:
    """The 10 high-level features (module docstring) of low-level rows ``(n, 8)``."""
    x1, x2, x3, x4, x5, x6, x7, x8 = x.T
    return np.stack([x1 * x2, x3 * x4, x1**2 + x2**2, np.sqrt(x3**2 + x4**2 + x5**2),
                     np.abs(x5 - x6), np.abs(x7) + np.abs(x8), x1 + x2,
                     np.maximum(np.maximum(x3, x4), x5), np.tanh(x1 - x6), x6 * x7 * x8],
                    axis=1)


def _fraction(positive_fraction) -> float:
    value = validation.probability("positive_fraction", positive_fraction)
    if value in (0.0, 1.0):
        raise validation.InvalidParameter("positive_fraction", value, "must lie in (0, 1)")
    return value


def susy_like(rng: np.random.Generator, n: int, positive_fraction: float = 0.5,
              separation: float = SEPARATION) -> tuple[np.ndarray, np.ndarray]:
    """``n`` SUSY-shaped rows: features ``(n, 18)`` and labels ``(n,)`` in {0, 1}.

    The process of the module docstring, standing in for the SUSY data (Baldi et al. 2014) of
    seed 002 §5.3; ``positive_fraction`` is a shard's positive proportion (seed 002 draws it
    from Beta(a, a)). Everything is drawn from ``rng``: the same seed gives the same rows.
    """
    n = validation.integer("n", n, minimum=1)
    positive_fraction = _fraction(positive_fraction)
    separation = validation.non_negative("separation", separation)
    labels = (rng.random(n) < positive_fraction).astype(np.int64)
    low = (2 * labels[:, None] - 1) * (separation * _DIRECTION) + rng.standard_normal(
        (n, N_LOW_LEVEL))
    return np.concatenate([low, _high_level(low)], axis=1), labels


def bayes_log_odds(features, positive_fraction: float = 0.5,
                   separation: float = SEPARATION) -> np.ndarray:
    """The exact log p(y=1|x)/p(y=0|x) of :func:`susy_like`'s process, ``(n,)``.

    2 mᵀx_low + log(p/(1−p)): the Bayes-optimal classifier for the SUSY-shaped data of
    seed 002 §5.3, a function of the first 8 (low-level) columns only.
    """
    features = np.asarray(features, dtype=float)
    if features.ndim != 2 or features.shape[1] != N_FEATURES:
        raise validation.InvalidParameter("features", features.shape,
                                          f"must be an (n, {N_FEATURES}) array")
    p = _fraction(positive_fraction)
    mean = validation.non_negative("separation", separation) * _DIRECTION
    return 2 * features[:, :N_LOW_LEVEL] @ mean + np.log(p / (1 - p))


def bayes_average_log_likelihood(features, labels, positive_fraction: float = 0.5,
                                 separation: float = SEPARATION) -> float:
    """(1/n) Σ_i log p(y_i | x_i) under the true process: the best average held-out
    log-likelihood any model can reach in expectation, to set beside seed 002 §5.3's Table 1
    (test log-likelihoods of the MLP on SUSY)."""
    labels = np.asarray(labels)
    log_odds = bayes_log_odds(features, positive_fraction, separation)
    if labels.shape != log_odds.shape or not np.all((labels == 0) | (labels == 1)):
        raise validation.InvalidParameter("labels", labels.shape,
                                          "must be one label in {0, 1} per row of features")
    return float(np.mean(log_expit(np.where(labels == 1, log_odds, -log_odds))))


def load_susy_csv(path, n_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Read the UCI SUSY.csv of Baldi et al. (2014), the data of seed 002 §5.3.

    Comma-separated, no header, 19 columns a line: the label (1.0 or 0.0) then the 18
    features; a ``.gz`` path (UCI ships SUSY.csv.gz) is decompressed on the fly. Lines are
    read one at a time and the first ``n_rows`` data lines kept when given (the file has
    5,000,000); blank lines are skipped. Returns features ``(n, 18)`` and labels ``(n,)`` in
    {0, 1}. A malformed line is refused naming the file, its 1-based number and the fault.
    """
    path = Path(path)
    if n_rows is not None:
        n_rows = validation.integer("n_rows", n_rows, minimum=1)
    if not path.is_file():
        raise validation.InvalidParameter("data_source", str(path), "no such file")
    blocks, rows, count = [], [], 0  # rows parsed as floats, kept in blocks of _BLOCK
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as lines:
        for number, text in enumerate(lines, start=1):
            if count == n_rows:
                break
            if text.strip():
                rows.append(_parse_line(text, f"line {number} of {path.name}"))
                count += 1
            if len(rows) == _BLOCK:
                blocks.append(np.array(rows))
                rows = []
    if count == 0:
        raise validation.InvalidParameter("data_source", str(path), "holds no data lines")
    table = np.concatenate(blocks + [np.array(rows).reshape(-1, N_FEATURES + 1)])
    return table[:, 1:], table[:, 0].astype(np.int64)


def _parse_line(text: str, where: str) -> list[float]:
    """The 19 numbers of one data line; ``where`` ("line 3 of SUSY.csv") starts any error."""
    def refuse(fault: str):
        return validation.InvalidParameter("data_source", text.strip()[:80], f"{where}: {fault}")

    tokens = text.split(",")
    if len(tokens) != N_FEATURES + 1:
        raise refuse(f"expected {N_FEATURES + 1} columns, found {len(tokens)}")
    try:
        values = [float(token) for token in tokens]
    except ValueError as error:
        raise refuse(str(error)) from error
    if not np.all(np.isfinite(values)):
        raise refuse("values must be finite")
    if values[0] not in (0.0, 1.0):
        raise refuse(f"the label must be 0 or 1, found {tokens[0].strip()}")
    return values
