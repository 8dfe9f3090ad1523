"""The fused CSR minibatch gradient of logistic regression against the code it replaced, kept
here as the reference: the two-kernel composition (rows read in place below ``GATHER_FROM``
batch rows, gathered by SciPy from there on; margins, SciPy's ``expit``, weighted row sums,
then numpy's ``-(N/n) *`` and ``prior +``) and, before it, the SciPy row gather + ``reduceat``
+ ``bincount``. Bit for bit (signed zeros included) on rows that are empty, short (< 8
non-zeros), medium (8-128) and long (> 128, the pairwise sum's halving), for a batch of one,
repeated and empty rows and many replicates, on both sides of ``GATHER_FROM``; the compiled
``expit`` against SciPy's on a large sample and its extremes. Negative controls: a plain
running sum (another order), ``exp`` by another formula, and a prior added in the other
order each change the bits, so the comparisons would see them."""

import numba
import numpy as np
import pytest
from scipy import sparse
from scipy.special import expit

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.models import csr_kernels
from workbench.models.classification import held_out_test_functions
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


# ------------------------------------------------------------------ the replaced composition
GATHER_FROM = 800  # the replaced rule: batch rows from which SciPy gathered them first


@numba.njit
def _batch_margins(indptr, indices, data, rows, theta):
    n_rows, batch_size = rows.shape
    out = np.zeros((n_rows, batch_size))
    for r in range(n_rows):
        for k in range(batch_size):
            first = indptr[rows[r, k]]
            count = indptr[rows[r, k] + 1] - first
            if count:
                out[r, k] = csr_kernels._row_margin(data, indices, theta[r], first, count)
    return out


@numba.njit
def _batch_weighted_rows(indptr, indices, data, rows, weights, dim):
    n_rows, batch_size = rows.shape
    out = np.zeros((n_rows, dim))
    for r in range(n_rows):
        for k in range(batch_size):
            w = weights[r, k]
            for j in range(indptr[rows[r, k]], indptr[rows[r, k] + 1]):
                out[r, indices[j]] += data[j] * w
    return out


def composed_gradient_sum(design, signs, theta, rows, gather_from=GATHER_FROM):
    """The replaced ``log_likelihood_gradient_sum`` (CSR branch): rows gathered by SciPy from
    ``gather_from`` batch rows on, margins, SciPy's expit, weighted row sums (two compiled
    kernels with numpy between them; benchmarks/model_gradients.py times it)."""
    rows = np.ascontiguousarray(rows)
    batch_signs = signs[rows]
    if rows.size >= gather_from:
        design, rows = design[rows.ravel()], np.arange(rows.size).reshape(rows.shape)
    arrays = design.indptr, design.indices, design.data, rows
    margins = _batch_margins(*arrays, np.ascontiguousarray(theta, dtype=float))
    weights = batch_signs * expit(-batch_signs * margins)
    return _batch_weighted_rows(*arrays, weights, design.shape[1])


def composed_gradient(model, position, rows, with_prior=True):
    """The replaced ``PerExampleGradient`` glue around it: ``-(N/n) *`` the sums, then
    ``prior_gradient +`` (one block: the CSR sums do not depend on the blocking)."""
    sums = composed_gradient_sum(model.features, model.labels, position, rows)
    likelihood = -(model.n_data / rows.shape[-1]) * sums
    return (1.0 / model.prior_scale**2) * position + likelihood if with_prior else likelihood


def scipy_gradient_sum(design, signs, theta, rows):
    """The first ``LogisticRegression.log_likelihood_gradient_sum`` (CSR branch), returning
    its margins too."""
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


# ------------------------------------------------------------------ the tests
def _random_design(rng, n_data, dim, density) -> sparse.csr_matrix:
    """A SciPy random CSR design (some rows empty at low density), values over four decades."""
    def values(k):
        return rng.standard_normal(k) * 10.0 ** rng.uniform(-2, 2, k)

    design = sparse.random(n_data, dim, density=density, format="csr", random_state=rng,
                           data_rvs=values)
    design.sort_indices()
    return design


@pytest.fixture(scope="module")
def problem():
    rng = generator(15, "csr-kernels")
    design = _design(rng)
    signs = np.where(rng.random(design.shape[0]) < 0.5, -1.0, 1.0)
    return rng, design, signs


def test_expit_is_scipys():
    """The compiled expit against scipy.special.expit, bit for bit, on 2·10⁶ values of several
    scales, 10⁶ random bit patterns (NaNs, infinities, subnormals among them) and the
    extremes; negative control: exp(x)/(1 + exp(x)), the same function by another formula,
    differs in the bits on the sample."""
    rng = generator(15, "expit")
    values = np.concatenate([
        rng.standard_normal(500_000), 30 * rng.standard_normal(500_000),
        rng.uniform(-746, 710, 1_000_000),
        rng.integers(0, 2**64, 1_000_000, dtype=np.uint64).view(np.float64),
        [0.0, -0.0, 700.0, -700.0, 750.0, -750.0, 709.79, -709.79, -745.14, -745.13, 36.7,
         37.0, 5e-324, -5e-324, 2.2250738585072014e-308, -1e-310, 1e-17, -1e-17, np.inf,
         -np.inf, np.nan, -np.nan, np.finfo(float).max, -np.finfo(float).max]])
    compiled = np.array([csr_kernels._expit(x) for x in values[-24:]])
    assert _same_bits(compiled, expit(values[-24:]))
    assert _same_bits(_compiled_expit(values), expit(values))
    with np.errstate(over="ignore", invalid="ignore"):
        other = np.exp(values) / (1.0 + np.exp(values))
    assert not _same_bits(other, expit(values))


@numba.njit
def _compiled_expit(values):
    out = np.empty_like(values)
    for i in range(values.size):
        out[i] = csr_kernels._expit(values[i])
    return out


def _check_fused(model, theta, rows):
    """Every fused entry point against the replaced composition (and the first SciPy code)."""
    design, signs = model.features, model.labels
    sums = composed_gradient_sum(design, signs, theta, rows)
    assert _same_bits(composed_gradient_sum(design, signs, theta, rows, gather_from=0), sums)
    assert _same_bits(composed_gradient_sum(design, signs, theta, rows, gather_from=10**9), sums)
    first = scipy_gradient_sum(design, signs, theta, rows)[1]
    assert _same_bits(first.astype(float), sums)  # (bincount gave integers with no non-zeros)
    assert _same_bits(model.log_likelihood_gradient_sum(theta, rows), sums)
    estimator = model.minibatch_gradient()
    prepared = estimator.prepare(rows)
    assert _same_bits(estimator(theta, prepared), composed_gradient(model, theta, rows))
    assert _same_bits(estimator.likelihood_gradient(theta, prepared),
                      composed_gradient(model, theta, rows, with_prior=False))
    assert _same_bits(estimator.prior_gradient(theta), (1.0 / model.prior_scale**2) * theta)


@pytest.mark.parametrize("n_replicates, batch_size", [(1, 1), (1, 15), (7, 1), (9, 23),
                                                      (40, 20), (24, 50)])
def test_fused_gradient_is_the_old_bits(problem, n_replicates, batch_size):
    """Batches of 1 to 1,200 rows (both sides of the replaced GATHER_FROM), with the longest
    row, empty rows and a repeated row in every batch, signed zeros in θ."""
    rng, design, signs = problem
    theta = rng.standard_normal((n_replicates, DIM)) * 10.0 ** rng.uniform(-2, 2, DIM)
    theta[:, :5] = -0.0  # products of signed zeros
    rows = rng.integers(0, design.shape[0], (n_replicates, batch_size)).astype(np.int32)
    rows[:, 0] = 12  # the longest row (300 non-zeros)
    if batch_size > 3:
        rows[:, 1:4] = [0, 0, 13]  # empty rows, repeated
    _check_fused(LogisticRegression(design, signs, prior_scale=0.7), theta, rows)


@pytest.mark.parametrize("n_data, dim, density, n_replicates, batch_size", [
    (1000, 123, 0.11, 40, 10), (1000, 123, 0.11, 24, 50), (300, 7, 0.3, 64, 13),
    (50, 1, 0.5, 5, 200), (2000, 600, 0.02, 3, 300)])
def test_random_designs(n_data, dim, density, n_replicates, batch_size):
    """SciPy random designs of several N, d and densities, batches drawn with replacement."""
    rng = generator(15, "csr-random", n_data, dim)
    design = _random_design(rng, n_data, dim, density)
    labels = rng.integers(0, 2, n_data)
    theta = rng.standard_normal((n_replicates, dim))
    rows = rng.integers(0, n_data, (n_replicates, batch_size))
    _check_fused(LogisticRegression(design, labels), theta, rows)


def test_every_row_length_in_one_batch(problem):
    """Every row once, twice over, in one replicate's batch: every branch of the pairwise sum."""
    rng, design, signs = problem
    theta = rng.standard_normal((3, DIM)) * 10.0 ** rng.uniform(-2, 2, DIM)
    rows = np.tile(np.arange(design.shape[0]), (3, 2))
    _check_fused(LogisticRegression(design, signs), theta, rows)


def test_all_rows_empty():
    """No non-zeros at all: the sums are +0.0 (weights 1/2, nothing added), the gradient the
    prior's alone."""
    model = LogisticRegression(sparse.csr_matrix((4, 6)), [0, 1, 1, 0])
    theta = generator(1, "theta").standard_normal((2, 6))
    rows = np.array([[0, 3, 3], [1, 2, 0]])
    assert _same_bits(model.log_likelihood_gradient_sum(theta, rows), np.zeros((2, 6)))
    _check_fused(model, theta, rows)


def test_the_fused_estimator_checks_its_input(problem):
    _, design, signs = problem
    estimator = LogisticRegression(design, signs).minibatch_gradient()
    with pytest.raises(ValueError, match="minibatch"):
        estimator(np.zeros((3, DIM)), estimator.prepare(np.zeros((2, 4), dtype=int)))
    with pytest.raises(ValueError, match="minibatch"):
        estimator.likelihood_gradient(np.zeros((3, DIM + 1)),
                                      estimator.prepare(np.zeros((3, 4), dtype=int)))


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
    arrays = design.indptr, design.indices, design.data, rows
    assert _same_bits(_batch_margins(*arrays, theta), margins)


def test_a_scale_folded_into_the_weights_would_be_seen(problem):
    """Negative control: -(N/n) applied to each weight before the sum (not to the sum) changes
    the bits here, so the fused kernel's order of the prefactor is what the tests see."""
    rng, design, signs = problem
    model = LogisticRegression(design, signs)
    theta = rng.standard_normal((4, DIM)) * 10.0 ** rng.uniform(-2, 2, DIM)
    rows = np.tile(np.arange(design.shape[0]), (4, 1))
    scale = -(model.n_data / rows.shape[1])
    batch_signs = signs[rows]
    arrays = design.indptr, design.indices, design.data, rows
    margins = _batch_margins(*arrays, theta)
    folded = _batch_weighted_rows(*arrays, scale * batch_signs * expit(-batch_signs * margins),
                                  DIM)
    likelihood = model.minibatch_gradient().likelihood_gradient(theta, rows)
    assert _same_bits(likelihood, composed_gradient(model, theta, rows, with_prior=False))
    assert not _same_bits(folded, likelihood)


# ------------------------------------------------------------------ full-data passes
# The replaced full-data code (LogisticRegression on a CSR design before the compiled passes):
# SciPy's sparse products with numpy's steps in place between them.
def scipy_margins(design, theta):
    return np.asarray(design @ theta.T).T


def scipy_full_gradient(model, theta):
    weights = scipy_margins(model.features, theta)
    np.multiply(-model.labels, weights, out=weights)
    np.multiply(model.labels, expit(weights, out=weights), out=weights)
    return theta / model.prior_scale**2 - np.asarray(model.features.T @ weights.T).T


def scipy_log_probabilities(model):
    """The replaced held-out log-probabilities, as ``held_out_test_functions`` takes them."""
    def log_probabilities(rows):
        margins = scipy_margins(model.test_features, rows)
        return -np.logaddexp(0.0, np.stack([margins, -margins], axis=-1))
    return log_probabilities


def _check_full_data(model, theta):
    """The compiled margins (bits and layout), gradient pass and the model's full-data
    methods against the SciPy formulation, for positions ``theta`` ``(B, d)``."""
    design = model.features
    margins, reference = csr_kernels.margins(design, theta), scipy_margins(design, theta)
    assert margins.strides == reference.strides
    assert _same_bits(margins, reference)
    gradient = scipy_full_gradient(model, theta)
    assert _same_bits(csr_kernels.full_gradient(design, model.labels, theta,
                                                model.prior_scale**2), gradient)
    assert _same_bits(model.potential_gradient(theta), gradient)
    stacked = np.stack([theta, theta[::-1]])  # (2, B, d): positions reach the pass as a block
    assert _same_bits(model.potential_gradient(stacked), scipy_full_gradient(
        model, stacked.reshape(-1, model.dim)).reshape(stacked.shape))


# B on both sides of VECTOR_FROM (one position at a time, or a row's positions together) and
# of POSITION_BLOCK (positions a sweep of the design)
POSITION_COUNTS = [0, 1, 2, csr_kernels.VECTOR_FROM - 1, csr_kernels.VECTOR_FROM, 33,
                   csr_kernels.POSITION_BLOCK, 2 * csr_kernels.POSITION_BLOCK + 1]


@pytest.mark.parametrize("n_positions", POSITION_COUNTS)
def test_full_data_passes_are_scipys_on_every_row_length(problem, n_positions):
    """Rows of 0 to 300 non-zeros with stored zeros of both signs, empty columns, θ with
    signed zeros and six decades of magnitudes: every pass bit for bit SciPy's."""
    rng, design, signs = problem
    theta = rng.standard_normal((n_positions, DIM)) * 10.0 ** rng.uniform(-2, 2, DIM)
    theta[:, :5] = -0.0
    _check_full_data(LogisticRegression(design, signs, prior_scale=0.7), theta)


@pytest.mark.parametrize("n_data, dim, density", [
    (1000, 123, 0.11), (300, 7, 0.3), (50, 1, 0.5), (2000, 600, 0.002), (40, 30, 0.01)])
@pytest.mark.parametrize("n_positions", [1, csr_kernels.VECTOR_FROM - 1, 20,
                                         csr_kernels.POSITION_BLOCK + 1])
def test_full_data_passes_on_random_designs(n_data, dim, density, n_positions):
    """SciPy random designs of several N, d and densities (the sparsest with empty rows and
    columns); the held-out log-loss and accuracy too."""
    rng = generator(15, "csr-full", n_data, dim)
    design = _random_design(rng, n_data, dim, density)
    held_out = _random_design(rng, 77, dim, density)
    labels = rng.integers(0, 2, n_data)
    model = LogisticRegression(design, labels, prior_scale=1.3, test_features=held_out,
                               test_labels=rng.integers(0, 2, 77))
    if density < 0.05:
        assert np.any(np.diff(design.indptr) == 0)
        assert np.unique(design.indices).size < dim
    theta = rng.standard_normal((n_positions, dim))
    _check_full_data(model, theta)
    reference = held_out_test_functions(scipy_log_probabilities(model),
                                        (model.test_labels > 0).astype(np.int64), dim,
                                        2 * held_out.shape[0])
    for function, expected in zip(model.test_functions(), reference, strict=True):
        assert _same_bits(function(theta), expected(theta))


def test_full_data_passes_without_non_zeros():
    """An all-zero design: margins +0.0, weights ±1/2 times nothing, the gradient θ/σ₀²."""
    model = LogisticRegression(sparse.csr_matrix((4, 6)), [0, 1, 1, 0], prior_scale=2.0)
    theta = generator(1, "theta").standard_normal((3, 6))
    theta[0, 0] = -0.0
    assert _same_bits(csr_kernels.margins(model.features, theta), np.zeros((4, 3)).T)
    assert _same_bits(model.potential_gradient(theta), theta / 4.0)
    _check_full_data(model, theta)


def test_the_gradient_pass_names_a_bad_position():
    model = LogisticRegression(sparse.csr_matrix(np.eye(3)), [0, 1, 1])
    with pytest.raises(InvalidParameter, match="theta"):
        model.potential_gradient(np.zeros((2, 4)))


def test_another_order_of_the_full_data_sums_would_be_seen(problem):
    """Negative controls: each row's margin summed with its entries reversed, and the
    weighted rows summed with the rows reversed (the transposed product's order), differ in
    the bits from SciPy's, so the comparisons above see the order of every sum."""
    _, design, signs = problem
    model = LogisticRegression(design, signs, prior_scale=0.7)
    rng = generator(15, "full-data order")  # its own stream: fixed values whatever ran first
    theta = rng.standard_normal((3, DIM)) * 10.0 ** rng.uniform(-2, 2, DIM)
    reversed_entries = np.zeros((design.shape[0], 3))
    for i in range(design.shape[0]):
        for j in reversed(range(design.indptr[i], design.indptr[i + 1])):
            reversed_entries[i] += design.data[j] * theta[:, design.indices[j]]
    assert not _same_bits(reversed_entries.T, scipy_margins(design, theta))
    weights = scipy_margins(design, theta).copy()
    weights = signs * expit(-signs * weights)
    flipped = design[::-1]
    reversed_rows = np.asarray(flipped.T @ weights[:, ::-1].T).T
    assert not _same_bits(theta / model.prior_scale**2 - reversed_rows,
                          csr_kernels.full_gradient(design, signs, theta, 0.49))


def test_the_margins_layout_would_be_seen():
    """Negative control: the potential's sum over rows follows the margins' layout (in row
    order on the transpose of an (N, B) array, pairwise on a C-ordered (B, N) one), so a
    C-ordered copy of the same margins gives other bits (hence the layout assertions)."""
    rng = generator(15, "margins layout")
    design = _random_design(rng, 2000, 50, 0.1)
    signs = np.where(rng.random(2000) < 0.5, -1.0, 1.0)
    theta = rng.standard_normal((5, 50))
    margins = csr_kernels.margins(design, theta)
    losses = np.logaddexp(0.0, -signs * margins)
    assert not _same_bits(losses.sum(axis=1), np.ascontiguousarray(losses).sum(axis=1))
