"""Throughput of the models' minibatch gradients: vectorised over replicates vs a Python loop.

Workloads (issue 13, item 7):

- logistic regression on a9a-shaped sparse data (32,561 × 123 CSR, about 14 non-zeros a row,
  :func:`workbench.data.a9a_like.a9a_like`), 64 replicates, minibatch 50 (the batch of the
  seed 001 authors' a9a code, docs/math.md §2);
- the MLP (64 → 100 → 10, ReLU, softmax) on scikit-learn's digits, 64 replicates, minibatch 50.

For each, the engine's estimator ``model.minibatch_gradient()`` evaluates ∇Ũ for all replicates
at once (positions ``(64, d)``, prepared indices ``(64, 50)``), beside a plain Python loop over
replicates that computes the same ∇Ũ with 2-d numpy/SciPy operations one replicate at a time
(the way a one-off script would; results are checked equal before timing).

Printed: replicate-steps per second (one replicate's ∇Ũ = one replicate-step) and the effective
GFLOP/s, counting only the arithmetic the gradient needs:

- logistic (sparse): 4 flops per non-zero (margin dot product and the weighted scatter) plus
  3 per coordinate (prior term, scaling, subtraction);
- MLP: per example 2·fan_in·fan_out for each layer's forward product and weight gradient, and
  for the back-propagated δ of every layer but the first; plus 3 per coordinate.

Calls are interleaved round by round and each ratio is the median of per-round ratios, so a slow
phase of the shared machine affects both sides alike; rates are medians over rounds.

Before/after (issue 15): the logistic model's CSR minibatch estimate ∇Ũ, one compiled call
(:func:`workbench.models.csr_kernels.gradient_sums`), against the composition it replaced
(SciPy row gather from 800 batch rows, two compiled kernels, SciPy's expit, numpy's
``-(N/n) *`` and ``prior +``; kept as the reference in
tests/workbench/models/test_csr_kernels.py), checked bit-identical first, at the block sizes
the experiments pass (``BLOCKS``); printed: µs per call and the current/fused time ratio
(median of per-round ratios).

Full data (issue 15): the logistic model's full-data gradient ∇U on a CSR design, one compiled
pass (:func:`workbench.models.csr_kernels.full_gradient`), against the SciPy sparse products and
numpy steps it replaced (``scipy_full_gradient``, kept in
tests/workbench/models/test_csr_kernels.py), checked bit-identical first, at the experiments'
shapes (``FULL_DATA``); printed: µs per call and the SciPy/compiled time ratio.

Run: ``python benchmarks/model_gradients.py [--repeats 5] [--calls 50]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.special import expit

from simulators.seeding import generator
from workbench.data.a9a_like import a9a_like
from workbench.data.digits import digits
from workbench.models.logistic import LogisticRegression
from workbench.models.mlp import MultilayerPerceptron

REPLICATES, BATCH = 64, 50
# (replicate rows, minibatch) per call in the experiments: downpour-period's 40 x 10, and
# stale-blr-speedup's 24 replicates x windows of 1, ~3 and 8 updates with minibatch 50
BLOCKS = ((40, 10), (24, 50), (64, 50), (192, 50))
# (training rows N, positions per call, where) of the full-data gradient in the experiments:
# downpour-period's reference HMC (8 chains), and the KSD's exact score in stale-blr-speedup
# and multi-server (blocks of 2^22 // N positions), with one position for the per-call cost
FULL_DATA = ((2000, 1, "one position"), (2000, 8, "reference HMC"),
             (8000, 524, "KSD score"))


def logistic_workload():
    data, _ = a9a_like(generator(2026, "benchmark", "a9a"))
    model = LogisticRegression(data.train_features, data.train_labels, prior_scale=1.0)
    design, signs, scale = model.features, model.labels, model.n_data / BATCH

    def loop(theta, rows):
        out = np.empty_like(theta)
        for r in range(len(theta)):
            batch = design[rows[r]]
            s = signs[rows[r]]
            weights = s * expit(-s * (batch @ theta[r]))
            out[r] = theta[r] / model.prior_scale**2 - scale * (batch.T @ weights)
        return out

    def flops(rows):
        nonzeros = np.diff(design.indptr)[rows].sum()
        return 4 * nonzeros + 3 * rows.shape[0] * model.dim

    return "logistic regression, a9a-shaped CSR (d = 123)", model, loop, flops


def mlp_workload():
    data = digits()
    model = MultilayerPerceptron(data.train_features, data.train_labels, hidden_sizes=(100,))
    sizes = [model.features.shape[1], *model.hidden_sizes, model.n_classes]
    features, labels, scale = model.features, model.labels, model.n_data / BATCH

    def loop(theta, rows):
        out = np.empty_like(theta)
        for r in range(len(theta)):
            weights = model.layout.unpack(theta[r:r + 1])
            matrices = [weights[f"dense{k}.weight"][0] for k in range(len(sizes) - 1)]
            biases = [weights[f"dense{k}.bias"][0] for k in range(len(sizes) - 1)]
            activations = [features[rows[r]]]
            for k, (w, b) in enumerate(zip(matrices, biases, strict=True)):
                z = activations[-1] @ w + b
                activations.append(np.maximum(z, 0) if k < len(matrices) - 1 else z)
            logits = activations[-1]
            probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
            probabilities /= probabilities.sum(axis=1, keepdims=True)
            delta = -probabilities
            delta[np.arange(len(delta)), labels[rows[r]]] += 1.0
            gradients = {}
            for k in range(len(matrices) - 1, -1, -1):
                gradients[f"dense{k}.weight"] = (activations[k].T @ delta)[None]
                gradients[f"dense{k}.bias"] = delta.sum(axis=0)[None]
                if k:
                    delta = (delta @ matrices[k].T) * (activations[k] > 0)
            out[r] = theta[r] / model.prior_scale**2 - scale * model.layout.pack(gradients)[0]
        return out

    def flops(rows):
        products = sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        per_example = 2 * (2 * products + products - sizes[0] * sizes[1])
        return per_example * rows.size + 3 * rows.shape[0] * model.dim

    return "MLP 64-100-10 on digits", model, loop, flops


def _seconds(function, *arguments) -> float:
    start = time.perf_counter()
    function(*arguments)
    return time.perf_counter() - start


def measure(workload, repeats: int, calls: int) -> None:
    name, model, loop, flops = workload
    rng = generator(2026, "benchmark", name)
    estimator = model.minibatch_gradient()
    if hasattr(model, "initial_position"):
        theta = model.initial_position(rng, (calls, REPLICATES))
    else:
        theta = 0.1 * rng.standard_normal((calls, REPLICATES, model.dim))
    rows = rng.integers(0, model.n_data, (calls, REPLICATES, BATCH))
    prepared = estimator.prepare(rows)
    np.testing.assert_allclose(estimator(theta[0], prepared[0]), loop(theta[0], rows[0]),
                               rtol=1e-9, atol=1e-9)
    work = calls * REPLICATES
    total_flops = sum(flops(rows[c]) for c in range(calls))

    def vectorised():
        for c in range(calls):
            estimator(theta[c], prepared[c])

    def looped():
        for c in range(calls):
            loop(theta[c], rows[c])

    fast, slow = [], []
    for _ in range(repeats):
        fast.append(_seconds(vectorised))
        slow.append(_seconds(looped))
    ratios = [s / f for f, s in zip(fast, slow, strict=True)]
    print(f"\n{name}: {REPLICATES} replicates, minibatch {BATCH}, d = {model.dim}, "
          f"{calls} calls x {repeats} rounds")
    for label, seconds in (("vectorised", fast), ("per-replicate loop", slow)):
        median = statistics.median(seconds)
        print(f"  {label:>20}: {work / median:12,.0f} replicate-steps/s  "
              f"{total_flops / median / 1e9:7.3f} GFLOP/s")
    print(f"  {'speed-up':>20}: {statistics.median(ratios):.1f}x (median of per-round ratios, "
          f"range {min(ratios):.1f}-{max(ratios):.1f})")


def _replaced(name: str):
    """A replaced formulation, from the test that keeps it (module docstring)."""
    path = (Path(__file__).resolve().parents[1] / "tests" / "workbench" / "models"
            / "test_csr_kernels.py")
    spec = importlib.util.spec_from_file_location("csr_kernel_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def _interleaved(new, old, repeats: int, calls: int, label: str) -> str:
    """``new`` and ``old`` (each ``calls`` calls) timed round by round: the median µs a call of
    ``new`` and the median of the per-round old/new ratios, as printed."""
    ratios, fast = [], []
    for _ in range(repeats):
        fast.append(_seconds(new))
        ratios.append(_seconds(old) / fast[-1])
    per_call = statistics.median(fast) / calls * 1e6
    return (f"{per_call:8.1f} us/call, {label} {statistics.median(ratios):5.2f}x "
            f"(range {min(ratios):.2f}-{max(ratios):.2f}), bit-identical")


def logistic_before_after(repeats: int, calls: int) -> None:
    """Current/fused time ratio of the CSR minibatch estimate (module docstring)."""
    reference = _replaced("composed_gradient")
    data, _ = a9a_like(generator(2026, "benchmark", "a9a"))
    model = LogisticRegression(data.train_features, data.train_labels, prior_scale=1.0)
    estimator = model.minibatch_gradient()
    rng = generator(2026, "benchmark", "before-after")
    print(f"\nlogistic CSR minibatch estimate, one compiled call vs the composition it replaced "
          f"({calls} calls x {repeats} rounds)")
    for n_rows, batch in BLOCKS:
        theta = rng.standard_normal((calls, n_rows, model.dim))
        rows = estimator.prepare(rng.integers(0, model.n_data, (calls, n_rows, batch)))
        for c in range(calls):
            old = reference(model, theta[c], rows[c])
            new = estimator(theta[c], rows[c])
            assert np.array_equal(old.view(np.int64), new.view(np.int64)), "not bit-identical"

        def fused(theta=theta, rows=rows):
            for c in range(calls):
                estimator(theta[c], rows[c])

        def replaced(theta=theta, rows=rows):
            for c in range(calls):
                reference(model, theta[c], rows[c])

        print(f"  {n_rows:4d} replicate rows x {batch:2d}: fused "
              + _interleaved(fused, replaced, repeats, calls, "current/fused"))


def logistic_full_data(repeats: int, calls: int) -> None:
    """SciPy/compiled time ratio of the full-data gradient on a CSR design (module
    docstring), bit-identical, at the experiments' shapes (``FULL_DATA``)."""
    reference = _replaced("scipy_full_gradient")
    rng = generator(2026, "benchmark", "full-data")
    print(f"\nlogistic CSR full-data gradient, one compiled pass vs SciPy's products and numpy's "
          f"steps ({calls} calls x {repeats} rounds)")
    for n_data, n_positions, use in FULL_DATA:
        data, _ = a9a_like(generator(2026, "benchmark", "a9a", n_data), n_data, 100)
        model = LogisticRegression(data.train_features, data.train_labels, prior_scale=1.0)
        theta = 0.3 * rng.standard_normal((calls, n_positions, model.dim))
        for c in range(calls):
            old, new = reference(model, theta[c]), model.potential_gradient(theta[c])
            assert np.array_equal(old.view(np.int64), new.view(np.int64)), "not bit-identical"

        def compiled(theta=theta, model=model):
            for c in range(calls):
                model.potential_gradient(theta[c])

        def replaced(theta=theta, model=model):
            for c in range(calls):
                reference(model, theta[c])

        print(f"  N = {n_data:5d}, {n_positions:3d} positions ({use}): compiled "
              + _interleaved(compiled, replaced, repeats, calls, "SciPy/compiled"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50)
    options = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    logistic_before_after(options.repeats, options.calls)
    logistic_full_data(options.repeats, options.calls)
    for workload in (logistic_workload(), mlp_workload()):
        measure(workload, options.repeats, options.calls)


if __name__ == "__main__":
    main()
