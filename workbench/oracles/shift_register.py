"""The stacked stale recursion as a shift register: O(S) per moment update, compiled.

The stacked state of :mod:`workbench.oracles.linear_gaussian` is z = (x, u_{l-1}, ..., u_{l-H},
S): the sampler's k coordinates, a history of H past gradient points and the running sum. Its
transition A_τ (docs/math.md §8.2, §8.7) touches few entries: x' = F x + k_prec b (read · z)
reads the sampler state and ONE history column (the version of staleness τ, or G x when τ = 0),
the history shifts by one with u_l = G x entering, and S' = x'_0 + S is a running-sum row. Every
other coordinate is carried over unchanged.

Stored in ring order (history slot of lag i at position k + (head - i) mod H, ``head`` the
slot the next gradient point overwrites), the shift moves no data: in those coordinates A is
the identity except on rows Ω = {x, head, S}, and its rows there read only columns
{x, read, S}. So

- A X and X Aᵀ (a mean, a covariance, a row of forms) change only the rows or columns in Ω:
  O(k·S) work instead of the dense O(S³) product;
- Aᵀ X and X A (the backward recursions of :mod:`workbench.oracles.square_variance`) change
  only the rows or columns {x, read, head, S}, also O(k·S).

What stays O(S²) per update is a dense rank-one term (the W recursions of the fourth moments,
W' = A W Aᵀ + v vᵀ with v = Cov(z, e) dense); everything else is O(k·S). The kernels below
are numba-compiled loops (cached on disk); they give the dense recursion's results to rounding
(tests/workbench/test_shift_register.py compares them on random systems).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _coefficients(transition, gradient_gain, gradient_point, precision, staleness):
    """Rows of A_τ on x: ``ax`` (k×k, on the x columns) and ``ar`` (k, on the read slot)."""
    k = transition.shape[0]
    ax = transition.copy()
    ar = precision * gradient_gain
    if staleness == 0:  # the gradient point is G x itself
        for i in range(k):
            for j in range(k):
                ax[i, j] += ar[i] * gradient_point[j]
    return ax, ar


@numba.njit(cache=True)
def _read_position(k, history, head, staleness):
    """Ring position of the slot of lag ``staleness`` (-1 for τ = 0: no slot is read)."""
    if staleness == 0:
        return -1
    return k + (head - staleness) % history


@numba.njit(cache=True)
def apply_rows(matrix, ax, ar, gradient_point, read, head_position, sum_position, scratch):
    """``matrix`` ← A ``matrix`` in place (each column is a state vector); O(k·n)."""
    k = ax.shape[0]
    m = matrix.shape[1]
    new_x = scratch[:k, :m]
    new_head = scratch[k, :m]
    for c in range(m):
        for i in range(k):
            value = 0.0
            for j in range(k):
                value += ax[i, j] * matrix[j, c]
            if read >= 0:
                value += ar[i] * matrix[read, c]
            new_x[i, c] = value
        if head_position >= 0:
            value = 0.0
            for j in range(k):
                value += gradient_point[j] * matrix[j, c]
            new_head[c] = value
    for c in range(m):
        for i in range(k):
            matrix[i, c] = new_x[i, c]
        if head_position >= 0:
            matrix[head_position, c] = new_head[c]
        if sum_position >= 0:
            matrix[sum_position, c] += new_x[0, c]


@numba.njit(cache=True)
def apply_columns(matrix, ax, ar, gradient_point, read, head_position, sum_position, scratch):
    """``matrix`` ← ``matrix`` Aᵀ in place (each row is a state vector); O(k·n)."""
    k = ax.shape[0]
    new_x = scratch[:k]
    for r in range(matrix.shape[0]):
        row = matrix[r]
        for i in range(k):
            value = 0.0
            for j in range(k):
                value += ax[i, j] * row[j]
            if read >= 0:
                value += ar[i] * row[read]
            new_x[i] = value
        if head_position >= 0:
            value = 0.0
            for j in range(k):
                value += gradient_point[j] * row[j]
            row[head_position] = value
        for i in range(k):
            row[i] = new_x[i]
        if sum_position >= 0:
            row[sum_position] += new_x[0]


@numba.njit(cache=True)
def adjoint_rows(matrix, ax, ar, gradient_point, read, head_position, sum_position, scratch):
    """``matrix`` ← Aᵀ ``matrix`` in place; O(k·n). The S row of A is x₀'s row plus e_S, so
    x₀'s coefficient picks up the S row of ``matrix``."""
    k = ax.shape[0]
    m = matrix.shape[1]
    new_x = scratch[:k, :m]
    new_read = scratch[k, :m]
    for c in range(m):
        for j in range(k):
            value = 0.0
            for i in range(k):
                weight = matrix[i, c]
                if i == 0 and sum_position >= 0:
                    weight += matrix[sum_position, c]
                value += ax[i, j] * weight
            if head_position >= 0:
                value += gradient_point[j] * matrix[head_position, c]
            new_x[j, c] = value
        if read >= 0:
            value = 0.0
            for i in range(k):
                weight = matrix[i, c]
                if i == 0 and sum_position >= 0:
                    weight += matrix[sum_position, c]
                value += ar[i] * weight
            if read != head_position:  # a surviving slot also carries itself over
                value += matrix[read, c]
            new_read[c] = value
    for c in range(m):
        for j in range(k):
            matrix[j, c] = new_x[j, c]
        if head_position >= 0:
            matrix[head_position, c] = 0.0  # the oldest version leaves the register
        if read >= 0:
            matrix[read, c] = new_read[c]


@numba.njit(cache=True)
def adjoint_columns(matrix, ax, ar, gradient_point, read, head_position, sum_position, scratch):
    """``matrix`` ← ``matrix`` A in place; O(k·n)."""
    k = ax.shape[0]
    new_x = scratch[:k]
    for r in range(matrix.shape[0]):
        row = matrix[r]
        carried = row[0] + (row[sum_position] if sum_position >= 0 else 0.0)
        for j in range(k):
            value = 0.0
            for i in range(k):
                weight = carried if i == 0 else row[i]
                value += ax[i, j] * weight
            if head_position >= 0:
                value += gradient_point[j] * row[head_position]
            new_x[j] = value
        read_value = 0.0
        if read >= 0:
            for i in range(k):
                weight = carried if i == 0 else row[i]
                read_value += ar[i] * weight
            if read != head_position:
                read_value += row[read]
        for j in range(k):
            row[j] = new_x[j]
        if head_position >= 0:
            row[head_position] = 0.0
        if read >= 0:
            row[read] = read_value


@numba.njit(cache=True)
def forward_pass(transition, gradient_gain, gradient_point, precision, history, staleness,
                 gradient_vector, thermal_vector, mean, wanted, fourth_moments):
    """The forward recursions of :func:`workbench.oracles.linear_gaussian.finite_moments`.

    Returns ``(rows, unit_means)``: per wanted update (``wanted[l]`` true) the 16 values
    (E S, Var S parts, then the 13 running totals that function documents), and the mean of
    e_l per unit e₀ for every update. ``mean``: the initial state mean (ring order = dense
    order at head 0), overwritten.
    """
    k = transition.shape[0]
    n = mean.shape[0]
    sum_position = n - 1
    covariance = np.zeros((2, n, n))
    squares = np.zeros((3, n, n)) if fourth_moments else np.zeros((3, 0, 0))
    forms = np.zeros((4, n))
    totals = np.zeros(13)
    if not fourth_moments:
        totals[4:] = np.nan
    v = np.zeros((2, n))
    scratch = np.zeros((k + 1, n))
    column = mean.reshape(n, 1)
    count = 0
    for update in range(staleness.shape[0]):
        if wanted[update]:
            count += 1
    rows = np.empty((count, 16))
    unit_means = np.empty(staleness.shape[0])
    noises = (gradient_vector, thermal_vector)
    left = (0, 0, 1)
    right = (0, 1, 1)
    done = 0
    for update in range(staleness.shape[0]):
        tau = staleness[update]
        head = update % history if history > 0 else 0
        ax, ar = _coefficients(transition, gradient_gain, gradient_point, precision, tau)
        read = _read_position(k, history, head, tau)
        head_position = k + head if history > 0 else -1
        apply_rows(column, ax, ar, gradient_point, read, head_position, sum_position, scratch)
        for s in range(2):
            apply_rows(covariance[s], ax, ar, gradient_point, read, head_position,
                       sum_position, scratch)
            apply_columns(covariance[s], ax, ar, gradient_point, read, head_position,
                          sum_position, scratch[0])
            noise = noises[s]
            for i in range(n):
                if noise[i] != 0.0:
                    for j in range(n):
                        covariance[s, i, j] += noise[i] * noise[j]
        x = mean[0]
        unit_means[update] = x
        totals[0] += x
        totals[1] += x * x
        totals[2] += covariance[0, 0, 0]
        totals[3] += covariance[1, 0, 0]
        if fourth_moments:
            for s in range(2):
                for i in range(n):
                    v[s, i] = covariance[s, i, 0]
            for p in range(3):
                square = squares[p]
                apply_rows(square, ax, ar, gradient_point, read, head_position, sum_position,
                           scratch)
                apply_columns(square, ax, ar, gradient_point, read, head_position,
                              sum_position, scratch[0])
                a = v[left[p]]
                b = v[right[p]]
                for i in range(n):
                    ai = a[i]
                    for j in range(n):
                        square[i, j] += ai * b[j]
            apply_columns(forms, ax, ar, gradient_point, read, head_position, sum_position,
                          scratch[0])
            for f in range(4):
                weight = 1.0 if f % 2 == 0 else x
                for i in range(n):
                    forms[f, i] += v[f // 2, i] * weight
            for p in range(3):
                totals[4 + p] += 2 * squares[p, 0, 0] - v[left[p], 0] * v[right[p], 0]
            u0, u1, u2, u3 = forms[0, 0], forms[1, 0], forms[2, 0], forms[3, 0]
            g0, t0 = v[0, 0], v[1, 0]
            totals[7] += 2 * u0 - g0
            totals[8] += u1 + u0 * x - g0 * x
            totals[9] += (2 * u1 - g0 * x) * x
            totals[10] += 2 * u2 - t0
            totals[11] += u3 + u2 * x - t0 * x
            totals[12] += (2 * u3 - t0 * x) * x
        if wanted[update]:
            rows[done, 0] = mean[sum_position]
            rows[done, 1] = covariance[0, sum_position, sum_position]
            rows[done, 2] = covariance[1, sum_position, sum_position]
            for t in range(totals.size):  # a loop: an array assigned to a slice compiles
                rows[done, 3 + t] = totals[t]  # numba's formatted shape error (seconds)
            done += 1
    return rows, unit_means


@numba.njit(cache=True)
def backward_pass(transition, gradient_gain, gradient_point, precision, history, staleness,
                  gradient_vector, unit_means, lengths):
    """The backward pass of :func:`workbench.oracles.square_variance.cumulant_weights` for
    checkpoint ``lengths`` sorted longest first: ``(checkpoint, 3)`` sums in that order."""
    k = transition.shape[0]
    n = gradient_vector.shape[0]
    sum_position = n - 1
    n_lengths = lengths.shape[0]
    quadratic = np.zeros((n_lengths, n, n))
    linear = np.zeros((n_lengths, 2, n))
    sums = np.zeros((n_lengths, 3))
    scratch = np.zeros((k + 1, n))
    nonzero = np.flatnonzero(gradient_vector)
    active = 0
    for j in range(lengths[0], 0, -1):
        if active:
            tau = staleness[j]  # update j + 1, whose ring head is j mod H
            head = j % history if history > 0 else 0
            ax, ar = _coefficients(transition, gradient_gain, gradient_point, precision, tau)
            read = _read_position(k, history, head, tau)
            head_position = k + head if history > 0 else -1
            for c in range(active):
                adjoint_rows(quadratic[c], ax, ar, gradient_point, read, head_position,
                             sum_position, scratch)
                adjoint_columns(quadratic[c], ax, ar, gradient_point, read, head_position,
                                sum_position, scratch[0])
                adjoint_columns(linear[c], ax, ar, gradient_point, read, head_position,
                                sum_position, scratch[0])
        while active < n_lengths and lengths[active] >= j:
            active += 1
        for c in range(active):
            quadratic[c, 0, 0] += 1.0
            linear[c, 0, 0] += 1.0
            linear[c, 1, 0] += unit_means[j - 1]
            q = 0.0
            r0 = 0.0
            r1 = 0.0
            for a in nonzero:
                ga = gradient_vector[a]
                for b in nonzero:
                    q += ga * quadratic[c, a, b] * gradient_vector[b]
                r0 += linear[c, 0, a] * ga
                r1 += linear[c, 1, a] * ga
            sums[c, 0] += q * q
            sums[c, 1] += q * r0
            sums[c, 2] += q * r1
    return sums
