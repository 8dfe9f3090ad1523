"""The compiled CSR kernels of logistic regression against the SciPy/numpy code they replaced,
kept here as the reference: bit for bit (signed zeros included) and with the same memory
layout, on rows that are empty, short (< 8 non-zeros), medium (8-128) and long (> 128, the
pairwise sum's halving), for a batch of one, repeated indices and many replicates; and a
negative control showing that a plain running sum (a different order) changes the bits, so
the comparison would see a kernel that added in another order."""

import numpy as np
import pytest
from scipy import sparse
from scipy.special import expit

from simulators.seeding import generator
from workbench.models import csr_kernels
from workbench.models.logistic import LogisticRegression

ROW_LENGTHS = [0, 1, 2, 7, 8, 9, 15, 16, 17, 128, 129, 136, 300, 0, 5]
DIM = 400


def _design(rng) -> sparse.csr_matrix:
    """Rows of the ROW_LENGTHS non-zeros (sorted distinct columns), magnitudes spread over
    six decades so that the order of additions shows in the bits; some stored zeros of both
    signs, so that signed zeros reach the sums."""
    indptr, indices, data = [0], [], []
    for length in ROW_LENGTHS:
        columns = np.sort(rng.choice(DIM, length, replace=False))
        values = rng.standard_normal(length) * 10.0 ** rng.uniform(-3, 3, length)
        if length > 3:
            values[1], values[2] = 0.0, -0.0
        indices.extend(columns)
        data.extend(values)
        indptr.append(len(indices))
    return sparse.csr_matrix((np.array(data), np.array(indices, dtype=np.int32),
                              np.array(indptr, dtype=np.int32)), shape=(len(ROW_LENGTHS), DIM))


def _same_bits(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
        np.ascontiguousarray(a).view(np.int64), np.ascontiguousarray(b).view(np.int64))


@pytest.fixture(autouse=True, params=["in place", "gathered"])
def gather_from(request, monkeypatch):
    """Both ways of reading the batch rows (csr_kernels.batch_rows): every test runs twice."""
    monkeypatch.setattr(csr_kernels, "GATHER_FROM", 10**9 if request.param == "in place" else 0)


def _kernel_margins(design, theta, rows):
    return csr_kernels.batch_margins(csr_kernels.batch_rows(design, rows), theta)


def _kernel_sums(design, rows, weights):
    return csr_kernels.batch_weighted_rows(csr_kernels.batch_rows(design, rows), weights)


def scipy_gradient_sum(design, signs, theta, rows):
    """The replaced ``LogisticRegression.log_likelihood_gradient_sum`` (CSR branch), returning
    its margins too (benchmarks/model_gradients.py times it against the kernels)."""
    n_rows, batch_size = rows.shape
    gathered = design[rows.ravel()]
    counts = np.diff(gathered.indptr)
    example = np.repeat(np.arange(n_rows * batch_size), counts)
    coordinate = (example // batch_size) * design.shape[1] + gathered.indices
    products = gathered.data * theta.ravel().take(coordinate)
    margins = np.zeros(n_rows * batch_size)
    present = counts > 0
    if products.size:
        margins[present] = np.add.reduceat(products, gathered.indptr[:-1][present])
    batch_signs = signs[rows].ravel()
    weights = batch_signs * expit(-batch_signs * margins)
    sums = np.bincount(coordinate, gathered.data * weights[example],
                       minlength=n_rows * design.shape[1])
    return margins.reshape(rows.shape), sums.reshape(n_rows, design.shape[1])


@pytest.fixture(scope="module")
def problem():
    rng = generator(15, "csr-kernels")
    design = _design(rng)
    signs = np.where(rng.random(design.shape[0]) < 0.5, -1.0, 1.0)
    return rng, design, signs


@pytest.mark.parametrize("n_replicates, batch_size", [(1, 1), (1, 15), (7, 1), (9, 23)])
def test_minibatch_sums_are_the_old_bits(problem, n_replicates, batch_size):
    rng, design, signs = problem
    theta = rng.standard_normal((n_replicates, DIM)) * 10.0 ** rng.uniform(-2, 2, DIM)
    theta[:, :5] = -0.0  # products of signed zeros
    rows = rng.integers(0, design.shape[0], (n_replicates, batch_size)).astype(np.int32)
    rows[:, 0] = 12  # the longest row (300 non-zeros)
    if batch_size > 3:
        rows[:, 1:4] = [0, 0, 13]  # empty rows, repeated
    margins, sums = scipy_gradient_sum(design, signs, theta, rows)
    assert _same_bits(_kernel_margins(design, theta, rows), margins)
    batch_signs = signs[rows]
    weights = batch_signs * expit(-batch_signs * margins)
    assert _same_bits(_kernel_sums(design, rows, weights), sums)
    model = LogisticRegression(design, signs)
    assert _same_bits(model.log_likelihood_gradient_sum(theta, rows), sums)


def test_every_row_length_in_one_batch(problem):
    """Every row once, twice over, in one replicate's batch: every branch of the pairwise sum."""
    rng, design, signs = problem
    theta = rng.standard_normal((3, DIM)) * 10.0 ** rng.uniform(-2, 2, DIM)
    rows = np.tile(np.arange(design.shape[0]), (3, 2))
    margins, sums = scipy_gradient_sum(design, signs, theta, rows)
    assert _same_bits(_kernel_margins(design, theta, rows), margins)
    model = LogisticRegression(design, signs)
    assert _same_bits(model.log_likelihood_gradient_sum(theta, rows), sums)


def test_all_rows_empty():
    design = sparse.csr_matrix((4, 6))
    theta = generator(1, "theta").standard_normal((2, 6))
    rows = np.array([[0, 3, 3], [1, 2, 0]])
    assert _same_bits(_kernel_margins(design, theta, rows), np.zeros((2, 3)))
    assert _same_bits(_kernel_sums(design, rows, np.ones((2, 3))),
                      np.zeros((2, 6)))


def test_a_running_sum_would_be_seen(problem):
    """Negative control: margins added in plain sequence (not reduceat's order) differ in
    the bits for these rows, so the comparisons above distinguish the orders."""
    rng, design, signs = problem
    theta = rng.standard_normal((1, DIM)) * 10.0 ** rng.uniform(-2, 2, DIM)
    rows = np.arange(design.shape[0])[None]
    margins, _ = scipy_gradient_sum(design, signs, theta, rows)
    sequential = np.zeros_like(margins)
    for k, i in enumerate(rows[0]):
        for j in range(design.indptr[i], design.indptr[i + 1]):
            sequential[0, k] += design.data[j] * theta[0, design.indices[j]]
    assert not _same_bits(sequential, margins)
    assert _same_bits(_kernel_margins(design, theta, rows), margins)
