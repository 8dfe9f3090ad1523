"""Convergence diagnostics of a run's thinned draws: ESS, split R-hat, MCSE and the kernel
Stein discrepancy.

What "across replicates" means here. The replicates of a sweep point are independent chains
started from the same point (or the same dispersed points) and driven by independent noise and
minibatches; the engine (:func:`workbench.engine.replay.replay` with ``thin``) keeps each chain's
state every ``thin`` updates. So a chain is one replicate (one replicate-server pair where a
point runs several servers) and its draws are its thinned states, in iteration order — the
ArviZ ``(chain, draw)`` layout. Nothing is discarded as warm-up: the estimators φ̂_L average
from the first sample on, and the diagnostics describe exactly the draws those averages are
made of (a chain still in its transient shows up as a large R-hat and a small ESS, which is the
point). Diverged replicates (any non-finite or flagged draw) are left out and counted.

Per test function φ and component, through ``arviz-stats`` (never hand-written):

- ``ess_bulk``: the bulk effective sample size of the rank-normalised split chains, and
  ``ess_tail``: the smaller of the ESS of the 5% and 95% quantile indicators (Vehtari, Gelman,
  Simpson, Carpenter & Bürkner 2021, "Rank-normalization, folding, and localization: an
  improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16(2), §3-§4);
- ``rhat``: the rank-normalised split R-hat, the larger of the bulk and folded R-hat (ibid.
  §4.2; above 1.01 the chains disagree);
- ``mcse_mean``: the Monte Carlo standard error of the mean of φ over all draws, sd/√ESS_mean.

Per replicate, the kernel Stein discrepancy of its draws (its servers' draws pooled, as its
estimate pools them; thinned further to at most ``ksd_draws`` evenly spaced ones, because the
V-statistic costs O(n² d)): ``ksd`` =
√(n⁻² Σ_ij k₀(x_i, x_j)) with the Langevin Stein kernel of the inverse multiquadric base kernel
k(x, y) = (c² + ‖x − y‖²)^β, β = −1/2 (Gorham & Mackey 2017, "Measuring sample quality with
kernels", ICML, eq. (7) and Theorem 8: for β ∈ (−1, 0) the KSD detects non-convergence for
distantly dissipative targets). It needs the score ∇log π = −∇U; the experiments pass their
model's exact full-data gradient. For draws of π, E[KSD²] = E[k₀(x, x)]/n → 0; a biased sampler
leaves KSD² at a positive limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numba
import numpy as np
import xarray as xr
from arviz_stats.base import array_stats

from simulators import validation
from workbench.core.phi import TestFunction

IMQ_SCALE = 1.0
"""c of the IMQ kernel (Gorham & Mackey 2017 use c = 1)."""
IMQ_EXPONENT = -0.5
"""β of the IMQ kernel (Gorham & Mackey 2017, Theorem 8: β ∈ (−1, 0); they use −1/2)."""
KSD_DRAWS = 200
"""Most draws per chain entering the KSD V-statistic (evenly spaced, the last one kept)."""
DIAGNOSTIC_DRAWS = 200
"""Thinned draws per chain kept for the diagnostics when a run keeps none of its own."""
GRAM_BUDGET = 1 << 16
"""Most Gram-matrix elements :func:`kernel_stein_discrepancies` forms at once (chains in
blocks of at most this many n × n elements; 512 KiB of float64, so a block stays in cache)."""
TAIL_PROBABILITIES = (0.05, 0.95)
"""Quantiles whose indicator ESS makes ``ess_tail`` (Vehtari et al. 2021, §4.3)."""
RHAT_LIMIT = 1.01
"""R-hat above which chains disagree and a reference is not trusted (the threshold Vehtari
et al. 2021 recommend)."""
DIAGNOSTIC_VARIABLES = ("ess_bulk", "ess_tail", "rhat", "mcse_mean", "ksd")
"""The variables :func:`diagnose` adds to a dataset (what the Experiment browser shows)."""

_AXES = {"chain_axis": 0, "draw_axis": 1}


def imq_stein_kernel(x: np.ndarray, y: np.ndarray, score_x: np.ndarray, score_y: np.ndarray,
                     scale: float = IMQ_SCALE, exponent: float = IMQ_EXPONENT) -> np.ndarray:
    """k₀(x_i, y_j) for every pair: x ``(n, d)``, y ``(m, d)`` with their scores → ``(n, m)``.

    k₀(x, y) = s(x)·s(y) k + s(x)·∇_y k + s(y)·∇_x k + ∇_x·∇_y k with k = u^β,
    u = c² + ‖r‖², r = x − y: ∇_x k = 2β u^(β−1) r = −∇_y k and
    ∇_x·∇_y k = −2β d u^(β−1) − 4β(β−1) ‖r‖² u^(β−2) (Gorham & Mackey 2017, eq. (7)).

    The sums over the d components (‖r‖², s(y)·r − s(x)·r) are :func:`_difference_sums`,
    without an ``(n, m, d)`` temporary, u^β is numpy's ``power`` and s(x)·s(y) its matrix
    product; :func:`_combine` adds the terms elementwise in the order of the formula above
    as numpy evaluates it, so the values are those of the straightforward numpy expression
    bit for bit (the tests keep it and compare).
    """
    symmetric = x is y and score_x is score_y
    x, y, score_x, score_y = (np.ascontiguousarray(a, dtype=float)
                              for a in (x, y, score_x, score_y))
    squared, cross = _difference_sums(x, y, score_x, score_y, symmetric)
    u = scale**2 + squared
    return _combine(squared, cross, u, u**exponent, score_x @ score_y.T, float(x.shape[1]),
                    float(exponent))


@numba.njit(cache=True)
def _combine(squared, cross, u, base, score_dot, dim, exponent):
    """k₀ from its parts ``(n, m)``, each element by :func:`_stein_value`."""
    gram = np.empty_like(squared)
    for i in range(squared.shape[0]):
        for j in range(squared.shape[1]):
            gram[i, j] = _stein_value(squared[i, j], cross[i, j], u[i, j], base[i, j],
                                      score_dot[i, j], dim, exponent)
    return gram


@numba.njit(cache=True, inline="always")
def _stein_value(squared, cross, u, base, score_dot, dim, exponent):
    """k₀ of one pair from its parts, each operation as numpy evaluates ``score_dot * base + 2
    * exponent * lower * cross + trace`` with ``lower = base / u`` and ``trace = -2 * exponent
    * lower * (dim + 2 * (exponent - 1) * squared / u)``, left to right."""
    lower = base / u
    trace = -2 * exponent * lower * (dim + 2 * (exponent - 1) * squared / u)
    return score_dot * base + 2 * exponent * lower * cross + trace


@numba.njit(cache=True)
def _difference_sums(x, y, score_x, score_y, symmetric):
    """‖x_i − y_j‖² and s(y_j)·r − s(x_i)·r, r = x_i − y_j, for every pair ``(n, m)``, row by
    row (:func:`_row_sums`).

    ``symmetric`` (y and its scores are x and its scores): pairs j ≥ i only, mirrored. Both
    sums are then symmetric bit for bit: swapping i and j negates r and every product exactly
    and the additions keep their order, so only the sign of a zero could differ, and the final
    0 + (…) makes every zero +0.
    """
    n = x.shape[0]
    m = y.shape[0]
    squared = np.empty((n, m))
    cross = np.empty((n, m))
    y_t, score_y_t = np.ascontiguousarray(y.T), np.ascontiguousarray(score_y.T)
    order, partial = _einsum_order(x.shape[1]), np.empty((6, m))
    for i in range(n):
        first = i if symmetric else 0
        _row_sums(x, y_t, score_x, score_y_t, i, first, order, partial, squared[i, first:],
                  cross[i, first:])
        if symmetric:  # a loop: an array assigned to a slice compiles numba's formatted
            # shape error (seconds of a cold start)
            for j in range(i, m):
                squared[j, i] = squared[i, j]
                cross[j, i] = cross[i, j]
    return squared, cross


@numba.njit(cache=True)
def _einsum_order(dim):
    """The component q and accumulator (0: even, 1: odd) of each addition of a sum over d
    components, in the order numpy's ``einsum("ijk,ijk->ij", r, r)`` (and ``"jk,ijk->ij"``,
    ``"ik,ijk->ij"``) adds them on this build, so that the sums are numpy's bit for bit (the
    tests compare): einsum's contiguous reduction loop
    (``sum_of_products_contig_contig_outstride0_two``) keeps two accumulators (128-bit
    vectors: even and odd k), adds blocks of eight as a·b + (… + (a·b + acc)) from the last pair
    back, then the remaining pairs one at a time, and returns 0 + (even + odd)."""
    order = np.empty((dim, 2), dtype=np.int64)
    t = k = 0
    while dim - k >= 8:
        for q in range(k + 6, k - 1, -2):  # the block's pairs, last first
            order[t, 0], order[t, 1] = q, 0
            order[t + 1, 0], order[t + 1, 1] = q + 1, 1
            t += 2
        k += 8
    while k < dim:
        order[t, 0], order[t, 1] = k, 0
        t += 1
        if k + 1 < dim:
            order[t, 0], order[t, 1] = k + 1, 1
            t += 1
        k += 2
    return order


@numba.njit(cache=True)
def _row_sums(x, y_t, score_x, score_y_t, i, first, order, partial, squared, cross):
    """‖x_i − y_j‖² and s(y_j)·r − s(x_i)·r, r = x_i − y_j, for j = first … m − 1 into
    ``squared`` and ``cross`` ``(m − first,)``; y and its scores transposed ``(d, m)``.

    Each pair's sums take the additions of :func:`_einsum_order` in its order; the pairs of a
    row are independent lanes of one loop (which the compiler may vectorise: no addition is
    reordered). ``partial``: ``(6, m)`` work space, the two accumulators of each sum.
    """
    width = y_t.shape[1] - first
    partial[:, :width] = 0.0
    for t in range(order.shape[0]):
        q, lane = order[t, 0], order[t, 1]
        x_q, score_q = x[i, q], score_x[i, q]
        y_q, score_y_q = y_t[q, first:], score_y_t[q, first:]
        squares, y_products, x_products = (partial[3 * lane], partial[3 * lane + 1],
                                           partial[3 * lane + 2])
        for j in range(width):
            r = x_q - y_q[j]
            squares[j] = r * r + squares[j]
            y_products[j] = score_y_q[j] * r + y_products[j]
            x_products[j] = score_q * r + x_products[j]
    for j in range(width):
        squared[j] = 0.0 + (partial[0, j] + partial[3, j])
        cross[j] = (0.0 + (partial[1, j] + partial[4, j])) - (0.0 + (partial[2, j]
                                                                  + partial[5, j]))


def kernel_stein_discrepancy(draws: np.ndarray, scores: np.ndarray,
                             scale: float = IMQ_SCALE,
                             exponent: float = IMQ_EXPONENT) -> float:
    """The IMQ kernel Stein discrepancy √(n⁻² Σ_ij k₀(x_i, x_j)) of draws ``(n, d)`` with
    their scores ∇log π ``(n, d)`` (a V-statistic, so it is never negative): one chain of
    :func:`kernel_stein_discrepancies`."""
    draws, scores = _with_scores(draws, scores, "(draw, d)")
    return float(kernel_stein_discrepancies(draws[None], scores[None], scale, exponent)[0])


def kernel_stein_discrepancies(draws: np.ndarray, scores: np.ndarray,
                               scale: float = IMQ_SCALE,
                               exponent: float = IMQ_EXPONENT) -> np.ndarray:
    """The IMQ KSD of every chain: draws ``(chain, n, d)`` with their scores → ``(chain,)``.

    Each value is the one :func:`imq_stein_kernel` and numpy give for the chain alone,
    ``sqrt(max(gram.mean(), 0))``, bit for bit (the tests compare), with about half the work:
    that Gram matrix is symmetric bit for bit (its sums are, :func:`_difference_sums`, and so is
    numpy's s(x)·s(x)ᵀ, formed by BLAS ``syrk`` on one triangle and mirrored), so its upper
    triangle is formed, packed by rows — the sums by :func:`_row_sums`, u^β by numpy's
    ``power`` (not libm's: numpy's may be vectorised with other roundings), s·s by numpy's
    ``matmul`` on a block of chains (it makes per chain the call it makes for one) — and
    :func:`_symmetric_gram` writes the whole matrix from it, whose mean is then numpy's own
    (each chain's n² values one contiguous row, reduced as one array). Chains are taken in
    blocks of at most :data:`GRAM_BUDGET` Gram elements, so memory is bounded whatever their
    number.
    """
    draws, scores = _with_scores(draws, scores, "(chain, draw, d)")
    validation.positive("scale", scale)
    if not -1 < exponent < 0:
        raise validation.InvalidParameter("exponent", exponent, "must lie in (-1, 0)")
    n_chains, n, dim = draws.shape
    means = np.empty(n_chains)
    block = max(1, GRAM_BUDGET // max(1, n * n))
    for start in range(0, n_chains, block):
        x = np.ascontiguousarray(draws[start:start + block])
        s = np.ascontiguousarray(scores[start:start + block])
        squared, cross = _triangle_sums(x, s)
        u = scale**2 + squared
        # with d = 1, numpy's matmul adds no BLAS call: each product is 0 + s_i s_j, formed
        # in the compiled loop (the tests compare, zeros of either sign included)
        score_dot = s @ s.transpose(0, 2, 1) if dim > 1 else np.empty((len(s), 0, 0))
        gram = _symmetric_gram(squared, cross, u, u**exponent, s, score_dot, float(exponent))
        means[start:start + block] = gram.reshape(len(gram), -1).mean(axis=1)
    return np.sqrt(np.where(0.0 > means, 0.0, means))  # max(mean, 0) as Python's max


def _with_scores(draws, scores, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """Draws and scores as float arrays of one shape with the axes ``layout`` names."""
    draws = np.asarray(draws, dtype=float)
    scores = np.asarray(scores, dtype=float)
    if draws.ndim != layout.count(",") + 1 or scores.shape != draws.shape:
        raise validation.InvalidParameter(
            "draws", draws.shape, f"must be {layout} with scores of the same shape, "
                                  f"got scores {scores.shape}")
    return draws, scores


@numba.njit(cache=True)
def _triangle_sums(draws, scores):
    """:func:`_row_sums` of every chain's pairs i ≤ j, packed by rows: ``(chain, n(n+1)/2)``
    each."""
    n_chains, n, dim = draws.shape
    squared = np.empty((n_chains, n * (n + 1) // 2))
    cross = np.empty_like(squared)
    order, partial = _einsum_order(dim), np.empty((6, n))
    for chain in range(n_chains):
        x, s = draws[chain], scores[chain]
        x_t, s_t = np.ascontiguousarray(x.T), np.ascontiguousarray(s.T)
        k = 0
        for i in range(n):
            _row_sums(x, x_t, s, s_t, i, i, order, partial, squared[chain, k:k + n - i],
                      cross[chain, k:k + n - i])
            k += n - i
    return squared, cross


@numba.njit(cache=True)
def _symmetric_gram(squared, cross, u, base, scores, score_dot, exponent):
    """Every chain's Gram matrix ``(chain, n, n)`` from the parts of its upper triangle
    (packed by rows), each term by :func:`_stein_value`, mirrored below the diagonal; the score
    products from ``score_dot``, or, when it is empty (d = 1), 0 + s_i s_j."""
    n_chains, n, dim = scores.shape
    gram = np.empty((n_chains, n, n))
    for chain in range(n_chains):
        k = 0
        for i in range(n):
            for j in range(i, n):
                if score_dot.shape[1] == 0:
                    dot = 0.0 + scores[chain, i, 0] * scores[chain, j, 0]
                else:
                    dot = score_dot[chain, i, j]
                gram[chain, i, j] = _stein_value(squared[chain, k], cross[chain, k],
                                                 u[chain, k], base[chain, k], dot, float(dim),
                                                 exponent)
                k += 1
            for j in range(i):
                gram[chain, i, j] = gram[chain, j, i]
    return gram


def spaced(n_draws: int, count: int) -> np.ndarray:
    """Indices of at most ``count`` evenly spaced draws out of ``n_draws``, the last one kept."""
    count = min(count, n_draws)
    return np.unique(np.round(np.linspace(n_draws - 1, 0, count)).astype(np.int64))


def draws_kept(n_iterations: int, n_draws: int) -> int:
    """Equally spaced draws per chain a run keeps: its own ``n_draws`` if it asks for some,
    else :data:`DIAGNOSTIC_DRAWS` (at most one per update) for the diagnostics."""
    return min(n_draws or DIAGNOSTIC_DRAWS, n_iterations)


def chain_diagnostics(values: Mapping[str, np.ndarray]) -> xr.Dataset:
    """ESS (bulk, tail), split R-hat and MCSE of the mean per test function and component.

    values[name]: ``(chain, draw, component)``; functions with fewer components than the widest
    are padded with NaN along ``component``. Fewer than 4 draws give NaN (arviz-stats).
    """
    names = list(values)
    width = max(np.shape(v)[2] for v in values.values())
    tables = {key: np.full((len(names), width), np.nan)
              for key in ("ess_bulk", "ess_tail", "rhat", "mcse_mean")}
    for row, name in enumerate(names):
        array = np.asarray(values[name], dtype=float)
        if array.shape[0] == 0:
            continue
        m = array.shape[2]
        tables["ess_bulk"][row, :m] = array_stats.ess(array, method="bulk", **_AXES)
        tables["ess_tail"][row, :m] = array_stats.ess(array, method="tail",
                                                      prob=TAIL_PROBABILITIES, **_AXES)
        tables["rhat"][row, :m] = array_stats.rhat(array, method="rank", **_AXES)
        tables["mcse_mean"][row, :m] = array_stats.mcse(array, method="mean", **_AXES)
    return xr.Dataset({key: (("test_function", "component"), table)
                       for key, table in tables.items()},
                      coords={"test_function": names, "component": np.arange(width)})


def diagnose_draws(draws: np.ndarray, functions: Sequence[TestFunction],
                   potential_gradient: Callable[[np.ndarray], np.ndarray],
                   valid: np.ndarray | None = None) -> xr.Dataset:
    """:func:`diagnose` of the test ``functions`` evaluated at ``draws`` ``(replicate, server,
    draw, d)``, the KSD with the exact score −∇U of the model's ``potential_gradient`` (called
    once for every replicate if it is the bound method of a model whose
    ``positionwise_gradient`` is true, :func:`is_positionwise`)."""
    with np.errstate(over="ignore", invalid="ignore"):  # diverged replicates: left out
        values = {function.name: function(draws) for function in functions}
    return diagnose(draws, values, lambda theta: -potential_gradient(theta), valid,
                    positionwise=is_positionwise(potential_gradient))


def is_positionwise(potential_gradient: Callable[[np.ndarray], np.ndarray]) -> bool:
    """Whether ``potential_gradient`` is a bound method of a model that declares
    ``positionwise_gradient``: its value at a position is the same bit for bit whichever other
    positions share the call (:mod:`workbench.models.protocol`); False for anything else."""
    return bool(getattr(getattr(potential_gradient, "__self__", None), "positionwise_gradient",
                        False))


def diagnose(draws: np.ndarray, values: Mapping[str, np.ndarray],
             score: Callable[[np.ndarray], np.ndarray] | None,
             valid: np.ndarray | None = None, ksd_draws: int = KSD_DRAWS,
             positionwise: bool = False) -> xr.Dataset:
    """Every diagnostic of a point's thinned draws (module docstring).

    draws: ``(replicate, server, draw, d)`` positions, one chain per replicate and server (one
    server in most experiments); values: test function name → ``(replicate, server, draw, m)``
    φ at those draws; score: θ ``(..., d)`` → ∇log π(θ), or None when the experiment has no
    exact gradient (``ksd`` is then NaN); valid: ``(replicate,)`` replicates to use (default:
    those whose draws and values are all finite); positionwise: ``score``'s value at a
    position does not depend on the other positions of its call, so it is called once on
    every kept replicate's draws ``(replicate, draw, d)``; else (a model whose matrix products
    depend on the batch's shape) once per replicate, as the values were first computed.

    Returns ``ess_bulk``, ``ess_tail``, ``rhat``, ``mcse_mean`` over ``(test_function,
    component)`` with every replicate-server chain of the valid replicates as a chain;
    ``ksd`` over ``replicate``, of the replicate's pooled draws (its servers' samples are
    pooled, as its estimate pools them; at most ``ksd_draws`` in all, evenly spaced per
    server; NaN for a replicate left out; all kept replicates in one
    :func:`kernel_stein_discrepancies`); and ``diagnostic_chains``, the chains used.
    The per-replicate half (:func:`kept_replicates`, :func:`stein_discrepancies`) and the
    pooled half (:func:`pooled_diagnostics`) may run apart: a point split into replicate
    blocks computes the first in each block and the second once all blocks are in.
    """
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 4:
        raise validation.InvalidParameter("draws", draws.shape,
                                          "must be (replicate, server, draw, d)")
    values = {name: np.asarray(array, dtype=float) for name, array in values.items()}
    kept = kept_replicates(draws, values, valid)
    ksd = stein_discrepancies(draws, kept, score, ksd_draws, positionwise)
    return pooled_diagnostics(values, kept, ksd, draws.shape[1], ksd_draws)


def kept_replicates(draws: np.ndarray, values: Mapping[str, np.ndarray],
                    valid: np.ndarray | None = None) -> np.ndarray:
    """``(replicate,)``: the replicates :func:`diagnose` uses, those whose draws and values
    are all finite (and ``valid``, where given)."""
    kept = np.isfinite(draws).all(axis=(1, 2, 3))
    for array in values.values():
        kept &= np.isfinite(array).all(axis=(1, 2, 3))
    return kept if valid is None else kept & np.asarray(valid, dtype=bool)


def stein_discrepancies(draws: np.ndarray, kept: np.ndarray,
                        score: Callable[[np.ndarray], np.ndarray] | None,
                        ksd_draws: int = KSD_DRAWS, positionwise: bool = False) -> np.ndarray:
    """``(replicate,)``: :func:`diagnose`'s ``ksd``, NaN for a replicate not ``kept`` (and for
    all without a ``score``). Each replicate's value is the same bit for bit whichever other
    replicates share the call (:func:`kernel_stein_discrepancies`; a ``positionwise`` score,
    else one call per replicate)."""
    ksd_draws = validation.integer("ksd_draws", ksd_draws, minimum=2)
    _, n_servers, n_draws, dim = draws.shape
    ksd = np.full(draws.shape[0], np.nan)
    if score is not None and kept.any():
        per_server = spaced(n_draws, max(2, ksd_draws // n_servers))
        pooled = draws[kept][:, :, per_server].reshape(int(kept.sum()), -1, dim)
        if positionwise:
            scores = score(pooled)
        else:
            scores = np.stack([score(chain) for chain in pooled])
        ksd[kept] = kernel_stein_discrepancies(pooled, scores)
    return ksd


def pooled_diagnostics(values: Mapping[str, np.ndarray], kept: np.ndarray, ksd: np.ndarray,
                       n_servers: int, ksd_draws: int = KSD_DRAWS) -> xr.Dataset:
    """:func:`diagnose`'s Dataset from the values ``(replicate, server, draw, m)`` of every
    replicate, the ``kept`` ones and their ``ksd``."""
    dataset = chain_diagnostics({name: array[kept].reshape(-1, array.shape[2], array.shape[-1])
                                 for name, array in values.items()})
    dataset["ksd"] = ("replicate", ksd)
    dataset["diagnostic_chains"] = ((), int(kept.sum()) * n_servers)
    dataset.attrs["diagnostics"] = (
        "chains = replicates (x servers), draws = their thinned states from the first update "
        "on; ess_bulk, ess_tail, rhat (rank-normalised split R-hat) and mcse_mean by "
        "arviz-stats (Vehtari et al. 2021); ksd per replicate: IMQ kernel Stein discrepancy "
        f"(Gorham & Mackey 2017), c = {IMQ_SCALE}, beta = {IMQ_EXPONENT}, of at most "
        f"{ksd_draws} evenly spaced draws, exact score; diverged replicates left out")
    return dataset
