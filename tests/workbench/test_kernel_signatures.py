"""Compiled kernels compile once whatever arrays their callers pass.

numba compiles a kernel again for every new layout or read-only flag of its arguments, seconds
each at a cold start (the first run after install). The entry points below hand their kernels
contiguous, writable arrays (:func:`workbench.core.kernel_arrays.kernel_array`), so a strided
or read-only input gives the same numbers and leaves the kernel with one signature. Negative
control: to numba those variants are types of their own, so without the conversion they would
compile again.
"""

from __future__ import annotations

import numba
import numpy as np

from simulators.seeding import generator
from tests.workbench.sharded_reference import FIELDS
from workbench.data.corpus import Corpus
from workbench.models import lda
from workbench.oracles import sharded_scan, shift_register
from workbench.oracles.linear_gaussian import FiniteMoments, finite_moments, sgld_dynamics
from workbench.oracles.sharded_gaussian import StepMaps, conditional_moments


def read_only(array: np.ndarray) -> np.ndarray:
    array = np.array(array)
    array.flags.writeable = False
    return array


def strided(array: np.ndarray) -> np.ndarray:
    """The same values as a non-contiguous view (every other element of a doubled array)."""
    doubled = np.repeat(np.asarray(array)[..., None], 2, axis=-1)
    return doubled[..., 0]


def same_bits(a, b) -> bool:
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_the_shift_register_passes_compile_once_for_any_staleness_array():
    staleness = np.minimum(np.arange(40) % 4, np.arange(40))
    checkpoints = np.array([10, 40])
    runs = [finite_moments(sgld_dynamics(0.05), 1.5, variant, checkpoints)
            for variant in (staleness, strided(staleness), read_only(staleness))]
    for run in runs[1:]:
        for field in FiniteMoments.__dataclass_fields__:
            assert same_bits(getattr(run, field), getattr(runs[0], field)), field
    assert len(shift_register.forward_pass.signatures) == 1
    assert len(shift_register.backward_pass.signatures) == 1


def test_the_sharded_recursion_compiles_once_for_read_only_strided_and_full_maps():
    rng = generator(3, "kernel-signatures")
    n_updates, n_chains, dim = 9, 2, 2
    a = rng.uniform(0.9, 1.0, (n_updates, n_chains, dim))
    b = rng.standard_normal((n_updates, n_chains, dim))
    root = rng.standard_normal((n_updates, n_chains, dim, dim))
    q = root @ np.swapaxes(root, -1, -2)
    start = rng.standard_normal((n_chains, dim))
    runs = [conditional_moments(StepMaps(a, b, q, True), start, [3, 9]),
            conditional_moments(StepMaps(read_only(a), strided(b), read_only(q), True),
                                read_only(start), [3, 9])]
    for field in FIELDS:
        assert same_bits(getattr(runs[1], field), getattr(runs[0], field)), field
    # full maps go through the same kernel: A = diag(a) written out gives the same moments
    full = conditional_moments(StepMaps(a[..., :, None] * np.eye(dim), b, q, False), start,
                               [3, 9])
    for field in FIELDS:
        np.testing.assert_allclose(getattr(full, field), getattr(runs[0], field),
                                   rtol=1e-13, err_msg=field)
    assert len(sharded_scan._propagated_moments.signatures) == 1


def test_the_gibbs_kernel_compiles_once_for_broadcast_documents():
    pi = np.array([[[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]]])
    corpus = Corpus(np.array([0, 1, 2, 2]), np.array([0, 4]), 3)
    uniforms = [generator(0, "kernel-signatures").random((4, 4))]
    runs = [lda.expected_counts(pi, corpus, documents, alpha=0.3, n_sweeps=3,
                                uniforms=uniforms)
            for documents in (np.array([[0]]), np.broadcast_to(np.array([0]), (1, 1)))]
    assert same_bits(runs[1], runs[0])
    assert len(lda._gibbs.signatures) == 1


def test_read_only_and_strided_arrays_are_other_types_to_numba():
    """The negative control: without the entry points' conversion each variant is a type
    of its own, so the kernels would compile again for it."""
    array = np.zeros((4, 2))
    kinds = {numba.typeof(variant) for variant in (array, read_only(array), strided(array))}
    assert len(kinds) == 3
